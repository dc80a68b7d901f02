// The identity kernels.norm_defer rests on (bench/notes/norm-decode.md): RMSNorm's output is s * u
// with u = x * w and one scalar s = 1 / sqrt(mean(x^2) + eps) per row, and q8_1 activations are
// scale-free (the quants of s * u are those of u, the block scale s times u's), so a product over
// the q8_1 blocks of u multiplied by s afterwards is the product over the normed row's blocks.
// Checked with lib/quant's reference q8_1 quantizer (the one the GPU planes are gated against) on
// random rows whose scale s is far from 1: against the f64 product of the exact normed row, the
// deferred form's error must be of the plain form's size (it is not bit-identical: the f16 block
// scales round u's, not s * u's), and the same for every row of a random weight matrix. A deferred
// form that forgot s, applied it twice or used the wrong length shows as an O(1) error.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/quant.h"

using memra::QType;

namespace {

std::vector<float> q8_1_roundtrip(const std::vector<float>& v) {
  const int64_t n = (int64_t)v.size();
  std::vector<uint8_t> blocks((size_t)(n / 32) * 36);
  memra::quantize_row(QType::Q8_1, v.data(), blocks.data(), n);
  std::vector<float> out((size_t)n);
  memra::dequantize_row(QType::Q8_1, blocks.data(), out.data(), n);
  return out;
}

TEST(DeferredNorm, ScaleAfterTheProductMatchesTheNormedRowsQuantization) {
  constexpr int64_t k = 4096, n = 64;
  constexpr float eps = 1e-6f;
  std::mt19937_64 rng(20261204);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> W((size_t)(n * k));
  for (auto& v : W) v = nd(rng);
  for (float x_scale : {0.05f, 1.0f, 37.0f}) {  // s = ~20, ~1, ~0.03
    std::vector<float> x((size_t)k), w((size_t)k), u((size_t)k), z((size_t)k);
    double ss = 0;
    for (int64_t i = 0; i < k; ++i) {
      x[(size_t)i] = x_scale * nd(rng);
      w[(size_t)i] = 1.0f + 0.2f * nd(rng);
      ss += (double)x[(size_t)i] * x[(size_t)i];
    }
    const float s = 1.0f / std::sqrt((float)(ss / (double)k) + eps);
    for (int64_t i = 0; i < k; ++i) {
      u[(size_t)i] = x[(size_t)i] * w[(size_t)i];
      z[(size_t)i] = (x[(size_t)i] * s) * w[(size_t)i];  // the plain norm's order
    }
    const auto uq = q8_1_roundtrip(u), zq = q8_1_roundtrip(z);
    double err_plain = 0, err_defer = 0, ref_max = 0;
    for (int64_t r = 0; r < n; ++r) {
      double exact = 0, plain = 0, defer = 0;
      for (int64_t i = 0; i < k; ++i) {
        const double wr = W[(size_t)(r * k + i)];
        exact += wr * (double)z[(size_t)i];
        plain += wr * (double)zq[(size_t)i];
        defer += wr * (double)uq[(size_t)i];
      }
      defer *= (double)s;
      err_plain = std::max(err_plain, std::fabs(plain - exact));
      err_defer = std::max(err_defer, std::fabs(defer - exact));
      ref_max = std::max(ref_max, std::fabs(exact));
    }
    // q8_1 noise: a few 1e-3 of the output's scale; the deferred form within 1.5x of the plain one's.
    EXPECT_LT(err_plain / ref_max, 2e-2) << "x scale " << x_scale;
    EXPECT_LE(err_defer, 1.5 * err_plain + 1e-6 * ref_max) << "x scale " << x_scale << ": plain " << err_plain;
  }
}

}  // namespace
