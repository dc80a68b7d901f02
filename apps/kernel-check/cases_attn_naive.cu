// kernel-check section "attn_naive": the plain attention kernel (kernels/misc/attn_naive.cu: head
// sizes the tuned kernels have no instance for, and attention sinks) against f64 on the cache's
// values, F32 and F16 caches, causal, windowed, and with per-head sink logits (gpt-oss: in the
// softmax's maximum and denominator, no value row; sinks above every score exercise the rescale).
// Tolerance: normalized L2 error <= 2e-6 (f32 dots of <= 128 terms, an online softmax in f32: a
// few ulp measured scale; a missing sink or a wrong window is >= 1e-2).
#include <cmath>
#include <memory>

#include "cases_ref.h"
#include "core/half.h"
#include "misc/misc_kernels.h"

namespace memra::kc {
namespace {

struct NaiveCase {
  int n_head, n_head_kv, hd, pos0, n_tokens, window;
  bool f16, sinks;
};

class AttnNaiveCase : public Case {
 public:
  explicit AttnNaiveCase(NaiveCase c) : c_(c) {}
  void generate(Env& env) override {
    const int total = c_.pos0 + c_.n_tokens, row = c_.n_head_kv * c_.hd;
    k_ = env.normal((size_t)total * row, 1.0f);
    v_ = env.normal((size_t)total * row, 1.0f);
    q_ = env.normal((size_t)c_.n_tokens * c_.n_head * c_.hd, 0.5f);
    sinks_ = env.normal(c_.n_head, 1.0f);
    sinks_[0] = 8.0f;  // above every score: the final rescale
    if (c_.f16) {
      std::vector<uint16_t> kh(k_.size()), vh(v_.size());
      for (size_t i = 0; i < k_.size(); ++i) kh[i] = f32_to_fp16(k_[i]), k_[i] = fp16_to_f32(kh[i]);
      for (size_t i = 0; i < v_.size(); ++i) vh[i] = f32_to_fp16(v_[i]), v_[i] = fp16_to_f32(vh[i]);
      dk_ = env.upload(kh);
      dv_ = env.upload(vh);
    } else {
      dk_ = env.upload(k_);
      dv_ = env.upload(v_);
    }
    dq_ = env.upload(q_);
    dsinks_ = env.upload(sinks_);
    dpos_ = env.upload(std::vector<int32_t>{c_.pos0});
    dout_ = env.alloc_output<float>((size_t)c_.n_tokens * c_.n_head * c_.hd);
  }
  cudaError_t launch(Env& env) override {
    cuda::AttnNaiveParams p;
    const int row = c_.n_head_kv * c_.hd;
    p.q = dq_;
    p.ld_q = (int64_t)c_.n_head * c_.hd;
    p.k_cache = dk_;
    p.v_cache = dv_;
    p.type_k = p.type_v = c_.f16 ? QType::F16 : QType::F32;
    p.k_row_bytes = p.v_row_bytes = (int64_t)row * (c_.f16 ? 2 : 4);
    p.out = dout_;
    p.ld_out = (int64_t)c_.n_head * c_.hd;
    p.n_tokens = c_.n_tokens;
    p.n_head = c_.n_head;
    p.n_head_kv = c_.n_head_kv;
    p.head_dim_k = p.head_dim_v = c_.hd;
    p.pos0 = dpos_;
    p.scale = 1.0f / std::sqrt((float)c_.hd);
    p.window = c_.window;
    p.sinks = c_.sinks ? dsinks_ : nullptr;
    return cuda::launch_attn_naive(p, env.stream());
  }
  void reference(Env&) override {
    const int row = c_.n_head_kv * c_.hd, group = c_.n_head / c_.n_head_kv;
    ref_.assign((size_t)c_.n_tokens * c_.n_head * c_.hd, 0.0);
    for (int t = 0; t < c_.n_tokens; ++t)
      for (int h = 0; h < c_.n_head; ++h) {
        const int pos = c_.pos0 + t, g = h / group;
        const int lo = c_.window > 0 ? std::max(0, pos - c_.window + 1) : 0;
        std::vector<double> s;
        double mx = c_.sinks ? (double)sinks_[(size_t)h] : -INFINITY;
        for (int j = lo; j <= pos; ++j) {
          double d = 0;
          for (int e = 0; e < c_.hd; ++e)
            d += (double)q_[(size_t)((t * c_.n_head + h) * c_.hd + e)] * k_[(size_t)(j * row + g * c_.hd + e)];
          s.push_back(d / std::sqrt((double)c_.hd));
          mx = std::max(mx, s.back());
        }
        double sum = c_.sinks ? std::exp((double)sinks_[(size_t)h] - mx) : 0.0;
        for (auto& x : s) sum += x = std::exp(x - mx);
        for (int e = 0; e < c_.hd; ++e) {
          double o = 0;
          for (int j = lo; j <= pos; ++j) o += s[(size_t)(j - lo)] * v_[(size_t)(j * row + g * c_.hd + e)];
          ref_[(size_t)((t * c_.n_head + h) * c_.hd + e)] = o / sum;
        }
      }
  }
  Verdict compare(Env& env) override { return ref::norm(env.download(dout_, ref_.size()), ref_, 2e-6); }
  PerfCount perf_count() const override {
    return {(double)(c_.pos0 + c_.n_tokens) * c_.n_head_kv * c_.hd * 2 * (c_.f16 ? 2 : 4), 0};
  }

 private:
  NaiveCase c_;
  std::vector<float> k_, v_, q_, sinks_;
  std::vector<double> ref_;
  void *dk_ = nullptr, *dv_ = nullptr;
  float *dq_ = nullptr, *dsinks_ = nullptr, *dout_ = nullptr;
  int32_t* dpos_ = nullptr;
};

void add_attn_naive_cases(Registry& r) {
  for (bool sinks : {false, true})
    for (bool f16 : {false, true})
      for (NaiveCase c : {NaiveCase{4, 2, 64, 0, 7, 0}, NaiveCase{8, 2, 64, 40, 1, 0}, NaiveCase{4, 4, 96, 300, 5, 16},
                          NaiveCase{2, 1, 8, 20, 3, 0}}) {
        c.f16 = f16;
        c.sinks = sinks;
        r.add("attn_naive", ref::cat("attn_naive/", f16 ? "f16" : "f32", sinks ? "+sinks" : "", "/h", c.n_head, "kv",
                                     c.n_head_kv, "d", c.hd, "/pos", c.pos0, "n", c.n_tokens, "w", c.window),
              [=] { return std::make_unique<AttnNaiveCase>(c); });
      }
}
MEMRA_KC_REGISTER(add_attn_naive_cases);

}  // namespace
}  // namespace memra::kc
