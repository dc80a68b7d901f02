// Integer-block dot products of a weight row with a Q8_0 / Q8_1 / Q8_K activation row, as the
// llama.cpp CPU backend computes them when it quantizes activations: per run of elements that
// share one weight scale and one activation block, an exact integer sum of level * q8, scaled
// by the two block scales and accumulated in f32. Formats with a minimum add min * sum(q8)
// (Q8_1 supplies that sum pre-scaled in its s field; ggml uses it, so do we).
#include <algorithm>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "quant/levels.h"
#include "quant/quant.h"

namespace memra {

namespace {

// The activation format ggml's CPU backend pairs with each weight type (its vec_dot_type).
std::optional<QType> act_type_of(QType weight) {
  switch (weight) {
    case QType::Q4_0:
    case QType::Q5_0:
    case QType::Q8_0:
    case QType::IQ4_NL:
    case QType::MXFP4:
    case QType::NVFP4:
    case QType::Q1_0:
    case QType::Q2_0: return QType::Q8_0;
    case QType::Q4_1:
    case QType::Q5_1: return QType::Q8_1;
    case QType::Q2_K:
    case QType::Q3_K:
    case QType::Q4_K:
    case QType::Q5_K:
    case QType::Q6_K:
    case QType::IQ2_XXS:
    case QType::IQ2_XS:
    case QType::IQ2_S:
    case QType::IQ3_XXS:
    case QType::IQ3_S:
    case QType::IQ1_S:
    case QType::IQ1_M:
    case QType::IQ4_XS:
    case QType::TQ1_0:
    case QType::TQ2_0: return QType::Q8_K;
    default: return std::nullopt;
  }
}

}  // namespace

QType vec_dot_type(QType weight) {
  const auto at = act_type_of(weight);
  if (!at) {
    const auto* tr = qtype_by_id((uint32_t)weight);
    MEMRA_FAIL("vec_dot_type: type {} has no integer dot product",
               tr ? tr->name : std::string_view("<unknown>"));
  }
  return *at;
}

bool has_vec_dot(QType weight) { return act_type_of(weight).has_value(); }

namespace {

// One activation block: scale, optional pre-scaled sum (Q8_1), the int8 values.
struct ActBlock {
  float d;
  float s;
  const int8_t* qs;
};

ActBlock act_block(QType at, const uint8_t* base, int64_t i) {
  switch (at) {
    case QType::Q8_0: {
      const uint8_t* b = base + i * 34;
      return {quant_detail::load_f16(b), 0.0f, reinterpret_cast<const int8_t*>(b + 2)};
    }
    case QType::Q8_1: {
      const uint8_t* b = base + i * 36;
      return {quant_detail::load_f16(b), quant_detail::load_f16(b + 2),
              reinterpret_cast<const int8_t*>(b + 4)};
    }
    default: {  // Q8_K
      const uint8_t* b = base + i * 292;
      float d;
      std::memcpy(&d, b, 4);
      return {d, 0.0f, reinterpret_cast<const int8_t*>(b + 4)};
    }
  }
}

}  // namespace

float vec_dot(QType weight, int64_t n, const void* w, const void* act_q) {
  const QType at = vec_dot_type(weight);
  const auto& wt = qtype_traits(weight);
  const auto& atr = qtype_traits(at);
  MEMRA_CHECK(n >= 0 && n % wt.block_elems == 0 && n % atr.block_elems == 0,
              "vec_dot {}: n = {} is not a multiple of the weight block {} and the {} block {}",
              wt.name, n, wt.block_elems, atr.name, atr.block_elems);
  const auto* dec = quant_detail::level_decoder(weight);
  const int be = (int)wt.block_elems, ab = (int)atr.block_elems;
  const int run = std::min(dec->group, ab);  // elements sharing one weight and one act scale
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab8 = static_cast<const uint8_t*>(act_q);
  int16_t lev[quant_detail::kMaxBlock];
  float scale[quant_detail::kMaxBlock], offset[quant_detail::kMaxBlock];
  float sumf = 0.0f;
  for (int64_t ib = 0; ib < n / be; ++ib) {
    dec->decode(wb + ib * wt.block_bytes, lev, scale, offset);
    for (int r0 = 0; r0 < be; r0 += run) {
      const int64_t pos = ib * be + r0;
      const ActBlock a = act_block(at, ab8, pos / ab);
      const int8_t* q = a.qs + pos % ab;
      int32_t isum = 0, qsum = 0;
      for (int j = 0; j < run; ++j) {
        isum += (int32_t)lev[r0 + j] * q[j];
        qsum += q[j];
      }
      const int g = r0 / dec->group;
      sumf += (scale[g] * a.d) * (float)isum;
      if (dec->has_offset) sumf += at == QType::Q8_1 ? offset[g] * a.s : offset[g] * a.d * (float)qsum;
    }
  }
  return sumf;
}

}  // namespace memra
