// The mmvs decode matvec (mmvs.h) and its q8s activation quantizer.
#include <cuda_fp16.h>

#include <type_traits>

#include "act/act_math.cuh"
#include "common/bulk_copy.cuh"
#include "common/launch.cuh"
#include "matvec/mmvs.h"
#include "matvec/mmvs_dispatch.h"
#include "matvec/mmvs_task.cuh"
#include "matvec/split_layout.h"
#include "norm/norm_kernels.h"
#include "norm/norm_math.cuh"
#include "norm/q8_1_emit.cuh"

namespace memra::cuda {
namespace {

using mmvs::Geo;
using mmvs::Task;
constexpr int kWarps = 4;  // rows per CTA

struct Seg {
  mmvs::Src src;
  int64_t body_row_bytes;
  int64_t row_end;  // rows of this and the earlier segments (row pairs: the first halves')
  float* y;
  int64_t ldy;
};

struct Args {
  mmvs::Src w;
  mmvs::Src w2;
  Geo g;
  int64_t n_rows;  // all segments
  int n_seg;
  Seg seg[3];
  int n_tasks;
  int wpr;  // warps per row (mmvs::warps_per_row): 1, 2 or 4
  int m;
  bool preload;  // MmvsParams::preload
  const int8_t* xq;
  const float2* xds;
  int64_t k;
  float* y;
  int64_t ldy;
  const float* res;  // MmvsParams::residual (segment 0 only) or null
  int64_t ldres;
  int64_t t2_begin;  // the first row of the w_type2 segments (the pair kernel only)
  bool act_il;       // MmvsParams::act_il (the interleaved-activation instances)
  bool act_q6k;      // MmvsParams::act_il_q6k (the Q6_K variant's instances)
  int64_t pair_off;  // MmvsParams::row_pairs: a warp's second row is row + pair_off (GLU 3)
  bool pair_one;     // MmvsParams::row_pair_one_task: the row pairs with one task per row in flight
  const float* nss;  // MmvsParams::norm_ss (the deferred norm's partials, or its scales: nsf) or null
  int n_nss;
  float nss_eps;
  bool nsf;  // MmvsParams::norm_ss_final
  // Row pairs (GLU 3) over segments (MmvsParams::row_pairs with extra matrices): segment s's second
  // row is row + seg_pair_off[s]; Seg::row_end then counts the segments' first halves. Last in the
  // struct, so the other members keep their parameter offsets.
  int64_t seg_pair_off[3];
};

// Tasks per lane whose loads are in flight together (t0, t0 + 32). 4 was measured 2.2% slower
// end to end on the H200 (qwen3-8b q4_k_m tg128: 267.3 vs 273.4 tok/s, bench/notes/mmvs.md) and
// removed.
constexpr int kDepth = 2;

// GLU: 0 none, 1 SiLU, 2 GELU-tanh (with the partner matrix w2), 3 row pairs (MmvsParams::row_pairs:
// the "partner" is row + a.pair_off of the same matrix, each row written on its own with the plain
// epilogue; a.n_rows is then the first half's count), 5 the row pairs of GLU 3 over the segments
// of a q/k/v launch (each matrix paired within itself: the second row is row + a.seg_pair_off[s];
// its own value so that the GLU 3 instances keep their code), 4 SiLU GLU row pairs (rows row and
// row + a.pair_off of both w and w2, each output row as GLU 1 writes it; D = 1: four tasks per
// lane in flight, as the GLU's two per matrix). D: tasks per row in flight per lane (kDepth;
// 1 for the row pairs that keep the plain launch's registers, MmvsParams::row_pair_one_task: the
// lane's tasks are still summed in increasing order, so the same bits). A row is served by a.wpr
// consecutive warps of the CTA (sub-warp s takes the task groups s, s + wpr, ...: tasks
// 32 * group + lane); per lane the tasks are summed in increasing order, then the warp's xor
// tree, then the sub-warps' partials in order s = 0, 1, ... . None of it depends on MM, so every
// instance gives a row the same bits. AO & 3: the activation's order (q8s::Order: 0 plain, 1
// interleaved, 2 the Q6_K variant, for Q6_K tasks only). GLU 8: row quads over the segments of a
// q/k/v launch (MmvsParams::row_quads): each warp serves rows row + c * a.seg_pair_off[s], c = 0..3
// (a.seg_pair_off[s] = the segment's rows / 4; Seg::row_end counts first quarters), each written as
// the plain launch writes it (no residual), the four rows' tasks loaded together (wt, ut, pt, qt).
template <QType T, int MM, int GLU, int AO = 0, int D = kDepth, bool NS = false>
__device__ __forceinline__ void mmvs_body(const Args& a) {
  static_assert(AO != 2 || T == QType::Q6_K, "the Q6_K order is read by Q6_K tasks only");
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wpr = a.wpr, sub = warp % wpr;
  int64_t row = (int64_t)blockIdx.x * (kWarps / wpr) + warp / wpr;
  const bool live = row < a.n_rows;
  if (wpr == 1 && !live) return;  // with wpr > 1 every warp reaches the partials' barrier
  // Which matrix (segment) the row belongs to; segment 0 is the plain case.
  mmvs::Src w = a.w;
  float* y = a.y;
  int64_t ldy = a.ldy;
  Geo g = a.g;
  constexpr bool kPairs = GLU == 3 || GLU == 5;  // two rows of one matrix per warp
  constexpr bool kQuads = GLU == 8;              // four rows of one matrix per warp
  [[maybe_unused]] int64_t seg_poff = a.seg_pair_off[0];  // GLU 5 / 8: this segment's pair (quad) offset
  if (live && a.n_seg > 1 && row >= a.seg[0].row_end) {
    const int sg = row >= a.seg[1].row_end ? 2 : 1;
    row -= a.seg[sg - 1].row_end;
    w = a.seg[sg].src;
    y = a.seg[sg].y;
    ldy = a.seg[sg].ldy;
    g.body_row_bytes = (size_t)a.seg[sg].body_row_bytes;
    if constexpr (GLU == 5 || kQuads) seg_poff = a.seg_pair_off[sg];
  }
  // The warp's second row (kPairs): row + a.pair_off (GLU 3), or + its segment's offset (GLU 5).
  const auto poff = [&]() -> int64_t {
    if constexpr (GLU == 5) return seg_poff;
    else return a.pair_off;
  };
  static_assert(GLU != 4 || D == 1, "the GLU row pairs hold one task per row in flight");
  static_assert(!kQuads || MM == 1, "the row quads are one-token launches");
  constexpr bool kFour = GLU == 4 || kQuads;  // four accumulators per output row j
  constexpr int kAcc = kFour ? 4 : 2;  // accumulators per output row j (GLU 4: both rows' gate, up; 8: the quad's rows)
  float acc[MM], acc2[MM], acc3[MM], acc4[MM];
#pragma unroll
  for (int j = 0; j < MM; ++j) acc[j] = acc2[j] = acc3[j] = acc4[j] = 0.0f;
  const int64_t kb = a.k / 32;
  Task<T> wt[D], ut[D], pt[D], qt[D];
  const int first = lane + 32 * sub, step = 32 * wpr;  // a lane's tasks: first, first + step, ...
  const int n_tasks = live ? a.n_tasks : 0;
  auto issue = [&](int t0) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      if (t0 + step * d < n_tasks) {
        wt[d].load(w, row, t0 + step * d, g);
        if constexpr (kQuads) {
          ut[d].load(w, row + seg_poff, t0 + step * d, g);
          pt[d].load(w, row + 2 * seg_poff, t0 + step * d, g);
          qt[d].load(w, row + 3 * seg_poff, t0 + step * d, g);
        } else if constexpr (kPairs) ut[d].load(w, row + poff(), t0 + step * d, g);
        else if constexpr (GLU != 0) ut[d].load(a.w2, row, t0 + step * d, a.g);
        if constexpr (GLU == 4) {
          pt[d].load(w, row + a.pair_off, t0 + step * d, g);
          qt[d].load(a.w2, row + a.pair_off, t0 + step * d, a.g);
        }
      }
    }
  };
  // The first tasks' weights are requested before the PDL wait: weights are never written
  // during a step, so they stream in while the previous kernel drains (a.preload = false: after).
  if (a.preload && first < n_tasks) issue(first);
  pdl_wait();
  // The residual epilogue's inputs are requested now (earlier kernels write them), so their load
  // overlaps the row's dot products instead of adding a round trip to every CTA's end. Plain
  // launches only (launch_mmvs), and compiled out of the GLU ones: there the register would have
  // made the Q4_K cap-6 instance spill.
  // MmvsParams::norm_ss: this lane's partial of the deferred norm, requested now, summed at the
  // epilogue (m = 1; the m > 1 instances load row j's partials there).
  float nss0 = 0.0f;
  if constexpr (NS && MM == 1) nss0 = a.nsf ? a.nss[0] : defer_lane_sum(a.nss, a.n_nss, lane);
  float resv[MM] = {}, resv2[MM] = {};
  if ((GLU == 0 || kPairs) && a.res && live && sub == 0 && lane == 0) {
#pragma unroll
    for (int j = 0; j < MM; ++j) {
      resv[j] = j < a.m ? a.res[j * a.ldres + row] : 0.0f;
      if constexpr (kPairs) resv2[j] = j < a.m ? a.res[j * a.ldres + row + poff()] : 0.0f;
    }
  }
  for (int t0 = first; t0 < n_tasks; t0 += step * D) {
    if (t0 != first || !a.preload) issue(t0);
#pragma unroll
    for (int j = 0; j < MM; ++j) {
      if (j < a.m) {
        const int8_t* xq = a.xq + j * a.k;
        const float2* xds = a.xds + j * kb;
        // where the tasks read the row: the plain q8s order, the interleaved one (MmvsParams::act_il)
        // or its Q6_K variant (act_il_q6k)
        const auto x = [&] {
          if constexpr (AO == 2)
            return mmvs::GXQ6{xq, xds};
          else if constexpr (AO == 1)
            return mmvs::GXI{xq, xds};
          else
            return mmvs::GX{xq, xds};
        }();
#pragma unroll
        for (int d = 0; d < D; ++d) {
          if (t0 + step * d < n_tasks) {
            acc[j] = __fadd_rn(acc[j], wt[d].dot(t0 + step * d, x));
            if constexpr (GLU != 0) acc2[j] = __fadd_rn(acc2[j], ut[d].dot(t0 + step * d, x));
            if constexpr (kFour) {
              acc3[j] = __fadd_rn(acc3[j], pt[d].dot(t0 + step * d, x));
              acc4[j] = __fadd_rn(acc4[j], qt[d].dot(t0 + step * d, x));
            }
          }
        }
      }
    }
  }
  // m = 1: the deferred norm's scale before the rows' xor trees and the sub-warp barrier, so its
  // shuffles and square root can interleave with theirs instead of following them (the same
  // operations in the same order: the same bits).
  float ns1 = 1.0f;
  if constexpr (NS && MM == 1) ns1 = a.nsf ? nss0 : norm_scale(warp_sum_f32(nss0), (int)a.k, a.nss_eps);
#pragma unroll
  for (int j = 0; j < MM; ++j) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      acc[j] = __fadd_rn(acc[j], __shfl_xor_sync(0xffffffffu, acc[j], o));
      if constexpr (GLU != 0) acc2[j] = __fadd_rn(acc2[j], __shfl_xor_sync(0xffffffffu, acc2[j], o));
      if constexpr (kFour) {
        acc3[j] = __fadd_rn(acc3[j], __shfl_xor_sync(0xffffffffu, acc3[j], o));
        acc4[j] = __fadd_rn(acc4[j], __shfl_xor_sync(0xffffffffu, acc4[j], o));
      }
    }
  }
  if (wpr > 1) {  // the row's partials, summed by its first warp in sub-warp order
    __shared__ float part[kWarps][kAcc][MM];
    if (lane == 0) {
#pragma unroll
      for (int j = 0; j < MM; ++j) {
        part[warp][0][j] = acc[j];
        part[warp][1][j] = acc2[j];
        if constexpr (kFour) {
          part[warp][2][j] = acc3[j];
          part[warp][3][j] = acc4[j];
        }
      }
    }
    __syncthreads();
    if (sub != 0 || !live) return;
#pragma unroll
    for (int j = 0; j < MM; ++j)
      for (int s = 1; s < wpr; ++s) {
        acc[j] = __fadd_rn(acc[j], part[warp + s][0][j]);
        if constexpr (GLU != 0) acc2[j] = __fadd_rn(acc2[j], part[warp + s][1][j]);
        if constexpr (kFour) {
          acc3[j] = __fadd_rn(acc3[j], part[warp + s][2][j]);
          acc4[j] = __fadd_rn(acc4[j], part[warp + s][3][j]);
        }
      }
  }
  // The deferred norm's scale (NS: the instances launched with MmvsParams::norm_ss; all lanes of the
  // row's first warp are here for the xor tree). Without it the epilogue is the one before the key.
  float ns[MM];
