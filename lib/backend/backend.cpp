#include "backend/backend.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "sample/sampler.h"

namespace memra::backend {

View Buffer::view(int64_t rows, int64_t cols) const {
  MEMRA_CHECK(rows >= 0 && cols >= 0 && rows * cols <= size,
              "buffer of {} floats cannot hold a [{} x {}] view", size, rows, cols);
  return {mem.get(), rows, cols, cols};
}

StepScope::StepScope(Backend& be, const Step& s) : be_(be) { replayed_ = be_.begin_step(s); }

StepScope::~StepScope() {
  if (!done_) be_.end_step(false);
}

void StepScope::finish() {
  done_ = true;
  be_.end_step(true);
}

void Backend::qk_norm_rope(View q, View k, int n_head, int n_head_kv, const Weight* q_norm, const Weight* k_norm,
                           float eps, int pos0, const RopeParams& p) {
  if (q_norm) head_rms_norm(q, n_head, p.head_dim, q_norm, eps);
  if (k_norm) head_rms_norm(k, n_head_kv, p.head_dim, k_norm, eps);
  rope(q, n_head, pos0, p);
  rope(k, n_head_kv, pos0, p);
}

void Backend::qk_norm_rope_kv(View q, View k, View v, int n_head, int n_head_kv, const Weight* q_norm,
                              const Weight* k_norm, float eps, int pos0, const RopeParams& p, KvStore& kv,
                              int layer) {
  qk_norm_rope(q, k, n_head, n_head_kv, q_norm, k_norm, eps, pos0, p);
  kv_write(kv, layer, pos0, k, v);
}

void Backend::qk_norm_rope_kv_attention(View q, View k, View v, int n_head, int n_head_kv, const Weight* q_norm,
                                        const Weight* k_norm, float eps, int pos0, const RopeParams& rp, KvStore& kv,
                                        int layer, const AttnParams& ap, View out) {
  qk_norm_rope_kv(q, k, v, n_head, n_head_kv, q_norm, k_norm, eps, pos0, rp, kv, layer);
  attention(q, kv, layer, pos0, ap, out);
}

void Backend::argmax_rows(View src, std::span<int32_t> out) {
  MEMRA_CHECK((int64_t)out.size() == src.rows, "argmax_rows: {} outputs for {} rows", out.size(), src.rows);
  if (src.rows == 0) return;
  MEMRA_CHECK(src.cols > 0, "argmax_rows: rows of no columns");
  std::vector<float> h((size_t)(src.rows * src.cols));
  to_host(src, h.data());
  for (int64_t r = 0; r < src.rows; ++r)
    out[(size_t)r] = memra::argmax(std::span<const float>(h).subspan((size_t)(r * src.cols), (size_t)src.cols));
}

namespace {

// Backend::make_sampler's default: the row to the host, memra::Sampler there.
class HostTokenSampler final : public TokenSampler {
 public:
  HostTokenSampler(Backend& be, const SamplerOptions& o) : be_(be), s_(o) {}
  int32_t sample(View logits) override {
    MEMRA_CHECK(logits.rows == 1 && logits.cols > 0, "sampler: a [{} x {}] view, one row expected", logits.rows,
                logits.cols);
    row_.resize((size_t)logits.cols);
    be_.to_host(logits, row_.data());
    return s_.sample(row_);
  }
  void accept(int32_t token) override { s_.accept(token); }
  std::string where() const override { return "host"; }

