// The bulk-copy form of the mmvs decode matvec (mmvs.h, MmvsParams::bulk; kernels.mmvs_bulk).
//
// Why: the plain kernel keeps each warp's weight bytes in flight in registers (two 64-weight
// tasks per lane, 69-122 registers), so an SM has ~20-60 KB requested at a time and a short
// layer matrix runs as several waves of one memory round trip each (0.49-0.81 of the bandwidth
// floor in the decode step, bench/notes/decode-persistent-plan.md). Here the copy engine moves
// the weights: a grid of at most `bulk` CTAs per SM, 8 warps each, every warp owns a ring of
// `depth` shared-memory slots (up to ~220 KB per SM in all) and streams its rows gw, gw + W, ...
// (W = warps in the grid) into them with cp.async.bulk (one instruction per plane per row,
// completion counted on the slot's mbarrier). The first `depth` rows are requested before the
// PDL wait, while the previous kernel still runs (weights never change during a step).
//
// Same bits as the plain kernel: a row is computed by one warp holding the wpr sub-warp partials
// of the plain kernel side by side (lane l, partial s: tasks 32 * (s + wpr * i) + l in increasing
// i), each reduced by the same xor tree and summed in s order; the tasks are the very Task<T>
// code (load from the shared copy at the row's own offsets, then dot). Gated byte for byte in
// kernel-check mmvs_id mmvs_bulk*/vs_plain_bytes.
#include <atomic>

#include "act/act_math.cuh"
#include "common/launch.cuh"
#include "matvec/mmvs.h"
#include "matvec/mmvs_task.cuh"
#include "matvec/split_layout.h"

namespace memra::cuda {
namespace {

using mmvs::Geo;
using mmvs::Src;
using mmvs::Task;

constexpr int kWarps = 8;      // per CTA; each warp its own ring
constexpr int kMaxDepth = 16;  // slots per warp
constexpr int kBarBytes = kWarps * kMaxDepth * 8;
constexpr int kMaxBulk = 4;     // CTAs per SM
constexpr int kMaxSmem = 232448;  // the sm_90 opt-in limit per block (227 KB)

// Dynamic shared memory per CTA at `bulk` CTAs per SM (1-4): the 228 KB of an SM less one KB
// reserved per block, split evenly (224, 112, 74, 55 KB).
int smem_budget(int bulk) {
  static constexpr int kb[5] = {0, 224, 112, 74, 55};
  return kb[bulk] * 1024;
}

__device__ __forceinline__ uint32_t saddr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// Task<T>::load from the shared copy (volatile: never hoisted above the slot's mbarrier wait).
struct SmemLoads {
  static __device__ __forceinline__ uint4 w16(const uint8_t* p) {
    uint4 r;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(saddr(p)));
    return r;
  }
  static __device__ __forceinline__ uint2 w8(const uint8_t* p) {
    uint2 r;
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "r"(saddr(p)));
    return r;
  }
  static __device__ __forceinline__ uint32_t w4(const void* p) {
    uint32_t r;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(r) : "r"(saddr(p)));
    return r;
  }
  static __device__ __forceinline__ uint32_t w2(const void* p) {
    unsigned short r;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(r) : "r"(saddr(p)));
    return r;
  }
};

__device__ __forceinline__ void mbar_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

struct Seg {
  Src src;
  int64_t row_end;  // rows of this and the earlier segments
  float* y;
};

struct Args {
  Seg seg[3];
  int n_seg;
  Src w2;  // GLU partner (one segment only)
  Geo g;
  int64_t n_rows;
  uint32_t body, aux, d;  // bytes per row of each plane (multiples of 16; 0 = no plane)
  uint32_t item;          // body + aux + d: one matrix's row in a slot
  uint32_t slot;          // item, twice with GLU
  int depth;
  int wpr;
  const int8_t* xq;
  const float2* xds;
};

