// kernel-check section "moe", router_fused/*: the FFN norm + router + top-k launch
// (launch_moe_router_fused, kernels.moe_router_fused) on fresh random inputs, every output checked:
// - h byte-identical to launch_rms_norm of the same rows (the shared sum order), and within 2e-6
//   normalized error of the f64 norm (one rounded product per factor: ~1e-7 measured scale, while a
//   wrong scale or weight is >= 1e-3);
// - hq byte-identical to lib/quant's quantize_row(Q8_1) of the downloaded h (the CPU oracle's
//   quantizer);
// - logits within 1e-5 of the f64 product of the router rows with the f64 normed rows (the section
//   matvec's bound for f32 accumulation over 2048-7168 columns);
// - ids byte-identical to the CPU oracle's backend::moe_route on the kernel's own logits, weights
//   within 1e-6 (the route/* rule); the ticket counter back at 0 after the launch.
#include <cmath>
#include <memory>

#include "cases_ref.h"
#include "moe/moe_kernels.h"
#include "norm/norm_kernels.h"
#include "quant/quant.h"
#include "route_ref.h"

namespace memra::kc {
namespace {

struct RouterShape {
  int n, e, k, cols, gating;
  bool rbias = false, sbias = false, norm = true, has_w = true;
  float scale = 1.0f;
};

class MoeRouterFusedCase : public Case {
 public:
  explicit MoeRouterFusedCase(RouterShape s) : s_(s) {}
  void generate(Env& env) override {
    ld_x_ = s_.cols + 4;
    ld_h_ = s_.cols + 8;
    ld_l_ = s_.e + 3;
    x_ = env.normal((size_t)s_.n * ld_x_, 1.0f);
    if (s_.has_w) nw_ = env.uniform((size_t)s_.cols, 0.5f, 1.5f);
    router_ = env.normal((size_t)s_.e * s_.cols, 1.5f / std::sqrt((float)s_.cols));
    if (s_.rbias) rb_ = env.normal((size_t)s_.e, 0.5f);
    if (s_.sbias) sb_ = env.uniform((size_t)s_.e, -0.3f, 0.3f);
    dx_ = env.upload(x_);
    if (s_.has_w) dnw_ = env.upload(nw_);
    drouter_ = env.upload(router_);
    if (s_.rbias) drb_ = env.upload(rb_);
    if (s_.sbias) dsb_ = env.upload(sb_);
    dh_ = env.alloc_output<float>((size_t)s_.n * ld_h_);
    dhq_ = env.alloc_output<uint8_t>(hq_bytes());
    dl_ = env.alloc_output<float>((size_t)s_.n * ld_l_);
    dids_ = env.alloc_output<int32_t>((size_t)s_.n * s_.k);
    dw_ = env.alloc_output<float>((size_t)s_.n * s_.k);
    dticket_ = env.upload(std::vector<unsigned>{0u});
    dnorm_ = env.alloc_output<float>((size_t)s_.n * s_.cols);
  }
  size_t hq_bytes() const { return (size_t)s_.n * (size_t)(s_.cols / 32) * 36; }
  cudaError_t launch(Env& env) override {
    cuda::MoeRouterFusedParams p;
    p.x = dx_;
    p.ld_x = ld_x_;
    p.norm_w = dnw_;
    p.eps = kEps;
    p.cols = s_.cols;
    p.router = drouter_;
    p.ld_router = s_.cols;
    p.h = dh_;
    p.ld_h = ld_h_;
    p.hq = dhq_;
    p.logits = dl_;
    p.ld_logits = ld_l_;
    p.router_bias = drb_;
    p.selection_bias = dsb_;
    p.n_tokens = s_.n;
    p.n_expert = s_.e;
    p.k_used = s_.k;
    p.gating = s_.gating;
    p.norm_topk = s_.norm;
    p.weights_scale = s_.scale;
    p.ids = dids_;
    p.weights = dw_;
    p.ticket = dticket_;
    return cuda::launch_moe_router_fused(p, env.stream());
  }
  void reference(Env&) override {
    h_ref_.assign((size_t)s_.n * s_.cols, 0.0);
    l_ref_.assign((size_t)s_.n * s_.e, 0.0);
    for (int j = 0; j < s_.n; ++j) {
      const float* x = x_.data() + (size_t)j * ld_x_;
      double ss = 0.0;
      for (int c = 0; c < s_.cols; ++c) ss += (double)x[c] * x[c];
      const double inv = 1.0 / std::sqrt(ss / s_.cols + (double)kEps);
      double* h = h_ref_.data() + (size_t)j * s_.cols;
      for (int c = 0; c < s_.cols; ++c) h[c] = x[c] * inv * (s_.has_w ? (double)nw_[(size_t)c] : 1.0);
      for (int e = 0; e < s_.e; ++e) {
        double acc = 0.0;
        for (int c = 0; c < s_.cols; ++c) acc += (double)router_[(size_t)e * s_.cols + c] * h[c];
        l_ref_[(size_t)j * s_.e + e] = acc;
      }
    }
  }
  Verdict compare(Env& env) override {
    // The plain norm of the same rows (the bits h must have).
    cuda::RmsNormParams np;
    np.x = dx_;
    np.ld_x = ld_x_;
    np.w = dnw_;
    np.out = dnorm_;
    np.ld_out = s_.cols;
    np.rows = s_.n;
    np.cols = s_.cols;
    np.eps = kEps;
    ref::check(cuda::launch_rms_norm(np, env.stream()), "launch_rms_norm (the plain norm)");
    const auto hp = env.download(dh_, (size_t)s_.n * ld_h_);
    const auto plain = env.download(dnorm_, (size_t)s_.n * s_.cols);
    const auto hq = env.download(dhq_, hq_bytes());
    const auto lp = env.download(dl_, (size_t)s_.n * ld_l_);
    const auto ids = env.download(dids_, (size_t)s_.n * s_.k);
    const auto w = env.download(dw_, (size_t)s_.n * s_.k);
    const auto ticket = env.download(dticket_, 1);
    std::vector<float> h, logits;
    std::vector<uint8_t> hq_ref(hq_bytes());
    for (int j = 0; j < s_.n; ++j) {
      h.insert(h.end(), hp.begin() + (size_t)j * ld_h_, hp.begin() + (size_t)j * ld_h_ + s_.cols);
      logits.insert(logits.end(), lp.begin() + (size_t)j * ld_l_, lp.begin() + (size_t)j * ld_l_ + s_.e);
      quantize_row(QType::Q8_1, h.data() + (size_t)j * s_.cols, hq_ref.data() + (size_t)j * (s_.cols / 32) * 36, s_.cols);
    }
    // The CPU oracle's routing of the kernel's own logits (the router bias added there as here).
    RouteRefParams rp;
    rp.n_tokens = s_.n;
    rp.n_expert = s_.e;
    rp.k_used = s_.k;
    rp.gating = s_.gating;
    rp.norm_topk = s_.norm;
    rp.weights_scale = s_.scale;
    rp.router_bias = s_.rbias ? rb_.data() : nullptr;
    rp.selection_bias = s_.sbias ? sb_.data() : nullptr;
    std::vector<int32_t> ids_ref((size_t)s_.n * s_.k);
    std::vector<float> w_ref(ids_ref.size());
    moe_route_ref(rp, logits.data(), s_.e, ids_ref.data(), w_ref.data());
    const unsigned zero = 0u;
    // The logits' verdict last: its error is the one the receipt keeps.
    return ref::all_of({{"ticket reset to 0", compare_bytes(ticket.data(), &zero, 4)},
                        {"h vs launch_rms_norm", compare_bytes(h.data(), plain.data(), h.size() * 4)},
                        {"h vs f64", ref::norm(h, h_ref_, 2e-6)},
                        {"hq vs quantize_row(Q8_1, h)", compare_bytes(hq.data(), hq_ref.data(), hq.size())},
                        {"ids vs moe_route", compare_bytes(ids.data(), ids_ref.data(), ids.size() * 4)},
                        {"weights vs moe_route", ref::norm(w, std::vector<double>(w_ref.begin(), w_ref.end()), 1e-6)},
                        {"logits vs f64", ref::norm(logits, l_ref_, 1e-5)}});
  }
  PerfCount perf_count() const override {
    return {(double)s_.e * s_.cols * 4 + (double)s_.n * s_.cols * 8 + (double)hq_bytes() + (double)s_.n * s_.e * 4, 0};
  }

