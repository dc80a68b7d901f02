// API contract of lib/quant beyond the reference rows: error messages for bad input, FP8 E4M3
// against an exhaustive nearest-value oracle, FP8 scale grids, float formats.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "quant/quant.h"

namespace memra {
namespace {

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(QuantApi, OddRowLengthRejectedWithClearError) {
  std::vector<float> x(300, 1.0f);
  std::vector<uint8_t> buf(4096);
  const std::string q = error_of([&] { quantize_row(QType::Q4_K, x.data(), buf.data(), 300); });
  EXPECT_NE(q.find("Q4_K"), std::string::npos) << q;
  EXPECT_NE(q.find("300"), std::string::npos) << q;
  EXPECT_NE(q.find("multiple of the block size 256"), std::string::npos) << q;
  const std::string d = error_of([&] { dequantize_row(QType::Q8_0, buf.data(), x.data(), 33); });
  EXPECT_NE(d.find("Q8_0"), std::string::npos) << d;
  EXPECT_NE(d.find("33"), std::string::npos) << d;
  EXPECT_NE(error_of([&] { quantize_row(QType::Q4_0, x.data(), buf.data(), 31); }), "");
  EXPECT_NE(error_of([&] { vec_dot(QType::Q4_K, 100, buf.data(), buf.data()); }), "");
}

TEST(QuantApi, TypesWithoutCodeAreRejected) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> buf(4096);
  const std::string q = error_of([&] { quantize_row(QType::IQ2_XXS, x.data(), buf.data(), 256); });
  EXPECT_NE(q.find("IQ2_XXS has no reference quantizer"), std::string::npos) << q;
  const std::string d = error_of([&] { dequantize_row(QType::I32, buf.data(), x.data(), 4); });
  EXPECT_NE(d.find("I32 has no dequantizer"), std::string::npos) << d;
  EXPECT_FALSE(has_dequantizer(QType::I8));
  EXPECT_NE(error_of([] { (void)vec_dot_type(QType::F32); }).find("F32"), std::string::npos);
  EXPECT_FALSE(has_vec_dot(QType::Q8_K));
  EXPECT_EQ(vec_dot_type(QType::Q4_1), QType::Q8_1);
  EXPECT_EQ(vec_dot_type(QType::IQ4_NL), QType::Q8_0);
  EXPECT_EQ(vec_dot_type(QType::IQ4_XS), QType::Q8_K);
}

TEST(QuantApi, FloatFormatsRoundTrip) {
  const std::vector<float> x = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 1e-7f, 3.14159f, -1e30f};
  std::vector<float> y(x.size());
  std::vector<uint8_t> b(x.size() * 4);
  quantize_row(QType::F32, x.data(), b.data(), (int64_t)x.size());
  dequantize_row(QType::F32, b.data(), y.data(), (int64_t)x.size());
  EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * 4));
  quantize_row(QType::F16, x.data(), b.data(), (int64_t)x.size());
  dequantize_row(QType::F16, b.data(), y.data(), (int64_t)x.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], fp16_to_f32(f32_to_fp16(x[i]))) << i;
  quantize_row(QType::BF16, x.data(), b.data(), (int64_t)x.size());
  dequantize_row(QType::BF16, b.data(), y.data(), (int64_t)x.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], bf16_to_f32(f32_to_bf16(x[i]))) << i;
}

// Independent E4M3FN value of a code from the format definition (sign, 4-bit exponent with
// bias 7, 3-bit mantissa; exponent 0 is subnormal; S.1111.111 is NaN).
double e4m3_oracle(int c) {
  const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? m / 8.0 * std::pow(2.0, -6) : (1 + m / 8.0) * std::pow(2.0, e - 7);
  return s ? -mag : mag;
}