// Lane 0: row `row` of matrix s into the slot at dst, counted on bar.
__device__ __forceinline__ void copy_row(uint32_t dst, const Src& s, int64_t row, const Args& a, uint32_t bar) {
  bulk_copy(dst, s.w + (size_t)row * a.body, a.body, bar);
  if (a.aux) bulk_copy(dst + a.body, s.aux + (size_t)row * a.aux, a.aux, bar);
  if (a.d) bulk_copy(dst + a.body + a.aux, s.d + (size_t)row * a.d, a.d, bar);
}

// R: rows computed together per pass (1 or 2; their task loops interleaved for latency hiding,
// each row's arithmetic unchanged). MINB: CTAs per SM the register budget is cut for.
template <QType T, int GLU, int R, int MINB>
__global__ void __launch_bounds__(32 * kWarps, MINB) mmvs_bulk_kernel(const Args a) {
  extern __shared__ __align__(128) uint8_t smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem) + warp * kMaxDepth;
  uint8_t* ring = smem + kBarBytes + (size_t)warp * (size_t)a.depth * a.slot;
  const int64_t gw = (int64_t)blockIdx.x * kWarps + warp, nw = (int64_t)gridDim.x * kWarps;
  const int64_t mine = gw < a.n_rows ? (a.n_rows - 1 - gw) / nw + 1 : 0;
  if (mine == 0) {
    pdl_wait();
    return;
  }
  // Row i of this warp: global row gw + i * nw -> (segment, row in it).
  auto locate = [&](int64_t i, int& sg) {
    int64_t row = gw + i * nw;
    sg = 0;
    if (a.n_seg > 1 && row >= a.seg[0].row_end) {
      sg = row >= a.seg[1].row_end ? 2 : 1;
      row -= a.seg[sg - 1].row_end;
    }
    return row;
  };
  auto issue = [&](int64_t i) {  // lane 0 only
    int sg;
    const int64_t row = locate(i, sg);
    const int s = (int)(i % a.depth);
    const uint32_t b = saddr(bar + s), dst = saddr(ring + (size_t)s * a.slot);
    mbar_expect_tx(b, a.slot);
    copy_row(dst, a.seg[sg].src, row, a, b);
    if constexpr (GLU != 0) copy_row(dst + a.item, a.w2, row, a, b);
  };
  if (lane == 0) {
    for (int s = 0; s < a.depth; ++s) mbar_init(saddr(bar + s));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int64_t i = 0; i < mine && i < a.depth; ++i) issue(i);
  }
  __syncwarp();
  pdl_wait();
  const int n_tasks = (int)a.g.n_tasks, n_groups = (n_tasks + 31) / 32, wpr = a.wpr;
  for (int64_t i0 = 0; i0 < mine; i0 += R) {
    const int nr = mine - i0 < R ? (int)(mine - i0) : R;  // rows of this pass (R <= depth)
    Src ws[R], us[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r < nr) {
        const int64_t i = i0 + r;
        const int s = (int)(i % a.depth);
        mbar_wait(saddr(bar + s), (uint32_t)((i / a.depth) & 1));
        const uint8_t* slot = ring + (size_t)s * a.slot;
        ws[r] = Src{slot, slot + a.body + a.aux, slot + a.body};
        us[r] = Src{slot + a.item, slot + a.item + a.body + a.aux, slot + a.item + a.body};
      }
    }
    float acc[R][4], acc2[R][4];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int sub = 0; sub < 4; ++sub) acc[r][sub] = acc2[r][sub] = 0.0f;
