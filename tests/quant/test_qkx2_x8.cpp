// make_qkx2_quants_x8 (the 8-lane Q4_K/Q5_K scale search) and make_qx_quants_x8 (Q6_K's) against
// the scalar searches, byte for byte, sub-block by sub-block: random blocks of many scales and
// degenerate ones (flat, zero, below-eps, all-positive, all-negative, signed |max| ties).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "quant/quantize_impl.h"

using namespace memra::quant_detail;

namespace {

void weights_of(const float* x, float (*w)[32]) {
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) w[j][l] = av_x + std::fabs(x[32 * j + l]);
  }
}

void check(const float* x, int nmax, float rmin, int nstep, int block) {
  float w[8][32];
  weights_of(x, w);
  uint8_t L8[256], Ls[256], aux[32];
  float sc8[8], mn8[8];
  make_qkx2_quants_x8(nmax, x, w, L8, sc8, mn8, rmin, 0.1f, nstep);
  for (int j = 0; j < 8; ++j) {
    float mn = 0;
    const float sc = make_qkx2_quants(32, nmax, x + 32 * j, w[j], Ls + 32 * j, &mn, aux, rmin, 0.1f, nstep, false);
    ASSERT_EQ(std::memcmp(&sc, &sc8[j], 4), 0) << "block " << block << " sub-block " << j << " scale " << sc << " vs " << sc8[j];
    ASSERT_EQ(std::memcmp(&mn, &mn8[j], 4), 0) << "block " << block << " sub-block " << j << " min " << mn << " vs " << mn8[j];
  }
  ASSERT_EQ(std::memcmp(L8, Ls, 256), 0) << "block " << block << " levels differ";
}

}  // namespace

TEST(Qkx2x8, EqualsScalarSearchBytes) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "make_qkx2_quants_x8 needs AVX2; this CPU has none";
  std::mt19937_64 rng(20261201);
  std::normal_distribution<float> nd(0.f, 1.f);
  float x[256];
  for (int b = 0; b < 4000; ++b) {
    const float s = std::ldexp(1.0f, (int)(rng() % 24) - 12);
    for (auto& v : x) v = s * nd(rng);
    switch (b % 8) {
      case 1: for (int l = 0; l < 32; ++l) x[32 * 3 + l] = 0.25f; break;            // flat, positive
      case 2: for (int l = 0; l < 32; ++l) x[32 * 5 + l] = 0.0f; break;             // all zero
      case 3: for (int l = 0; l < 256; ++l) x[l] = std::fabs(x[l]); break;          // all positive
      case 4: for (int l = 0; l < 256; ++l) x[l] = -std::fabs(x[l]); break;         // all negative
      case 5: for (int l = 0; l < 32; ++l) x[32 * 7 + l] = -1.5f; break;            // flat, negative
      case 6: x[17] = 40.0f * s; break;                                             // outlier
      default: break;
    }
    check(x, 15, -1.f, 20, b);  // Q4_K's parameters
    check(x, 31, -0.5f, 15, b); // Q5_K's
  }
}

TEST(Qxx8, EqualsScalarSymmetricSearchBytes) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "make_qx_quants_x8 needs AVX2; this CPU has none";
  std::mt19937_64 rng(20261202);
  std::normal_distribution<float> nd(0.f, 1.f);
  float x[128];
  for (int b = 0; b < 8000; ++b) {
    const float s = std::ldexp(1.0f, (int)(rng() % 30) - 15);
    for (auto& v : x) v = s * nd(rng);
    switch (b % 6) {
      case 1: for (int l = 0; l < 16; ++l) x[16 * 2 + l] = 0.0f; break;        // all zero (amax < eps)
      case 2: for (int l = 0; l < 16; ++l) x[16 * 6 + l] = 1e-20f; break;      // below the eps
      case 3: x[16 * 4 + 3] = 2.5f * s, x[16 * 4 + 7] = -2.5f * s; break;     // |max| tie, signs differ
      case 4: for (int l = 0; l < 128; ++l) x[l] = std::fabs(x[l]); break;
      default: break;
    }
    int8_t L8[128], Ls[128];
    float sc8[8];
    make_qx_quants_x8(16, 32, x, L8, sc8);
    for (int j = 0; j < 8; ++j) {
      const float sc = make_qx_quants(16, 32, x + 16 * j, Ls + 16 * j);
      ASSERT_EQ(std::memcmp(&sc, &sc8[j], 4), 0) << "block " << b << " sub-block " << j << ": " << sc << " vs " << sc8[j];
    }
    ASSERT_EQ(std::memcmp(L8, Ls, 128), 0) << "block " << b << " levels differ";
  }
}
