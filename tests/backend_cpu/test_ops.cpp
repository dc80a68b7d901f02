// CPU backend ops against direct math (f64) on small inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend_cpu/test_data.h"
#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/half.h"
#include "quant/quant.h"

namespace memra::backend {
namespace {

using testdata::randv;

using testdata::view;

Weight upload(Backend& be, const std::string& name, QType t, std::vector<int64_t> ne, const void* data) {
  return be.upload_weight(name, t, ne, data, nullptr);
}

Weight f32_weight(Backend& be, const std::string& name, std::vector<int64_t> ne, const std::vector<float>& d) {
  return upload(be, name, QType::F32, ne, d.data());
}

// ---------------------------------------------------------------- RoPE
// Direct formula: theta_i = pos * base^(-2i/n_rot) / ff_i, pairs by mode.
std::vector<double> rope_ref(const std::vector<float>& x, int head_dim, int n_rot, int pos, double base,
                             bool neox, const std::vector<float>* ff) {
  std::vector<double> out(x.begin(), x.end());
  for (int i = 0; i < n_rot / 2; ++i) {
    double theta = pos * std::pow(base, -2.0 * i / n_rot);
    if (ff) theta /= (*ff)[(size_t)i];
    const int a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
    out[(size_t)a] = x[(size_t)a] * std::cos(theta) - x[(size_t)b] * std::sin(theta);
    out[(size_t)b] = x[(size_t)a] * std::sin(theta) + x[(size_t)b] * std::cos(theta);
  }
  (void)head_dim;
  return out;
}

void check_rope(RopeMode mode, int head_dim, int n_rot, bool use_ff) {
  auto be = make_cpu_backend({2, false});
  const int n_head = 3, rows = 4, pos0 = 5;
  auto x = randv((size_t)(rows * n_head * head_dim), 7);
  auto orig = x;
  std::vector<float> ff;
  Weight ffw;
  RopeParams p;
  p.mode = mode;
  p.head_dim = head_dim;
  p.n_rot = n_rot;
  p.freq_base = 10000.0f;
  if (use_ff) {
    ff = {1.0f, 2.0f, 4.0f, 8.0f, 1.5f, 3.0f, 1.0f, 1.0f};
    ff.resize((size_t)n_rot / 2, 1.0f);
    ffw = f32_weight(*be, "rope_freqs", {(int64_t)ff.size()}, ff);
    p.freq_factors = &ffw;
  }
  be->rope(view(x, rows, n_head * head_dim), n_head, pos0, p);
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < n_head; ++h) {
      const size_t off = (size_t)((r * n_head + h) * head_dim);
      std::vector<float> in(orig.begin() + (ptrdiff_t)off, orig.begin() + (ptrdiff_t)off + head_dim);
      auto ref = rope_ref(in, head_dim, n_rot, pos0 + r, 10000.0, mode == RopeMode::Neox, use_ff ? &ff : nullptr);
      for (int d = 0; d < head_dim; ++d)
        EXPECT_NEAR(x[off + (size_t)d], ref[(size_t)d], 2e-5) << "row " << r << " head " << h << " dim " << d;
    }
}

TEST(Rope, NormalPairsMatchMath) { check_rope(RopeMode::Normal, 16, 16, false); }
TEST(Rope, NeoxHalvesMatchMath) { check_rope(RopeMode::Neox, 16, 16, false); }
TEST(Rope, PartialRotationPassesTheRestThrough) {
  check_rope(RopeMode::Neox, 16, 8, false);
  check_rope(RopeMode::Normal, 16, 8, false);
}
TEST(Rope, FreqFactorsDivideTheFrequencies) { check_rope(RopeMode::Normal, 16, 16, true); }

TEST(Rope, PositionZeroIsIdentityAndModesDiffer) {
  auto be = make_cpu_backend({1, false});
  auto x = randv(8, 3), y = x;
  RopeParams p;
  p.head_dim = p.n_rot = 8;
  be->rope(view(x, 1, 8), 1, 0, p);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(x[(size_t)i], y[(size_t)i]);
  auto a = y, b = y;
  be->rope(view(a, 1, 8), 1, 3, p);
  p.mode = RopeMode::Neox;
  be->rope(view(b, 1, 8), 1, 3, p);
  EXPECT_NE(a, b);
}

TEST(Rope, YarnRampMatchesFormula) {
  // YaRN with ext_factor 1: theta = interp * (1 - ramp) + extrap * ramp, cos/sin scaled by
  // mscale = 1 + 0.1 ln(1/freq_scale); ramp(i) = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1),
  // lo/hi from the dims whose wavelength is beta_fast / beta_slow rotations of n_ctx_orig.
  auto be = make_cpu_backend({1, false});
  const int hd = 32, pos = 1000;
  const double base = 150000, fs = 1.0 / 32, bf = 32, bs = 1;
  const int n_orig = 4096;
  auto x = randv(hd, 11), orig = x;
  RopeParams p;
  p.mode = RopeMode::Neox;
  p.head_dim = p.n_rot = hd;
  p.freq_base = (float)base;
  p.freq_scale = (float)fs;
  p.ext_factor = 1.0f;
  p.beta_fast = (float)bf;
  p.beta_slow = (float)bs;
  p.n_ctx_orig = n_orig;
  be->rope(view(x, 1, hd), 1, pos, p);
  auto corr = [&](double rot) { return hd * std::log(n_orig / (rot * 2 * M_PI)) / (2 * std::log(base)); };
  const double lo = std::max(0.0, std::floor(corr(bf))), hi = std::min(hd - 1.0, std::ceil(corr(bs)));
  const double mscale = 1.0 + 0.1 * std::log(1.0 / fs);
  for (int i = 0; i < hd / 2; ++i) {
    const double extrap = pos * std::pow(base, -2.0 * i / hd), interp = fs * extrap;
    const double ramp = 1.0 - std::clamp((i - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
    const double th = interp * (1 - ramp) + extrap * ramp;
    const double a = orig[(size_t)i], b = orig[(size_t)i + hd / 2];
    EXPECT_NEAR(x[(size_t)i], (a * std::cos(th) - b * std::sin(th)) * mscale, 5e-4) << i;
    EXPECT_NEAR(x[(size_t)i + hd / 2], (a * std::sin(th) + b * std::cos(th)) * mscale, 5e-4) << i;
  }
}

// ---------------------------------------------------------------- attention
struct AttnCase {
  int n_head, n_head_kv, hd, n_past, n_new, window;
  float softcap;
};

void check_attention(const AttnCase& c, QType kv_type, double tol) {
  auto be = make_cpu_backend({2, false});
  const int total = c.n_past + c.n_new, kvw = c.n_head_kv * c.hd;
  kv::KvShape shape;
  shape.layers = {{c.n_head_kv, c.hd, c.hd}};
  auto kv = be->create_kv(shape, {64, kv_type, kv_type});
  auto K = randv((size_t)(total * kvw), 1), V = randv((size_t)(total * kvw), 2);
  auto Q = randv((size_t)(c.n_new * c.n_head * c.hd), 3);
  be->kv_write(*kv, 0, 0, view(K, total, kvw), view(V, total, kvw));
  std::vector<float> out((size_t)(c.n_new * c.n_head * c.hd));
  AttnParams p{c.n_head, c.n_head_kv, c.hd, c.hd, 1.0f / std::sqrt((float)c.hd), c.window, c.softcap};
  be->attention(view(Q, c.n_new, c.n_head * c.hd), *kv, 0, c.n_past, p, view(out, c.n_new, c.n_head * c.hd));
  const int group = c.n_head / c.n_head_kv;
  for (int t = 0; t < c.n_new; ++t) {
    const int pos = c.n_past + t;
    for (int h = 0; h < c.n_head; ++h) {
      const int g = h / group;
      std::vector<double> s;
      std::vector<int> js;
      for (int j = 0; j <= pos; ++j) {  // causal: keys after pos (already in the cache) are masked
        if (c.window > 0 && pos - j >= c.window) continue;
        double d = 0;
        for (int i = 0; i < c.hd; ++i)
          d += (double)Q[(size_t)((t * c.n_head + h) * c.hd + i)] * K[(size_t)(j * kvw + g * c.hd + i)];
        d *= 1.0 / std::sqrt((double)c.hd);
        if (c.softcap > 0) d = c.softcap * std::tanh(d / c.softcap);
        s.push_back(d);
        js.push_back(j);
      }
      const double mx = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (auto& v : s) sum += v = std::exp(v - mx);
      for (int i = 0; i < c.hd; ++i) {
        double o = 0;
        for (size_t k = 0; k < js.size(); ++k) o += s[k] / sum * V[(size_t)(js[k] * kvw + g * c.hd + i)];
        EXPECT_NEAR(out[(size_t)((t * c.n_head + h) * c.hd + i)], o, tol)
            << "token " << t << " head " << h << " dim " << i;
      }
    }
  }
}

TEST(Attention, CausalPrefillGqa) { check_attention({4, 2, 8, 0, 7, 0, 0.0f}, QType::F32, 1e-5); }
TEST(Attention, DecodeAfterPastGqa3) { check_attention({9, 3, 16, 11, 1, 0, 0.0f}, QType::F32, 1e-5); }
TEST(Attention, SlidingWindow) { check_attention({4, 1, 8, 10, 9, 5, 0.0f}, QType::F32, 1e-5); }
TEST(Attention, Softcap) { check_attention({2, 2, 8, 3, 4, 0, 2.0f}, QType::F32, 1e-5); }
// f16 cache: the reference reads the same f32 inputs, so the bound is the f16 rounding of K/V.
TEST(Attention, F16CacheWithinRounding) { check_attention({4, 2, 8, 5, 3, 0, 0.0f}, QType::F16, 5e-3); }

TEST(Attention, GqaMappingUsesHeadDivGroup) {
  // V of kv head g is the constant g+1: every query head h must output h / group + 1.
  auto be = make_cpu_backend({1, false});
  const int nh = 6, nkv = 3, hd = 4, n = 3;
  kv::KvShape shape;
  shape.layers = {{nkv, hd, hd}};
  auto kv = be->create_kv(shape, {8, QType::F32, QType::F32});
  auto K = randv((size_t)(n * nkv * hd), 5);
  std::vector<float> V((size_t)(n * nkv * hd));
  for (int j = 0; j < n; ++j)
    for (int g = 0; g < nkv; ++g)
      for (int i = 0; i < hd; ++i) V[(size_t)((j * nkv + g) * hd + i)] = (float)(g + 1);
  be->kv_write(*kv, 0, 0, view(K, n, nkv * hd), view(V, n, nkv * hd));
  auto Q = randv((size_t)(n * nh * hd), 6);
  std::vector<float> out((size_t)(n * nh * hd));
  be->attention(view(Q, n, nh * hd), *kv, 0, 0, {nh, nkv, hd, hd, 0.5f, 0, 0.0f}, view(out, n, nh * hd));
  for (int t = 0; t < n; ++t)
    for (int h = 0; h < nh; ++h)
      EXPECT_NEAR(out[(size_t)((t * nh + h) * hd)], (float)(h / (nh / nkv) + 1), 1e-6);
}

TEST(Attention, ReadingBeyondTheCacheIsAnError) {
  auto be = make_cpu_backend({1, false});
  kv::KvShape shape;
  shape.layers = {{1, 4, 4}};
  auto kv = be->create_kv(shape, {8, QType::F32, QType::F32});
  std::vector<float> q(4), o(4);
  EXPECT_THROW(be->attention(view(q, 1, 4), *kv, 0, 2, {1, 1, 4, 4, 1.0f, 0, 0.0f}, view(o, 1, 4)), Error);
}

// ---------------------------------------------------------------- MoE routing
TEST(MoeRoute, SoftmaxTopKRenormalized) {
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 1.5f, 0.3f};
  MoeParams p;
  p.n_expert = 5;
  p.n_expert_used = 2;
  int32_t ids[2];
  float w[2];
  moe_route(logits.data(), p, ids, w);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 3);
  // Renormalized softmax over the two = softmax of the two logits.
  const double e = std::exp(2.0 - 1.5);
  EXPECT_NEAR(w[0], e / (e + 1), 1e-6);
  EXPECT_NEAR(w[1], 1 / (e + 1), 1e-6);
  p.norm_topk = false;
  moe_route(logits.data(), p, ids, w);
  double z = 0;
  for (float l : logits) z += std::exp((double)l);
  EXPECT_NEAR(w[0], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(w[1], std::exp(1.5) / z, 1e-6);
}

TEST(MoeRoute, SigmoidWithSelectionBiasAndScale) {
  auto be = make_cpu_backend({1, false});
  const std::vector<float> logits = {1.0f, 0.9f, -2.0f, 0.0f};
  const std::vector<float> bias = {0.0f, 0.0f, 5.0f, 0.0f};  // forces expert 2 in, weight unbiased
  Weight bw = f32_weight(*be, "exp_probs_b", {4}, bias);
  MoeParams p;
  p.n_expert = 4;
  p.n_expert_used = 2;
  p.gating = MoeGating::Sigmoid;
  p.selection_bias = &bw;
  p.weights_scale = 3.0f;
  int32_t ids[2];
  float w[2];
  moe_route(logits.data(), p, ids, w);
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 0);
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  const double s = sig(-2.0) + sig(1.0);
  EXPECT_NEAR(w[0], 3 * sig(-2.0) / s, 1e-6);
  EXPECT_NEAR(w[1], 3 * sig(1.0) / s, 1e-6);
}

TEST(MoeRoute, RenormalizingSumIsClampedLikeLlamaCpp) {
  // Sigmoid probabilities near zero: the top-k sum is held at >= 2^-14 (llama.cpp's clamp).
  const std::vector<float> logits = {-20.0f, -21.0f, -22.0f, -23.0f};
  MoeParams p;
  p.n_expert = 4;
  p.n_expert_used = 2;
  p.gating = MoeGating::Sigmoid;
  int32_t ids[2];
  float w[2];
  moe_route(logits.data(), p, ids, w);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 1);
  const double sig0 = 1 / (1 + std::exp(20.0));
  EXPECT_NEAR(w[0], sig0 / 6.103515625e-5, 1e-9);
}

TEST(MoeRoute, TiesGoToTheLowerId) {
  const std::vector<float> logits = {0.5f, 1.0f, 1.0f, 1.0f};
  MoeParams p;
  p.n_expert = 4;
  p.n_expert_used = 2;
  int32_t ids[2];
  float w[2];
  moe_route(logits.data(), p, ids, w);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 2);
  EXPECT_NEAR(w[0], 0.5, 1e-7);
}

}  // namespace
}  // namespace memra::backend
