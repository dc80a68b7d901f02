// kernel-check section "ssm": the Gated DeltaNet layer (kernels/ssm/ssm_kernels.h) against an f64
// CPU reference of the same recurrence (backend::DeltaNetParams), from a random nonzero state:
// the outputs of every token, the final conv state (byte-identical: it only copies inputs) and the
// final recurrent state. And the same tokens in two launches (a prefill then the rest) against
// one launch: byte-identical outputs and states (each token's arithmetic does not depend on the
// split).
// Tolerance: normalized L2 error <= 2e-5 for the outputs and the state. The kernel is f32 (fmaf
// chains of dk terms, expf / log1pf / sqrtf) against f64; over <= 40 tokens the state's relative
// error measured scale is ~1e-6, while a wrong index, decay or normalization is >= 1e-2.
#include <cmath>
#include <memory>

#include "backend/cuda/runtime.h"
#include "cases_ref.h"
#include "ssm/ssm_kernels.h"

namespace memra::kc {
namespace {

constexpr double kSsmTol = 2e-5;

struct Geo {
  int nk, nv, dk, dv, dc;
};

class DeltaNetCase : public Case {
 public:
  DeltaNetCase(Geo g, int n, int split) : g_(g), n_(n), split_(split) {}
  void generate(Env& env) override {
    C_ = 2LL * g_.nk * g_.dk + (int64_t)g_.nv * g_.dv;
    ld_ = C_ + 3;  // a row stride past the channels
    qkv_ = env.normal((size_t)n_ * ld_, 1.0f);
    alpha_ = env.normal((size_t)n_ * g_.nv, 1.0f);
    beta_ = env.normal((size_t)n_ * g_.nv, 1.5f);
    conv_w_ = env.normal((size_t)C_ * g_.dc, 0.3f);
    dt_ = env.uniform(g_.nv, -4.0f, -1.0f);
    a_ = env.uniform(g_.nv, -16.0f, -1.0f);
    conv0_ = env.normal((size_t)(g_.dc - 1) * C_ + 1, 1.0f);
    state0_ = env.normal((size_t)g_.nv * g_.dv * g_.dk, 0.05f);
    d_qkv_ = env.upload(qkv_);
    d_alpha_ = env.upload(alpha_);
    d_beta_ = env.upload(beta_);
    d_conv_w_ = env.upload(conv_w_);
    d_dt_ = env.upload(dt_);
    d_a_ = env.upload(a_);
    d_conv0_ = env.upload(conv0_);
    d_state0_ = env.upload(state0_);
    d_conv_ = env.alloc<float>(conv0_.size());
    d_state_ = env.alloc<float>(state0_.size());
    d_x_ = env.alloc<float>((size_t)n_ * C_);
    d_out_ = env.alloc_output<float>((size_t)n_ * out_cols());
    if (split_ > 0) {
      d_conv2_ = env.alloc<float>(conv0_.size());
      d_state2_ = env.alloc<float>(state0_.size());
      d_out2_ = env.alloc<float>((size_t)n_ * out_cols());
    }
  }
  int64_t out_cols() const { return (int64_t)g_.nv * g_.dv; }
  cuda::DeltaNetParams params(int t0, int n, float* conv, float* state, float* out) const {
    cuda::DeltaNetParams p;
    p.qkv = d_qkv_ + (int64_t)t0 * ld_;
    p.ld_qkv = ld_;
    p.alpha = d_alpha_ + (int64_t)t0 * g_.nv;
    p.ld_alpha = g_.nv;
    p.beta = d_beta_ + (int64_t)t0 * g_.nv;
    p.ld_beta = g_.nv;
    p.conv_w = d_conv_w_;
    p.dt_bias = d_dt_;
    p.a = d_a_;
    p.conv_state = conv;
    p.state = state;
    p.x = d_x_;
    p.out = out + (int64_t)t0 * out_cols();
    p.ld_out = out_cols();
    p.n_tokens = n;
    p.n_k_heads = g_.nk;
    p.n_v_heads = g_.nv;
    p.head_k_dim = g_.dk;
    p.head_v_dim = g_.dv;
    p.d_conv = g_.dc;
    p.eps = 1e-6f;
    return p;
  }
  // The layer starts from the random state every launch (in place: restored first).
  cudaError_t launch(Env& env) override {
    cuda::copy_d2d(d_conv_, d_conv0_, conv0_.size() * 4, env.stream());
    cuda::copy_d2d(d_state_, d_state0_, state0_.size() * 4, env.stream());
    return cuda::launch_delta_net(params(0, n_, d_conv_, d_state_, d_out_), env.stream());
  }
  void reference(Env& env) override {
    ref_f64();
    if (split_ == 0) return;
    cuda::copy_d2d(d_conv2_, d_conv0_, conv0_.size() * 4, env.stream());
    cuda::copy_d2d(d_state2_, d_state0_, state0_.size() * 4, env.stream());
    ref::check(cuda::launch_delta_net(params(0, split_, d_conv2_, d_state2_, d_out2_), env.stream()),
               "launch_delta_net (first part)");
    ref::check(cuda::launch_delta_net(params(split_, n_ - split_, d_conv2_, d_state2_, d_out2_), env.stream()),
               "launch_delta_net (second part)");
  }
  Verdict compare(Env& env) override {
    const auto out = env.download(d_out_, (size_t)n_ * out_cols());
    const auto state = env.download(d_state_, state0_.size());
    const auto conv = env.download(d_conv_, conv0_.size());
    const Verdict vo = ref::norm(out, ref_out_, kSsmTol), vs = ref::norm(state, ref_state_, kSsmTol);
    const Verdict vc = compare_bytes(reinterpret_cast<const uint8_t*>(conv.data()),
                                     reinterpret_cast<const uint8_t*>(ref_conv_.data()), conv.size() * 4);
    if (split_ == 0) return ref::all_of({{"out", vo}, {"state", vs}, {"conv state bytes", vc}});
    const auto out2 = env.download(d_out2_, (size_t)n_ * out_cols());
    const auto state2 = env.download(d_state2_, state0_.size());
    return ref::all_of(
        {{"out", vo},
         {"state", vs},
         {"conv state bytes", vc},
         {"out: two launches vs one, bytes",
          compare_bytes(reinterpret_cast<const uint8_t*>(out2.data()), reinterpret_cast<const uint8_t*>(out.data()),
                        out.size() * 4)},
         {"state: two launches vs one, bytes",
          compare_bytes(reinterpret_cast<const uint8_t*>(state2.data()),
                        reinterpret_cast<const uint8_t*>(state.data()), state.size() * 4)}});
  }
  PerfCount perf_count() const override {
    const double state = (double)state0_.size() * 4;
    return {2 * state + (double)n_ * (C_ + out_cols()) * 4, 0};
  }

