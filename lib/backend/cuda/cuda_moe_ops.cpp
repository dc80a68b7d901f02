// The CUDA backend's routed-MoE FFN and head-wise gate (split from cuda_ops.cpp). Two forms:
// - host-routed (every batch; the only one without kernels.moe_device_route): the router's logits
//   come to the host, backend::moe_route picks the experts (the same pure function as the CPU
//   oracle), each expert's tokens are gathered and run through its slices of the stacked expert
//   matrices with the ordinary matmul / GLU ops, and one kernel sums the weighted expert outputs
//   per token in slot order. A host round trip per layer: such a step is never graph-captured.
// - device-routed (kernels.moe_device_route, batches of up to kMatvecMaxM tokens without expert
//   biases): the router kernel picks the experts on the device, the routed matvecs read each
//   slot's expert matrix through its id (MatvecParams::ids), the same combine kernel sums them.
//   No host round trip, so a one-token step is captured with the rest of the decode step. With
//   kernels.moe_device_route_prefill, larger batches of quantized experts too: the slots grouped
//   by expert on the device (launch_moe_group), one grouped launch per expert matrix
//   (MatvecParams::groups), each slot's row the bits of the one-slot form.
//   kernels.moe_routed_v2 (the one-slot launches on the v2 kernel) and kernels.moe_glu_q8_1 (the
//   GLU writing the down input's q8_1) keep the bytes.
#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "act/act_kernels.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_op_util.h"
#include "backend/cuda/runtime.h"
#include "core/error.h"
#include "matvec/matvec.h"
#include "matvec/matvec_v2.h"
#include "moe/moe_kernels.h"
#include "quant/block_q8_1.h"
#include "quant/quant_kernels.h"

