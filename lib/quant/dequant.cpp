// dequantize_row: float formats directly, block formats through their level decoders.
#include <cstring>
#include <vector>

#include "core/error.h"
#include "quant/levels.h"
#include "quant/quant.h"

namespace memra {
namespace quant_detail {

const LevelDecoder* level_decoder(QType t) {
  if (const auto* d = legacy_level_decoder(t)) return d;
  if (const auto* d = k_level_decoder(t)) return d;
  return iq_level_decoder(t);
}

}  // namespace quant_detail

using quant_detail::LevelDecoder;

bool has_dequantizer(QType t) {
  switch (t) {
    case QType::F32:
    case QType::F16:
    case QType::BF16:
    case QType::FP8_E4M3: return true;
    default: return quant_detail::level_decoder(t) != nullptr;
  }
}

namespace {

template <bool kOffset>
void decode_blocks(const LevelDecoder& dec, const QTypeTraits& tr, const uint8_t* src, float* dst,
                   int64_t nblocks) {
  int16_t levels[quant_detail::kMaxBlock];
  float scale[quant_detail::kMaxBlock];
  float offset[quant_detail::kMaxBlock];
  const int be = (int)tr.block_elems, g = dec.group;
  for (int64_t ib = 0; ib < nblocks; ++ib) {
    dec.decode(src + ib * tr.block_bytes, levels, scale, offset);
    float* y = dst + ib * be;
    const int16_t* l = levels;
    for (int gi = 0; gi < be / g; ++gi, y += g, l += g) {
      const float s = scale[gi];
      // No "+ 0.0f" for offset-free formats: it would turn -0.0 into +0.0.
      if constexpr (kOffset) {
        const float o = offset[gi];
        for (int i = 0; i < g; ++i) y[i] = s * (float)l[i] + o;
      } else {
        for (int i = 0; i < g; ++i) y[i] = s * (float)l[i];
      }
    }
  }
}

// Table decode of the 16-bit and 8-bit float formats: the conversions are exact, the table only
// saves the per-element bit manipulation (measured numbers in README.md).
const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) t[h] = fp16_to_f32((uint16_t)h);
    return t;
  }();
  return table.data();
}

const float* fp8_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(256);
    for (uint32_t v = 0; v < 256; ++v) t[v] = fp8_e4m3_to_f32((uint8_t)v);
    return t;
  }();
  return table.data();
}

}  // namespace

void dequantize_row(QType t, const void* src, float* dst, int64_t n) {
  const auto* tr = qtype_by_id((uint32_t)t);
  MEMRA_CHECK(tr != nullptr, "dequantize_row: unknown quant type id {}", (uint32_t)t);
  MEMRA_CHECK(n >= 0 && n % tr->block_elems == 0,
              "dequantize_row {}: n = {} is not a multiple of the block size {}", tr->name, n,
              tr->block_elems);
  const auto* s8 = static_cast<const uint8_t*>(src);
  switch (t) {
    case QType::F32: std::memcpy(dst, src, (size_t)n * 4); return;
    case QType::F16: {
      const float* tab = f16_table();
      for (int64_t i = 0; i < n; ++i) dst[i] = tab[quant_detail::load_u16(s8 + 2 * i)];
      return;
    }
    case QType::BF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(quant_detail::load_u16(s8 + 2 * i));
      return;
    case QType::FP8_E4M3: {
      const float* tab = fp8_table();
      for (int64_t i = 0; i < n; ++i) dst[i] = tab[s8[i]];
      return;
    }
    default: break;
  }
  const LevelDecoder* dec = quant_detail::level_decoder(t);
  MEMRA_CHECK(dec != nullptr, "dequantize_row: type {} has no dequantizer", tr->name);
  const int64_t nb = n / tr->block_elems;
  if (dec->has_offset)
    decode_blocks<true>(*dec, *tr, s8, dst, nb);
  else
    decode_blocks<false>(*dec, *tr, s8, dst, nb);
}

}  // namespace memra