 private:
  // The recurrence in f64 from the random state; the conv state's final rows are copies of inputs.
  void ref_f64() {
    const int dc = g_.dc, dk = g_.dk, dv = g_.dv;
    std::vector<double> conv(conv0_.begin(), conv0_.begin() + (int64_t)(dc - 1) * C_);
    std::vector<double> S(state0_.begin(), state0_.end());
    ref_out_.assign((size_t)n_ * out_cols(), 0.0);
    std::vector<double> x((size_t)C_);
    for (int t = 0; t < n_; ++t) {
      const float* in = qkv_.data() + (int64_t)t * ld_;
      for (int64_t c = 0; c < C_; ++c) {
        double acc = (double)in[c] * conv_w_[(size_t)(c * dc + dc - 1)];
        for (int j = 0; j < dc - 1; ++j) acc += conv[(size_t)(j * C_ + c)] * conv_w_[(size_t)(c * dc + j)];
        x[(size_t)c] = acc / (1.0 + std::exp(-acc));
      }
      for (int j = 0; j + 1 < dc - 1; ++j)
        for (int64_t c = 0; c < C_; ++c) conv[(size_t)(j * C_ + c)] = conv[(size_t)((j + 1) * C_ + c)];
      if (dc > 1)
        for (int64_t c = 0; c < C_; ++c) conv[(size_t)((dc - 2) * C_ + c)] = in[c];
      for (int h = 0; h < g_.nv; ++h) {
        const int kh = h % g_.nk;
        const double* q = x.data() + (int64_t)kh * dk;
        const double* k = x.data() + (int64_t)(g_.nk + kh) * dk;
        const double* v = x.data() + 2LL * g_.nk * dk + (int64_t)h * dv;
        double nq = 0, nk = 0;
        for (int i = 0; i < dk; ++i) nq += q[i] * q[i], nk += k[i] * k[i];
        const double sq = 1.0 / std::max(std::sqrt(nq), 1e-6), sk = 1.0 / std::max(std::sqrt(nk), 1e-6);
        const double z = (double)alpha_[(size_t)(t * g_.nv + h)] + dt_[(size_t)h];
        const double decay = std::exp((z > 20 ? z : std::log1p(std::exp(z))) * a_[(size_t)h]);
        const double b = 1.0 / (1.0 + std::exp(-(double)beta_[(size_t)(t * g_.nv + h)]));
        double* Sh = S.data() + (int64_t)h * dv * dk;
        for (int j = 0; j < dv; ++j) {
          double* row = Sh + (int64_t)j * dk;
          double dot = 0;
          for (int i = 0; i < dk; ++i) {
            row[i] *= decay;
            dot += row[i] * k[i] * sk;
          }
          const double d = (v[j] - dot) * b;
          double o = 0;
          for (int i = 0; i < dk; ++i) {
            row[i] += k[i] * sk * d;
            o += row[i] * q[i] * sq;
          }
          ref_out_[(size_t)(t * out_cols() + h * dv + j)] = o / std::sqrt((double)dk);
        }
      }
    }
    ref_state_ = S;
    ref_conv_.assign(conv0_.begin(), conv0_.end());  // the padding float stays
    for (size_t i = 0; i < conv.size(); ++i) ref_conv_[i] = (float)conv[i];
  }