TEST(QuantFp8, DecodeMatchesFormatDefinition) {
  for (int c = 0; c < 256; ++c) {
    const double want = e4m3_oracle(c);
    const float got = fp8_e4m3_to_f32((uint8_t)c);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
    } else {
      EXPECT_EQ((double)got, want) << c;
    }
  }
  EXPECT_EQ(fp8_e4m3_to_f32(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(fp8_e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
}

// Encoding = the nearest finite code (ties to the even mantissa), saturating at 448.
TEST(QuantFp8, EncodeIsNearestEvenAgainstBruteForce) {
  std::mt19937 rng(7);
  std::vector<float> xs = {0.0f, 1.0625f, 1.1875f, 447.0f, 464.0f, 1e6f, -1e6f, 0.0009765625f,
                           0.00146484375f, -3.0f};
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int i = 0; i < 20000; ++i) xs.push_back(u(rng) * std::pow(2.0f, (float)(i % 24) - 12));
  for (float x : xs) {
    int best = -1;
    double best_err = 1e300;
    for (int c = 0; c < 256; ++c) {
      const double v = e4m3_oracle(c);
      if (std::isnan(v) || (std::signbit(v) != std::signbit(x))) continue;
      const double err = std::fabs(v - std::max(-448.0, std::min(448.0, (double)x)));
      if (err < best_err || (err == best_err && (c & 1) == 0 && (best & 1) == 1)) {
        best = c;
        best_err = err;
      }
    }
    const uint8_t got = f32_to_fp8_e4m3(x);
    EXPECT_EQ((double)fp8_e4m3_to_f32(got), e4m3_oracle(best)) << x;
  }
  EXPECT_EQ(f32_to_fp8_e4m3(1.0625f), 0x38);  // tie -> even mantissa 0
  EXPECT_EQ(f32_to_fp8_e4m3(1.1875f), 0x3A);  // tie -> even mantissa 2
  EXPECT_EQ(f32_to_fp8_e4m3(1e6f), 0x7E);
  EXPECT_EQ(f32_to_fp8_e4m3(-1e6f), 0xFE);
}

TEST(QuantFp8, ScaleGridRoundTrip) {
  const int64_t rows = 300, cols = 200;  // grid 3 x 2, partial edge blocks
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = nd(rng) * (1.0f + (float)(r / 128) * 100.0f);
  std::vector<uint8_t> q(x.size());
  std::vector<float> grid(6), y(x.size());
  quantize_fp8_rows(x.data(), q.data(), rows, cols, grid.data(), 3, 2);
  dequantize_fp8_rows(q.data(), y.data(), rows, cols, grid.data(), 3, 2);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float s = grid[(r / 128) * 2 + c / 128];
      const float e = std::fabs(y[r * cols + c] - x[r * cols + c]);
      // Half a quantum: 2^-4 relative for normals, 2^-10 * scale absolute for subnormals.
      EXPECT_LE(e, std::max(std::fabs(x[r * cols + c]) / 16.0f, s * std::ldexp(1.0f, -10)) * 1.0001f)
          << r << "," << c;
    }
  // Per-tensor scale: one f32.
  float s1 = 0;
  quantize_fp8_rows(x.data(), q.data(), rows, cols, &s1, 1, 1);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  EXPECT_EQ(s1, amax / 448.0f);
  dequantize_fp8_rows(q.data(), y.data(), rows, cols, &s1, 1, 1);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], fp8_e4m3_to_f32(q[i]) * s1);
  const std::string e = error_of([&] { dequantize_fp8_rows(q.data(), y.data(), rows, cols, grid.data(), 2, 2); });
  EXPECT_NE(e.find("2x2"), std::string::npos) << e;
  EXPECT_NE(e.find("3x2"), std::string::npos) << e;
}