 private:
  static constexpr float kEps = 1e-6f;
  RouterShape s_;
  int64_t ld_x_ = 0, ld_h_ = 0, ld_l_ = 0;
  std::vector<float> x_, nw_, router_, rb_, sb_;
  std::vector<double> h_ref_, l_ref_;
  float *dx_ = nullptr, *dnw_ = nullptr, *drouter_ = nullptr, *drb_ = nullptr, *dsb_ = nullptr;
  float *dh_ = nullptr, *dl_ = nullptr, *dw_ = nullptr, *dnorm_ = nullptr;
  uint8_t* dhq_ = nullptr;
  int32_t* dids_ = nullptr;
  unsigned* dticket_ = nullptr;
};

void add_moe_router_cases(Registry& r) {
  // name, shape: qwen3moe (128 experts, top 8 renormalized, 2048 wide) at 1 / 3 / 8 tokens; qwen2moe
  // (60 of top 4, no renormalization); gpt-oss (32, softmax over the top 4, router bias, 2880 wide);
  // step35-like sigmoid with a selection bias and a scale (256, 4096 wide: chunks past the preloaded
  // 2048 columns); 512 and 1000 experts (the larger register sets); one expert; no norm weight with a
  // row narrower than a warp's chunks; 7168 columns (the norm's 224-thread order).
  const std::pair<const char*, RouterShape> shapes[] = {
      {"qwen3moe-128of8-2048-n1", {1, 128, 8, 2048, 0}},
      {"qwen3moe-128of8-2048-n3", {3, 128, 8, 2048, 0}},
      {"qwen3moe-128of8-2048-n8", {8, 128, 8, 2048, 0}},
      {"qwen2moe-60of4-2048-nonorm-n2", {2, 60, 4, 2048, 0, false, false, false}},
      {"gptoss-32of4-2880-topk-softmax-rbias-n1", {1, 32, 4, 2880, 2, true}},
      {"sigmoid-256of8-4096-sbias-scale-n2", {2, 256, 8, 4096, 1, false, true, true, true, 2.5f}},
      {"softmax-512of10-1024-n1", {1, 512, 10, 1024, 0}},
      {"softmax-1000of8-512-rbias-n4", {4, 1000, 8, 512, 0, true}},
      {"one-expert-64-n1", {1, 1, 1, 64, 0}},
      {"no-norm-weight-40of6-96-n5", {5, 40, 6, 96, 0, false, false, true, false}},
      {"softmax-64of64-7168-n2", {2, 64, 64, 7168, 0}},
  };
  for (const auto& [name, s] : shapes)
    r.add("moe", ref::cat("router_fused/f32/", name), [s] { return std::make_unique<MoeRouterFusedCase>(s); });
}
MEMRA_KC_REGISTER(add_moe_router_cases);

}  // namespace
}  // namespace memra::kc
