// The residual matvec that also takes the next deferred norm (launch_mmvs_emit_norm, mmvs.h).
//
// Why: with kernels.fuse_residual and kernels.norm_defer, every decode norm of a dense layer reads
// the residual stream that the launch just before it (the attention output or the down projection)
// wrote, and only turns it into q8s planes of y * w plus partial sums of squares. Its ~2.2 us
// exposed per call on the H200 (73 per qwen3-8b step) are a launch boundary and one L2 round trip
// of a 16 KB row. A q8s block needs 32 rows of the producer's output; a CTA that owns 32
// consecutive rows has them all, so here the norm's work is the tail of that CTA: no grid-wide
// handoff, no other launch.
//
// The row arithmetic is mmvs_body's (mmvs.cu) for the same row length: lane l takes tasks
// 32 g + l of task group g, group g summed into sub-warp g % wpr's accumulator (mmvs' partition of
// a row over wpr warps), each accumulator's xor tree, the sub-warps' results in order, then the
// residual add. Here one warp does all wpr sub-warps' work for its rows (wpr accumulators), so a
// row's bits are those of launch_mmvs with MmvsParams::residual at every m (decode == verify holds
// with the verify batches' unfused launch + norm). The norm's part is rms_norm_defer_kernel's
// (norm.cu): emit_q8s_block8 on y * w with the 8-lane layout, defer_block_ss.
//
// The GLU form (launch_mmvs_glu_emit, kernels.mmvs_glu_emit): the one-token gate + up + activation
// launch whose 32-row CTAs also write their q8s block of the output, as launch_quantize_q8s would for
// the down projection (no quantize launch). Rows as mmvs_body's GLU 1 / 2 (the deferred norm's scale
// included), one task group per row and matrix in flight per lane.
#include <type_traits>

#include "act/act_math.cuh"
#include "common/launch.cuh"
#include "matvec/mmvs.h"
#include "matvec/mmvs_dispatch.h"
#include "matvec/mmvs_task.cuh"
#include "matvec/split_layout.h"
#include "norm/norm_kernels.h"
#include "norm/norm_math.cuh"

