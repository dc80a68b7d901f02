// The matmul variant choice is a pure function of (cc, sm count, shape, config): these cases pin
// the documented rules (lib/backend/cuda/variant.h) and the errors for what is not built.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/variant.h"
#include "config/config.h"
#include "matvec/mmvs.h"
#include "core/error.h"

using memra::KernelsSection;
using memra::QType;
using memra::cuda::choose_matmul_variant;
using memra::cuda::MatmulKind;
using memra::cuda::MatmulShape;

namespace {
constexpr int kH200 = 90, kSms = 132;
MatmulShape shape(int64_t m, int64_t n, int64_t k, QType t) { return {m, n, k, t}; }
}  // namespace

TEST(MatmulVariant, DecodeSplitTypesUseMmvs) {
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0})
    for (int64_t m : {1, 3, 8}) {
      const auto v = choose_matmul_variant(kH200, kSms, shape(m, 4096, 4096, t), KernelsSection{});
      EXPECT_EQ(v.kind, MatmulKind::kMatvecSplit) << memra::qtype_name(t) << " m=" << m;
      EXPECT_EQ(v.name, "mmvs");
    }
  // Without the split-plane copy (kernels.split_mirror = false, a tied embedding) or with k not a
  // multiple of 64: the GGUF-layout dp4a matvec.
  MatmulShape s = shape(1, 4096, 4096, QType::Q8_0);
  s.split_ready = false;
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, s, {}).name, "mmvq_r4");
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(1, 4096, 4000, QType::Q8_0), {}).name, "mmvq_r4");
  // Types without an mmvs kernel keep the dp4a matvec (Q5_K and IQ4_XS have one, in the default
  // kernels.mmvs_types since the forty-fourth session: MmvsTypesKeyRoutesEachType).
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::Q3_K), {}).name, "mmvq_r4");
}

// kernels.mmvs_types decides which types take mmvs (and which get a split-plane copy at load).
TEST(MatmulVariant, MmvsTypesKeyRoutesEachType) {
  KernelsSection all;
  all.mmvs_types = {"q4_k", "q6_k", "q8_0", "q4_0", "q5_k", "iq4_xs"};
  KernelsSection old;  // the list before the forty-fourth session (configs/arm-mmvs-q5k-iq4xs-off.toml)
  old.mmvs_types = {"q4_k", "q6_k", "q8_0", "q4_0"};
  for (QType t : {QType::Q5_K, QType::IQ4_XS}) {
    EXPECT_TRUE(memra::cuda::mmvs_type_on(t, KernelsSection{})) << memra::qtype_name(t);  // the default
    EXPECT_TRUE(memra::cuda::mmvs_type_on(t, all)) << memra::qtype_name(t);
    EXPECT_FALSE(memra::cuda::mmvs_type_on(t, old)) << memra::qtype_name(t);
    for (int64_t m : {1, 5}) {
      EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(m, 4096, 4096, t), all).name, "mmvs") << memra::qtype_name(t);
      EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(m, 4096, 4096, t), {}).name, "mmvs") << memra::qtype_name(t);
      EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(m, 4096, 4096, t), old).name, "mmvq_r4") << memra::qtype_name(t);
    }
  }
  KernelsSection no_q4k;
  no_q4k.mmvs_types = {"q6_k", "q8_0", "q4_0"};
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::Q4_K), no_q4k).name, "mmvq_r4");
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::Q6_K), no_q4k).name, "mmvs");
  // Listing a type mmvs is not built for changes nothing (the config refuses such names anyway).
  KernelsSection q3;
  q3.mmvs_types = {"q3_k"};
  EXPECT_FALSE(memra::cuda::mmvs_type_on(QType::Q3_K, q3));
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::Q3_K), q3).name, "mmvq_r4");
  // Float weights are never mmvs.
  EXPECT_FALSE(memra::cuda::mmvs_type_on(QType::F16, all));
}

TEST(MatmulVariant, DecodeQuantizedUsesDp4aMatvec) {
  const auto v = choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::Q3_K), KernelsSection{});
  EXPECT_EQ(v.kind, MatmulKind::kMatvecQ8_1);
  EXPECT_EQ(v.rows_per_block, 4);
  EXPECT_EQ(v.name, "mmvq_r4");
}

TEST(MatmulVariant, SmallNUsesTwoRowsPerBlock) {
  // 4 rows x 4 CTAs x 132 SMs = 2112 rows: below it, halve the rows per CTA.
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(1, 2111, 4096, QType::Q5_0), {}).rows_per_block, 2);
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(1, 2112, 4096, QType::Q5_0), {}).rows_per_block, 4);
}

TEST(MatmulVariant, FloatWeightsUseFloatMatvec) {
  for (QType t : {QType::F16, QType::BF16, QType::F32}) {
    const auto v = choose_matmul_variant(kH200, kSms, shape(3, 4096, 1003, t), {});
    EXPECT_EQ(v.kind, MatmulKind::kMatvecFloat);
    EXPECT_EQ(v.name, "mmvf_r4");
  }
}

TEST(MatmulVariant, BatchThresholdSwitchesToGemm) {
  KernelsSection cfg;  // gemm_min_batch = 9
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(8, 4096, 4096, QType::Q4_0), cfg).kind, MatmulKind::kMatvecSplit);
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(9, 4096, 4096, QType::Q4_0), cfg).kind, MatmulKind::kGemmDequantF16);
  cfg.gemm_min_batch = 4;
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(4, 4096, 4096, QType::Q4_0), cfg).name, "lt_dequant_f16");
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(3, 4096, 4096, QType::Q4_0), cfg).name, "mmvs");
  cfg.gemm_min_batch = 100;  // the matvec serves at most 8 rows whatever the threshold says
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(9, 4096, 4096, QType::Q4_0), cfg).kind, MatmulKind::kGemmDequantF16);
}