#pragma unroll 2
    for (int g0 = 0; g0 < n_groups; g0 += wpr) {
#pragma unroll
      for (int sub = 0; sub < 4; ++sub) {
        const int t = 32 * (g0 + sub) + lane;
        if (sub < wpr && t < n_tasks) {
#pragma unroll
          for (int r = 0; r < R; ++r) {
            if (r < nr) {
              Task<T> wt;
              wt.template load<SmemLoads>(ws[r], 0, t, a.g);
              acc[r][sub] = __fadd_rn(acc[r][sub], wt.dot(t, a.xq, a.xds));
              if constexpr (GLU != 0) {
                Task<T> ut;
                ut.template load<SmemLoads>(us[r], 0, t, a.g);
                acc2[r][sub] = __fadd_rn(acc2[r][sub], ut.dot(t, a.xq, a.xds));
              }
            }
          }
        }
      }
    }
    __syncwarp();  // every lane is done with the pass's slots
    if (lane == 0)
      for (int r = 0; r < nr; ++r)
        if (i0 + r + a.depth < mine) issue(i0 + r + a.depth);
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int sub = 0; sub < 4; ++sub) {
        if (sub < wpr) {
#pragma unroll
          for (int o = 16; o > 0; o >>= 1) {
            acc[r][sub] = __fadd_rn(acc[r][sub], __shfl_xor_sync(0xffffffffu, acc[r][sub], o));
            if constexpr (GLU != 0) acc2[r][sub] = __fadd_rn(acc2[r][sub], __shfl_xor_sync(0xffffffffu, acc2[r][sub], o));
          }
        }
      }
    }
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (r < nr) {
          float v = acc[r][0], v2 = acc2[r][0];
#pragma unroll
          for (int sub = 1; sub < 4; ++sub) {
            if (sub < wpr) {
              v = __fadd_rn(v, acc[r][sub]);
              if constexpr (GLU != 0) v2 = __fadd_rn(v2, acc2[r][sub]);
            }
          }
          if constexpr (GLU == 1) v = __fmul_rn(act<ActKind::Silu>(v), v2);
          if constexpr (GLU == 2) v = __fmul_rn(act<ActKind::GeluTanh>(v), v2);
          int sg;
          const int64_t row = locate(i0 + r, sg);
          a.seg[sg].y[row] = v;
        }
      }
    }
  }
}

// Per-row plane bytes and the ring depth for p (depth 0: the form does not apply).
struct Shape {
  uint32_t body = 0, aux = 0, d = 0;
  int depth = 0;
};
Shape bulk_shape(const MmvsParams& p) {
  Shape sh;
  if (p.bulk < 1 || p.bulk > kMaxBulk || p.m != 1 || !p.interleaved || !mmvs_supported(p.w_type, p.n_cols)) return sh;
  const sp::Layout L = sp::layout(p.w_type, true);
  const sp::Plan pl = sp::plan(p.w_type, 1, p.n_cols, true);
  if (!L.repacked || pl.body_row_bytes >= (1u << 30)) return sh;
  const uint64_t body = pl.body_row_bytes, aux = L.aux_src >= 0 ? 16 * (uint64_t)pl.blocks_per_row : 0,
                 d = L.d_src >= 0 ? 2 * (uint64_t)pl.blocks_per_row : 0;
  if (body % 16 || aux % 16 || d % 16) return sh;  // Q6_K rows of k % 2048 != 0 (d plane)
  const auto a16 = [](const void* q) { return q == nullptr || reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  if (!a16(p.w) || !a16(p.w_d) || !a16(p.w_aux) || !a16(p.w2) || !a16(p.w2_d) || !a16(p.w2_aux)) return sh;
  for (int i = 0; i < p.n_extra; ++i)
    if (!a16(p.extra[i].w) || !a16(p.extra[i].w_d) || !a16(p.extra[i].w_aux)) return sh;
  const uint64_t slot = (body + aux + d) * (p.w2 ? 2 : 1);
  const int64_t depth = (smem_budget(p.bulk) - kBarBytes) / ((int64_t)kWarps * (int64_t)slot);
  sh.body = (uint32_t)body;
  sh.aux = (uint32_t)aux;
  sh.d = (uint32_t)d;
  sh.depth = (int)(depth < kMaxDepth ? depth : kMaxDepth);
  return sh;
}

template <QType T, int GLU, int R, int MINB>
cudaError_t launch_k(const Args& a, unsigned grid, int smem, cudaStream_t s) {
  static std::atomic<bool> opted_in{false};
  if (!opted_in.load(std::memory_order_relaxed)) {
    const cudaError_t e =
        cudaFuncSetAttribute(mmvs_bulk_kernel<T, GLU, R, MINB>, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem);
    if (e != cudaSuccess) return e;
    opted_in.store(true, std::memory_order_relaxed);
  }
  return launch_kernel(mmvs_bulk_kernel<T, GLU, R, MINB>, dim3(grid), dim3(32 * kWarps), (size_t)smem, s, a);
}

// Two rows per pass where the ring has two slots and the switch asks for it; the register cut
// for 2 CTAs per SM up to bulk = 2, for 4 beyond.
template <QType T, int GLU>
cudaError_t launch_tg(const Args& a, int bulk, bool two, unsigned grid, int smem, cudaStream_t s) {
  if (two && a.depth >= 2)
    return bulk <= 2 ? launch_k<T, GLU, 2, 2>(a, grid, smem, s) : launch_k<T, GLU, 2, 4>(a, grid, smem, s);
  return bulk <= 2 ? launch_k<T, GLU, 1, 2>(a, grid, smem, s) : launch_k<T, GLU, 1, 4>(a, grid, smem, s);
}

template <QType T>
cudaError_t launch_t(const Args& a, int glu, int bulk, bool two, unsigned grid, int smem, cudaStream_t s) {
  if (glu == 0) return launch_tg<T, 0>(a, bulk, two, grid, smem, s);
  if (glu == 1) return launch_tg<T, 1>(a, bulk, two, grid, smem, s);
  return launch_tg<T, 2>(a, bulk, two, grid, smem, s);
}

}  // namespace