 private:
  Backend& be_;
  Sampler s_;
  std::vector<float> row_;
};

}  // namespace

std::unique_ptr<TokenSampler> Backend::make_sampler(const SamplerOptions& o) {
  return std::make_unique<HostTokenSampler>(*this, o);
}

void Backend::matmul_n(View x, std::span<const MatmulOut> outs) {
  for (const auto& o : outs) matmul(*o.w, x, o.y, o.bias);
}

void Backend::matmul_glu(const Weight& gate, const Weight& up, View x, Activation act, View out, View up_tmp) {
  matmul(gate, x, out, nullptr);
  matmul(up, x, up_tmp, nullptr);
  glu(out, up_tmp, act, out);
}

void Backend::matmul_residual(const Weight& w, View, View) {
  MEMRA_FAIL("internal: matmul_residual('{}') on the {} backend, which does not fuse the residual add", w.name, name());
}

void Backend::gated_delta_net(View, View, View, const DeltaNetWeights&, const DeltaNetParams&, KvStore&, int, int,
                              View) {
  MEMRA_FAIL("the Gated DeltaNet (recurrent) layer has no {} path yet: run this model with run.backend = cpu", name());
}

void Backend::kv_write_index(KvStore&, int, int, View) {
  MEMRA_FAIL("the sparse-attention indexer-key cache (MiniMax-M3) has no {} path yet: run this model with "
             "run.backend = cpu", name());
}

void Backend::block_sparse_attention(View, View, const KvStore&, int, int, const AttnParams&,
                                     const BlockSparseParams&, View) {
  MEMRA_FAIL("block-sparse attention (MiniMax-M3's sparse attention) has no {} path yet: run this model with "
             "run.backend = cpu", name());
}

void Backend::layer_norm(View, const Weight*, const Weight*, float, View) {
  MEMRA_FAIL("layer_norm is not implemented on the {} backend yet", name());
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::Silu: return "silu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::SwigluOai: return "swiglu_oai";
    case Activation::Sigmoid: return "sigmoid";
  }
  return "?";
}

void moe_route(const float* logits, const MoeParams& p, int32_t* ids, float* weights) {
  const int ne = p.n_expert;
  MEMRA_CHECK(p.n_expert_used > 0 && p.n_expert_used <= ne,
              "MoE: n_expert_used {} must be in [1, n_expert={}]", p.n_expert_used, ne);
  std::vector<double> prob((size_t)ne);
  if (p.gating == MoeGating::SoftmaxWeight) {
    // Top k by logit (ties to the lower id), then the softmax of the k selected logits.
    std::vector<int32_t> order((size_t)ne);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    const int k_used = p.n_expert_used;
    const double mx = logits[order[0]];
    double sum = 0.0;
    std::vector<double> w((size_t)k_used);
    for (int k = 0; k < k_used; ++k) {
      ids[k] = order[(size_t)k];
      sum += w[(size_t)k] = std::exp((double)logits[ids[k]] - mx);
    }
    for (int k = 0; k < k_used; ++k) weights[k] = (float)(w[(size_t)k] / sum * p.weights_scale);
    return;
  }
  if (p.gating == MoeGating::Softmax) {
    double mx = logits[0];
    for (int e = 1; e < ne; ++e) mx = std::max(mx, (double)logits[e]);
    double sum = 0.0;
    for (int e = 0; e < ne; ++e) sum += prob[(size_t)e] = std::exp((double)logits[e] - mx);
    for (auto& x : prob) x /= sum;
  } else {
    for (int e = 0; e < ne; ++e) prob[(size_t)e] = 1.0 / (1.0 + std::exp(-(double)logits[e]));
  }
  std::vector<double> key(prob);
  if (p.selection_bias) {
    MEMRA_CHECK(p.selection_bias->type == QType::F32 && p.selection_bias->ne[0] == ne,
                "MoE: selection bias '{}' must be F32 [{}]", p.selection_bias->name, ne);
    const auto* b = static_cast<const float*>(p.selection_bias->data);
    for (int e = 0; e < ne; ++e) key[(size_t)e] += b[e];
  }
  std::vector<int32_t> order((size_t)ne);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return key[(size_t)a] > key[(size_t)b]; });
  double sum = 0.0;
  for (int k = 0; k < p.n_expert_used; ++k) {
    ids[k] = order[(size_t)k];
    sum += prob[(size_t)order[(size_t)k]];
  }
  // The renormalizing sum is kept >= the smallest normal f16 (llama.cpp's guard against a zero
  // sum; softmax top-k sums never come near it).
  sum = std::max(sum, 6.103515625e-5);
  for (int k = 0; k < p.n_expert_used; ++k) {
    double w = prob[(size_t)ids[k]];
    if (p.norm_topk) w /= sum;
    weights[k] = (float)(w * p.weights_scale);
  }
}

}  // namespace memra::backend