namespace memra::cuda {
namespace {

using mmvs::Geo;
using mmvs::Src;
using mmvs::Task;

struct EmitArgs {
  Src w;
  Src w2;  // the GLU form's up matrix
  Geo g;
  int n_tasks;  // per row
  int64_t k;
  bool preload;
  const int8_t* xq;  // the input's planes (interleaved order, or its Q6_K variant: AO)
  const float2* xds;
  const float* res;  // the residual (MmvsParams::residual; may be y: the stream updated in place)
  float* y;
  const float* nw;
  const float* nss;  // the GLU form: MmvsParams::norm_ss (null: none)
  int n_nss;
  float nss_eps;
  bool nsf;
  int8_t* oq;
  float2* ods;
  q8s::Order order;  // of oq
  float* part;
};

// Q4_K's task in the 8-warp forms that keep eight tasks in flight per lane (the GLU's two matrices x
// four rows; the residual form's four rows x both groups) at the two-per-SM cap of 128 registers,
// where Task<Q4_K> (a 16-byte superblock header, two 16-byte qs granules) spills 56-64 bytes: lanes
// 4m .. 4m + 3 hold the tasks of one superblock (t = 32 g + lane, 4 tasks per superblock, a row's task
// count a multiple of 4), so each loads one word of the shared header and the four words are
// gathered by shuffles just before the dot: 3 registers per task fewer, the same header, the same dot
// (the same bits). gather() is called by every lane of the warp (the lanes past the row too: their
// words are zero and their dots unused).
struct TaskQ4KWord {
  uint32_t hw;
  uint4 q0, q1;
  __device__ void load(const Src& s, int64_t row, int t, const Geo& g) {
    const size_t word = 4 * (size_t)(t & 3);
    if (g.il) {
      const mmvs::IlAt at = mmvs::il_at<2>(s, row, t, g);
      hw = mmvs::ldw4(s.aux + ((size_t)row * (size_t)g.blocks_per_row + (size_t)(t >> 2)) * 16 + word);
      q0 = mmvs::ldw16(at.c0);
      q1 = mmvs::ldw16(at.c0 + at.step);
      return;
    }
    const uint8_t* sb = s.w + (size_t)row * g.body_row_bytes + (size_t)(t >> 2) * 144;
    const int j = t & 3;
    hw = mmvs::ldw4(sb + word);
    q0 = mmvs::ldw16(sb + 16 + 32 * j);
    q1 = mmvs::ldw16(sb + 32 + 32 * j);
  }
  __device__ uint4 gather(int lane) const {
    const int b = lane & ~3;
    return make_uint4(__shfl_sync(0xffffffffu, hw, b), __shfl_sync(0xffffffffu, hw, b + 1),
                      __shfl_sync(0xffffffffu, hw, b + 2), __shfl_sync(0xffffffffu, hw, b + 3));
  }
  template <class X>
  __device__ float dot(const uint4& h, int t, const X& x) const {
    return mmvs::k_quant_dot<true>(h, q0, q1, t, x, [](uint4 q, int shift, int) { return mmvs::mask4(q, shift, 0x0F0F0F0Fu); });
  }
};

// NW warps, 32 / NW rows each (rows row0 + warp + NW r); WPR: mmvs::warps_per_row of the row
// length; AO: the input's order (1 interleaved, 2 its Q6_K variant); per row two task groups in
// flight per lane (mmvs' kDepth), one with 8 warps (four rows per warp: the same four tasks per lane),
// the first ones requested before the PDL wait (a.preload). The CTA count is n_rows / 32 (128 for a
// 4096-row stream: one per SM), so NW sets how much of the SM's registers it leaves to the next
// launch's CTAs, which request their weights while this one runs. GLU 0: the residual launch with the
// next deferred norm; 1 / 2: the SiLU / GELU-tanh GLU (gate w, up w2) with its output's q8s block.
// 8 warps: compiled for two CTAs per SM (at most 128 registers), so that rows whose 32-row CTAs
// outnumber the SMs (qwen3-32b's 5120: 160 CTAs on 132 SMs) still run in one wave
// (MmvsEmitNormParams::one_wave_sms; the register cap never changes an operation: the same bits).
// D2 (MmvsEmitNormParams::both_groups): 8 warps with two task groups in flight per row (more registers:
// Q4_0 fits the two-per-SM cap; Q4_K with TaskQ4KWord, as in the 8-warp GLU form).
template <QType T, int AO, int NW, int WPR, int GLU = 0, bool D2 = false>
__global__ void __launch_bounds__(32 * NW, NW == 8 ? 2 : 1) mmvs_emit_kernel(const __grid_constant__ EmitArgs a) {
  static_assert(NW == 8 || NW == 16 || NW == 32);
  static_assert(WPR == 1 || WPR == 2 || WPR == 4);
  static_assert(AO != 2 || T == QType::Q6_K, "the Q6_K order is read by Q6_K tasks only");
  static_assert(!D2 || (NW == 8 && WPR == 1 && GLU == 0), "two groups: the 8-warp residual form, rows of one warp");
  constexpr int R = 32 / NW, D = ((NW == 8 && !D2) || GLU != 0) ? 1 : 2, M = GLU != 0 ? 2 : 1;
  constexpr bool kWord = T == QType::Q4_K && NW == 8 && (GLU != 0 || D2);
  using TaskT = std::conditional_t<kWord, TaskQ4KWord, Task<T>>;
  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
  const int64_t row0 = (int64_t)blockIdx.x * 32;
  const int n_tasks = a.n_tasks, n_groups = (n_tasks + 31) / 32;
  const auto x = [&] {
    if constexpr (AO == 2)
      return mmvs::GXQ6{a.xq, a.xds};
    else
      return mmvs::GXI{a.xq, a.xds};
  }();
  float acc[M][R][WPR];
#pragma unroll
  for (int mt = 0; mt < M; ++mt)
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int s = 0; s < WPR; ++s) acc[mt][r][s] = 0.0f;
  TaskT tk[M][R][D];
  const auto issue = [&](int g0) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const int t = 32 * (g0 + d) + lane;
      if (t < n_tasks) {
#pragma unroll
        for (int mt = 0; mt < M; ++mt)
#pragma unroll
          for (int r = 0; r < R; ++r) tk[mt][r][d].load(mt ? a.w2 : a.w, row0 + warp + NW * r, t, a.g);
      } else if constexpr (kWord) {
#pragma unroll
        for (int mt = 0; mt < M; ++mt)
#pragma unroll
          for (int r = 0; r < R; ++r) tk[mt][r][d].hw = 0u;
      }
    }
  };
  // The next norm's weights for warp 0's emit (lane k of each 8-lane group: rows 4k .. 4k + 3 of
  // the block), constant during a step: requested before the wait.
  float wv[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  if (GLU == 0 && warp == 0 && a.nw) {
#pragma unroll
    for (int e = 0; e < 4; ++e) wv[e] = a.nw[row0 + 4 * (lane & 7) + e];
  }
  if (a.preload) issue(0);
  pdl_wait();
  float resv[R] = {};
  if (GLU == 0 && lane == 0)
#pragma unroll
    for (int r = 0; r < R; ++r) resv[r] = a.res[row0 + warp + NW * r];
  // The GLU form's deferred-norm scale: this lane's share of the partials now, the root at the end
  // (mmvs_body's m = 1 order).
  float nss0 = 0.0f;
  if (GLU != 0 && a.nss) nss0 = a.nsf ? a.nss[0] : defer_lane_sum(a.nss, a.n_nss, lane);
  // Groups in runs of STEP (a multiple of D and WPR: both powers of 2), so that group gb + h + d's
  // sub-warp (h + d) % WPR is a constant of the unrolled loops and the accumulators stay registers.
  constexpr int STEP = D > WPR ? D : WPR;
  for (int gb = 0; gb < n_groups; gb += STEP) {
#pragma unroll
    for (int h = 0; h < STEP; h += D) {
      const int g0 = gb + h;
      if (g0 < n_groups) {
        if (g0 != 0 || !a.preload) issue(g0);
#pragma unroll
        for (int d = 0; d < D; ++d) {
          const int t = 32 * (g0 + d) + lane;
          if constexpr (kWord) {
#pragma unroll
            for (int mt = 0; mt < M; ++mt)
#pragma unroll
              for (int r = 0; r < R; ++r) {
                const uint4 hd = tk[mt][r][d].gather(lane);  // (every lane)
                if (t < n_tasks) acc[mt][r][(h + d) % WPR] = __fadd_rn(acc[mt][r][(h + d) % WPR], tk[mt][r][d].dot(hd, t, x));
              }
          } else if (t < n_tasks) {
#pragma unroll
            for (int mt = 0; mt < M; ++mt)
#pragma unroll
              for (int r = 0; r < R; ++r)
                acc[mt][r][(h + d) % WPR] = __fadd_rn(acc[mt][r][(h + d) % WPR], tk[mt][r][d].dot(t, x));
          }
        }
      }
    }
  }
  float ns = 1.0f;
  if (GLU != 0 && a.nss) ns = a.nsf ? nss0 : norm_scale(warp_sum_f32(nss0), (int)a.k, a.nss_eps);
  __shared__ float ys[32];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float v[M];
#pragma unroll
    for (int mt = 0; mt < M; ++mt) {
      v[mt] = 0.0f;
#pragma unroll
      for (int s = 0; s < WPR; ++s) {
        float p = acc[mt][r][s];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) p = __fadd_rn(p, __shfl_xor_sync(0xffffffffu, p, o));
        v[mt] = s == 0 ? p : __fadd_rn(v[mt], p);
      }
    }
    if (lane == 0) {
      float y;
      if constexpr (GLU == 0) {
        y = __fadd_rn(resv[r], v[0]);
      } else {
        // As mmvs_body's epilogue: the scale (when the input is a deferred norm's), then act(gate) * up.
        const float gs = a.nss ? __fmul_rn(v[0], ns) : v[0], us = a.nss ? __fmul_rn(v[M - 1], ns) : v[M - 1];
        y = __fmul_rn(act<GLU == 1 ? ActKind::Silu : ActKind::GeluTanh>(gs), us);
      }
      a.y[row0 + warp + NW * r] = y;
      ys[warp + NW * r] = y;
    }
  }
  __syncthreads();
  if (warp != 0) return;
  // The block: lanes 8 .. 31 repeat lanes 0 .. 7's values for the shuffles and store nothing.
  const int kk = lane & 7;
  float u[4], yw[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    u[e] = ys[4 * kk + e];
    yw[e] = GLU == 0 && a.nw ? __fmul_rn(u[e], wv[e]) : u[e];
  }
  emit_q8s_block8(yw, lane, lane < 8, a.oq, row0 + 4 * kk, a.order, a.ods + blockIdx.x);
  if constexpr (GLU == 0) {
    const float ss = defer_block_ss(u);
    if (lane == 0) a.part[blockIdx.x] = ss;
  }
}

