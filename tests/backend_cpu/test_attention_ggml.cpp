// AttentionNumerics::GgmlFlashAttn (llama.cpp's CPU flash-attention rounding, F16 cache): against
// f64 math within the f16 class, one case whose f16 accumulator result is worked out by hand, and
// the cases where the option must leave the exact path untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend_cpu/test_data.h"
#include "backend/cpu/cpu_backend.h"
#include "core/half.h"

namespace memra::backend {
namespace {

using testdata::randv;

using testdata::view;

std::unique_ptr<Backend> backend_with(AttentionNumerics n) {
  CpuBackendOptions o;
  o.threads = 2;
  o.attention_numerics = n;
  return make_cpu_backend(o);
}

struct Case {
  int n_head, n_head_kv, hd, n_past, n_new, window;
  float softcap;
  std::vector<float> sinks = {};  // per head, or empty
};

std::vector<float> run(AttentionNumerics n, const Case& c, QType kv_type, const std::vector<float>& K,
                       const std::vector<float>& V, std::vector<float> Q) {
  auto be = backend_with(n);
  const int total = c.n_past + c.n_new, kvw = c.n_head_kv * c.hd;
  kv::KvShape shape;
  shape.layers = {{c.n_head_kv, c.hd, c.hd}};
  auto kv = be->create_kv(shape, {total, kv_type, kv_type});
  auto k = K, v = V;
  be->kv_write(*kv, 0, 0, view(k, total, kvw), view(v, total, kvw));
  std::vector<float> out((size_t)c.n_new * c.n_head * c.hd);
  AttnParams p{c.n_head, c.n_head_kv, c.hd, c.hd, 1.0f / std::sqrt((float)c.hd), c.window, c.softcap};
  std::vector<float> sinks = c.sinks;
  Weight sw;
  if (!sinks.empty()) {
    sw = be->upload_weight("attn_sinks", QType::F32, std::vector<int64_t>{c.n_head}, sinks.data(), nullptr);
    p.sinks = &sw;
  }
  be->attention(view(Q, c.n_new, c.n_head * c.hd), *kv, 0, c.n_past, p, view(out, c.n_new, c.n_head * c.hd));
  return out;
}

// f64 attention on the f16-rounded K and V (what the cache holds).
void check_against_f64(const Case& c, double tol, AttentionNumerics numerics = AttentionNumerics::GgmlFlashAttn) {
  const int total = c.n_past + c.n_new, kvw = c.n_head_kv * c.hd;
  auto K = randv((size_t)total * kvw, 11), V = randv((size_t)total * kvw, 12);
  auto Q = randv((size_t)c.n_new * c.n_head * c.hd, 13);
  const auto out = run(numerics, c, QType::F16, K, V, Q);
  for (auto& x : K) x = fp16_to_f32(f32_to_fp16(x));
  for (auto& x : V) x = fp16_to_f32(f32_to_fp16(x));
  const int group = c.n_head / c.n_head_kv;
  double worst = 0;
  for (int t = 0; t < c.n_new; ++t) {
    const int pos = c.n_past + t;
    for (int h = 0; h < c.n_head; ++h) {
      const int g = h / group;
      std::vector<double> s;
      std::vector<int> js;
      for (int j = 0; j <= pos; ++j) {
        if (c.window > 0 && pos - j >= c.window) continue;
        double d = 0;
        for (int i = 0; i < c.hd; ++i)
          d += (double)Q[(size_t)((t * c.n_head + h) * c.hd + i)] * K[(size_t)(j * kvw + g * c.hd + i)];
        d /= std::sqrt((double)c.hd);
        if (c.softcap > 0) d = c.softcap * std::tanh(d / c.softcap);
        s.push_back(d);
        js.push_back(j);
      }
      double mx = *std::max_element(s.begin(), s.end());
      if (!c.sinks.empty()) mx = std::max(mx, (double)c.sinks[(size_t)h]);
      double sum = c.sinks.empty() ? 0.0 : std::exp((double)c.sinks[(size_t)h] - mx);
      for (auto& x : s) sum += x = std::exp(x - mx);
      for (int i = 0; i < c.hd; ++i) {
        double o = 0;
        for (size_t k = 0; k < js.size(); ++k) o += s[k] / sum * V[(size_t)(js[k] * kvw + g * c.hd + i)];
        const double err = std::fabs(out[(size_t)((t * c.n_head + h) * c.hd + i)] - o);
        worst = std::max(worst, err);
        EXPECT_LE(err, tol) << "token " << t << " head " << h << " dim " << i;
      }
    }
  }
  EXPECT_GT(worst, 0.0) << "the f16 rounding steps left no trace at all";
}

// Bounds: f16 rounding of Q (2^-11 relative per element) and of the V accumulator after every
// key (half an f16 ulp of a running sum of O(1) values, over <= 40 keys): a few 1e-3.
TEST(AttentionGgml, PrefillGqaTailDot) { check_against_f64({4, 2, 8, 0, 7, 0, 0.0f}, 5e-3); }
TEST(AttentionGgml, DecodeWideHeadSimdDot) { check_against_f64({4, 1, 64, 30, 1, 0, 0.0f}, 5e-3); }
TEST(AttentionGgml, OddHeadDim40) { check_against_f64({2, 1, 40, 9, 3, 0, 0.0f}, 5e-3); }
TEST(AttentionGgml, SlidingWindow) { check_against_f64({4, 1, 8, 10, 9, 5, 0.0f}, 5e-3); }
TEST(AttentionGgml, Softcap) { check_against_f64({2, 2, 8, 3, 4, 0, 2.0f}, 5e-3); }
// Attention sinks (gpt-oss): a sink above every score (head 0: the s > M branch that rescales the
// accumulator), one in their range, one far below (no effect), on both numerics.
TEST(AttentionGgml, Sinks) {
  const Case c{4, 2, 8, 6, 5, 4, 0.0f, {6.0f, 0.3f, -30.0f, -0.7f}};
  check_against_f64(c, 5e-3);
  check_against_f64(c, 1e-5, AttentionNumerics::Exact);
}

// Two keys with equal scores (q = 0), V = 1 and 2^-11: the f16 accumulator holds 1 + 2^-11,
// which rounds (tie to even) to 1, so the output is 1 / 2; the exact path gives (1 + 2^-11) / 2.
TEST(AttentionGgml, F16AccumulatorRoundsLikeGgml) {
  const Case c{1, 1, 8, 1, 1, 0, 0.0f};
  std::vector<float> K(16, 0.5f), V(16, 0.0f), Q(8, 0.0f);
  V[0] = 1.0f;
  V[8] = std::ldexp(1.0f, -11);
  const auto fa = run(AttentionNumerics::GgmlFlashAttn, c, QType::F16, K, V, Q);
  const auto ex = run(AttentionNumerics::Exact, c, QType::F16, K, V, Q);
  EXPECT_EQ(fa[0], 0.5f);
  EXPECT_EQ(ex[0], (1.0f + std::ldexp(1.0f, -11)) / 2.0f);
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Quantized and F32 caches keep the exact path under GgmlFlashAttn (GgmlFlashAttnF32Cache rounds
// an F32 cache to f16 like llama.cpp's cast: test_sparse_attention.cpp, AttentionGgmlF32Cache).
TEST(AttentionGgml, NonF16CacheKeepsExactPath) {
  const Case c{4, 2, 16, 3, 5, 0, 0.0f};  // 32-element cache rows: one q8_0 block
  const int total = c.n_past + c.n_new, kvw = c.n_head_kv * c.hd;
  auto K = randv((size_t)total * kvw, 21), V = randv((size_t)total * kvw, 22);
  auto Q = randv((size_t)c.n_new * c.n_head * c.hd, 23);
  for (QType t : {QType::Q8_0}) {
    EXPECT_TRUE(bit_equal(run(AttentionNumerics::GgmlFlashAttn, c, t, K, V, Q),
                          run(AttentionNumerics::Exact, c, t, K, V, Q)))
        << qtype_name(t);
  }
  EXPECT_TRUE(bit_equal(run(AttentionNumerics::GgmlFlashAttn, c, QType::F32, K, V, Q),
                        run(AttentionNumerics::Exact, c, QType::F32, K, V, Q)));
  EXPECT_FALSE(bit_equal(run(AttentionNumerics::GgmlFlashAttnF32Cache, c, QType::F32, K, V, Q),
                         run(AttentionNumerics::Exact, c, QType::F32, K, V, Q)));
  EXPECT_FALSE(bit_equal(run(AttentionNumerics::GgmlFlashAttn, c, QType::F16, K, V, Q),
                         run(AttentionNumerics::Exact, c, QType::F16, K, V, Q)));
}

// ggml runs an f32 tiled kernel from 64 query rows on: such batches keep the exact path.
TEST(AttentionGgml, BatchOf64RowsKeepsExactPath) {
  const Case c{2, 1, 8, 0, 64, 0, 0.0f};
  const int kvw = c.n_head_kv * c.hd;
  auto K = randv((size_t)64 * kvw, 31), V = randv((size_t)64 * kvw, 32);
  auto Q = randv((size_t)64 * c.n_head * c.hd, 33);
  EXPECT_TRUE(bit_equal(run(AttentionNumerics::GgmlFlashAttn, c, QType::F16, K, V, Q),
                        run(AttentionNumerics::Exact, c, QType::F16, K, V, Q)));
}

}  // namespace
}  // namespace memra::backend
