// kernel-check section "sample": device argmax byte-for-byte against memra::argmax (planted ties
// and NaNs), and the device sampling chain against the CPU sampler (lib/sample) for the same
// logits, penalty window, options and draw counter: the token, the counter after the draw and
// the penalized logits are compared byte for byte (the chain's arithmetic is shared source,
// lib/sample/chain.h; the only allowed divergence is the last ulp of double exp/log at a
// threshold, a ~1e-15 event that these cases do not hit).
#include <cmath>
#include <memory>

#include "cases_ref.h"
#include "sample/chain.h"
#include "sample/sample_kernels.h"
#include "sample/sampler.h"

namespace memra::kc {
namespace {

class ArgmaxCase : public Case {
 public:
  ArgmaxCase(int rows, int vocab) : rows_(rows), vocab_(vocab) {}
  void generate(Env& env) override {
    ld_ = vocab_ + 7;
    x_ = env.normal((size_t)rows_ * ld_, 4.0f);
    std::uniform_int_distribution<int> pick(0, vocab_ - 1);
    for (int r = 0; r < rows_; ++r) {
      float* row = x_.data() + (size_t)r * ld_;
      switch (r % 4) {
        case 1: {  // the maximum at three places: the smallest index must win
          float mx = -INFINITY;
          for (int i = 0; i < vocab_; ++i) mx = std::max(mx, row[i]);
          for (int k = 0; k < 3; ++k) row[pick(env.rng())] = mx + 1.0f;
          break;
        }
        case 2:  // NaNs sprinkled: never the answer
          for (int k = 0; k < 50; ++k) row[pick(env.rng())] = NAN;
          break;
        case 3:  // all equal: index 0
          for (int i = 0; i < vocab_; ++i) row[i] = -1.25f;
          break;
        default:
          break;
      }
    }
    dx_ = env.upload(x_);
    dout_ = env.alloc_output<int32_t>(rows_);
  }
  cudaError_t launch(Env& env) override {
    cuda::ArgmaxParams p{dx_, ld_, rows_, vocab_, dout_};
    return cuda::launch_argmax(p, env.stream());
  }
  void reference(Env&) override {
    want_.clear();
    for (int r = 0; r < rows_; ++r)
      want_.push_back(memra::argmax(std::span<const float>(x_.data() + (size_t)r * ld_, vocab_)));
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dout_, rows_);
    return compare_bytes(got.data(), want_.data(), got.size() * 4);
  }
  PerfCount perf_count() const override { return {(double)rows_ * vocab_ * 4, 0}; }

 private:
  int rows_, vocab_;
  int64_t ld_ = 0;
  std::vector<float> x_;
  std::vector<int32_t> want_;
  float* dx_ = nullptr;
  int32_t* dout_ = nullptr;
};

struct SampleCfg {
  const char* name;
  SamplerOptions o;
};

class SampleCase : public Case {
 public:
  SampleCase(SampleCfg c, int vocab, uint64_t counter) : c_(c), vocab_(vocab), counter_(counter) {}
  void generate(Env& env) override {
    logits_ = env.normal(vocab_, 3.0f);
    // A few near-ties at the top so the candidate order's id tie-break matters.
    std::uniform_int_distribution<int> pick(0, vocab_ - 1);
    float mx = -INFINITY;
    for (float v : logits_) mx = std::max(mx, v);
    for (int k = 0; k < 4; ++k) logits_[pick(env.rng())] = mx;
    window_.clear();
    const int wn = c_.o.penalty_last_n;
    for (int i = 0; i < wn; ++i) {
      // Repeats on purpose (counts > 1), and tokens from the top of the distribution.
      window_.push_back(i % 5 == 0 && i > 0 ? window_[i - 1] : pick(env.rng()));
    }
    dlogits_ = env.upload(logits_);
    dwin_ = wn ? env.upload(window_) : nullptr;
    dwlen_ = env.upload(std::vector<int32_t>{wn});
    dcounter_ = env.upload(std::vector<uint64_t>{counter_});
    dout_ = env.alloc_output<int32_t>(1);
  }
  cudaError_t launch(Env& env) override {
    cuda::SampleParams p;
    p.logits = dlogits_;
    p.n_vocab = vocab_;
    p.window = dwin_;
    p.window_len = dwlen_;
    p.window_cap = (int)window_.size();
    p.temperature = c_.o.temperature;
    p.top_k = c_.o.top_k;
    p.top_p = c_.o.top_p;
    p.min_p = c_.o.min_p;
    p.typical_p = c_.o.typical_p;
    p.repeat_penalty = c_.o.repeat_penalty;
    p.frequency_penalty = c_.o.frequency_penalty;
    p.presence_penalty = c_.o.presence_penalty;
    p.seed = c_.o.seed;
    p.draw_counter = dcounter_;
    p.out = dout_;
    return cuda::launch_sample(p, env.stream());
  }
  void reference(Env&) override {
    Sampler s(c_.o);
    for (int32_t t : window_) s.accept(t);
    // Advance the CPU draw counter to the device's.
    const std::vector<float> flat(vocab_, 0.0f);
    if (c_.o.temperature > 0)
      for (uint64_t i = 0; i < counter_; ++i) (void)s.sample(flat);
    want_token_ = s.sample(logits_);
    want_counter_ = c_.o.temperature > 0 ? counter_ + 1 : counter_;
    // The penalized logits the device leaves in place.
    want_logits_ = logits_;
    for (size_t i = 0; i < window_.size(); ++i) {
      const int32_t t = window_[i];
      bool first = true;
      for (size_t j = 0; j < i; ++j) first &= window_[j] != t;
      if (!first) continue;
      const bool pen = c_.o.repeat_penalty != 1.0f || c_.o.frequency_penalty != 0.0f || c_.o.presence_penalty != 0.0f;
      if (pen)
        want_logits_[t] = sample_chain::penalize(std::isnan(logits_[t]) ? -INFINITY : logits_[t], s.count_in_window(t),
                                                 c_.o.repeat_penalty, c_.o.frequency_penalty, c_.o.presence_penalty);
    }
  }
  Verdict compare(Env& env) override {
    const auto tok = env.download(dout_, 1);
    const auto cnt = env.download(dcounter_, 1);
    const auto lg = env.download(dlogits_, vocab_);
    Verdict vt = compare_bytes(tok.data(), &want_token_, 4);
    vt.detail += ref::cat(" (device ", tok[0], ", cpu ", want_token_, ")");
    return ref::all_of({{"token", vt},
                        {"draw counter", compare_bytes(cnt.data(), &want_counter_, 8)},
                        {"penalized logits", compare_bytes(lg.data(), want_logits_.data(), lg.size() * 4)}});
  }
  PerfCount perf_count() const override { return {(double)vocab_ * 4, 0}; }

