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
  Geo g;
  int n_tasks;  // per row
  bool preload;
  const int8_t* xq;  // the input's planes (interleaved order, or its Q6_K variant: AO)
  const float2* xds;
  const float* res;  // the residual (MmvsParams::residual; may be y: the stream updated in place)
  float* y;
  const float* nw;
  int8_t* oq;
  float2* ods;
  bool oil;
  float* part;
};

// NW warps, 32 / NW rows each (rows row0 + warp + NW r); WPR: mmvs::warps_per_row of the row
// length; AO: the input's order (1 interleaved, 2 its Q6_K variant); per row two task groups in
// flight per lane (mmvs' kDepth), one with 8 warps (four rows per warp: the same four tasks per lane),
// the first ones requested before the PDL wait (a.preload). The CTA count is n_rows / 32 (128 for a
// 4096-row stream: one per SM), so NW sets how much of the SM's registers it leaves to the next
// launch's CTAs, which request their weights while this one runs.
template <QType T, int AO, int NW, int WPR>
__global__ void __launch_bounds__(32 * NW, 1) mmvs_emit_kernel(const __grid_constant__ EmitArgs a) {
  static_assert(NW == 8 || NW == 16 || NW == 32);
  static_assert(WPR == 1 || WPR == 2 || WPR == 4);
  static_assert(AO != 2 || T == QType::Q6_K, "the Q6_K order is read by Q6_K tasks only");
  constexpr int R = 32 / NW, D = NW == 8 ? 1 : 2;
  const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
  const int64_t row0 = (int64_t)blockIdx.x * 32;
  const int n_tasks = a.n_tasks, n_groups = (n_tasks + 31) / 32;
  const auto x = [&] {
    if constexpr (AO == 2)
      return mmvs::GXQ6{a.xq, a.xds};
    else
      return mmvs::GXI{a.xq, a.xds};
  }();
  float acc[R][WPR];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int s = 0; s < WPR; ++s) acc[r][s] = 0.0f;
  Task<T> tk[R][D];
  const auto issue = [&](int g0) {
#pragma unroll
    for (int d = 0; d < D; ++d) {
      const int t = 32 * (g0 + d) + lane;
      if (t < n_tasks)
#pragma unroll
        for (int r = 0; r < R; ++r) tk[r][d].load(a.w, row0 + warp + NW * r, t, a.g);
    }
  };
  // The next norm's weights for warp 0's emit (lane k of each 8-lane group: rows 4k .. 4k + 3 of
  // the block), constant during a step: requested before the wait.
  float wv[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  if (warp == 0 && a.nw) {
#pragma unroll
    for (int e = 0; e < 4; ++e) wv[e] = a.nw[row0 + 4 * (lane & 7) + e];
  }
  if (a.preload) issue(0);
  pdl_wait();
  float resv[R] = {};
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < R; ++r) resv[r] = a.res[row0 + warp + NW * r];
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
          if (t < n_tasks)
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r][(h + d) % WPR] = __fadd_rn(acc[r][(h + d) % WPR], tk[r][d].dot(t, x));
        }
      }
    }
  }
  __shared__ float ys[32];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float v = 0.0f;
#pragma unroll
    for (int s = 0; s < WPR; ++s) {
      float p = acc[r][s];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) p = __fadd_rn(p, __shfl_xor_sync(0xffffffffu, p, o));
      v = s == 0 ? p : __fadd_rn(v, p);
    }
    if (lane == 0) {
      const float y = __fadd_rn(resv[r], v);
      a.y[row0 + warp + NW * r] = y;
      ys[warp + NW * r] = y;
    }
  }
  __syncthreads();
  if (warp != 0) return;
  // The norm's block: lanes 8 .. 31 repeat lanes 0 .. 7's values for the shuffles and store nothing.
  const int k = lane & 7;
  float u[4], yw[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    u[e] = ys[4 * k + e];
    yw[e] = a.nw ? __fmul_rn(u[e], wv[e]) : u[e];
  }
  emit_q8s_block8(yw, lane, lane < 8, a.oq, row0 + 4 * k, a.oil, a.ods + blockIdx.x);
  const float ss = defer_block_ss(u);
  if (lane == 0) a.part[blockIdx.x] = ss;
}