// The integer dot product equals the f64 dot of the decoded operands up to f32 accumulation.
TEST(QuantVecDot, AgreesWithDecodedOperands) {
  const int64_t n = 1024;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> w(n), a(n);
  for (auto& v : w) v = nd(rng);
  for (auto& v : a) v = nd(rng);
  for (QType t : {QType::Q4_0, QType::Q4_1, QType::Q5_0, QType::Q5_1, QType::Q8_0, QType::Q2_K,
                  QType::Q3_K, QType::Q4_K, QType::Q5_K, QType::Q6_K, QType::IQ4_NL, QType::IQ4_XS,
                  QType::MXFP4, QType::NVFP4, QType::Q1_0, QType::Q2_0, QType::TQ1_0, QType::TQ2_0}) {
    const QType at = vec_dot_type(t);
    std::vector<uint8_t> wq(*qtype_row_bytes(t, n)), aq(*qtype_row_bytes(at, n));
    quantize_row(t, w.data(), wq.data(), n);
    quantize_row(at, a.data(), aq.data(), n);
    std::vector<float> wd(n), ad(n);
    dequantize_row(t, wq.data(), wd.data(), n);
    dequantize_row(at, aq.data(), ad.data(), n);
    double ref = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      ref += (double)wd[i] * ad[i];
      mag += std::fabs((double)wd[i] * ad[i]);
    }
    // Q8_1 carries sum*d rounded to f16, which the min term uses (as ggml does): allow for it.
    const double tol = (at == QType::Q8_1 ? 2e-3 : 1e-5) * mag;
    EXPECT_NEAR(vec_dot(t, n, wq.data(), aq.data()), ref, tol) << qtype_name(t);
  }
}

}  // namespace
}  // namespace memra

namespace memra {
namespace {

// Row kinds the public reference keeps back (all-zero, alternating +-1, positive uniform,
// per-block scales over 5 decades): every quantizer must give finite values, exact zeros for a
// zero row, and a faithful +-1 pattern. Grids that are not symmetric (Q3_K levels -4..3, IQ4
// -127..113) cannot hit both +1 and -1: Q3_K's best is 1 and 3/4, rel. RMS error 0.1414.
TEST(QuantEdgeRows, HeldBackKindsStayFiniteAndExact) {
  const int64_t n = 1024;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  std::vector<std::vector<float>> rows(4, std::vector<float>(n));
  for (int64_t i = 0; i < n; ++i) {
    rows[0][i] = 0.0f;
    rows[1][i] = i % 2 ? -1.0f : 1.0f;
    rows[2][i] = u01(rng);
    rows[3][i] = (u01(rng) - 0.5f) * std::pow(10.0f, -3.0f + 5.0f * (float)(i / 32) / 31.0f);
  }
  int types = 0;
  for (const auto& tr : kQTypeTable) {
    if (!tr.quantized || !has_quantizer(tr.type) || n % tr.block_elems) continue;
    ++types;
    for (size_t k = 0; k < rows.size(); ++k) {
      std::vector<uint8_t> q(*qtype_row_bytes(tr.type, n));
      std::vector<float> y(n);
      quantize_row(tr.type, rows[k].data(), q.data(), n);
      dequantize_row(tr.type, q.data(), y.data(), n);
      double err = 0, ref = 0;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << tr.name << " kind " << k << " at " << i;
        err += ((double)y[i] - rows[k][i]) * ((double)y[i] - rows[k][i]);
        ref += (double)rows[k][i] * rows[k][i];
      }
      if (k == 0) {
        EXPECT_EQ(err, 0.0) << tr.name;
      }
      if (k == 1) {
        EXPECT_LT(std::sqrt(err / ref), 0.15) << tr.name;
      }
    }
  }
  EXPECT_EQ(types, 21);  // 20 ggml block formats + FP8_E4M3
}

}  // namespace
}  // namespace memra

