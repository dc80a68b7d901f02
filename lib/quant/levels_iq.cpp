// Level decoders of the codebook ("i-quant") formats: IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ1_S
// IQ1_M IQ4_XS. Grid points carry magnitudes; sign bytes (or 7 stored bits expanded through
// kSignsIQ2XS) negate individual elements.
#include "quant/iq_grids.h"
#include "quant/levels.h"

namespace memra::quant_detail {
namespace {

inline int grid_byte(uint64_t point, int j) { return (int)((point >> (8 * j)) & 0xFF); }
inline int grid_byte32(uint32_t point, int j) { return (int)((point >> (8 * j)) & 0xFF); }
// Branch-free: sign bits are data, a branch mispredicts on half of them.
inline int16_t signed_level(int mag, uint8_t signs, int j) {
  return (int16_t)(mag * (1 - 2 * ((signs >> j) & 1)));
}

// IQ2_XXS: {f16 d, u16 qs[32]}; per 32 elements 8 bytes: 4 grid indices, then a u32 holding four
// 7-bit sign codes and the 4-bit scale s; scale = d * (0.5 + s) * 0.25.
void dec_iq2_xxs(const uint8_t* b, int16_t* l, float* s, float*) {
  const float d = load_f16(b);
  for (int ib = 0; ib < 8; ++ib) {
    const uint8_t* q = b + 2 + 8 * ib;
    const uint32_t aux = load_u32(q + 4);
    s[ib] = d * (0.5f + (float)(aux >> 28)) * 0.25f;
    for (int k = 0; k < 4; ++k) {
      const uint64_t pt = iq::kGridIQ2XXS[q[k]];
      const uint8_t signs = iq::kSignsIQ2XS[(aux >> (7 * k)) & 127];
      for (int j = 0; j < 8; ++j) l[32 * ib + 8 * k + j] = signed_level(grid_byte(pt, j), signs, j);
    }
  }
}

// IQ2_XS: {f16 d, u16 qs[32] (9-bit grid index | 7-bit sign code << 9), u8 scales[8]}; one
// 4-bit scale per 16 elements.
void dec_iq2_xs(const uint8_t* b, int16_t* l, float* s, float*) {
  const float d = load_f16(b);
  const uint8_t* sc = b + 66;
  for (int ib = 0; ib < 8; ++ib) {
    s[2 * ib] = d * (0.5f + (float)(sc[ib] & 0xF)) * 0.25f;
    s[2 * ib + 1] = d * (0.5f + (float)(sc[ib] >> 4)) * 0.25f;
    for (int k = 0; k < 4; ++k) {
      const uint16_t q = load_u16(b + 2 + 2 * (4 * ib + k));
      const uint64_t pt = iq::kGridIQ2XS[q & 511];
      const uint8_t signs = iq::kSignsIQ2XS[q >> 9];
      for (int j = 0; j < 8; ++j) l[32 * ib + 8 * k + j] = signed_level(grid_byte(pt, j), signs, j);
    }
  }
}

// IQ2_S: {f16 d, u8 qs[32] (grid index low bytes), u8 signs[32], u8 qh[8] (2 high index bits
// per 8 elements), u8 scales[8]}.
void dec_iq2_s(const uint8_t* b, int16_t* l, float* s, float*) {
  const float d = load_f16(b);
  const uint8_t* qs = b + 2;
  const uint8_t* sg = b + 34;
  const uint8_t* qh = b + 66;
  const uint8_t* sc = b + 74;
  for (int ib = 0; ib < 8; ++ib) {
    s[2 * ib] = d * (0.5f + (float)(sc[ib] & 0xF)) * 0.25f;
    s[2 * ib + 1] = d * (0.5f + (float)(sc[ib] >> 4)) * 0.25f;
    for (int k = 0; k < 4; ++k) {
      const int idx = qs[4 * ib + k] | ((qh[ib] << (8 - 2 * k)) & 0x300);
      const uint64_t pt = iq::kGridIQ2S[idx];
      for (int j = 0; j < 8; ++j)
        l[32 * ib + 8 * k + j] = signed_level(grid_byte(pt, j), sg[4 * ib + k], j);
    }
  }
}

// IQ3_XXS: {f16 d, u8 qs[64] (grid indices, 4 elements each), u32 scales_signs[8]};
// scale = d * (0.5 + s) * 0.5.
void dec_iq3_xxs(const uint8_t* b, int16_t* l, float* s, float*) {
  const float d = load_f16(b);
  for (int ib = 0; ib < 8; ++ib) {
    const uint8_t* q = b + 2 + 8 * ib;
    const uint32_t aux = load_u32(b + 66 + 4 * ib);
    s[ib] = d * (0.5f + (float)(aux >> 28)) * 0.5f;
    for (int k = 0; k < 4; ++k) {
      const uint8_t signs = iq::kSignsIQ2XS[(aux >> (7 * k)) & 127];
      const uint32_t p1 = iq::kGridIQ3XXS[q[2 * k]], p2 = iq::kGridIQ3XXS[q[2 * k + 1]];
      for (int j = 0; j < 4; ++j) {
        l[32 * ib + 8 * k + j] = signed_level(grid_byte32(p1, j), signs, j);
        l[32 * ib + 8 * k + j + 4] = signed_level(grid_byte32(p2, j), signs, j + 4);
      }
    }
  }
}

// IQ3_S: {f16 d, u8 qs[64], u8 qh[8] (9th index bit), u8 signs[32], u8 scales[4]};
// scale = d * (1 + 2s) per 32 elements.
void dec_iq3_s(const uint8_t* b, int16_t* l, float* s, float*) {
  const float d = load_f16(b);
  const uint8_t* qs = b + 2;
  const uint8_t* qh = b + 66;
  const uint8_t* sg = b + 74;
  const uint8_t* sc = b + 106;
  for (int ib = 0; ib < 8; ++ib) {
    const int sv = ib % 2 == 0 ? sc[ib / 2] & 0xF : sc[ib / 2] >> 4;
    s[ib] = d * (float)(1 + 2 * sv);
    for (int k = 0; k < 4; ++k) {
      const int i1 = qs[8 * ib + 2 * k] | ((qh[ib] << (8 - 2 * k)) & 256);
      const int i2 = qs[8 * ib + 2 * k + 1] | ((qh[ib] << (7 - 2 * k)) & 256);
      const uint32_t p1 = iq::kGridIQ3S[i1], p2 = iq::kGridIQ3S[i2];
      const uint8_t signs = sg[4 * ib + k];
      for (int j = 0; j < 4; ++j) {
        l[32 * ib + 8 * k + j] = signed_level(grid_byte32(p1, j), signs, j);
        l[32 * ib + 8 * k + j + 4] = signed_level(grid_byte32(p2, j), signs, j + 4);
      }
    }
  }
}

// IQ1 values are dl * (g + delta) with g in {-1, 0, 1} and delta = +-1/8. Written as
// (dl / 8) * (8g +- 1): dl / 8 is exact and the real product is the same, so the f32 result
// rounds identically while the level stays an integer for the dot product.
inline int16_t iq1_level(uint64_t pt, int j, bool neg_delta) {
  const int g = (int)(int8_t)((pt >> (8 * j)) & 0xFF);
  return (int16_t)(8 * g + 1 - 2 * (int)neg_delta);
}

// IQ1_S: {f16 d, u8 qs[32], u16 qh[8]}; qh: 3 high index bits per 8 elements, 3-bit scale at
// bits 12..14, delta sign at bit 15.
void dec_iq1_s(const uint8_t* b, int16_t* l, float* s, float*) {
  const float d = load_f16(b);
  for (int ib = 0; ib < 8; ++ib) {
    const uint16_t qh = load_u16(b + 34 + 2 * ib);
    const float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
    s[ib] = dl * 0.125f;
    const bool neg = (qh & 0x8000) != 0;
    for (int k = 0; k < 4; ++k) {
      const uint64_t pt = iq::kGridIQ1S[b[2 + 4 * ib + k] | (((qh >> (3 * k)) & 7) << 8)];
      for (int j = 0; j < 8; ++j) l[32 * ib + 8 * k + j] = iq1_level(pt, j, neg);
    }
  }
}

// IQ1_M: {u8 qs[32], u8 qh[16], u8 scales[8]}; the f16 super-scale is spread over the top
// nibbles of the four u16 scale words; 3-bit sub-scales per 16 elements; qh nibble per 8
// elements = 3 high index bits + delta sign.
void dec_iq1_m(const uint8_t* b, int16_t* l, float* s, float*) {
  const uint8_t* qs = b;
  const uint8_t* qh = b + 32;
  uint16_t sc[4];
  for (int i = 0; i < 4; ++i) sc[i] = load_u16(b + 48 + 2 * i);
  const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                    ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
  const float d = fp16_to_f32(dbits);
  for (int ib = 0; ib < 8; ++ib) {
    const float dl1 = d * (float)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 7) + 1);
    const float dl2 = d * (float)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1);
    s[2 * ib] = dl1 * 0.125f;
    s[2 * ib + 1] = dl2 * 0.125f;
    const uint8_t h0 = qh[2 * ib], h1 = qh[2 * ib + 1];
    const int idx[4] = {qs[4 * ib + 0] | ((h0 << 8) & 0x700), qs[4 * ib + 1] | ((h0 << 4) & 0x700),
                        qs[4 * ib + 2] | ((h1 << 8) & 0x700), qs[4 * ib + 3] | ((h1 << 4) & 0x700)};
    const bool neg[4] = {(h0 & 0x08) != 0, (h0 & 0x80) != 0, (h1 & 0x08) != 0, (h1 & 0x80) != 0};
    for (int k = 0; k < 4; ++k) {
      const uint64_t pt = iq::kGridIQ1S[idx[k]];
      for (int j = 0; j < 8; ++j) l[32 * ib + 8 * k + j] = iq1_level(pt, j, neg[k]);
    }
  }
}

