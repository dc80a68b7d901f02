#pragma once
// Internal: every quantized block format decoded to integer levels plus a float scale (and, for
// formats with a minimum, a float offset) per group of `group` consecutive elements:
//     value[i] = scale[g] * level[i]            (has_offset == false)
//     value[i] = scale[g] * level[i] + offset[g] (has_offset == true),  g = i / group
// The products are written so that they round exactly like ggml's dequantizers (bit-identical
// f32), and the same levels feed the integer dot product (vec_dot.cpp). One decoder per type is
// the single place a block layout is spelled out.
#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "quant/types.h"

namespace memra::quant_detail {

inline constexpr int kMaxBlock = 256;

struct LevelDecoder {
  int group;        // elements per scale group; divides the block
  bool has_offset;  // Q4_1, Q5_1, Q2_K, Q4_K, Q5_K
  // levels[block_elems], scale[block_elems / group], offset[block_elems / group] (if has_offset)
  void (*decode)(const uint8_t* block, int16_t* levels, float* scale, float* offset);
};

// nullptr for non-block types (F32, F16, BF16, integers, FP8_E4M3).
const LevelDecoder* level_decoder(QType t);

// Per-family tables (levels_legacy.cpp, levels_k.cpp, levels_iq.cpp).
const LevelDecoder* legacy_level_decoder(QType t);
const LevelDecoder* k_level_decoder(QType t);
const LevelDecoder* iq_level_decoder(QType t);

inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_f32(h);
}
inline void store_f16(uint8_t* p, float f) {
  const uint16_t h = f32_to_fp16(f);
  std::memcpy(p, &h, 2);
}
inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// E8M0 exponent byte -> 2^(e-127) / 2 (the 1/2 pairs with the doubled FP4 values). e < 2 gives
// a subnormal float.
inline float e8m0_to_f32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Unsigned E4M3 (bias 7) sub-block scale of NVFP4, times 1/2 (doubled FP4 values). 0x00 and
// 0x7F decode to 0.
float ue4m3_to_f32_half(uint8_t v);
uint8_t f32_to_ue4m3(float x);

}  // namespace memra::quant_detail