// one_wave_sms > 0: launched only if the grid fits one wave of the instance on that many SMs.
template <class K>
cudaError_t launch_one_wave(K kern, unsigned grid, dim3 block, int one_wave_sms, cudaStream_t s, const EmitArgs& a) {
  if (one_wave_sms > 0) {
    int per_sm = 0;
    const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, (int)block.x, 0);
    if (e != cudaSuccess) return e;
    if ((int64_t)grid > (int64_t)per_sm * one_wave_sms) return cudaErrorNotSupported;
  }
  return launch_kernel(kern, dim3(grid), block, 0, s, a);
}
template <QType T, int AO, int NW>
cudaError_t launch_w(const EmitArgs& a, int wpr, unsigned grid, int one_wave_sms, cudaStream_t s) {
  const dim3 block(32 * NW);
  if (wpr == 1) return launch_one_wave(mmvs_emit_kernel<T, AO, NW, 1>, grid, block, one_wave_sms, s, a);
  if (wpr == 2) return launch_one_wave(mmvs_emit_kernel<T, AO, NW, 2>, grid, block, one_wave_sms, s, a);
  return launch_one_wave(mmvs_emit_kernel<T, AO, NW, 4>, grid, block, one_wave_sms, s, a);
}
template <QType T, int AO>
cudaError_t launch_ao(const EmitArgs& a, int wpr, int warps, bool both, unsigned grid, int one_wave_sms, cudaStream_t s) {
  if (both && (warps != 8 || wpr != 1)) return cudaErrorNotSupported;
#ifndef MEMRA_REDUCED_INSTANCES
  if (both) return launch_one_wave(mmvs_emit_kernel<T, AO, 8, 1, 0, true>, grid, dim3(32 * 8), one_wave_sms, s, a);
  if (warps == 8) return launch_w<T, AO, 8>(a, wpr, grid, one_wave_sms, s);
  if (warps == 32) return launch_w<T, AO, 32>(a, wpr, grid, one_wave_sms, s);
#endif
  return warps == 16 && !both ? launch_w<T, AO, 16>(a, wpr, grid, one_wave_sms, s) : cudaErrorNotSupported;
}
// The GLU form: 16 warps (8 with one warp per row, MmvsGluEmitParams::warps), the interleaved input order.
template <QType T, int GLU>
cudaError_t launch_glu_g(const EmitArgs& a, int wpr, int warps, unsigned grid, cudaStream_t s) {
  if (warps == 8) {
#ifndef MEMRA_REDUCED_INSTANCES
    if (wpr == 1) return launch_kernel(mmvs_emit_kernel<T, 1, 8, 1, GLU>, dim3(grid), dim3(32 * 8), 0, s, a);
#endif
    return cudaErrorNotSupported;
  }
  const dim3 block(32 * 16);
  if (wpr == 1) return launch_kernel(mmvs_emit_kernel<T, 1, 16, 1, GLU>, dim3(grid), block, 0, s, a);
  if (wpr == 2) return launch_kernel(mmvs_emit_kernel<T, 1, 16, 2, GLU>, dim3(grid), block, 0, s, a);
  return launch_kernel(mmvs_emit_kernel<T, 1, 16, 4, GLU>, dim3(grid), block, 0, s, a);
}

