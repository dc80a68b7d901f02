// The v2 decode matvec ("mmvq_v2", kernels/matvec/matvec_v2.h) is unmeasured: these cases pin that
// only an explicit kernels.matvec name selects it, only for m = 1 and its four weight types, and
// that every other matmul under that setting gets exactly what "auto" gives.
#include <gtest/gtest.h>

#include "backend/cuda/variant.h"
#include "core/error.h"

using memra::KernelsSection;
using memra::QType;
using memra::cuda::choose_matmul_variant;
using memra::cuda::MatmulKind;
using memra::cuda::MatmulShape;

namespace {
constexpr int kH200 = 90, kSms = 132;
MatmulShape shape(int64_t m, int64_t n, int64_t k, QType t) { return {m, n, k, t}; }
KernelsSection forced(const char* name) {
  KernelsSection cfg;
  cfg.matvec = name;
  return cfg;
}
}  // namespace

TEST(MatmulVariantV2, AutoNeverChoosesV2) {
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0})
    for (int64_t n : {1024, 4096, 14336, 151936}) {
      const auto v = choose_matmul_variant(kH200, kSms, shape(1, n, 4096, t), KernelsSection{});
      EXPECT_NE(v.kind, MatmulKind::kMatvecQ8_1V2) << qtype_name(t) << " n=" << n;
      EXPECT_EQ(v.name, "mmvs") << v.name;
    }
}

TEST(MatmulVariantV2, ExplicitNameSelectsV2ForItsTypesAtM1) {
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0}) {
    const auto v = choose_matmul_variant(kH200, kSms, shape(1, 4096, 14336, t), forced("mmvq_v2"));
    EXPECT_EQ(v.kind, MatmulKind::kMatvecQ8_1V2) << qtype_name(t);
    EXPECT_EQ(v.rows_per_block, 8);
    EXPECT_EQ(v.name, "mmvq_v2_r8");
  }
  for (int r : {1, 2, 4, 8}) {
    const std::string name = "mmvq_v2_r" + std::to_string(r);
    const auto v = choose_matmul_variant(kH200, kSms, shape(1, 4097, 1536, QType::Q6_K), forced(name.c_str()));
    EXPECT_EQ(v.kind, MatmulKind::kMatvecQ8_1V2);
    EXPECT_EQ(v.rows_per_block, r);
    EXPECT_EQ(v.name, name);
  }
}

TEST(MatmulVariantV2, OtherMatmulsUnderV2SettingGetTheAutoChoice) {
  const KernelsSection v2 = forced("mmvq_v2");
  const KernelsSection automatic;
  const MatmulShape others[] = {
      shape(2, 4096, 4096, QType::Q4_K),    // m > 1: v2 is m = 1 only
      shape(8, 1024, 4096, QType::Q8_0),    // small n: auto gives r2
      shape(1, 4096, 4096, QType::Q5_K),    // type without a v2 kernel
      shape(1, 4096, 4096, QType::IQ4_XS),
      shape(1, 4096, 4096, QType::F16),     // float weights: mmvf
      shape(3, 1031, 1003, QType::BF16),
      shape(64, 4096, 4096, QType::Q4_K),   // GEMM
  };
  for (const auto& s : others) {
    const auto a = choose_matmul_variant(kH200, kSms, s, v2);
    const auto b = choose_matmul_variant(kH200, kSms, s, automatic);
    EXPECT_EQ(a.name, b.name) << "m=" << s.m << " " << qtype_name(s.w_type);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.rows_per_block, b.rows_per_block);
    EXPECT_NE(a.kind, MatmulKind::kMatvecQ8_1V2);
  }
}

TEST(MatmulVariantV2, BadV2NamesAreErrorsListingTheValidOnes) {
  for (const char* bad : {"mmvq_v2_r3", "mmvq_v2_r16", "mmvq_v3", "mmvq_v2_"}) {
    try {
      choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::Q4_K), forced(bad));
      FAIL() << bad << " is not a variant";
    } catch (const memra::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(bad), std::string::npos) << what;
      EXPECT_NE(what.find("mmvq_v2"), std::string::npos) << what;
    }
  }
}

TEST(MatmulVariantV2, StillRejectsWhatIsNotBuilt) {
  EXPECT_THROW(choose_matmul_variant(80, kSms, shape(1, 4096, 4096, QType::Q4_K), forced("mmvq_v2")), memra::Error);
  EXPECT_THROW(choose_matmul_variant(kH200, kSms, shape(1, 4096, 4000, QType::Q4_K), forced("mmvq_v2")),
               memra::Error);  // k % 256
}