#pragma unroll
  for (int j = 0; j < MM; ++j) {
    ns[j] = ns1;
    if constexpr (NS && MM > 1) {
      if (a.nsf) {
        ns[j] = j < a.m ? a.nss[j] : 1.0f;
      } else {
        const float pj = j < a.m ? defer_lane_sum(a.nss + j * a.n_nss, a.n_nss, lane) : 0.0f;
        ns[j] = norm_scale(warp_sum_f32(pj), (int)a.k, a.nss_eps);
      }
    }
  }
  const auto sc = [&](float v, int j) {
    if constexpr (NS) return __fmul_rn(v, ns[j]);
    else return v;
  };
  if constexpr (kQuads) {  // four rows of the plain epilogue (the launcher refuses a residual)
    if (lane == 0) {
      y[row] = sc(acc[0], 0);
      y[row + seg_poff] = sc(acc2[0], 0);
      y[row + 2 * seg_poff] = sc(acc3[0], 0);
      y[row + 3 * seg_poff] = sc(acc4[0], 0);
    }
    return;
  }
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < MM; ++j) {
      if (j < a.m) {
        float v = sc(acc[j], j);
        // As launch_glu computes it: __fmul_rn(act(gate), up).
        if constexpr (GLU == 1 || GLU == 4) v = __fmul_rn(act<ActKind::Silu>(v), sc(acc2[j], j));
        if constexpr (GLU == 2) v = __fmul_rn(act<ActKind::GeluTanh>(v), sc(acc2[j], j));
        if ((GLU == 0 || kPairs) && a.res) v = __fadd_rn(resv[j], v);
        y[j * ldy + row] = v;
        if constexpr (kPairs) y[j * ldy + row + poff()] = a.res ? __fadd_rn(resv2[j], acc2[j]) : sc(acc2[j], j);
        if constexpr (GLU == 4) y[j * ldy + row + a.pair_off] = __fmul_rn(act<ActKind::Silu>(sc(acc3[j], j)), sc(acc4[j], j));
      }
    }
  }
}