bool aligned(const void* p, uintptr_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; }

// The arguments common to both forms from the launch's MmvsParams (m = 1, act_il; the rest is
// each launcher's); false where the matrix planes or the input are not as the kernels need them.
bool common_args(const MmvsParams& m, EmitArgs& a, int& wpr) {
  if (!m.w || !m.y || !m.xq || !m.xds || m.m != 1 || !m.act_il || m.n_extra != 0 || m.n_rows <= 0 || m.n_rows % 32 ||
      !aligned(m.xq, 16) || !aligned(m.xds, 16) || (m.split_max_warps != 2 && m.split_max_warps != 4) ||
      m.split_min_tasks < 65 || (m.act_il_q6k && m.w_type != QType::Q6_K))
    return false;
  const sp::Layout L = sp::layout(m.w_type, m.interleaved);
  const auto planes_ok = [&](const void* w, const void* d, const void* aux) {
    return w && aligned(w, 16) && (L.d_src < 0 || (d && aligned(d, 4))) && (L.aux_src < 0 || (aux && aligned(aux, 16)));
  };
  if (!planes_ok(m.w, m.w_d, m.w_aux) || (m.w2 && !planes_ok(m.w2, m.w2_d, m.w2_aux))) return false;
  const sp::Plan pl = sp::plan(m.w_type, m.n_rows, m.n_cols, m.interleaved);
  const auto src = [](const void* w, const void* d, const void* aux) {
    return Src{static_cast<const uint8_t*>(w), static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(aux)};
  };
  a = EmitArgs{};
  a.w = src(m.w, m.w_d, m.w_aux);
  a.w2 = src(m.w2, m.w2_d, m.w2_aux);
  a.g = {pl.body_row_bytes, pl.blocks_per_row, m.n_cols / 64, m.interleaved};
  a.n_tasks = (int)(m.n_cols / 64);
  a.k = m.n_cols;
  a.preload = m.preload;
  a.xq = m.xq;
  a.xds = static_cast<const float2*>(m.xds);
  a.y = m.y;
  wpr = mmvs::warps_per_row(m.w_type, a.n_tasks, m.split_k, m.split_max_warps, m.split_min_tasks);
  return true;
}

}  // namespace

