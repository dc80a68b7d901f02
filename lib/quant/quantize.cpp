// quantize_row / has_quantizer: dispatch to the per-family reference quantizers.
#include <cstring>

#include "core/error.h"
#include "quant/levels.h"
#include "quant/quant.h"
#include "quant/quantize_impl.h"

namespace memra {
namespace {

using BlockQuantizer = void (*)(const float*, uint8_t*, int64_t);

BlockQuantizer block_quantizer(QType t) {
  using namespace quant_detail;
  switch (t) {
    case QType::Q4_0: return quantize_q4_0;
    case QType::Q4_1: return quantize_q4_1;
    case QType::Q5_0: return quantize_q5_0;
    case QType::Q5_1: return quantize_q5_1;
    case QType::Q8_0: return quantize_q8_0;
    case QType::Q8_1: return quantize_q8_1;
    case QType::Q2_K: return quantize_q2_k;
    case QType::Q3_K: return quantize_q3_k;
    case QType::Q4_K: return quantize_q4_k;
    case QType::Q5_K: return quantize_q5_k;
    case QType::Q6_K: return quantize_q6_k;
    case QType::Q8_K: return quantize_q8_k;
    case QType::IQ4_NL: return quantize_iq4_nl;
    case QType::IQ4_XS: return quantize_iq4_xs;
    case QType::MXFP4: return quantize_mxfp4;
    case QType::NVFP4: return quantize_nvfp4;
    case QType::Q1_0: return quantize_q1_0;
    case QType::Q2_0: return quantize_q2_0;
    case QType::TQ1_0: return quantize_tq1_0;
    case QType::TQ2_0: return quantize_tq2_0;
    default: return nullptr;
  }
}

}  // namespace

bool has_quantizer(QType t) {
  switch (t) {
    case QType::F32:
    case QType::F16:
    case QType::BF16:
    case QType::FP8_E4M3: return true;
    default: return block_quantizer(t) != nullptr;
  }
}

void quantize_row(QType t, const float* src, void* dst, int64_t n) {
  const auto* tr = qtype_by_id((uint32_t)t);
  MEMRA_CHECK(tr != nullptr, "quantize_row: unknown quant type id {}", (uint32_t)t);
  MEMRA_CHECK(has_quantizer(t), "quantize_row: type {} has no reference quantizer", tr->name);
  MEMRA_CHECK(n >= 0 && n % tr->block_elems == 0,
              "quantize_row {}: row length n = {} is not a multiple of the block size {}",
              tr->name, n, tr->block_elems);
  auto* d8 = static_cast<uint8_t*>(dst);
  switch (t) {
    case QType::F32: std::memcpy(dst, src, (size_t)n * 4); return;
    case QType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_fp16(src[i]);
        std::memcpy(d8 + 2 * i, &h, 2);
      }
      return;
    case QType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(d8 + 2 * i, &h, 2);
      }
      return;
    case QType::FP8_E4M3:
      for (int64_t i = 0; i < n; ++i) d8[i] = f32_to_fp8_e4m3(src[i]);
      return;
    default: block_quantizer(t)(src, d8, n / tr->block_elems);
  }
}

void quantize_activation_row(QType t, const float* src, void* dst, int64_t n) {
  if (t != QType::Q8_0 && t != QType::Q8_1) return quantize_row(t, src, dst, n);
  MEMRA_CHECK(n >= 0 && n % 32 == 0, "quantize_activation_row {}: row length n = {} is not a multiple of 32",
              qtype_name(t), n);
  (t == QType::Q8_0 ? quant_detail::quantize_q8_0_cpu : quant_detail::quantize_q8_1_cpu)(src, static_cast<uint8_t*>(dst),
                                                                                     n / 32);
}

}  // namespace memra