template <QType T, int MM, int GLU, bool NS = false>
__global__ void __launch_bounds__(32 * kWarps) mmvs_kernel(const Args a) {
  mmvs_body<T, MM, GLU, 0, kDepth, NS>(a);
}

// MmvsParams::act_il (m = 1): the activation in the interleaved q8s order (AO 1) or its Q6_K
// variant (AO 2, plain Q6_K launches), uncapped or capped.
template <QType T, int GLU, int MINB, int AO = 1, int D = kDepth, bool NS = false>
__global__ void __launch_bounds__(32 * kWarps, MINB) mmvs_ail_kernel(const Args a) {
  mmvs_body<T, 1, GLU, AO, D, NS>(a);
}

// The same body compiled for at least MINB CTAs per SM (__launch_bounds__ minimum blocks; MmvsParams
// min_blocks, m = 1): fewer registers, perhaps spills, more CTAs resident; never another
// operation or order, so the same bits (kernel-check mmvs_id mmvs_inst/*/vs_default_bytes).
template <QType T, int MM, int GLU, int MINB>
__global__ void __launch_bounds__(32 * kWarps, MINB) mmvs_kernel_cap(const Args a) {
  mmvs_body<T, MM, GLU>(a);
}

// One launch of two weight types (MmvsParams::w_type2): a CTA's rows are all of one type (the
// launcher checks that the type-T2 rows start a CTA), and each runs the body of its own type, so
// every row gets the operations, order and bits of a launch of that type alone. m = 1, plain;
// AIL: the activation in the interleaved order (MmvsParams::act_il).
// The mixed q/k/v launch with row pairs (MmvsParams::row_pairs with w_type2 segments): the GLU 5
// rows of T with D1 tasks per row in flight, then those of T2 with D2 (uncapped).
template <QType T, QType T2, int D1, int D2, bool NS = false>
__global__ void __launch_bounds__(32 * kWarps) mmvs_pair_rp_kernel(const Args a) {
  if ((int64_t)blockIdx.x * (kWarps / a.wpr) >= a.t2_begin)
    mmvs_body<T2, 1, 5, 1, D2, NS>(a);
  else
    mmvs_body<T, 1, 5, 1, D1, NS>(a);
}

// MmvsParams::row_quads: the GLU 8 body (row quads over the q/k/v segments) with D tasks per row in
// flight, compiled for at least MINB CTAs per SM; the mixed form runs each CTA's rows with its type's
// body as mmvs_pair_rp_kernel does.
template <QType T, int D, int MINB, bool NS>
__global__ void __launch_bounds__(32 * kWarps, MINB) mmvs_quad_kernel(const Args a) {
  mmvs_body<T, 1, 8, 1, D, NS>(a);
}
template <QType T, QType T2, int D1, int D2, int MINB, bool NS>
__global__ void __launch_bounds__(32 * kWarps, MINB) mmvs_pair_rq_kernel(const Args a) {
  if ((int64_t)blockIdx.x * (kWarps / a.wpr) >= a.t2_begin)
    mmvs_body<T2, 1, 8, 1, D2, NS>(a);
  else
    mmvs_body<T, 1, 8, 1, D1, NS>(a);
}

template <QType T, QType T2, int MINB, bool AIL = false, bool NS = false>
__global__ void __launch_bounds__(32 * kWarps, MINB) mmvs_pair_kernel(const Args a) {
  if ((int64_t)blockIdx.x * (kWarps / a.wpr) >= a.t2_begin)
    mmvs_body<T2, 1, 0, AIL ? 1 : 0, kDepth, NS>(a);
  else
    mmvs_body<T, 1, 0, AIL ? 1 : 0, kDepth, NS>(a);
}

template <QType T, int MM, int MINB = 1>
cudaError_t launch_m(const Args& a, int glu, cudaStream_t s) {
  const int rows_per_cta = kWarps / a.wpr;
  const dim3 grid((unsigned)((a.n_rows + rows_per_cta - 1) / rows_per_cta)), block(32 * kWarps);
  if constexpr (MINB > 1) {
    if (glu == 0) return launch_kernel(mmvs_kernel_cap<T, MM, 0, MINB>, grid, block, 0, s, a);
    if (glu == 1) return launch_kernel(mmvs_kernel_cap<T, MM, 1, MINB>, grid, block, 0, s, a);
    return launch_kernel(mmvs_kernel_cap<T, MM, 2, MINB>, grid, block, 0, s, a);
  }
  if (a.nss) {  // MmvsParams::norm_ss: the verify batches (m > 1, uncapped) only
    if constexpr (MM > 1 && MINB == 1) {
      if (glu == 0) return launch_kernel(mmvs_kernel<T, MM, 0, true>, grid, block, 0, s, a);
      if (glu == 1) return launch_kernel(mmvs_kernel<T, MM, 1, true>, grid, block, 0, s, a);
      return launch_kernel(mmvs_kernel<T, MM, 2, true>, grid, block, 0, s, a);
    }
    return cudaErrorNotSupported;
  }
  if (glu == 0) return launch_kernel(mmvs_kernel<T, MM, 0>, grid, block, 0, s, a);
  if (glu == 1) return launch_kernel(mmvs_kernel<T, MM, 1>, grid, block, 0, s, a);
  return launch_kernel(mmvs_kernel<T, MM, 2>, grid, block, 0, s, a);
}

// Host-side GLU codes of launch_ail for MmvsParams::glu_one_task: the SiLU / GELU GLU (mmvs_body GLU 1 /
// 2) with one task per matrix in flight per lane (D = 1).
constexpr int kGluSiluD1 = 6, kGluGeluD1 = 7;