 private:
  SampleCfg c_;
  int vocab_;
  uint64_t counter_;
  std::vector<float> logits_, want_logits_;
  std::vector<int32_t> window_;
  int32_t want_token_ = -1;
  uint64_t want_counter_ = 0;
  float* dlogits_ = nullptr;
  int32_t *dwin_ = nullptr, *dwlen_ = nullptr, *dout_ = nullptr;
  uint64_t* dcounter_ = nullptr;
};

SamplerOptions opts(float temp, int top_k, float top_p, float min_p, float typical, float rep, float freq, float pres,
                    int last_n, uint64_t seed) {
  SamplerOptions o;
  o.temperature = temp;
  o.top_k = top_k;
  o.top_p = top_p;
  o.min_p = min_p;
  o.typical_p = typical;
  o.repeat_penalty = rep;
  o.frequency_penalty = freq;
  o.presence_penalty = pres;
  o.penalty_last_n = last_n;
  o.seed = seed;
  return o;
}

void add_sample_cases(Registry& r) {
  for (int rows : {1, 5})
    for (int vocab : {32000, 49152, 151936, 32017})
      r.add("sample", ref::cat("argmax/f32/", rows, "x", vocab), [=] { return std::make_unique<ArgmaxCase>(rows, vocab); });
  const SampleCfg cfgs[] = {
      {"greedy_penalized", opts(0.0f, 40, 1.0f, 0.0f, 1.0f, 1.3f, 0.2f, 0.4f, 64, 1)},
      {"default", opts(0.8f, 40, 0.95f, 0.05f, 1.0f, 1.0f, 0.0f, 0.0f, 64, 42)},
      {"penalties", opts(0.7f, 40, 0.9f, 0.0f, 1.0f, 1.1f, 0.3f, 0.5f, 64, 7)},
      {"hot_wide", opts(1.5f, 1000, 1.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0, 3)},
      {"typical", opts(1.0f, 200, 1.0f, 0.0f, 0.9f, 1.0f, 0.0f, 0.0f, 16, 11)},
      {"min_p", opts(1.0f, 512, 1.0f, 0.2f, 1.0f, 1.0f, 0.0f, 0.0f, 0, 5)},
      {"top_k1", opts(0.9f, 1, 0.95f, 0.05f, 1.0f, 1.0f, 0.0f, 0.0f, 0, 9)},
      {"all", opts(0.6f, 100, 0.8f, 0.01f, 0.95f, 1.05f, 0.1f, 0.1f, 32, 123)},
  };
  for (const SampleCfg& c : cfgs)
    for (int vocab : {49152, 151936})
      for (uint64_t counter : {0ull, 17ull}) {
        r.add("sample", ref::cat("sample/", c.name, "/", vocab, "@draw", counter),
              [=] { return std::make_unique<SampleCase>(c, vocab, counter); });
      }
}
MEMRA_KC_REGISTER(add_sample_cases);

}  // namespace
}  // namespace memra::kc