namespace memra {
namespace {

// quantize_activation_row (llama.cpp's CPU from_float) against quantize_row (ggml's reference) where
// the two rules part, from the rules themselves: amax 127 gives the multiplier 1 exactly in both,
// so x = 2.5 is a tie: half to even gives 2, half away from zero 3; -0.5 gives -0 and -1.
TEST(QuantApi, ActivationRowRoundsTiesToEven) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f, x[1] = 2.5f, x[2] = -0.5f, x[3] = 3.5f;
  for (QType t : {QType::Q8_0, QType::Q8_1}) {
    const int qs = t == QType::Q8_0 ? 2 : 4;
    std::vector<uint8_t> act(qs + 32), ref(qs + 32);
    quantize_activation_row(t, x.data(), act.data(), 32);
    quantize_row(t, x.data(), ref.data(), 32);
    EXPECT_EQ((int8_t)act[qs + 0], 127);
    EXPECT_EQ((int8_t)act[qs + 1], 2) << qtype_name(t);
    EXPECT_EQ((int8_t)act[qs + 2], 0) << qtype_name(t);
    EXPECT_EQ((int8_t)act[qs + 3], 4) << qtype_name(t);
    EXPECT_EQ((int8_t)ref[qs + 1], 3) << qtype_name(t);
    EXPECT_EQ((int8_t)ref[qs + 2], -1) << qtype_name(t);
    EXPECT_EQ((int8_t)ref[qs + 3], 4) << qtype_name(t);
    EXPECT_EQ(act[0] | act[1] << 8, 0x3C00) << "d = 127 / 127 = 1 (f16)";
    if (t == QType::Q8_1) {
      EXPECT_EQ(act[2] | act[3] << 8, 0x5828) << "s = d x (127 + 2 + 0 + 4) = 133 (f16)";
      EXPECT_EQ(ref[2] | ref[3] << 8, 0x5828) << "s = 127 + 3 - 1 + 4 = 133 (f16)";
    }
  }
  // Other types: the reference quantizer's bytes.
  std::vector<float> y(256);
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::sin(0.37f * (float)i);
  std::vector<uint8_t> a(292), b(292);
  quantize_activation_row(QType::Q8_K, y.data(), a.data(), 256);
  quantize_row(QType::Q8_K, y.data(), b.data(), 256);
  EXPECT_EQ(a, b);
  EXPECT_THROW(quantize_activation_row(QType::Q8_0, y.data(), a.data(), 31), Error);
}

}  // namespace
// fill_random_blocks: every scale field it sets is where the format keeps it, so every decoded
// value is finite and bounded by max scale x max level (a random f16 left in a scale field would
// be Inf / NaN in 1 of 32 blocks and > 256 in ~1 of 4); the bytes follow the seed.
TEST(QuantRandomBlocks, ScalesLandInTheFormatsScaleFields) {
  for (QType t : {QType::Q4_0, QType::Q5_0, QType::Q8_0, QType::IQ4_NL, QType::IQ4_XS, QType::Q4_1, QType::Q5_1,
                  QType::Q2_K, QType::Q3_K, QType::Q4_K, QType::Q5_K, QType::Q6_K}) {
    const auto& tr = qtype_traits(t);
    const int64_t n_blocks = 4096;
    std::vector<uint8_t> a((size_t)n_blocks * tr.block_bytes), b(a.size()), c(a.size());
    std::mt19937_64 r1(7), r2(7), r3(8);
    fill_random_blocks(t, a.data(), n_blocks, r1);
    fill_random_blocks(t, b.data(), n_blocks, r2);
    fill_random_blocks(t, c.data(), n_blocks, r3);
    EXPECT_EQ(a, b) << tr.name << ": same seed, other bytes";
    EXPECT_NE(a, c) << tr.name << ": another seed, the same bytes";
    std::vector<float> v((size_t)(n_blocks * tr.block_elems));
    dequantize_row(t, a.data(), v.data(), n_blocks * tr.block_elems);
    float amax = 0;
    for (float x : v) {
      ASSERT_TRUE(std::isfinite(x)) << tr.name;
      amax = std::max(amax, std::fabs(x));
    }
    // Largest |scale x level| of these formats: Q6_K 0.05 x 127 x 32 = 203; real weights' range.
    EXPECT_LE(amax, 256.0f) << tr.name;
    EXPECT_GT(amax, 0.0f) << tr.name;
  }
  std::vector<uint8_t> buf(1024);
  std::mt19937_64 rng(1);
  EXPECT_NE(error_of([&] { fill_random_blocks(QType::IQ2_XXS, buf.data(), 1, rng); }).find("IQ2_XXS"), std::string::npos);
  EXPECT_NE(error_of([&] { fill_random_blocks(QType::F32, buf.data(), 1, rng); }), "");
}

}  // namespace memra