// IQ4_XS: {f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128]}; 6-bit scale per 32 elements
// (low nibble from scales_l, 2 high bits from scales_h), value = d * (ls - 32) * kvalue.
void dec_iq4_xs(const uint8_t* b, int16_t* l, float* s, float*) {
  const float d = load_f16(b);
  const uint16_t sh = load_u16(b + 2);
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4);
    s[ib] = d * (float)(ls - 32);
    const uint8_t* q = b + 8 + 16 * ib;
    for (int j = 0; j < 16; ++j) {
      l[32 * ib + j] = iq::kValuesIQ4NL[q[j] & 0xF];
      l[32 * ib + j + 16] = iq::kValuesIQ4NL[q[j] >> 4];
    }
  }
}

constexpr LevelDecoder kIQ2_XXS{32, false, dec_iq2_xxs};
constexpr LevelDecoder kIQ2_XS{16, false, dec_iq2_xs};
constexpr LevelDecoder kIQ2_S{16, false, dec_iq2_s};
constexpr LevelDecoder kIQ3_XXS{32, false, dec_iq3_xxs};
constexpr LevelDecoder kIQ3_S{32, false, dec_iq3_s};
constexpr LevelDecoder kIQ1_S{32, false, dec_iq1_s};
constexpr LevelDecoder kIQ1_M{16, false, dec_iq1_m};
constexpr LevelDecoder kIQ4_XS{32, false, dec_iq4_xs};

}  // namespace

const LevelDecoder* iq_level_decoder(QType t) {
  switch (t) {
    case QType::IQ2_XXS: return &kIQ2_XXS;
    case QType::IQ2_XS: return &kIQ2_XS;
    case QType::IQ2_S: return &kIQ2_S;
    case QType::IQ3_XXS: return &kIQ3_XXS;
    case QType::IQ3_S: return &kIQ3_S;
    case QType::IQ1_S: return &kIQ1_S;
    case QType::IQ1_M: return &kIQ1_M;
    case QType::IQ4_XS: return &kIQ4_XS;
    default: return nullptr;
  }
}

}  // namespace memra::quant_detail
