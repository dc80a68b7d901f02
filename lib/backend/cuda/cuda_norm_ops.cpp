// The CUDA backend's RMSNorm ops (split from cuda_ops.cpp): the decode norms emitting the next
// matvec's q8s planes, the deferred form (kernels.norm_defer, Backend::rms_norm_into_matvecs) and
// its settling, the fused residual add, the per-head norm.
#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_op_util.h"
#include "core/error.h"
#include "matvec/mmvs.h"
#include "norm/norm_kernels.h"

namespace memra::backend::cuda_impl {

namespace {

// The q8s planes (CudaBackend::q8s_planes) a norm emits for the next matvec, into its launch
// parameters (RmsNormParams, AddRmsNormParams, RmsNormDeferParams).
template <class P, class Q>
void set_planes(P& p, const Q& q) {
  p.q8s_xq = const_cast<int8_t*>(q.xq);
  p.q8s_xds = const_cast<void*>(q.xds);
  p.q8s_il = q.il;
}

}  // namespace

void CudaBackend::rms_norm(View x, const Weight* w, float eps, View out) {
  norm_hint_ = {};
  norm_emitted_ = false;
  forget_q8s();
  defer_ = {};
  check_same_shape("rms_norm", x, out);
  cuda::RmsNormParams p;
  p.x = x.data;
  p.ld_x = x.ld;
  p.w = f32_vector(w, x.cols, "rms_norm");
  p.out = out.data;
  p.ld_out = out.ld;
  check_int(x.rows, "rms_norm rows");
  p.rows = (int)x.rows;
  p.cols = (int)x.cols;
  p.eps = eps;
  if (p.rows == 0) return;
  const bool emit = emit_q8s_for(out);
  if (emit) {
    set_planes(p, q8s_planes(out.rows, out.cols));
    // Decode rows: kernels.norm_split blocks per row where out does not overlap x.
    if (!overlaps(x, out)) p.split = cfg_.kernels.norm_split;
    p.bulk = cfg_.kernels.norm_bulk_load;
  }
  // Prefill: the f16 rounding of out for the next GEMMs (kernels.gemm_x_reuse, as the GLU's).
  const bool f16 = !emit && prefill_f16_copy(out.rows) && cuda::rms_norm_f16_copy_supported(p);
  if (f16) p.out_f16 = workspace(kX16, (size_t)out.rows * (size_t)out.cols * 2);
  cuda::check_status(cuda::launch_rms_norm(p, stream()), "launch_rms_norm");
  if (emit) hold_q8s(out);
  if (f16) set_x16_src(out);
  note("norm", emit ? fmt::format("rms+q8s{}{}", p.split > 1 ? fmt::format("_split{}", p.split) : "",
                                   cuda::rms_norm_bulk_applies(p) ? "_bulk" : "")
                    : f16 ? "rms+f16" : "rms");
}

bool CudaBackend::defers_norm(View x, View out) const {
  // Decode rows (one token in the interleaved order, or a verify batch of up to kMmvsMaxM rows in
  // the plain order) whose consumers are mmvs launches; rows of at most kNormDeferMaxPartials blocks.
  const int64_t max_cols = cfg_.kernels.norm_defer_max_cols;
  return cfg_.kernels.norm_defer && (max_cols == 0 || x.cols <= max_cols) && emit_q8s_for(out) && x.rows >= 1 &&
         x.rows == out.rows && (x.rows > 1 || cfg_.kernels.mmvs_act_il) && x.cols == out.cols && x.cols % 32 == 0 &&
         x.cols <= 32 * (int64_t)cuda::kNormDeferMaxPartials && !overlaps(x, out);
}

void CudaBackend::rms_norm_into_matvecs(View x, const Weight* w, float eps, View out) {
  norm_hint_ = {};
  // The residual launch before made this norm's output already (launch_emit_norm).
  if (std::exchange(norm_emitted_, false) && defer_.live && defer_.x.data == x.data && defer_.out.data == out.data &&
      defer_.w == w && defer_.eps == eps && q8s_src_.data == out.data) {
    note("norm", "emitted_by_residual_launch");
    return;
  }
  // kernels.norm_defer: the planes of x * w and the partial sums of squares; each consuming launch
  // applies the scale.
  if (!defers_norm(x, out)) return rms_norm(x, w, eps, out);
  forget_q8s();
  defer_ = {};
  cuda::RmsNormDeferParams p;
  set_planes(p, q8s_planes(x.rows, x.cols));
  p.x = x.data;
  p.ld_x = x.ld;
  p.rows = (int)x.rows;
  p.w = f32_vector(w, x.cols, "rms_norm");
  p.cols = (int)x.cols;
  p.split = cfg_.kernels.norm_split;
  // kernels.norm_defer_scale = "norm": one block per row sums the partials and writes the scale.
  const bool final = cfg_.kernels.norm_defer_scale == "norm";
  const int n_ss = final ? 1 : cuda::rms_norm_defer_partials(p.cols);
  float* ss = static_cast<float*>(workspace(kNormSs, (size_t)x.rows * (size_t)n_ss * sizeof(float)));
  (final ? p.scale : p.partials) = ss;
  p.eps = eps;
  cuda::check_status(cuda::launch_rms_norm_defer(p, stream()), "launch_rms_norm_defer");
  hold_q8s(out);
  defer_ = {x, out, w, eps, ss, n_ss, true, final};
  note("norm", fmt::format("defer_q8s_split{}{}", p.split, final ? "_scale" : ""));
}

void CudaBackend::settle_deferred_norm(View x) {
  if (!defer_.out.data || !overlaps(x, defer_.out)) return;
  MEMRA_CHECK(defer_.live, "internal: the output of a deferred norm (Backend::rms_norm_into_matvecs, kernels.norm_defer) "
                           "was read after it was given up");
  const DeferredNorm d = defer_;
  rms_norm(d.x, d.w, d.eps, d.out);
  note("norm_defer", "settled");
}

bool CudaBackend::launch_emit_norm(const cuda::MmvsParams& p, View y, const NormHint& h) {
  const auto& k = cfg_.kernels;
  // One CTA per 32 rows, in one wave only (a second wave of them runs alone: qwen3-32b's 160 16-warp CTAs
  // on 132 SMs lost 0.927x with the deferred norm at every width, nd49): the launcher refuses a grid past
  // the SMs times the CTAs per SM its instance fits, and kernels.mmvs_emit_norm_warps_wide is tried then.
  if (!k.mmvs_emit_norm || p.m != 1 || !p.act_il || p.residual != y.data || y.rows != 1 || h.out.cols != y.cols ||
      y.cols % 32 != 0 || k.norm_defer_scale == "norm" || !defers_norm(y, h.out))
    return false;
  MEMRA_CHECK(k.mmvs_emit_norm_warps == 8 || k.mmvs_emit_norm_warps == 16 || k.mmvs_emit_norm_warps == 32,
              "kernels.mmvs_emit_norm_warps must be 8, 16 or 32, not {}", k.mmvs_emit_norm_warps);
  MEMRA_CHECK(k.mmvs_emit_norm_warps_wide == 0 || k.mmvs_emit_norm_warps_wide == 8,
              "kernels.mmvs_emit_norm_warps_wide must be 0 or 8, not {}", k.mmvs_emit_norm_warps_wide);
  // The next planes go to the other slot: this launch reads its input's planes while it writes.
  const Q8s q = q8s_planes(1, y.cols, false, /*other=*/true);
  const int n_ss = cuda::rms_norm_defer_partials((int)y.cols);
  float* ss = static_cast<float*>(workspace(kNormSs, (size_t)n_ss * sizeof(float)));
  cuda::MmvsEmitNormParams e;
  e.mv = p;
  e.norm_w = f32_vector(h.w, y.cols, "rms_norm");
  e.out_xq = const_cast<int8_t*>(q.xq);
  e.out_xds = const_cast<void*>(q.xds);
  e.out_il = q.il;
  e.partials = ss;
  // kernels.mmvs_emit_norm_short_w8: a row of at most 4096 weights wholly in flight in half an SM, so that
  // the next GLU's 8-warp CTAs (kernels.mmvs_glu_emit_w8) land beside these during the attention.
  const int ti = mmvs_type_index(p.w_type);
  const bool short8 = ti >= 0 && mmvs_emit_short_w8_[ti] && p.n_cols <= 4096;
  e.warps = short8 ? 8 : k.mmvs_emit_norm_warps;
  e.both_groups = short8;
  e.one_wave_sms = ctx().info().sm_count;
  cudaError_t err = cuda::launch_mmvs_emit_norm(e, stream());
  if (err == cudaErrorNotSupported && short8) {  // (an instance not built: nothing was launched)
    e.warps = k.mmvs_emit_norm_warps;
    e.both_groups = false;
    err = cuda::launch_mmvs_emit_norm(e, stream());
  }
  if (err == cudaErrorNotSupported && k.mmvs_emit_norm_warps_wide != 0 && k.mmvs_emit_norm_warps_wide != e.warps) {
    e.warps = k.mmvs_emit_norm_warps_wide;  // (nothing was launched)
    e.both_groups = false;
    err = cuda::launch_mmvs_emit_norm(e, stream());
  }
  if (err == cudaErrorNotSupported) return false;  // (nothing launched)
  cuda::check_status(err, "launch_mmvs_emit_norm");
  hold_emitted_q8s(h.out);
  defer_ = {y, h.out, h.w, h.eps, ss, n_ss, true, false};
  norm_emitted_ = true;
  note("mmvs_m1", fmt::format("{}_emit_norm_w{}{}{}{}", qtype_name(p.w_type), e.warps, e.both_groups ? "_both" : "",
                              p.act_il_q6k ? "_q6k" : "",
                              p.preload ? "" : "_nopreload"));
  return true;
}

bool CudaBackend::launch_glu_emit(const cuda::MmvsParams& p, View y) {
  const int ti = mmvs_type_index(p.w_type);
  // (the GLU row pairs, kernels.mmvs_glu_pairs, take precedence: the 32B's 5120-weight rows, where
  // the emit measured 0.960x against them: ew53)
  if (ti < 0 || !mmvs_glu_emit_[ti] || p.row_pairs || p.m != 1 || !p.act_il || p.act_il_q6k || p.glu == 0 || y.rows != 1 ||
      y.cols % 32 != 0 || !emit_q8s_for(y))
    return false;
  // The planes go to the other slot: this launch reads its input's planes while it writes.
  const Q8s q = q8s_planes(1, y.cols, false, /*other=*/true);
  cuda::MmvsGluEmitParams e;
  e.mv = p;
  e.out_xq = const_cast<int8_t*>(q.xq);
  e.out_xds = const_cast<void*>(q.xds);
  e.out_order = q.il ? cuda::q8s::Order::il : cuda::q8s::Order::plain;
  e.warps = mmvs_glu_emit_w8_[ti] ? 8 : 16;
  cudaError_t err = cuda::launch_mmvs_glu_emit(e, stream());
  if (err == cudaErrorNotSupported && e.warps != 16) {  // 8 warps: rows of one warp only (nothing was launched)
    e.warps = 16;
    err = cuda::launch_mmvs_glu_emit(e, stream());
  }
  if (err == cudaErrorNotSupported) return false;  // (nothing launched)
  cuda::check_status(err, "launch_mmvs_glu_emit");
  hold_emitted_q8s(y);
  note("mmvs_m1", fmt::format("{}_glu_emit{}{}{}", qtype_name(p.w_type), e.warps == 8 ? "_w8" : "", p.norm_ss ? "_ns" : "",
                              p.preload ? "" : "_nopreload"));
  return true;
}

void CudaBackend::add_rms_norm(View residual, View delta, const Weight* w, float eps, View out) {
  norm_hint_ = {};
  norm_emitted_ = false;
  forget_q8s();
  defer_ = {};
  check_same_shape("add_rms_norm", residual, delta);
  check_same_shape("add_rms_norm", residual, out);
  cuda::AddRmsNormParams p;
  p.residual = residual.data;
  p.ld_residual = residual.ld;
  p.delta = delta.data;
  p.ld_delta = delta.ld;
  p.residual_out = residual.data;
  p.ld_residual_out = residual.ld;
  p.w = f32_vector(w, residual.cols, "add_rms_norm");
  p.out = out.data;
  p.ld_out = out.ld;
  check_int(residual.rows, "add_rms_norm rows");
  p.rows = (int)residual.rows;
  p.cols = (int)residual.cols;
  p.eps = eps;
  if (p.rows == 0) return;
  const bool emit = emit_q8s_for(out);
  if (emit) {
    set_planes(p, q8s_planes(out.rows, out.cols));
  }
  const bool f16 = !emit && prefill_f16_copy(out.rows) && cuda::add_rms_norm_f16_copy_supported(p);
  if (f16) p.out_f16 = workspace(kX16, (size_t)out.rows * (size_t)out.cols * 2);
  cuda::check_status(cuda::launch_add_rms_norm(p, stream()), "launch_add_rms_norm");
  if (emit) hold_q8s(out);
  if (f16) set_x16_src(out);
  note("add_norm", emit ? "add_rms+q8s" : f16 ? "add_rms+f16" : "add_rms");
}

void CudaBackend::head_rms_norm(View x, int n_head, int head_dim, const Weight* w, float eps) {
  forget_q8s();
  MEMRA_CHECK((int64_t)n_head * head_dim == x.cols, "head_rms_norm: {} heads x {} != {} columns", n_head,
              head_dim, x.cols);
  cuda::HeadRmsNormParams p;
  p.x = x.data;
  p.ld_x = x.ld;
  p.out = x.data;
  p.ld_out = x.ld;
  p.w = f32_vector(w, head_dim, "head_rms_norm");
  check_int(x.rows, "head_rms_norm rows");
  p.rows = (int)x.rows;
  p.n_head = n_head;
  p.head_dim = head_dim;
  p.eps = eps;
  if (p.rows == 0) return;
  cuda::check_status(cuda::launch_head_rms_norm(p, stream()), "launch_head_rms_norm");
  note("head_norm", "head_rms");
}

}  // namespace memra::backend::cuda_impl