template <QType T, int AO, int NW>
cudaError_t launch_w(const EmitArgs& a, int wpr, unsigned grid, cudaStream_t s) {
  const dim3 block(32 * NW);
  if (wpr == 1) return launch_kernel(mmvs_emit_kernel<T, AO, NW, 1>, dim3(grid), block, 0, s, a);
  if (wpr == 2) return launch_kernel(mmvs_emit_kernel<T, AO, NW, 2>, dim3(grid), block, 0, s, a);
  return launch_kernel(mmvs_emit_kernel<T, AO, NW, 4>, dim3(grid), block, 0, s, a);
}
template <QType T, int AO>
cudaError_t launch_ao(const EmitArgs& a, int wpr, int warps, unsigned grid, cudaStream_t s) {
#ifndef MEMRA_REDUCED_INSTANCES
  if (warps == 8) return launch_w<T, AO, 8>(a, wpr, grid, s);
  if (warps == 32) return launch_w<T, AO, 32>(a, wpr, grid, s);
#endif
  return warps == 16 ? launch_w<T, AO, 16>(a, wpr, grid, s) : cudaErrorNotSupported;
}

bool aligned(const void* p, uintptr_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; }

}  // namespace

cudaError_t launch_mmvs_emit_norm(const MmvsEmitNormParams& p, cudaStream_t stream) {
  const MmvsParams& m = p.mv;
  if (!m.w || !m.y || !m.xq || !m.xds || !m.residual || m.m != 1 || !m.act_il || m.glu != 0 || m.w2 ||
      m.n_extra != 0 || m.norm_ss || m.n_rows <= 0 || m.n_rows % 32 || m.n_rows / 32 > kNormDeferMaxPartials ||
      !p.out_xq || !p.out_xds || !p.partials || (p.warps != 8 && p.warps != 16 && p.warps != 32) || !aligned(m.xq, 16) ||
      !aligned(m.xds, 16) || !aligned(p.out_xds, 8) || (m.split_max_warps != 2 && m.split_max_warps != 4) ||
      m.split_min_tasks < 65 || (m.act_il_q6k && m.w_type != QType::Q6_K))
    return cudaErrorInvalidValue;
  if (!mmvs_supported(m.w_type, m.n_cols)) return cudaErrorNotSupported;
  const sp::Layout L = sp::layout(m.w_type, m.interleaved);
  if (!aligned(m.w, 16) || (L.d_src >= 0 && (!m.w_d || !aligned(m.w_d, 4))) || (L.aux_src >= 0 && (!m.w_aux || !aligned(m.w_aux, 16))))
    return cudaErrorInvalidValue;
  const sp::Plan pl = sp::plan(m.w_type, m.n_rows, m.n_cols, m.interleaved);
  EmitArgs a;
  a.w = {static_cast<const uint8_t*>(m.w), static_cast<const uint8_t*>(m.w_d), static_cast<const uint8_t*>(m.w_aux)};
  a.g = {pl.body_row_bytes, pl.blocks_per_row, m.n_cols / 64, m.interleaved};
  a.n_tasks = (int)(m.n_cols / 64);
  a.preload = m.preload;
  a.xq = m.xq;
  a.xds = static_cast<const float2*>(m.xds);
  a.res = m.residual;
  a.y = m.y;
  a.nw = p.norm_w;
  a.oq = p.out_xq;
  a.ods = static_cast<float2*>(p.out_xds);
  a.oil = p.out_il;
  a.part = p.partials;
  const int wpr = mmvs::warps_per_row(m.w_type, a.n_tasks, m.split_k, m.split_max_warps, m.split_min_tasks);
  const unsigned grid = (unsigned)(m.n_rows / 32);
  return mmvs::by_type(m.w_type, cudaErrorNotSupported, [&](auto T) {
    constexpr QType t = T.value;
    if constexpr (t == QType::Q6_K)
      if (m.act_il_q6k) return launch_ao<t, 2>(a, wpr, p.warps, grid, stream);
    return launch_ao<t, 1>(a, wpr, p.warps, grid, stream);
  });
}

}  // namespace memra::cuda