template <QType T, int MINB, bool NS>
cudaError_t launch_ail_ns(const Args& a, int glu, cudaStream_t s) {
  const int rows_per_cta = kWarps / a.wpr;
  const dim3 grid((unsigned)((a.n_rows + rows_per_cta - 1) / rows_per_cta)), block(32 * kWarps);
  if (glu == 0) return launch_kernel(mmvs_ail_kernel<T, 0, MINB, 1, kDepth, NS>, grid, block, 0, s, a);
  if (glu == 1) return launch_kernel(mmvs_ail_kernel<T, 1, MINB, 1, kDepth, NS>, grid, block, 0, s, a);
  if (glu == 3) {  // row pairs: uncapped and at 5 and 6 CTAs per SM, two or one task per row in flight
    if constexpr (MINB == 1 || MINB == 5 || MINB == 6) {
      if (a.pair_one) return launch_kernel(mmvs_ail_kernel<T, 3, MINB, 1, 1, NS>, grid, block, 0, s, a);
      return launch_kernel(mmvs_ail_kernel<T, 3, MINB, 1, kDepth, NS>, grid, block, 0, s, a);
    }
    return cudaErrorNotSupported;
  }
  if (glu == 5) {  // row pairs over a q/k/v launch's segments: uncapped only, two or one task per row
    if constexpr (MINB == 1) {
      if (a.pair_one) return launch_kernel(mmvs_ail_kernel<T, 5, 1, 1, 1, NS>, grid, block, 0, s, a);
      return launch_kernel(mmvs_ail_kernel<T, 5, 1, 1, kDepth, NS>, grid, block, 0, s, a);
    }
    return cudaErrorNotSupported;
  }
  if (glu == kGluSiluD1 || glu == kGluGeluD1) {  // MmvsParams::glu_one_task: uncapped and at 5 and 6
    if constexpr (MINB == 1 || MINB == 5 || MINB == 6) {
      if (glu == kGluSiluD1) return launch_kernel(mmvs_ail_kernel<T, 1, MINB, 1, 1, NS>, grid, block, 0, s, a);
      return launch_kernel(mmvs_ail_kernel<T, 2, MINB, 1, 1, NS>, grid, block, 0, s, a);
    }
    return cudaErrorNotSupported;
  }
  if (glu == 4) {  // SiLU GLU row pairs, one task per row and matrix: uncapped and at 5 and 6
    if constexpr (MINB == 1 || MINB == 5 || MINB == 6) return launch_kernel(mmvs_ail_kernel<T, 4, MINB, 1, 1, NS>, grid, block, 0, s, a);
    return cudaErrorNotSupported;
  }
  return launch_kernel(mmvs_ail_kernel<T, 2, MINB, 1, kDepth, NS>, grid, block, 0, s, a);
}
// MmvsParams::norm_ss: the NS instances (uncapped and at 5 and 6 only); without it the instances
// as before the key.
template <QType T, int MINB>
cudaError_t launch_ail_m(const Args& a, int glu, cudaStream_t s) {
  if (!a.nss) return launch_ail_ns<T, MINB, false>(a, glu, s);
  if constexpr (MINB == 1 || MINB == 5 || MINB == 6) return launch_ail_ns<T, MINB, true>(a, glu, s);
  return cudaErrorNotSupported;
}
// The interleaved-activation instances: uncapped and at 5 and 6 CTAs per SM, and at 8 and 12 except
// in the reduced build.
template <QType T>
cudaError_t launch_ail(const Args& a, int glu, int min_blocks, cudaStream_t s) {
  if (min_blocks == 6) return launch_ail_m<T, 6>(a, glu, s);
  if (min_blocks == 5) return launch_ail_m<T, 5>(a, glu, s);
#ifndef MEMRA_REDUCED_INSTANCES
  if (min_blocks == 8) return launch_ail_m<T, 8>(a, glu, s);
  if (min_blocks == 12) return launch_ail_m<T, 12>(a, glu, s);
#endif
  return min_blocks == 0 ? launch_ail_m<T, 1>(a, glu, s) : cudaErrorNotSupported;
}

// MmvsParams::act_il_q6k: plain Q6_K launches reading the Q6_K variant of the order, at the same
// caps as launch_ail.
template <int MINB>
cudaError_t launch_q6k_m(const Args& a, cudaStream_t s) {
  const int rows_per_cta = kWarps / a.wpr;
  const dim3 grid((unsigned)((a.n_rows + rows_per_cta - 1) / rows_per_cta)), block(32 * kWarps);
  return launch_kernel(mmvs_ail_kernel<QType::Q6_K, 0, MINB, 2>, grid, block, 0, s, a);
}
cudaError_t launch_q6k(const Args& a, int min_blocks, cudaStream_t s) {
  if (min_blocks == 6) return launch_q6k_m<6>(a, s);
#ifndef MEMRA_REDUCED_INSTANCES
  if (min_blocks == 5) return launch_q6k_m<5>(a, s);
  if (min_blocks == 8) return launch_q6k_m<8>(a, s);
  if (min_blocks == 12) return launch_q6k_m<12>(a, s);
#endif
  return min_blocks == 0 ? launch_q6k_m<1>(a, s) : cudaErrorNotSupported;
}

using mmvs::by_type;

template <QType T>
cudaError_t launch_t(const Args& a, int glu, int min_blocks, cudaStream_t s) {
  if constexpr (T == QType::Q6_K)
    if (a.act_q6k) return launch_q6k(a, min_blocks, s);
  if (a.act_il) return launch_ail<T>(a, glu, min_blocks, s);
#ifndef MEMRA_REDUCED_INSTANCES
  if (a.m == 1 && min_blocks == 5) return launch_m<T, 1, 5>(a, glu, s);
  if (a.m == 1 && min_blocks == 6) return launch_m<T, 1, 6>(a, glu, s);
  if (a.m == 1 && min_blocks == 8) return launch_m<T, 1, 8>(a, glu, s);
  if (a.m == 1 && min_blocks == 12) return launch_m<T, 1, 12>(a, glu, s);
  if (a.m == 1) return launch_m<T, 1>(a, glu, s);
  if (a.m == 2) return launch_m<T, 2>(a, glu, s);
  if (a.m <= 4) return launch_m<T, 4>(a, glu, s);
#endif
  return launch_m<T, 8>(a, glu, s);
}

// Row pairs on verify rows (MmvsParams::row_pairs at m = 2..8, kernels.mmvs_row_pairs_verify): the m
// instances' body with GLU 3 (one matrix) or 5 (q/k/v segments), uncapped, the plain activation
// order, two tasks per row in flight; NS with the deferred norm's scale. The reduced build has the
// m = 8 form only (rows past a.m idle, as launch_t's).
template <QType T, int MM>
cudaError_t launch_pairs_mm(const Args& a, int glu, cudaStream_t s) {
  const int rows_per_cta = kWarps / a.wpr;
  const dim3 grid((unsigned)((a.n_rows + rows_per_cta - 1) / rows_per_cta)), block(32 * kWarps);
  if (glu == 3) return a.nss ? launch_kernel(mmvs_kernel<T, MM, 3, true>, grid, block, 0, s, a)
                             : launch_kernel(mmvs_kernel<T, MM, 3>, grid, block, 0, s, a);
  if (glu == 5) return a.nss ? launch_kernel(mmvs_kernel<T, MM, 5, true>, grid, block, 0, s, a)
                             : launch_kernel(mmvs_kernel<T, MM, 5>, grid, block, 0, s, a);
  return cudaErrorNotSupported;
}
template <QType T>
cudaError_t launch_pairs_m(const Args& a, int glu, cudaStream_t s) {
#ifndef MEMRA_REDUCED_INSTANCES
  if (a.m == 2) return launch_pairs_mm<T, 2>(a, glu, s);
  if (a.m <= 4) return launch_pairs_mm<T, 4>(a, glu, s);
#endif
  return launch_pairs_mm<T, 8>(a, glu, s);
}