cudaError_t launch_mmvs_emit_norm(const MmvsEmitNormParams& p, cudaStream_t stream) {
  const MmvsParams& m = p.mv;
  EmitArgs a;
  int wpr = 1;
  if (!common_args(m, a, wpr) || !m.residual || m.glu != 0 || m.w2 || m.norm_ss || m.n_rows / 32 > kNormDeferMaxPartials ||
      !p.out_xq || !p.out_xds || !p.partials || (p.warps != 8 && p.warps != 16 && p.warps != 32) || !aligned(p.out_xds, 8))
    return cudaErrorInvalidValue;
  if (!mmvs_supported(m.w_type, m.n_cols)) return cudaErrorNotSupported;
  a.res = m.residual;
  a.nw = p.norm_w;
  a.oq = p.out_xq;
  a.ods = static_cast<float2*>(p.out_xds);
  a.order = p.out_il ? q8s::Order::il : q8s::Order::plain;
  a.part = p.partials;
  const unsigned grid = (unsigned)(m.n_rows / 32);
  return mmvs::by_type(m.w_type, cudaErrorNotSupported, [&](auto T) {
    constexpr QType t = T.value;
    if constexpr (t == QType::Q6_K)
      if (m.act_il_q6k) return launch_ao<t, 2>(a, wpr, p.warps, p.both_groups, grid, p.one_wave_sms, stream);
    return launch_ao<t, 1>(a, wpr, p.warps, p.both_groups, grid, p.one_wave_sms, stream);
  });
}

cudaError_t launch_mmvs_glu_emit(const MmvsGluEmitParams& p, cudaStream_t stream) {
  const MmvsParams& m = p.mv;
  EmitArgs a;
  int wpr = 1;
  if (!common_args(m, a, wpr) || (m.glu != 1 && m.glu != 2) || !m.w2 || m.residual || m.act_il_q6k || !p.out_xq ||
      (p.warps != 8 && p.warps != 16) ||
      !p.out_xds || !aligned(p.out_xds, 8) || (p.out_order == q8s::Order::il_q6k && m.n_rows % 256) ||
      (m.norm_ss && (m.norm_ss_n < 1 || m.norm_ss_n > kNormDeferMaxPartials || (m.norm_ss_final && m.norm_ss_n != 1))))
    return cudaErrorInvalidValue;
  if (!mmvs_supported(m.w_type, m.n_cols)) return cudaErrorNotSupported;
  a.nss = m.norm_ss;
  a.n_nss = m.norm_ss_n;
  a.nss_eps = m.norm_eps;
  a.nsf = m.norm_ss_final;
  a.oq = p.out_xq;
  a.ods = static_cast<float2*>(p.out_xds);
  a.order = p.out_order;
  const unsigned grid = (unsigned)(m.n_rows / 32);
  return mmvs::by_type(m.w_type, cudaErrorNotSupported, [&](auto T) {
    if (m.glu == 1) return launch_glu_g<T.value, 1>(a, wpr, p.warps, grid, stream);
    return launch_glu_g<T.value, 2>(a, wpr, p.warps, grid, stream);
  });
}

}  // namespace memra::cuda