int mmvs_bulk_depth(const MmvsParams& p) { return bulk_shape(p).depth; }
bool mmvs_bulk_applies(const MmvsParams& p) { return bulk_shape(p).depth >= 1; }

// launch_mmvs's bulk-copy form: p already validated by launch_mmvs, mmvs_bulk_applies(p) true.
cudaError_t launch_mmvs_bulk(const MmvsParams& p, cudaStream_t stream) {
  const Shape sh = bulk_shape(p);
  if (sh.depth < 1) return cudaErrorInvalidValue;
  int sms = p.sm_count;
  if (sms <= 0) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return e;
  }
  const sp::Plan pl = sp::plan(p.w_type, p.n_rows, p.n_cols, true);
  const auto src = [](const void* w, const void* d, const void* aux) {
    return Src{static_cast<const uint8_t*>(w), static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(aux)};
  };
  Args a{};
  a.n_seg = 1 + p.n_extra;
  int64_t rows = p.n_rows;
  a.seg[0] = {src(p.w, p.w_d, p.w_aux), rows, p.y};
  for (int i = 0; i < p.n_extra; ++i) {
    rows += p.extra[i].n_rows;
    a.seg[i + 1] = {src(p.extra[i].w, p.extra[i].w_d, p.extra[i].w_aux), rows, p.extra[i].y};
  }
  a.w2 = src(p.w2, p.w2_d, p.w2_aux);
  a.g = {pl.body_row_bytes, pl.blocks_per_row, p.n_cols / 64, true};
  a.n_rows = rows;
  a.body = sh.body;
  a.aux = sh.aux;
  a.d = sh.d;
  a.item = sh.body + sh.aux + sh.d;
  a.slot = a.item * (p.w2 ? 2u : 1u);
  a.depth = sh.depth;
  a.wpr = mmvs::warps_per_row(p.w_type, p.n_cols / 64, p.split_k);
  a.xq = p.xq;
  a.xds = static_cast<const float2*>(p.xds);
  const int64_t want = (rows + kWarps - 1) / kWarps, cap = (int64_t)p.bulk * sms;
  const unsigned grid = (unsigned)(want < cap ? want : cap);
  const int smem = kBarBytes + kWarps * a.depth * (int)a.slot;
  switch (p.w_type) {
    case QType::Q4_K: return launch_t<QType::Q4_K>(a, p.glu, p.bulk, p.bulk_rows2, grid, smem, stream);
    case QType::Q6_K: return launch_t<QType::Q6_K>(a, p.glu, p.bulk, p.bulk_rows2, grid, smem, stream);
    case QType::Q8_0: return launch_t<QType::Q8_0>(a, p.glu, p.bulk, p.bulk_rows2, grid, smem, stream);
    case QType::Q4_0: return launch_t<QType::Q4_0>(a, p.glu, p.bulk, p.bulk_rows2, grid, smem, stream);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace memra::cuda
