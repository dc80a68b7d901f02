// kernel-check section "rope": normal and NeoX rotation, partial rotation (n_rot < head_dim),
// freq factors, YaRN, positions from device memory, against an f64 reference that evaluates the
// angle formula of kernels/rope/rope_kernels.h exactly.
// Tolerance: the kernel forms the angle in f32 (as ggml does): theta_j = pos * scale^j carries a
// relative error of up to ~j ulp of scale, so an absolute angle error up to ~3 * 2^-24 * pos on
// the dims that matter (max_j j * base^(-2j/n_rot) <= ~2.6 for base 1e4). Tolerance on the
// normalized error: 4e-6 + 3 * 2^-24 * max_pos (7.4e-4 at pos 4096, 4e-6 at pos 0).
#include <cmath>
#include <memory>

#include "cases_ref.h"
#include "rope/rope_kernels.h"

namespace memra::kc {
namespace {

struct RopeCfg {
  int rows, n_head, head_dim, n_rot;
  cuda::RopeKind kind;
  int pos0;
  bool freq_factors;
  bool yarn;
  bool in_place;
};

class RopeCase : public Case {
 public:
  explicit RopeCase(RopeCfg c) : c_(c) {}
  void generate(Env& env) override {
    ld_ = (int64_t)c_.n_head * c_.head_dim + 2;
    x_ = env.normal((size_t)c_.rows * ld_, 1.0f);
    ff_ = env.uniform(c_.n_rot / 2, 1.0f, 8.0f);
    dx_ = env.upload(x_);
    dff_ = c_.freq_factors ? env.upload(ff_) : nullptr;
    dpos_ = env.upload(std::vector<int32_t>{c_.pos0});
    // In place: x itself is the output (not poisoned: it holds the input).
    dout_ = c_.in_place ? dx_ : env.alloc_output<float>((size_t)c_.rows * ld_);
  }
  cuda::RopeParams params() const {
    cuda::RopeParams p;
    p.x = dx_;
    p.ld_x = ld_;
    p.out = dout_;
    p.ld_out = ld_;
    p.rows = c_.rows;
    p.n_head = c_.n_head;
    p.head_dim = c_.head_dim;
    p.n_rot = c_.n_rot;
    p.kind = c_.kind;
    p.pos0 = dpos_;
    p.freq_base = c_.yarn ? 1000000.0f : 10000.0f;
    p.freq_factors = dff_;
    if (c_.yarn) {
      p.freq_scale = 0.25f;
      p.ext_factor = 1.0f;
      p.attn_factor = 1.0f;
      p.n_ctx_orig = 4096;
    }
    return p;
  }
  cudaError_t launch(Env& env) override { return cuda::launch_rope(params(), env.stream()); }
  void reference(Env&) override {
    const auto p = params();
    const int half = c_.n_rot / 2;
    float corr[2] = {0, 0};
    if (p.ext_factor != 0.0f)
      cuda::rope_yarn_corr_dims(c_.n_rot, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow, corr);
    ref_.assign((size_t)c_.rows * c_.n_head * c_.head_dim, 0.0);
    for (int r = 0; r < c_.rows; ++r) {
      const double pos = c_.pos0 + r;
      for (int h = 0; h < c_.n_head; ++h) {
        const float* xh = x_.data() + r * ld_ + (int64_t)h * c_.head_dim;
        double* o = ref_.data() + ((size_t)r * c_.n_head + h) * c_.head_dim;
        for (int d = 0; d < c_.head_dim; ++d) o[d] = xh[d];
        for (int j = 0; j < half; ++j) {
          double te = pos * std::pow((double)p.freq_base, -2.0 * j / c_.n_rot);
          if (c_.freq_factors) te /= ff_[j];
          const double ti = p.freq_scale * te;
          double theta = ti, ms = p.attn_factor;
          if (p.ext_factor != 0.0f) {
            const double y = (j - (double)corr[0]) / std::max(0.001, (double)corr[1] - corr[0]);
            const double mix = (1.0 - std::min(1.0, std::max(0.0, y))) * p.ext_factor;
            theta = ti * (1 - mix) + te * mix;
            ms *= 1.0 + 0.1 * std::log(1.0 / p.freq_scale);
          }
          const int i0 = c_.kind == cuda::RopeKind::Neox ? j : 2 * j;
          const int i1 = c_.kind == cuda::RopeKind::Neox ? j + half : 2 * j + 1;
          const double c = std::cos(theta) * ms, s = std::sin(theta) * ms;
          o[i0] = xh[i0] * c - xh[i1] * s;
          o[i1] = xh[i0] * s + xh[i1] * c;
        }
      }
    }
  }
  Verdict compare(Env& env) override {
    const auto o = env.download(dout_, (size_t)c_.rows * ld_);
    std::vector<float> got;
    const int64_t w = (int64_t)c_.n_head * c_.head_dim;
    for (int r = 0; r < c_.rows; ++r) got.insert(got.end(), o.begin() + r * ld_, o.begin() + r * ld_ + w);
    const double max_pos = c_.pos0 + c_.rows - 1;
    return ref::norm(got, ref_, 4e-6 + 3.0 * std::ldexp(1.0, -24) * max_pos);
  }
  PerfCount perf_count() const override { return {(double)c_.rows * c_.n_head * c_.head_dim * 8, 0}; }