template <class K>
cudaError_t kernel_spills(K kernel, bool* spills) {
  cudaFuncAttributes fa{};
  const cudaError_t e = cudaFuncGetAttributes(&fa, kernel);
  if (e == cudaSuccess) *spills = fa.localSizeBytes > 0;
  return e;
}
cudaError_t q6k_cap_spills(int min_blocks, bool* spills) {
  if (min_blocks == 6) return kernel_spills(mmvs_ail_kernel<QType::Q6_K, 0, 6, 2>, spills);
#ifdef MEMRA_REDUCED_INSTANCES
  return cudaSuccess;
#else
  if (min_blocks == 5) return kernel_spills(mmvs_ail_kernel<QType::Q6_K, 0, 5, 2>, spills);
  return kernel_spills(min_blocks == 8 ? mmvs_ail_kernel<QType::Q6_K, 0, 8, 2> : mmvs_ail_kernel<QType::Q6_K, 0, 12, 2>, spills);
#endif
}
template <QType T, int GLU>
cudaError_t cap_spills_g(int min_blocks, bool act_il, bool* spills) {
  if (act_il && min_blocks == 6) return kernel_spills(mmvs_ail_kernel<T, GLU, 6>, spills);
  if (act_il && min_blocks == 5) return kernel_spills(mmvs_ail_kernel<T, GLU, 5>, spills);
#ifdef MEMRA_REDUCED_INSTANCES
  return cudaSuccess;  // no other capped instances in this build
#else
  if (act_il) return kernel_spills(min_blocks == 8 ? mmvs_ail_kernel<T, GLU, 8> : mmvs_ail_kernel<T, GLU, 12>, spills);
  if (min_blocks == 5) return kernel_spills(mmvs_kernel_cap<T, 1, GLU, 5>, spills);
  if (min_blocks == 6) return kernel_spills(mmvs_kernel_cap<T, 1, GLU, 6>, spills);
  if (min_blocks == 8) return kernel_spills(mmvs_kernel_cap<T, 1, GLU, 8>, spills);
  return kernel_spills(mmvs_kernel_cap<T, 1, GLU, 12>, spills);
#endif
}
template <QType T>
cudaError_t cap_spills_t(int glu, int min_blocks, bool act_il, bool* spills) {
  if (glu == 0) return cap_spills_g<T, 0>(min_blocks, act_il, spills);
  if (glu == 1) return cap_spills_g<T, 1>(min_blocks, act_il, spills);
  return cap_spills_g<T, 2>(min_blocks, act_il, spills);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// f(integral_constant<QType, T>, integral_constant<QType, T2>) for the compiled pairs (w_type,
// w_type2), the q/k/v of a layer whose v has another type: Q4_K + Q6_K (q4_k_m), Q5_K + Q6_K
// (q5_k_m), IQ4_XS + Q5_K (iq4_xs at GQA >= 4); else `other`.
template <class F>
cudaError_t by_pair(QType t, QType t2, cudaError_t other, F&& f) {
  using Q4K = std::integral_constant<QType, QType::Q4_K>;
  using Q5K = std::integral_constant<QType, QType::Q5_K>;
  using Q6K = std::integral_constant<QType, QType::Q6_K>;
  using IQ4 = std::integral_constant<QType, QType::IQ4_XS>;
  if (t == QType::Q4_K && t2 == QType::Q6_K) return f(Q4K{}, Q6K{});
  if (t == QType::Q5_K && t2 == QType::Q6_K) return f(Q5K{}, Q6K{});
  if (t == QType::IQ4_XS && t2 == QType::Q5_K) return f(IQ4{}, Q5K{});
  return other;
}
bool pair_compiled(QType t, QType t2) {
  return by_pair(t, t2, cudaErrorNotSupported, [](auto, auto) { return cudaSuccess; }) == cudaSuccess;
}

// One warp per 32-element block (as launch_quantize_q8_1); order: an interleaved order for one row.
// bulk (QuantizeQ8sParams::bulk, quantize_q8s_bulk_applies: one row, n % 256 == 0, x 16-byte
// aligned): the block's 256 values are copied into shared memory by one bulk copy after the wait
// and read from there (the same values).
__global__ void quantize_q8s_kernel(const float* __restrict__ x, int64_t ld_x, int64_t n, int64_t n_blocks,
                                    int8_t* __restrict__ xq, float2* __restrict__ xds, q8s::Order order, bool bulk) {
  __shared__ __align__(16) float xs[256];
  __shared__ __align__(8) uint64_t xbar;
  if (bulk) {  // block-uniform
    if (threadIdx.x == 0) bulk::init_barrier(&xbar);
    __syncthreads();
  }
  pdl_wait();
  const int lane = threadIdx.x & 31;
  const int64_t ib = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
  if (bulk) {
    if (threadIdx.x == 0) bulk::copy_to_shared(xs, x + (int64_t)blockIdx.x * 256, 256 * 4, &xbar);
    bulk::wait_barrier(&xbar, 0);
    emit_q8s_block(xs[threadIdx.x], lane, xq, ib * 32, order, xds + ib);
    return;
  }
  if (ib >= n_blocks) return;
  const int64_t bpr = n / 32, row = ib / bpr, b = ib % bpr;
  emit_q8s_block(x[row * ld_x + b * 32 + lane], lane, xq + row * n, b * 32, order, xds + ib);
}

}  // namespace

bool mmvs_supported(QType t, int64_t n_cols) {
  const sp::Layout L = sp::layout(t, false);
  return L.ok && n_cols > 0 && n_cols % L.block_elems == 0 && n_cols % 64 == 0 && n_cols / 64 < (1 << 24);
}

// Row pairs (MmvsParams::row_pairs): each matrix paired within itself, the grid's rows its first
// halves (Args::n_rows, pair_off, seg_pair_off, Seg::row_end counting halves). Returns where the
// first type-2 segment's half starts among them (-1: none).
// (parts = 2; 4: the row quads' quarters, quad_quarters)
static int64_t seg_parts(Args& a, const MmvsParams& p, int parts) {
  int64_t h = a.seg_pair_off[0] = a.seg[0].row_end = p.n_rows / parts, t2 = -1;
  for (int i = 0; i < p.n_extra; ++i) {
    if (p.extra[i].type2 && t2 < 0) t2 = h;
    a.seg_pair_off[i + 1] = p.extra[i].n_rows / parts;
    h += a.seg_pair_off[i + 1];
    a.seg[i + 1].row_end = h;
  }
  a.n_rows = h;
  return t2;
}
static int64_t pair_halves(Args& a, const MmvsParams& p) {
  a.pair_off = p.n_rows / 2;
  return seg_parts(a, p, 2);
}

// MmvsParams::row_quads: a.seg_pair_off[s] = segment s's rows / 4, Seg::row_end and a.n_rows in first
// quarters; returns the quarter row where the first type-2 segment's quarter starts among them (-1: none).
static int64_t quad_quarters(Args& a, const MmvsParams& p) { return seg_parts(a, p, 4); }