TEST(MatmulVariant, GemmByWeightType) {
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(512, 4096, 4096, QType::F16), {}).kind, MatmulKind::kGemmF16);
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(512, 4096, 4096, QType::BF16), {}).kind, MatmulKind::kGemmBf16);
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(512, 4096, 4096, QType::F32), {}).kind, MatmulKind::kGemmF32);
  EXPECT_EQ(choose_matmul_variant(kH200, kSms, shape(512, 4096, 4096, QType::IQ4_XS), {}).name, "lt_dequant_f16");
}

TEST(MatmulVariant, ForcedMatvecVariant) {
  KernelsSection cfg;
  cfg.matvec = "mmvq_r8";
  const auto v = choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::Q6_K), cfg);
  EXPECT_EQ(v.rows_per_block, 8);
  EXPECT_EQ(v.name, "mmvq_r8");
  cfg.matvec = "mmvf_r2";  // a float variant for quantized weights
  EXPECT_THROW(choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::Q6_K), cfg), memra::Error);
  cfg.matvec = "mmvq_r3";
  EXPECT_THROW(choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::Q6_K), cfg), memra::Error);
}

TEST(MatmulVariant, ErrorsNameTheProblem) {
  try {
    choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::IQ2_XXS), {});
    FAIL() << "IQ2_XXS has no CUDA matmul";
  } catch (const memra::Error& e) {
    EXPECT_NE(std::string(e.what()).find("IQ2_XXS"), std::string::npos) << e.what();
  }
  try {
    choose_matmul_variant(80, kSms, shape(1, 4096, 4096, QType::Q4_0), {});
    FAIL() << "sm_80 has no kernel image";
  } catch (const memra::Error& e) {
    EXPECT_NE(std::string(e.what()).find("8.0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(choose_matmul_variant(kH200, kSms, shape(1, 4096, 4000, QType::Q4_K), {}), memra::Error);  // k % 256
  EXPECT_THROW(choose_matmul_variant(kH200, kSms, shape(0, 4096, 4096, QType::Q4_K), {}), memra::Error);
  KernelsSection cfg;
  cfg.gemm = "mma";
  EXPECT_THROW(choose_matmul_variant(kH200, kSms, shape(64, 4096, 4096, QType::Q4_K), cfg), memra::Error);
  // ... but the decode path does not care about the GEMM setting.
  EXPECT_NO_THROW(choose_matmul_variant(kH200, kSms, shape(1, 4096, 4096, QType::Q4_K), cfg));
}

TEST(MatmulVariant, PureFunction) {
  const auto a = choose_matmul_variant(kH200, kSms, shape(5, 14336, 4096, QType::Q5_K), {});
  const auto b = choose_matmul_variant(kH200, kSms, shape(5, 14336, 4096, QType::Q5_K), {});
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.rows_per_block, b.rows_per_block);
}

// kernels.mmvs_min_blocks[_glu] and kernels.mmvs_cap_fallback name a compiled instance (0, 5, 6,
// 8, 12): anything else is a clear error at backend construction, before any device work (so it
// holds on a machine without a GPU).
TEST(MmvsMinBlocks, UnbuiltValueIsAClearError) {
  for (int v : {0, 5, 6, 8, 12}) EXPECT_TRUE(memra::cuda::mmvs_min_blocks_valid(v)) << v;
  for (int v : {1, 4, 7, 11, 13}) EXPECT_FALSE(memra::cuda::mmvs_min_blocks_valid(v)) << v;
  for (int which = 0; which < 3; ++which) {
    memra::Config cfg;
    (which == 0 ? cfg.kernels.mmvs_min_blocks : which == 1 ? cfg.kernels.mmvs_min_blocks_glu : cfg.kernels.mmvs_cap_fallback) = 7;
    const char* key = which == 0 ? "kernels.mmvs_min_blocks = 7" : which == 1 ? "kernels.mmvs_min_blocks_glu = 7" : "kernels.mmvs_cap_fallback = 7";
    try {
      (void)memra::backend::make_cuda_backend(cfg);
      ADD_FAILURE() << "accepted " << key;
    } catch (const memra::Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

// kernels.attn_q8_scores on the layers whose attention scale is the usual 1/sqrt(head_dim) (or
// smaller), not on gemma4's scale-1 layers, whose q rounding the scale would multiply; the key off
// turns it off everywhere.
TEST(AttnVariant, Q8ScoresOnlyAtTheUsualScale) {
  KernelsSection k;
  ASSERT_TRUE(k.attn_q8_scores);  // the default
  for (int hd : {64, 128, 256}) {
    const float usual = 1.0f / std::sqrt((float)hd);
    EXPECT_TRUE(memra::cuda::attn_q8_scores_applies(k, usual, hd)) << hd;
    EXPECT_TRUE(memra::cuda::attn_q8_scores_applies(k, 0.5f * usual, hd)) << hd;  // a smaller scale
    EXPECT_FALSE(memra::cuda::attn_q8_scores_applies(k, 1.0f, hd)) << hd;          // gemma4
    EXPECT_FALSE(memra::cuda::attn_q8_scores_applies(k, 1.05f * usual, hd)) << hd;
  }
  k.attn_q8_scores = false;
  EXPECT_FALSE(memra::cuda::attn_q8_scores_applies(k, 1.0f / std::sqrt(128.0f), 128));
}