 private:
  RopeCfg c_;
  int64_t ld_ = 0;
  std::vector<float> x_, ff_;
  std::vector<double> ref_;
  float *dx_ = nullptr, *dff_ = nullptr, *dout_ = nullptr;
  int32_t* dpos_ = nullptr;
};

void add_rope_cases(Registry& r) {
  using cuda::RopeKind;
  struct Shape {
    int n_head, head_dim;
  };
#ifdef MEMRA_REDUCED_INSTANCES
  const Shape kShapes[] = {{32, 128}};
  const int kRows[] = {1, 17};
#else
  const Shape kShapes[] = {{32, 128}, {8, 128}, {9, 64}, {3, 64}, {16, 256}};
  const int kRows[] = {1, 17, 33};
#endif
  for (RopeKind k : {RopeKind::Normal, RopeKind::Neox})
    for (Shape s : kShapes)
      for (int rows : kRows)
        for (int pos0 : {0, 4096 - rows + 1}) {
          const RopeCfg c{rows, s.n_head, s.head_dim, s.head_dim, k, pos0, false, false, false};
          r.add("rope",
                ref::cat(k == RopeKind::Neox ? "rope_neox" : "rope_normal", "/f32/", rows, "x", s.n_head, "x",
                         s.head_dim, "@", pos0),
                [=] { return std::make_unique<RopeCase>(c); });
        }
  // Partial rotation, freq factors, YaRN, in place.
  r.add("rope", "rope_neox/partial/17x8x128@100",
        [] { return std::make_unique<RopeCase>(RopeCfg{17, 8, 128, 64, RopeKind::Neox, 100, false, false, false}); });
  r.add("rope", "rope_normal/partial/17x9x64@5",
        [] { return std::make_unique<RopeCase>(RopeCfg{17, 9, 64, 32, RopeKind::Normal, 5, false, false, false}); });
  r.add("rope", "rope_neox/freq_factors/33x8x128@3000",
        [] { return std::make_unique<RopeCase>(RopeCfg{33, 8, 128, 128, RopeKind::Neox, 3000, true, false, false}); });
  r.add("rope", "rope_neox/yarn/17x32x128@4000",
        [] { return std::make_unique<RopeCase>(RopeCfg{17, 32, 128, 128, RopeKind::Neox, 4000, false, true, false}); });
  r.add("rope", "rope_normal/inplace/33x32x128@77",
        [] { return std::make_unique<RopeCase>(RopeCfg{33, 32, 128, 128, RopeKind::Normal, 77, false, false, true}); });
}
MEMRA_KC_REGISTER(add_rope_cases);

}  // namespace
}  // namespace memra::kc