// The row-quad instances: D = 2 at 3 CTAs per SM, D = 1 at 4.
template <QType T, QType T2, bool MIXED>
cudaError_t launch_quads_d(const Args& a, int d, cudaStream_t s) {
  const dim3 g((unsigned)((a.n_rows + kWarps / a.wpr - 1) / (kWarps / a.wpr))), b(32 * kWarps);
  if constexpr (MIXED) {
    if (d == 2) return a.nss ? launch_kernel(mmvs_pair_rq_kernel<T, T2, 2, 1, 3, true>, g, b, 0, s, a)
                             : launch_kernel(mmvs_pair_rq_kernel<T, T2, 2, 1, 3, false>, g, b, 0, s, a);
    return a.nss ? launch_kernel(mmvs_pair_rq_kernel<T, T2, 1, 1, 4, true>, g, b, 0, s, a)
                 : launch_kernel(mmvs_pair_rq_kernel<T, T2, 1, 1, 4, false>, g, b, 0, s, a);
  } else {
    if (d == 2) return a.nss ? launch_kernel(mmvs_quad_kernel<T, 2, 3, true>, g, b, 0, s, a)
                             : launch_kernel(mmvs_quad_kernel<T, 2, 3, false>, g, b, 0, s, a);
    return a.nss ? launch_kernel(mmvs_quad_kernel<T, 1, 4, true>, g, b, 0, s, a)
                 : launch_kernel(mmvs_quad_kernel<T, 1, 4, false>, g, b, 0, s, a);
  }
}
cudaError_t launch_quads(const Args& a, const MmvsParams& p, bool mixed, cudaStream_t s) {
  if (!mmvs_quads_compiled(p.w_type, mixed ? p.w_type2 : p.w_type)) return cudaErrorNotSupported;
  if (mixed) {
    return launch_quads_d<QType::Q4_K, QType::Q6_K, true>(a, p.row_quads, s);
  }
  switch (p.w_type) {
    case QType::Q4_K: return launch_quads_d<QType::Q4_K, QType::Q4_K, false>(a, p.row_quads, s);
#ifndef MEMRA_REDUCED_INSTANCES
    case QType::Q4_0: return launch_quads_d<QType::Q4_0, QType::Q4_0, false>(a, p.row_quads, s);
    case QType::Q8_0: return launch_quads_d<QType::Q8_0, QType::Q8_0, false>(a, p.row_quads, s);
#endif
    default: return cudaErrorNotSupported;
  }
}

