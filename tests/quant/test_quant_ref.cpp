// Every reference row of ../shared/reference/quant against our dequantizers, quantizers,
// activation quantizers and integer dot products. Expected values are ggml's (see README there).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "quant/quant.h"
#include "ref_rows.h"

namespace memra {
namespace {

using test::load_ref_rows;
using test::RefRow;

const char* const kRefTypes[] = {"Q4_0",   "Q4_1",   "Q5_0",    "Q5_1",   "Q8_0",  "Q8_1",  "Q2_K",
                                 "Q3_K",   "Q4_K",   "Q5_K",    "Q6_K",   "Q8_K",  "IQ2_XXS", "IQ2_XS",
                                 "IQ3_XXS", "IQ1_S", "IQ4_NL",  "IQ3_S",  "IQ2_S", "IQ4_XS", "IQ1_M",
                                 "TQ1_0",  "TQ2_0",  "MXFP4",   "NVFP4",  "Q1_0",  "Q2_0"};

// Types with a reference quantizer (the rest are dequantize-only; NoQuantizerForCodebookTypes).
const char* const kQuantizerTypes[] = {"Q4_0",  "Q4_1",  "Q5_0",   "Q5_1",   "Q8_0",  "Q8_1",
                                       "Q2_K",  "Q3_K",  "Q4_K",   "Q5_K",   "Q6_K",  "Q8_K",
                                       "IQ4_NL", "IQ4_XS", "MXFP4", "NVFP4", "Q1_0", "Q2_0",
                                       "TQ1_0", "TQ2_0"};

class RefQuant : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::ref_quant_dir()))
      GTEST_SKIP() << "no reference vectors at " << test::ref_quant_dir()
                   << " (../shared is not checked out next to the source tree)";
    type_ = *qtype_from_name(GetParam());
    rows_ = load_ref_rows(GetParam());
    ASSERT_FALSE(rows_.empty());
  }
  QType type_{};
  std::vector<RefRow> rows_;
};

double sq_err(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
  return s;
}

class RefQuantizer : public RefQuant {};

TEST_P(RefQuant, TableMatchesReference) {
  const auto& j = rows_.front();
  EXPECT_EQ(*qtype_row_bytes(type_, (uint64_t)j.n), j.quant.size());
  EXPECT_TRUE(has_dequantizer(type_));
}

TEST_P(RefQuant, DequantizeIsBitIdentical) {
  for (const auto& r : rows_) {
    std::vector<float> out(r.n);
    dequantize_row(type_, r.quant.data(), out.data(), r.n);
    ASSERT_EQ(r.dequant.size(), out.size());
    int64_t bad = -1;
    for (int64_t i = 0; i < r.n && bad < 0; ++i)
      if (std::memcmp(&out[i], &r.dequant[i], 4) != 0) bad = i;
    EXPECT_LT(bad, 0) << GetParam() << " row " << r.row_index << " (" << r.row_kind
                      << "): first mismatch at " << bad << ": ours " << out[bad] << " ggml "
                      << r.dequant[bad];
  }
}

TEST_P(RefQuantizer, QuantizerBytesMatch) {
  ASSERT_TRUE(has_quantizer(type_));
  for (const auto& r : rows_) {
    std::vector<uint8_t> q(r.quant.size());
    quantize_row(type_, r.input.data(), q.data(), r.n);
    int64_t bad = -1;
    for (size_t i = 0; i < q.size() && bad < 0; ++i)
      if (q[i] != r.quant[i]) bad = (int64_t)i;
    EXPECT_LT(bad, 0) << GetParam() << " row " << r.row_index << " (" << r.row_kind
                      << "): first differing byte " << bad << " (block "
                      << bad / qtype_traits(type_).block_bytes << ")";
  }
}

TEST_P(RefQuantizer, RoundTripErrorWithinReference) {
  ASSERT_TRUE(has_quantizer(type_));
  for (const auto& r : rows_) {
    std::vector<uint8_t> q(r.quant.size());
    quantize_row(type_, r.input.data(), q.data(), r.n);
    std::vector<float> back(r.n);
    dequantize_row(type_, q.data(), back.data(), r.n);
    const double ours = sq_err(back, r.input), ref = sq_err(r.dequant, r.input);
    EXPECT_LE(std::sqrt(ours), 1.01 * std::sqrt(ref))
        << GetParam() << " row " << r.row_index << " (" << r.row_kind << ")";
  }
}

TEST_P(RefQuant, ActivationQuantizerMatchesCpuBackend) {
  const bool act_format = type_ == QType::Q8_0 || type_ == QType::Q8_1 || type_ == QType::Q8_K;
  for (const auto& r : rows_) {
    // The reference carries the CPU backend's activation bytes exactly for the Q8 formats (on these
    // rows they equal the reference quantizer's too).
    ASSERT_EQ(!r.cpu_from_float.empty(), act_format) << GetParam() << " row " << r.row_index;
    if (r.cpu_from_float.empty()) continue;
    std::vector<uint8_t> q(r.cpu_from_float.size());
    quantize_activation_row(type_, r.input.data(), q.data(), r.n);
    EXPECT_EQ(q, r.cpu_from_float) << GetParam() << " row " << r.row_index;
    quantize_row(type_, r.input.data(), q.data(), r.n);
    EXPECT_EQ(q, r.cpu_from_float) << GetParam() << " row " << r.row_index << " (reference quantizer)";
  }
}

TEST_P(RefQuant, VecDotMatchesCpuBackend) {
  int checked = 0;
  for (const auto& r : rows_) {
    if (!r.vec_dot_type) continue;
    const QType at = vec_dot_type(type_);
    ASSERT_EQ(qtype_name(at), *r.vec_dot_type) << GetParam();
    std::vector<uint8_t> aq(r.act_quant.size());
    quantize_row(at, r.act.data(), aq.data(), r.n);
    EXPECT_EQ(aq, r.act_quant) << GetParam() << " row " << r.row_index << ": activation bytes";
    // Tolerance relative to sum |w*a| of the decoded operands (the scale of the rounding).
    std::vector<float> a(r.n);
    dequantize_row(at, r.act_quant.data(), a.data(), r.n);
    double mag = 0;
    for (int64_t i = 0; i < r.n; ++i) mag += std::fabs((double)r.dequant[i] * a[i]);
    const double got = vec_dot(type_, r.n, r.quant.data(), r.act_quant.data());
    EXPECT_NEAR(got, r.vec_dot, 1e-6 * mag + 1e-30)
        << GetParam() << " row " << r.row_index << " (" << r.row_kind << ")";
    ++checked;
  }
  if (checked == 0) {
    EXPECT_FALSE(has_vec_dot(type_)) << GetParam();
  }
}

TEST(RefQuantList, NoQuantizerForCodebookTypes) {
  for (const char* name : kRefTypes) {
    bool listed = false;
    for (const char* q : kQuantizerTypes) listed = listed || std::string(q) == name;
    EXPECT_EQ(has_quantizer(*qtype_from_name(name)), listed) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, RefQuant, ::testing::ValuesIn(kRefTypes),
                         [](const auto& info) { return std::string(info.param); });
INSTANTIATE_TEST_SUITE_P(QuantizerTypes, RefQuantizer, ::testing::ValuesIn(kQuantizerTypes),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace memra
