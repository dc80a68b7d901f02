#include "backend/cuda/variant.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace memra::cuda {

namespace {

bool is_float(QType t) { return t == QType::F32 || t == QType::F16 || t == QType::BF16; }

bool is_dp4a_type(QType t) {
  switch (t) {
    case QType::Q4_0: case QType::Q4_1: case QType::Q5_0: case QType::Q5_1: case QType::Q8_0:
    case QType::Q2_K: case QType::Q3_K: case QType::Q4_K: case QType::Q5_K: case QType::Q6_K:
    case QType::IQ4_NL: case QType::IQ4_XS:
      return true;
    default:
      return false;
  }
}

constexpr int kMatvecMaxM = 8;  // kernels/matvec/matvec.h

// The types kernels/matvec/matvec_v2.cu is written for (full build).
bool is_v2_type(QType t) {
  return t == QType::Q4_K || t == QType::Q6_K || t == QType::Q8_0 || t == QType::Q4_0;
}

// "mmvq_v2" -> 8, "mmvq_v2_r<R>" -> R (1, 2, 4, 8); 0 when the name is not a v2 name.
int v2_rows_per_block(const std::string& name) {
  if (name == "mmvq_v2") return 8;
  for (int r : {1, 2, 4, 8})
    if (name == fmt::format("mmvq_v2_r{}", r)) return r;
  return 0;
}

}  // namespace

bool attn_q8_scores_applies(const KernelsSection& cfg, float scale, int head_dim) {
  return cfg.attn_q8_scores && head_dim > 0 && scale * std::sqrt((float)head_dim) <= 1.01f;
}

bool mmvs_type_on(QType t, const KernelsSection& cfg) {
  const bool built = t == QType::Q4_K || t == QType::Q6_K || t == QType::Q8_0 || t == QType::Q4_0 || t == QType::Q5_K ||
                     t == QType::IQ4_XS;
  return built && std::any_of(cfg.mmvs_types.begin(), cfg.mmvs_types.end(),
                              [t](const std::string& n) { return qtype_from_name(n) == t; });
}

MatmulVariant choose_matmul_variant(int cc, int sm_count, const MatmulShape& s, const KernelsSection& cfg) {
  MEMRA_CHECK(cc == 90, "the CUDA kernels are built for sm_90a (H100/H200); this device has compute "
              "capability {}.{}", cc / 10, cc % 10);
  MEMRA_CHECK(s.m >= 1 && s.n >= 1 && s.k >= 1, "matmul shape m={} n={} k={} must be positive", s.m, s.n, s.k);
  const auto& tr = qtype_traits(s.w_type);
  MEMRA_CHECK(is_float(s.w_type) || is_dp4a_type(s.w_type),
              "no CUDA matmul for weight type {} (supported: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 "
              "Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS)", tr.name);
  MEMRA_CHECK(s.k % tr.block_elems == 0, "matmul k={} is not a multiple of the {} block size {}", s.k,
              tr.name, tr.block_elems);
  MEMRA_CHECK(cfg.gemm_min_batch >= 1, "kernels.gemm_min_batch must be >= 1, got {}", cfg.gemm_min_batch);

  MatmulVariant v;
  const bool matvec = s.m < cfg.gemm_min_batch && s.m <= kMatvecMaxM;
  if (matvec) {
    const char* base = is_float(s.w_type) ? "mmvf" : "mmvq";
    v.kind = is_float(s.w_type) ? MatmulKind::kMatvecFloat : MatmulKind::kMatvecQ8_1;
    const bool split_ok = s.split_ready && s.k % 64 == 0 && mmvs_type_on(s.w_type, cfg);
    const int v2_rows = v2_rows_per_block(cfg.matvec);
    if (v2_rows > 0 && s.m == 1 && is_v2_type(s.w_type)) {
      v.kind = MatmulKind::kMatvecQ8_1V2;
      v.rows_per_block = v2_rows;
      v.name = fmt::format("mmvq_v2_r{}", v2_rows);
      return v;
    }
    // "mmvs" and the v2 names leave every matmul they do not cover to the auto choice.
    const bool automatic = cfg.matvec == "auto" || cfg.matvec == "mmvs" || v2_rows > 0;
    if (split_ok && automatic) {
      v.kind = MatmulKind::kMatvecSplit;
      v.rows_per_block = 4;
      v.name = "mmvs";
      return v;
    }
    if (automatic) {
      v.rows_per_block = s.n >= 4LL * 4 * sm_count ? 4 : 2;
    } else {
      bool ok = false;
      for (int r : {1, 2, 4, 8})
        if (cfg.matvec == fmt::format("{}_r{}", base, r)) v.rows_per_block = r, ok = true;
      MEMRA_CHECK(ok, "kernels.matvec = \"{}\" is not a matvec variant for {} weights (valid: auto, "
                  "{}_r1, {}_r2, {}_r4, {}_r8, mmvs, mmvq_v2, mmvq_v2_r<1|2|4|8>)", cfg.matvec, tr.name, base, base, base,
                  base);
    }
    v.name = fmt::format("{}_r{}", base, v.rows_per_block);
    return v;
  }
  MEMRA_CHECK(cfg.gemm == "auto" || cfg.gemm == "cublaslt",
              "kernels.gemm = \"{}\" is not available (built: auto, cublaslt; the int8 mma path is not "
              "built yet)", cfg.gemm);
  v.rows_per_block = 0;
  switch (s.w_type) {
    case QType::F32: v.kind = MatmulKind::kGemmF32, v.name = "lt_f32"; break;
    case QType::F16: v.kind = MatmulKind::kGemmF16, v.name = "lt_f16"; break;
    case QType::BF16: v.kind = MatmulKind::kGemmBf16, v.name = "lt_bf16"; break;
    default: v.kind = MatmulKind::kGemmDequantF16, v.name = "lt_dequant_f16"; break;
  }
  return v;
}

}  // namespace memra::cuda