cudaError_t launch_mmvs(const MmvsParams& p, cudaStream_t stream) {
  if (!p.w || !p.y || !p.xq || !p.xds || p.n_rows <= 0 || p.m < 1 || p.m > kMmvsMaxM) return cudaErrorInvalidValue;
  if (!mmvs_supported(p.w_type, p.n_cols)) return cudaErrorNotSupported;
  const sp::Layout L = sp::layout(p.w_type, p.interleaved);
  int n_type2 = 0;
  for (int i = 0; i < p.n_extra && i < 2; ++i) n_type2 += p.extra[i].type2 ? 1 : 0;
  const bool mixed = n_type2 > 0;
  if (mixed && !mmvs_supported(p.w_type2, p.n_cols)) return cudaErrorNotSupported;
  const sp::Layout L2 = sp::layout(mixed ? p.w_type2 : p.w_type, p.interleaved);
  // A matrix's planes: the body 16-byte aligned, the d plane (if the layout has one) 4-byte, the
  // aux plane 16-byte.
  const auto planes_ok_in = [&](const sp::Layout& Lt, const void* w, const void* d, const void* aux) {
    return w && aligned16(w) && (Lt.d_src < 0 || (d && reinterpret_cast<uintptr_t>(d) % 4 == 0)) &&
           (Lt.aux_src < 0 || (aux && aligned16(aux)));
  };
  const auto planes_ok = [&](const void* w, const void* d, const void* aux) { return planes_ok_in(L, w, d, aux); };
  if (!planes_ok(p.w, p.w_d, p.w_aux)) return cudaErrorInvalidValue;
  if (p.glu < 0 || p.glu > 2 || (p.glu != 0) != (p.w2 != nullptr) || (p.w2 && !planes_ok(p.w2, p.w2_d, p.w2_aux)) ||
      (p.glu_one_task && p.glu == 0))
    return cudaErrorInvalidValue;
  if (!aligned16(p.xq) || !aligned16(p.xds)) return cudaErrorInvalidValue;
  const int64_t ldy = p.ldy ? p.ldy : p.n_rows;
  if (ldy < p.n_rows || p.n_extra < 0 || p.n_extra > 2 || (p.n_extra > 0 && p.glu != 0)) return cudaErrorInvalidValue;
  const sp::Plan pl = sp::plan(p.w_type, p.n_rows, p.n_cols, p.interleaved);
  const sp::Plan pl2 = sp::plan(mixed ? p.w_type2 : p.w_type, p.n_rows, p.n_cols, p.interleaved);
  const auto src = [](const void* w, const void* d, const void* aux) {
    return mmvs::Src{static_cast<const uint8_t*>(w), static_cast<const uint8_t*>(d), static_cast<const uint8_t*>(aux)};
  };
  Args a;
  a.w = src(p.w, p.w_d, p.w_aux);
  a.w2 = src(p.w2, p.w2_d, p.w2_aux);
  a.g = {pl.body_row_bytes, pl.blocks_per_row, p.n_cols / 64, p.interleaved};
  a.n_seg = 1 + p.n_extra;
  a.seg[0] = {a.w, (int64_t)pl.body_row_bytes, p.n_rows, p.y, ldy};
  int64_t rows = p.n_rows;
  a.t2_begin = -1;
  if (p.act_il && p.m != 1) return cudaErrorNotSupported;  // one-token instances only
  // The Q6_K variant: plain launches of Q6_K rows only (the mixed pair and the GLU read act_il).
  if (p.act_il_q6k && (!p.act_il || p.w_type != QType::Q6_K || p.glu != 0 || p.n_extra != 0)) return cudaErrorNotSupported;
  a.act_il = p.act_il;
  a.act_q6k = p.act_il_q6k;
  a.pair_off = 0;
  a.seg_pair_off[0] = a.seg_pair_off[1] = a.seg_pair_off[2] = 0;
  a.pair_one = p.row_pairs && p.row_pair_one_task;
  a.nss = p.norm_ss;
  a.n_nss = p.norm_ss_n;
  a.nss_eps = p.norm_eps;
  a.nsf = p.norm_ss_final;
  if (p.norm_ss && ((p.m == 1 && (!p.act_il || p.act_il_q6k)) || p.residual || p.norm_ss_n < 1 || p.norm_ss_n > kNormDeferMaxPartials ||
                    (p.norm_ss_final && p.norm_ss_n != 1)))
    return cudaErrorInvalidValue;
  // Row pairs: one-token launches of one matrix, of up to three matrices of one type (q/k/v: each
  // paired within itself) or a SiLU GLU pair (one task per row), in the interleaved activation order,
  // even row counts; the grid covers the first halves, each warp also serving row + n_rows / 2 of its
  // matrix.
  const int mb_pairs = p.glu ? p.min_blocks_glu : p.min_blocks;
  bool seg_pairs_ok = p.n_extra == 0 || p.glu == 0;  // (mixed: the pair form checks its own)
  for (int i = 0; i < p.n_extra; ++i) seg_pairs_ok = seg_pairs_ok && p.extra[i].n_rows % 2 == 0;
  // (Verify rows, m = 2..8: one matrix or one type's q/k/v segments, the plain order, uncapped, two
  // tasks per row, no GLU.)
  const bool pairs_form = p.m == 1 ? p.act_il : !p.act_il && p.glu == 0 && mb_pairs == 0 && !p.row_pair_one_task;
  if (p.row_pairs &&
      (!pairs_form || p.glu == 2 || (p.glu == 1 && !p.row_pair_one_task) || !seg_pairs_ok || p.act_il_q6k ||
       p.n_rows % 2 != 0 || (mb_pairs != 0 && mb_pairs != 5 && mb_pairs != 6)))
    return cudaErrorNotSupported;
  // Row quads: one-token launches in the interleaved order, no GLU, residual or row pairs, every
  // matrix's rows a multiple of 4.
  if (p.row_quads != 0) {
    if (p.row_quads != 1 && p.row_quads != 2) return cudaErrorInvalidValue;
    bool quarters = p.n_rows % 4 == 0;
    for (int i = 0; i < p.n_extra; ++i) quarters = quarters && p.extra[i].n_rows % 4 == 0;
    if (p.m != 1 || !p.act_il || p.act_il_q6k || p.glu != 0 || p.residual || p.row_pairs || !quarters)
      return cudaErrorNotSupported;
  }
  for (int i = 0; i < p.n_extra; ++i) {
    const auto& e = p.extra[i];
    const int64_t eldy = e.ldy ? e.ldy : e.n_rows;
    // The type-w_type2 segments come last (the pair kernel splits the grid in two).
    if (e.type2 && a.t2_begin < 0) a.t2_begin = rows;
    if (a.t2_begin >= 0 && !e.type2) return cudaErrorInvalidValue;
    if (!planes_ok_in(e.type2 ? L2 : L, e.w, e.w_d, e.w_aux) || !e.y || e.n_rows <= 0 || eldy < e.n_rows)
      return cudaErrorInvalidValue;
    rows += e.n_rows;
    // The d and aux planes are indexed by (row, block) with the same blocks per row (checked
    // below for a pair): only the bases differ between segments.
    a.seg[i + 1] = {src(e.w, e.w_d, e.w_aux), (int64_t)(e.type2 ? pl2 : pl).body_row_bytes, rows, e.y, eldy};
  }
  a.n_tasks = (int)(p.n_cols / 64);
  if ((p.split_max_warps != 2 && p.split_max_warps != 4) || p.split_min_tasks < 65) return cudaErrorInvalidValue;
  a.wpr = mmvs::warps_per_row(p.w_type, a.n_tasks, p.split_k, p.split_max_warps, p.split_min_tasks);
  if ((rows + kWarps / a.wpr - 1) / (kWarps / a.wpr) > 0x7fffffff) return cudaErrorInvalidValue;
  a.n_rows = rows;
  a.m = p.m;
  a.preload = p.preload;
  a.xq = p.xq;
  a.xds = static_cast<const float2*>(p.xds);
  a.k = p.n_cols;
  a.y = p.y;
  a.ldy = ldy;
  if (p.residual && (p.glu != 0 || p.n_extra != 0 || (p.ld_residual && p.ld_residual < p.n_rows)))
    return cudaErrorInvalidValue;
  a.res = p.residual;
  a.ldres = p.ld_residual ? p.ld_residual : ldy;
  const int mb = p.glu ? p.min_blocks_glu : p.min_blocks;
  if (!mmvs_min_blocks_valid(p.min_blocks) || !mmvs_min_blocks_valid(p.min_blocks_glu)) return cudaErrorInvalidValue;
  if (mixed) {
    if (p.glu != 0 || p.residual || pl2.blocks_per_row != pl.blocks_per_row) return cudaErrorInvalidValue;
    if (p.row_quads) {  // each matrix quartered within itself; the type-2 rows' first quarter starting a CTA
      // (the pair's types, widths and warps per row; kWarps rows before: any CTA size divides it)
      if (!mmvs_pair_ok(p.w_type, p.w_type2, p.n_cols, kWarps, p.m, p.split_k, p.split_max_warps, p.split_min_tasks))
        return cudaErrorNotSupported;
      a.t2_begin = quad_quarters(a, p);
      if (a.t2_begin % (kWarps / a.wpr)) return cudaErrorInvalidValue;
      return launch_quads(a, p, true, stream);
    }
    if (!mmvs_pair_ok(p.w_type, p.w_type2, p.n_cols, a.t2_begin, p.m, p.split_k, p.split_max_warps, p.split_min_tasks))
      return a.t2_begin % (kWarps / a.wpr) ? cudaErrorInvalidValue : cudaErrorNotSupported;
    if (p.row_pairs) {  // each matrix paired within itself; the type-2 rows start a CTA of the halves
      if (p.row_pair_one_task || !p.row_pair_one_task2 || mb_pairs != 0) return cudaErrorNotSupported;
      if (p.w_type != QType::Q4_K || p.w_type2 != QType::Q6_K) return cudaErrorNotSupported;  // the one paired pair
      a.t2_begin = pair_halves(a, p);
      if (a.t2_begin % (kWarps / a.wpr)) return cudaErrorInvalidValue;
      const dim3 g((unsigned)((a.n_rows + kWarps / a.wpr - 1) / (kWarps / a.wpr))), b(32 * kWarps);
      if (a.nss) return launch_kernel(mmvs_pair_rp_kernel<QType::Q4_K, QType::Q6_K, kDepth, 1, true>, g, b, 0, stream, a);
      return launch_kernel(mmvs_pair_rp_kernel<QType::Q4_K, QType::Q6_K, kDepth, 1>, g, b, 0, stream, a);
    }
    const unsigned grid = (unsigned)((rows + kWarps / a.wpr - 1) / (kWarps / a.wpr));
    const dim3 g(grid), b(32 * kWarps);
    return by_pair(p.w_type, p.w_type2, cudaErrorNotSupported, [&](auto T, auto T2) {
      constexpr QType t1 = T.value, t2 = T2.value;
      if (mb == 0 && p.act_il && a.nss) return launch_kernel(mmvs_pair_kernel<t1, t2, 1, true, true>, g, b, 0, stream, a);
      if (mb == 6 && p.act_il && a.nss) return launch_kernel(mmvs_pair_kernel<t1, t2, 6, true, true>, g, b, 0, stream, a);
      if (mb == 0 && p.act_il) return launch_kernel(mmvs_pair_kernel<t1, t2, 1, true>, g, b, 0, stream, a);
      if (mb == 6 && p.act_il) return launch_kernel(mmvs_pair_kernel<t1, t2, 6, true>, g, b, 0, stream, a);
      if (mb == 0) return launch_kernel(mmvs_pair_kernel<t1, t2, 1>, g, b, 0, stream, a);
      if (mb == 6) return launch_kernel(mmvs_pair_kernel<t1, t2, 6>, g, b, 0, stream, a);
      return cudaErrorNotSupported;  // the pairs have instances at the compiler's choice and at 6 only
    });
  }
  if (p.row_quads) {
    quad_quarters(a, p);  // (one type: no type-2 segment)
    return launch_quads(a, p, false, stream);
  }
  if (p.row_pairs) {
    pair_halves(a, p);  // (one type: no type-2 segment)
    const int g = p.glu ? 4 : p.n_extra ? 5 : 3;
    if (p.m > 1) return by_type(p.w_type, cudaErrorNotSupported, [&](auto T) { return launch_pairs_m<T.value>(a, g, stream); });
    return by_type(p.w_type, cudaErrorNotSupported, [&](auto T) { return launch_ail<T.value>(a, g, mb_pairs, stream); });
  }
  // MmvsParams::glu_one_task: the one-token GLU launches in the interleaved order (else no effect).
  const int g = p.glu_one_task && p.act_il && p.m == 1 ? (p.glu == 1 ? kGluSiluD1 : kGluGeluD1) : p.glu;
  return by_type(p.w_type, cudaErrorNotSupported, [&](auto T) { return launch_t<T.value>(a, g, mb, stream); });
}