  Geo g_;
  int n_, split_;
  int64_t C_ = 0, ld_ = 0;
  std::vector<float> qkv_, alpha_, beta_, conv_w_, dt_, a_, conv0_, state0_, ref_conv_;
  std::vector<double> ref_out_, ref_state_;
  float *d_qkv_ = nullptr, *d_alpha_ = nullptr, *d_beta_ = nullptr, *d_conv_w_ = nullptr, *d_dt_ = nullptr,
        *d_a_ = nullptr, *d_conv0_ = nullptr, *d_state0_ = nullptr, *d_conv_ = nullptr, *d_state_ = nullptr,
        *d_x_ = nullptr, *d_out_ = nullptr, *d_conv2_ = nullptr, *d_state2_ = nullptr, *d_out2_ = nullptr;
};

void add_ssm_cases(Registry& r) {
  // The synth qwen35 geometry (dk 64), Qwen3.5-9B's (16 key heads, 32 value heads of 128), a
  // one-to-one head map, short conv and the largest value head.
  for (Geo g : {Geo{2, 4, 64, 64, 4}, Geo{16, 32, 128, 128, 4}, Geo{4, 4, 128, 64, 2}, Geo{1, 2, 64, 256, 4}})
    for (int n : {1, 7, 40}) {
      const std::string name = ref::cat("delta_net/f32/k", g.nk, "x", g.dk, "-v", g.nv, "x", g.dv, "-conv", g.dc, "/n", n);
      const int split = n > 1 ? n / 3 + 1 : 0;
      r.add("ssm", name, [=] { return std::make_unique<DeltaNetCase>(g, n, split); });
    }
}
MEMRA_KC_REGISTER(add_ssm_cases);

}  // namespace
}  // namespace memra::kc