namespace memra::backend::cuda_impl {

namespace {

// Rows [e n_rows, (e + 1) n_rows) of a stacked expert tensor [k, n_rows, n_expert] as a matrix of
// its own (no decode / GEMM mirrors: the matmul takes the paths that read the GGUF rows).
// Row e of a per-expert F32 bias tensor [n, n_expert] as a bias vector of its own (or null).
const Weight* bias_slice(const Weight* b, int64_t n, int e, Weight& out) {
  if (!b) return nullptr;
  MEMRA_CHECK(b->type == QType::F32 && b->ne[0] == n, "moe_ffn: bias '{}' must be F32 [{}, n_expert]", b->name, n);
  out = Weight{};
  out.name = fmt::format("{}[{}]", b->name, e);
  out.type = QType::F32;
  out.ne = {n, 1, 1, 1};
  out.n_dims = 1;
  out.row_bytes = (uint64_t)n * sizeof(float);
  out.data = static_cast<const float*>(b->data) + (int64_t)e * n;
  out.storage = b->storage;
  return &out;
}

Weight expert_slice(const Weight& w, int e) {
  Weight s;
  s.name = fmt::format("{}[{}]", w.name, e);
  s.type = w.type;
  s.ne = {w.ne[0], w.ne[1], 1, 1};
  s.n_dims = 2;
  s.row_bytes = w.row_bytes;
  s.data = static_cast<const uint8_t*>(w.data) + (uint64_t)e * (uint64_t)w.ne[1] * w.row_bytes;
  s.storage = w.storage;
  return s;
}

}  // namespace

void CudaBackend::sigmoid_head_gate(View x, int n_head, int head_dim, View gate) {
  forget_q8s();
  MEMRA_CHECK(n_head > 0 && head_dim > 0 && (int64_t)n_head * head_dim == x.cols,
              "sigmoid_head_gate: {} heads x {} != {} columns", n_head, head_dim, x.cols);
  MEMRA_CHECK(gate.rows == x.rows && gate.cols == n_head, "sigmoid_head_gate: gate [{} x {}] must be [{} x {}]",
              gate.rows, gate.cols, x.rows, n_head);
  for (int64_t r0 = 0; r0 < x.rows; r0 += 65535) {
    const int64_t rows = std::min<int64_t>(x.rows - r0, 65535);
    cuda::HeadGateParams p;
    p.x = x.row(r0);
    p.ld_x = x.ld;
    p.gate = gate.row(r0);
    p.ld_gate = gate.ld;
    p.rows = (int)rows;
    p.n_head = n_head;
    p.head_dim = head_dim;
    cuda::check_status(cuda::launch_head_gate(p, stream()), "launch_head_gate");
  }
  note("head_gate", "sigmoid");
}

bool CudaBackend::moe_on_device(const MoeWeights& w, const MoeParams& mp, int64_t n) const {
  // Batches over kMatvecMaxM tokens: the grouped form (kernels.moe_device_route_prefill), quantized
  // experts only (its q8_1 activations).
  const bool grouped = n > cuda::kMatvecMaxM;
  if (!cfg_.kernels.moe_device_route || n < 1 || (grouped && !cfg_.kernels.moe_device_route_prefill)) return false;
  if (w.gate_bias || w.up_bias || w.down_bias || !w.gate_exps || !w.up_exps || !w.down_exps) return false;
  if (mp.n_expert > cuda::kMoeRouteMaxExperts || mp.n_expert_used > cuda::kMoeRouteMaxK || n > 65535 ||
      (grouped ? cuda::moe_group_capacity(n * mp.n_expert_used, mp.n_expert) : n * mp.n_expert_used) > 65535)
    return false;
  for (const Weight* t : {w.gate_exps, w.up_exps, w.down_exps}) {
    if (!cuda::cuda_weight_type_supported(t->type)) return false;  // launch_matvec's types
    const bool flt = t->type == QType::F32 || t->type == QType::F16 || t->type == QType::BF16;
    if (grouped && flt) return false;
    if (!flt && t->ne[0] % 32) return false;
  }
  return true;
}

void CudaBackend::moe_ffn_device(View x, const MoeWeights& w, const MoeParams& mp, View out, const MoeFusedNorm* fused,
                                 View residual) {
  const int64_t n = x.rows, e_dim = x.cols, n_ff = w.gate_exps->ne[1];
  const int K = mp.n_expert_used, E = mp.n_expert;
  const int64_t slots = n * K;
  const auto is_float = [](QType t) { return t == QType::F32 || t == QType::F16 || t == QType::BF16; };
  const auto q8_bytes = [](int64_t rows, int64_t cols) {
    return (size_t)rows * (size_t)(cols / 32) * sizeof(cuda::BlockQ8_1);
  };
  // Scratch: logits [n, E], gate / up [slots, n_ff], expert outputs [slots, e], the q8_1 inputs,
  // the weights and ids.
  const size_t floats = (size_t)(n * E + slots * n_ff * 2 + slots * e_dim);
  const size_t xq_bytes = q8_bytes(n, e_dim), gq_bytes = q8_bytes(slots, n_ff);
  auto* base = static_cast<uint8_t*>(
      workspace(kMoe, floats * sizeof(float) + xq_bytes + gq_bytes + (size_t)slots * 8 +
                          (size_t)cuda::moe_group_capacity(slots, E) * cuda::kMoeGroupStride * 4 + 9 * 64));  // 9 carves, each rounded up to 64 bytes
  const auto carve = [&](size_t bytes) {
    void* r = base;
    base += (bytes + 63) / 64 * 64;
    return r;
  };
  const View logits{static_cast<float*>(carve((size_t)(n * E) * 4)), n, E, E};
  const View g{static_cast<float*>(carve((size_t)(slots * n_ff) * 4)), slots, n_ff, n_ff};
  const View u{static_cast<float*>(carve((size_t)(slots * n_ff) * 4)), slots, n_ff, n_ff};
  const View d{static_cast<float*>(carve((size_t)(slots * e_dim) * 4)), slots, e_dim, e_dim};
  void* xq = carve(xq_bytes);
  void* gq = carve(gq_bytes);
  auto* d_ids = static_cast<int32_t*>(carve((size_t)slots * 4));
  auto* d_w = static_cast<float*>(carve((size_t)slots * 4));
  // Batches over kMatvecMaxM tokens (kernels.moe_device_route_prefill): the slots grouped by expert.
  const bool grouped = n > cuda::kMatvecMaxM;
  const int n_groups = grouped ? (int)cuda::moe_group_capacity(slots, E) : 0;
  auto* d_groups = grouped ? static_cast<int32_t*>(carve((size_t)n_groups * cuda::kMoeGroupStride * 4)) : nullptr;

  // The routing fields both router launches share (MoeRouteParams, MoeRouterFusedParams).
  const auto route_fields = [&](auto& rp) {
    rp.router_bias = f32_vector(w.router_bias, E, "MoE router bias");
    rp.selection_bias = f32_vector(mp.selection_bias, E, "MoE selection bias");
    rp.n_tokens = (int)n;
    rp.n_expert = E;
    rp.k_used = K;
    rp.gating = mp.gating == MoeGating::Softmax ? 0 : mp.gating == MoeGating::Sigmoid ? 1 : 2;
    rp.norm_topk = mp.norm_topk;
    rp.weights_scale = mp.weights_scale;
    rp.ids = d_ids;
    rp.weights = d_w;
  };
  if (fused) {
    // kernels.moe_router_fused: the norm (x is its output), the router, the top-k and x's q8_1
    // blocks in one launch.
    if (!moe_ticket_.get()) {
      MEMRA_CHECK(!capturing_, "internal: the MoE router's ticket is allocated during graph capture");
      moe_ticket_ = cuda::DeviceBuffer(ctx().pool(), 64, "MoE router ticket");
      cuda::fill_bytes(moe_ticket_.get(), 0, 64, stream());
    }
    cuda::MoeRouterFusedParams fp;
    fp.x = fused->x_stream.data;
    fp.ld_x = fused->x_stream.ld;
    fp.norm_w = f32_vector(fused->norm_w, e_dim, "MoE FFN norm");
    fp.eps = fused->eps;
    fp.cols = (int)e_dim;
    fp.router = static_cast<const float*>(w.router->data);
    fp.ld_router = (int64_t)(w.router->row_bytes / 4);
    fp.h = x.data;
    fp.ld_h = x.ld;
    fp.hq = xq;
    fp.logits = logits.data;
    fp.ld_logits = logits.ld;
    route_fields(fp);
    fp.ticket = moe_ticket_.as<unsigned>();
    cuda::check_status(cuda::launch_moe_router_fused(fp, stream()), "launch_moe_router_fused");
    note("norm", "rms_moe_router_fused");
  } else {
    matmul(*w.router, x, logits, nullptr);
    cuda::MoeRouteParams rp;
    rp.logits = logits.data;
    rp.ld = logits.ld;
    route_fields(rp);
    cuda::check_status(cuda::launch_moe_route(rp, stream()), "launch_moe_route");
  }
  if (grouped) {
    cuda::MoeGroupParams gp;
    gp.ids = d_ids;
    gp.n_slots = (int)slots;
    gp.n_expert = E;
    gp.groups = d_groups;
    gp.n_groups = n_groups;
    cuda::check_status(cuda::launch_moe_group(gp, stream()), "launch_moe_group");
  }

  // One routed matvec: slot s of the launch on expert ids[s]'s rows of t, input row s / x_div.
  bool v2_used = false, mma_used = false;
  // w2 / y2: a second expert stack of t's type and shape in the same launch (the up experts beside
  // the gate ones: kernels.moe_gate_up_one_launch; the plain routed form only).
  const auto routed = [&](const Weight& t, View in, void* in_q, int x_div, View y, const Weight* w2 = nullptr,
                          View y2 = {}) {
    cuda::MatvecParams p;
    p.w_type = t.type;
    p.w = t.data;
    p.w_row_bytes = t.row_bytes;
    p.n_rows = t.ne[1];
    p.n_cols = t.ne[0];
    p.m = 1;
    p.y = y.data;
    p.ldy = y.ld;
    p.rows_per_block = 4;
    if (grouped) {
      p.groups = d_groups;
      p.n_groups = n_groups;
    } else {
      p.ids = d_ids;
      p.n_slots = (int)slots;
    }
    p.n_experts = E;
    p.expert_bytes = (size_t)t.ne[1] * t.row_bytes;
    p.x_slot_div = x_div;
    if (w2) {
      p.w2 = w2->data;
      p.y2 = y2.data;
      p.x_q8_1 = in_q;
      cuda::check_status(cuda::launch_matvec(p, stream()), "launch_matvec (routed gate + up experts)");
      return;
    }
    if (is_float(t.type)) {
      p.x_f32 = in.data;
      p.ldx = in.ld;
    } else {
      p.x_q8_1 = in_q;
    }
    // kernels.moe_grouped_mma: the grouped launches on the int8 tensor cores (the types it has).
    if (grouped && cfg_.kernels.moe_grouped_mma && cuda::matvec_grouped_mma_built(t.type)) {
      cuda::check_status(cuda::launch_matvec_grouped_mma(p, stream()), "launch_matvec_grouped_mma (grouped experts)");
      mma_used = true;
      return;
    }
    // kernels.moe_routed_v2: the v2 kernel where it has the type (the same bits).
    if (!grouped && cfg_.kernels.moe_routed_v2 && !is_float(t.type) && cuda::matvec_v2_built(t.type)) {
      cuda::check_status(cuda::launch_matvec_v2(p, stream()), "launch_matvec_v2 (routed experts)");
      v2_used = true;
      return;
    }
    cuda::check_status(cuda::launch_matvec(p, stream()), "launch_matvec (routed experts)");
  };
  const auto quantize = [&](View in, void* q) {
    cuda::QuantizeQ8_1Params qp;
    qp.x = in.data;
    qp.y = q;
    qp.n = in.cols;
    qp.rows = in.rows;
    qp.ld_x = in.ld;
    cuda::check_status(cuda::launch_quantize_q8_1(qp, stream()), "launch_quantize_q8_1");
  };
  if (!fused && (!is_float(w.gate_exps->type) || !is_float(w.up_exps->type))) quantize(x, xq);
  // kernels.moe_gate_up_one_launch: gate and up in one routed launch (the same rows' bits) where
  // the two stacks match and no other routed form takes them.
  const Weight &wg = *w.gate_exps, &wu = *w.up_exps;
  const bool gate_up_one = cfg_.kernels.moe_gate_up_one_launch && !grouped && !is_float(wg.type) &&
                           wg.type == wu.type && wg.ne[0] == wu.ne[0] && wg.ne[1] == wu.ne[1] &&
                           wg.row_bytes == wu.row_bytes && g.ld == u.ld &&
                           !(cfg_.kernels.moe_routed_v2 && cuda::matvec_v2_built(wg.type));
  if (gate_up_one) {
    routed(wg, x, xq, K, g, &wu, u);
  } else {
    routed(wg, x, xq, K, g);
    routed(wu, x, xq, K, u);
  }
  // kernels.moe_glu_q8_1: the GLU writes the down projection's q8_1 input itself (the quantizer's
  // bytes: the same block rule on the same values), one launch instead of two.
  const bool glu_q8 = cfg_.kernels.moe_glu_q8_1 && !is_float(w.down_exps->type) &&
                      (mp.act == Activation::Silu || mp.act == Activation::GeluTanh);
  if (glu_q8) {
    forget_q8s();
    cuda::GluParams gp;
    gp.gate = g.data;
    gp.ld_gate = g.ld;
    gp.up = u.data;
    gp.ld_up = u.ld;
    gp.out_q8_1 = gq;
    gp.ld_out_bytes = (int64_t)(n_ff / 32) * (int64_t)sizeof(cuda::BlockQ8_1);
    gp.rows = (int)slots;
    gp.cols = (int)n_ff;
    gp.act = mp.act == Activation::Silu ? cuda::ActKind::Silu : cuda::ActKind::GeluTanh;
    cuda::check_status(cuda::launch_glu(gp, stream()), "launch_glu (q8_1 out)");
  } else {
    glu(g, u, mp.act, g);
    if (!is_float(w.down_exps->type)) quantize(g, gq);
  }
  routed(*w.down_exps, g, gq, 1, d);
  forget_q8s();
  cuda::MoeCombineParams cp;
  cp.d = d.data;
  cp.ld_d = d.ld;
  cp.rows = nullptr;  // slot s's output is row s
  cp.w = d_w;
  cp.out = residual.data ? residual.data : out.data;
  cp.ld_out = residual.data ? residual.ld : out.ld;
  cp.residual = residual.data;
  cp.ld_residual = residual.ld;
  cp.n_tokens = (int)n;
  cp.k_used = K;
  cp.cols = (int)e_dim;
  cuda::check_status(cuda::launch_moe_combine(cp, stream()), "launch_moe_combine");
  note("moe", fmt::format("device_{}_{}of{}{}{}{}{}{}{}", grouped ? "grouped" : "routed", K, E, v2_used ? "_v2" : "",
                          mma_used ? "_mma" : "", glu_q8 ? "_gluq8" : "", gate_up_one ? "_gateup1" : "",
                          fused ? "_rfused" : "", residual.data ? "_resid" : ""));
}

bool CudaBackend::moe_router_fused_applies(View x, const Weight* norm_w, View h, const MoeWeights& w,
                                           const MoeParams& mp) const {
  const auto a16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const int64_t n = x.rows;
  static_assert(cuda::kMoeRouterFusedMaxTokens <= cuda::kMatvecMaxM, "the fused router serves the routed (not grouped) form");
  if (!cfg_.kernels.moe_router_fused || n < 1 || n > cuda::kMoeRouterFusedMaxTokens) return false;
  if (!w.router || !w.gate_exps || !w.up_exps || w.router->type != QType::F32 || w.router->ne[0] != x.cols ||
      w.router->n_rows() != mp.n_expert || w.router->row_bytes % 16 || !a16(w.router->data))
    return false;
  if (norm_w && (norm_w->type != QType::F32 || !a16(norm_w->data))) return false;
  // The fused kernel writes x's q8_1 blocks for the gate / up experts (quantized stacks).
  for (const Weight* t : {w.gate_exps, w.up_exps})
    if (!qtype_traits(t->type).quantized) return false;
  return h.rows == n && h.cols == x.cols && x.cols % 32 == 0 && x.cols <= (1 << 24) && x.ld % 4 == 0 &&
         h.ld % 4 == 0 && a16(x.data) && a16(h.data) && !overlaps(x, h) && mp.n_expert <= cuda::kMoeRouteMaxExperts &&
         cuda::moe_router_fused_smem((int)n, (int)x.cols, norm_w != nullptr) <= cuda::kMoeRouterFusedMaxSmem &&
         moe_on_device(w, mp, n);
}

bool CudaBackend::rms_norm_moe_ffn(View x, const Weight* norm_w, float eps, View h, const MoeWeights& w,
                                   const MoeParams& mp, View out, bool may_add) {
  if (!moe_router_fused_applies(x, norm_w, h, w, mp)) return Backend::rms_norm_moe_ffn(x, norm_w, eps, h, w, mp, out);
  check_moe_ffn(h, w, mp, out);
  // h is written here as by rms_norm: the held planes and a deferred norm are given up.
  forget_q8s();
  defer_ = {};
  const MoeFusedNorm fused{x, norm_w, eps};
  // kernels.moe_combine_residual: the combine adds the experts' rows to the stream x itself.
  const bool add = may_add && cfg_.kernels.moe_combine_residual;
  moe_ffn_device(h, w, mp, out, &fused, add ? x : View{});
  return add;
}

void CudaBackend::check_moe_ffn(View x, const MoeWeights& w, const MoeParams& mp, View out) const {
  MEMRA_CHECK(w.router && w.gate_exps && w.up_exps && w.down_exps, "moe_ffn: missing weights");
  const int64_t n = x.rows, e_dim = x.cols, n_ff = w.gate_exps->ne[1];
  const int K = mp.n_expert_used, E = mp.n_expert;
  MEMRA_CHECK(out.rows == n && out.cols == e_dim, "moe_ffn: output shape mismatch");
  MEMRA_CHECK(w.gate_exps->ne[2] == E && w.up_exps->ne[2] == E && w.down_exps->ne[2] == E &&
                  w.down_exps->ne[0] == n_ff && w.down_exps->ne[1] == e_dim && w.gate_exps->ne[0] == e_dim,
              "moe_ffn: expert tensors do not match {} experts of [{} -> {}]", E, e_dim, n_ff);
  MEMRA_CHECK(K > 0 && K <= E, "MoE: n_expert_used {} must be in [1, n_expert={}]", K, E);
  check_int(n * K, "moe_ffn slots");
}

void CudaBackend::moe_ffn(View x, const MoeWeights& w, const MoeParams& mp, View out) {
  check_moe_ffn(x, w, mp, out);
  const int64_t n = x.rows, e_dim = x.cols, n_ff = w.gate_exps->ne[1];
  const int K = mp.n_expert_used, E = mp.n_expert;
  if (n == 0) return;
  settle_deferred_norm(x);  // the rows are copied / read as they are
  if (moe_on_device(w, mp, n)) return moe_ffn_device(x, w, mp, out);
  MEMRA_CHECK(!capturing_, "internal: a host-routed moe_ffn inside a captured decode step");
  // Scratch: logits [n, E], gathered inputs [n K, e], gate / up [n K, n_ff], outputs [n K, e].
  const int64_t slots = n * K;
  const size_t floats = (size_t)(n * E + slots * e_dim * 2 + slots * n_ff * 2);
  float* base = static_cast<float*>(workspace(kMoe, floats * sizeof(float) + (size_t)slots * 12 + 64));
  const View logits{base, n, E, E};
  float* p = base + n * E;
  const View xs{p, slots, e_dim, e_dim};
  p += slots * e_dim;
  const View g{p, slots, n_ff, n_ff};
  p += slots * n_ff;
  const View u{p, slots, n_ff, n_ff};
  p += slots * n_ff;
  const View d{p, slots, e_dim, e_dim};
  p += slots * e_dim;
  auto* d_rows = reinterpret_cast<int32_t*>(p);
  auto* d_w = reinterpret_cast<float*>(d_rows + slots);
  auto* d_src = reinterpret_cast<int32_t*>(d_w + slots);

  matmul(*w.router, x, logits, nullptr);
  std::vector<float> h_logits((size_t)(n * E));
  to_host(logits, h_logits.data());
  MoeParams hp = mp;
  std::vector<float> sel_bias;
  Weight sel_bias_host;
  if (mp.selection_bias) {  // moe_route reads it on the host
    const Weight& b = *mp.selection_bias;
    MEMRA_CHECK(b.type == QType::F32 && b.ne[0] == E && b.n_rows() == 1, "MoE: selection bias '{}' must be F32 [{}]",
                b.name, E);
    sel_bias.resize((size_t)E);
    to_host(View{const_cast<float*>(static_cast<const float*>(b.data)), 1, E, E}, sel_bias.data());
    sel_bias_host = b;
    sel_bias_host.data = sel_bias.data();
    hp.selection_bias = &sel_bias_host;
  }
  if (w.router_bias) {  // added to the logits here, in f32 as the oracle does
    const Weight& b = *w.router_bias;
    MEMRA_CHECK(b.type == QType::F32 && b.ne[0] == E && b.n_rows() == 1, "MoE: router bias '{}' must be F32 [{}]",
                b.name, E);
    std::vector<float> rb((size_t)E);
    to_host(View{const_cast<float*>(static_cast<const float*>(b.data)), 1, E, E}, rb.data());
    for (int64_t t = 0; t < n; ++t)
      for (int e = 0; e < E; ++e) h_logits[(size_t)(t * E + e)] += rb[(size_t)e];
  }
  std::vector<int32_t> ids((size_t)slots);
  std::vector<float> wts((size_t)slots);
  for (int64_t t = 0; t < n; ++t)
    moe_route(h_logits.data() + t * E, hp, ids.data() + t * K, wts.data() + t * K);

  // Slots grouped by expert (ascending), each group's rows contiguous in xs / g / u / d: one gather
  // of the tokens' rows, then each expert's products on its run of rows.
  std::vector<int32_t> row_of((size_t)slots), src_of((size_t)slots);
  std::vector<int64_t> first_of((size_t)E + 1, 0);
  int64_t next = 0;
  for (int e = 0; e < E; ++e) {
    first_of[(size_t)e] = next;
    for (int64_t s = 0; s < slots; ++s)
      if (ids[(size_t)s] == e) {
        row_of[(size_t)s] = (int32_t)next;
        src_of[(size_t)next] = (int32_t)(s / K);
        ++next;
      }
  }
  first_of[(size_t)E] = next;
  cuda::copy_h2d(d_src, src_of.data(), (size_t)slots * sizeof(int32_t), stream());
  for (int64_t r0 = 0; r0 < slots; r0 += 65535) {
    cuda::GatherRowsParams gp;
    gp.src = x.data;
    gp.ld_src = x.ld;
    gp.idx = d_src + r0;
    gp.dst = xs.row(r0);
    gp.ld_dst = xs.ld;
    gp.rows = (int)std::min<int64_t>(slots - r0, 65535);
    gp.cols = (int)e_dim;
    cuda::check_status(cuda::launch_gather_rows(gp, stream()), "launch_gather_rows");
  }
  for (int e = 0; e < E; ++e) {
    const int64_t first = first_of[(size_t)e], m = first_of[(size_t)e + 1] - first;
    if (m == 0) continue;
    const Weight wg = expert_slice(*w.gate_exps, e), wu = expert_slice(*w.up_exps, e),
                 wd = expert_slice(*w.down_exps, e);
    const View xe = xs.rows_slice(first, m), ge = g.rows_slice(first, m), ue = u.rows_slice(first, m),
               de = d.rows_slice(first, m);
    Weight bg, bu, bd;
    matmul(wg, xe, ge, bias_slice(w.gate_bias, n_ff, e, bg));
    matmul(wu, xe, ue, bias_slice(w.up_bias, n_ff, e, bu));
    glu(ge, ue, mp.act, ge);
    matmul(wd, ge, de, bias_slice(w.down_bias, e_dim, e, bd));
  }
  cuda::copy_h2d(d_rows, row_of.data(), (size_t)slots * sizeof(int32_t), stream());
  cuda::copy_h2d(d_w, wts.data(), (size_t)slots * sizeof(float), stream());
  // The host vectors must outlive the async copies.
  cuda::stream_sync(stream());
  forget_q8s();
  for (int64_t t0 = 0; t0 < n; t0 += 65535) {
    cuda::MoeCombineParams cp;
    cp.d = d.data;
    cp.ld_d = d.ld;
    cp.rows = d_rows + t0 * K;
    cp.w = d_w + t0 * K;
    cp.out = out.row(t0);
    cp.ld_out = out.ld;
    cp.n_tokens = (int)std::min<int64_t>(n - t0, 65535);
    cp.k_used = K;
    cp.cols = (int)e_dim;
    cuda::check_status(cuda::launch_moe_combine(cp, stream()), "launch_moe_combine");
  }
  note("moe", fmt::format("host_routed_{}of{}", K, E));
}

}  // namespace memra::backend::cuda_impl