bool mmvs_quads_compiled(QType t, QType t2) {
  if (t != t2) return t == QType::Q4_K && t2 == QType::Q6_K;
#ifdef MEMRA_REDUCED_INSTANCES
  return t == QType::Q4_K;
#else
  return t == QType::Q4_K || t == QType::Q4_0 || t == QType::Q8_0;
#endif
}

bool mmvs_pair_ok(QType t, QType t2, int64_t n_cols, int64_t rows_before, int m, bool split_k, int max_warps,
                  int min_tasks) {
  if (!pair_compiled(t, t2) || m != 1 || rows_before <= 0 || !mmvs_supported(t, n_cols) || !mmvs_supported(t2, n_cols))
    return false;
  const int64_t n_tasks = n_cols / 64;
  const int wpr = mmvs::warps_per_row(t, n_tasks, split_k, max_warps, min_tasks);
  return wpr == mmvs::warps_per_row(t2, n_tasks, split_k, max_warps, min_tasks) && rows_before % (kWarps / wpr) == 0 &&
         sp::plan(t, 1, n_cols, true).blocks_per_row == sp::plan(t2, 1, n_cols, true).blocks_per_row;
}

cudaError_t mmvs_pair_cap_spills(QType t, QType t2, int min_blocks, bool* spills, bool act_il) {
  if (!spills || !pair_compiled(t, t2) || (min_blocks != 0 && min_blocks != 6)) return cudaErrorInvalidValue;
  *spills = false;
  if (min_blocks == 0) return cudaSuccess;
  return by_pair(t, t2, cudaErrorInvalidValue, [&](auto T, auto T2) {
    if (act_il) return kernel_spills(mmvs_pair_kernel<T.value, T2.value, 6, true>, spills);
    return kernel_spills(mmvs_pair_kernel<T.value, T2.value, 6>, spills);
  });
}

template <QType T, int GLU, int D>
cudaError_t row_pairs_spills_d(int min_blocks, bool* spills) {
  if (min_blocks == 5) return kernel_spills(mmvs_ail_kernel<T, GLU, 5, 1, D>, spills);
  return kernel_spills(mmvs_ail_kernel<T, GLU, 6, 1, D>, spills);
}
template <QType T>
cudaError_t row_pairs_spills_t(int min_blocks, bool one_task, bool glu, bool* spills) {
  if (glu) return row_pairs_spills_d<T, 4, 1>(min_blocks, spills);
  return one_task ? row_pairs_spills_d<T, 3, 1>(min_blocks, spills) : row_pairs_spills_d<T, 3, kDepth>(min_blocks, spills);
}
cudaError_t mmvs_row_pairs_cap_spills(QType t, int min_blocks, bool* spills, bool one_task, bool glu) {
  if (!spills || (min_blocks != 0 && min_blocks != 5 && min_blocks != 6)) return cudaErrorInvalidValue;
  *spills = false;
  if (min_blocks == 0) return cudaSuccess;
  return by_type(t, cudaErrorInvalidValue, [&](auto T) { return row_pairs_spills_t<T.value>(min_blocks, one_task, glu, spills); });
}

cudaError_t mmvs_glu_one_task_cap_spills(QType t, int glu, int min_blocks, bool* spills) {
  if (!spills || (glu != 1 && glu != 2) || (min_blocks != 0 && min_blocks != 5 && min_blocks != 6)) return cudaErrorInvalidValue;
  *spills = false;
  if (min_blocks == 0) return cudaSuccess;
  return by_type(t, cudaErrorInvalidValue, [&](auto T) {
    constexpr QType tt = T.value;
    if (min_blocks == 5)
      return glu == 1 ? kernel_spills(mmvs_ail_kernel<tt, 1, 5, 1, 1>, spills) : kernel_spills(mmvs_ail_kernel<tt, 2, 5, 1, 1>, spills);
    return glu == 1 ? kernel_spills(mmvs_ail_kernel<tt, 1, 6, 1, 1>, spills) : kernel_spills(mmvs_ail_kernel<tt, 2, 6, 1, 1>, spills);
  });
}

cudaError_t mmvs_cap_spills(QType t, int glu, int min_blocks, bool* spills, bool act_il, bool act_il_q6k) {
  if (!spills || glu < 0 || glu > 2 || !mmvs_min_blocks_valid(min_blocks)) return cudaErrorInvalidValue;
  if (act_il_q6k && (t != QType::Q6_K || glu != 0)) return cudaErrorInvalidValue;
  *spills = false;
  if (min_blocks == 0) return cudaSuccess;
  if (act_il_q6k) return q6k_cap_spills(min_blocks, spills);
  return by_type(t, cudaSuccess, [&](auto T) { return cap_spills_t<T.value>(glu, min_blocks, act_il, spills); });
}

cudaError_t launch_quantize_q8s(const QuantizeQ8sParams& p, cudaStream_t stream) {
  if (!p.x || !p.xq || !p.xds || p.n <= 0 || p.n % 32 || p.rows <= 0) return cudaErrorInvalidValue;
  const int64_t ld = p.ld_x ? p.ld_x : p.n;
  if (ld < p.n) return cudaErrorInvalidValue;
  const int64_t nb = p.n / 32 * p.rows;
  const int64_t grid = (nb + 7) / 8;
  if (grid > 0x7fffffff) return cudaErrorInvalidConfiguration;
  if (p.act_il && p.rows != 1) return cudaErrorInvalidValue;  // the interleaved order is one row's
  if (p.act_il_q6k && (!p.act_il || p.n % 256)) return cudaErrorInvalidValue;  // Q6_K rows: whole superblocks
  const q8s::Order order = p.act_il_q6k ? q8s::Order::il_q6k : p.act_il ? q8s::Order::il : q8s::Order::plain;
  return launch_kernel(quantize_q8s_kernel, dim3((unsigned)grid), dim3(256), 0, stream, p.x, ld, p.n, nb, p.xq,
                       static_cast<float2*>(p.xds), order, quantize_q8s_bulk_applies(p));
}

bool quantize_q8s_bulk_applies(const QuantizeQ8sParams& p) {
  return p.bulk && p.rows == 1 && p.n > 0 && p.n % 256 == 0 && aligned16(p.x);
}

}  // namespace memra::cuda
