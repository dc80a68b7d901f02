// Level decoders of the 32-element ("legacy") formats and the FP4 / 1-2 bit formats:
// Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 IQ4_NL MXFP4 NVFP4 Q1_0 Q2_0.
#include <cmath>

#include "quant/iq_grids.h"
#include "quant/levels.h"

namespace memra::quant_detail {
namespace {

// Q4_0: {f16 d, u8 qs[16]}; element j in low nibble of qs[j], element j+16 in the high nibble.
void dec_q4_0(const uint8_t* b, int16_t* l, float* s, float*) {
  s[0] = load_f16(b);
  for (int j = 0; j < 16; ++j) {
    l[j] = (int16_t)((b[2 + j] & 0x0F) - 8);
    l[j + 16] = (int16_t)((b[2 + j] >> 4) - 8);
  }
}

// Q4_1: {f16 d, f16 m, u8 qs[16]}; value = d*q + m.
void dec_q4_1(const uint8_t* b, int16_t* l, float* s, float* o) {
  s[0] = load_f16(b);
  o[0] = load_f16(b + 2);
  for (int j = 0; j < 16; ++j) {
    l[j] = (int16_t)(b[4 + j] & 0x0F);
    l[j + 16] = (int16_t)(b[4 + j] >> 4);
  }
}

// Q5_0: {f16 d, u32 qh, u8 qs[16]}; bit j of qh is the 5th bit of element j.
void dec_q5_0(const uint8_t* b, int16_t* l, float* s, float*) {
  s[0] = load_f16(b);
  const uint32_t qh = load_u32(b + 2);
  for (int j = 0; j < 16; ++j) {
    const int h0 = ((qh >> j) & 1) << 4, h1 = ((qh >> (j + 16)) & 1) << 4;
    l[j] = (int16_t)(((b[6 + j] & 0x0F) | h0) - 16);
    l[j + 16] = (int16_t)(((b[6 + j] >> 4) | h1) - 16);
  }
}

// Q5_1: {f16 d, f16 m, u32 qh, u8 qs[16]}.
void dec_q5_1(const uint8_t* b, int16_t* l, float* s, float* o) {
  s[0] = load_f16(b);
  o[0] = load_f16(b + 2);
  const uint32_t qh = load_u32(b + 4);
  for (int j = 0; j < 16; ++j) {
    const int h0 = ((qh >> j) & 1) << 4, h1 = ((qh >> (j + 16)) & 1) << 4;
    l[j] = (int16_t)((b[8 + j] & 0x0F) | h0);
    l[j + 16] = (int16_t)((b[8 + j] >> 4) | h1);
  }
}

// Q8_0: {f16 d, i8 qs[32]}.
void dec_q8_0(const uint8_t* b, int16_t* l, float* s, float*) {
  s[0] = load_f16(b);
  for (int j = 0; j < 32; ++j) l[j] = (int8_t)b[2 + j];
}

// Q8_1: {f16 d, f16 s = d * sum(qs), i8 qs[32]}.
void dec_q8_1(const uint8_t* b, int16_t* l, float* s, float*) {
  s[0] = load_f16(b);
  for (int j = 0; j < 32; ++j) l[j] = (int8_t)b[4 + j];
}

// IQ4_NL: {f16 d, u8 qs[16]}; nibbles index the non-linear table.
void dec_iq4_nl(const uint8_t* b, int16_t* l, float* s, float*) {
  s[0] = load_f16(b);
  for (int j = 0; j < 16; ++j) {
    l[j] = iq::kValuesIQ4NL[b[2 + j] & 0x0F];
    l[j + 16] = iq::kValuesIQ4NL[b[2 + j] >> 4];
  }
}

// MXFP4: {u8 e (E8M0), u8 qs[16]}; nibbles are E2M1 codes.
void dec_mxfp4(const uint8_t* b, int16_t* l, float* s, float*) {
  s[0] = e8m0_to_f32_half(b[0]);
  for (int j = 0; j < 16; ++j) {
    l[j] = iq::kValuesFP4[b[1 + j] & 0x0F];
    l[j + 16] = iq::kValuesFP4[b[1 + j] >> 4];
  }
}

// NVFP4: {u8 d[4] (UE4M3 per 16 elements), u8 qs[32]}; sub-block k uses qs[8k..8k+8), element
// j in the low nibble, j+8 in the high nibble.
void dec_nvfp4(const uint8_t* b, int16_t* l, float* s, float*) {
  for (int k = 0; k < 4; ++k) {
    s[k] = ue4m3_to_f32_half(b[k]);
    for (int j = 0; j < 8; ++j) {
      l[16 * k + j] = iq::kValuesFP4[b[4 + 8 * k + j] & 0x0F];
      l[16 * k + j + 8] = iq::kValuesFP4[b[4 + 8 * k + j] >> 4];
    }
  }
}

// Q1_0: {f16 d, u8 qs[16]}; bit j (LSB first) set -> +d, clear -> -d.
void dec_q1_0(const uint8_t* b, int16_t* l, float* s, float*) {
  s[0] = load_f16(b);
  for (int j = 0; j < 128; ++j) l[j] = (int16_t)(2 * ((b[2 + j / 8] >> (j % 8)) & 1) - 1);  // branch-free: the bits are random
}

// Q2_0: {f16 d, u8 qs[16]}; 2-bit code c of element j at bits 2*(j%4) of qs[j/4]; value (c-1)*d.
void dec_q2_0(const uint8_t* b, int16_t* l, float* s, float*) {
  s[0] = load_f16(b);
  for (int j = 0; j < 64; ++j) l[j] = (int16_t)(((b[2 + j / 4] >> (2 * (j % 4))) & 3) - 1);
}

constexpr LevelDecoder kQ4_0{32, false, dec_q4_0};
constexpr LevelDecoder kQ4_1{32, true, dec_q4_1};
constexpr LevelDecoder kQ5_0{32, false, dec_q5_0};
constexpr LevelDecoder kQ5_1{32, true, dec_q5_1};
constexpr LevelDecoder kQ8_0{32, false, dec_q8_0};
constexpr LevelDecoder kQ8_1{32, false, dec_q8_1};
constexpr LevelDecoder kIQ4_NL{32, false, dec_iq4_nl};
constexpr LevelDecoder kMXFP4{32, false, dec_mxfp4};
constexpr LevelDecoder kNVFP4{16, false, dec_nvfp4};
constexpr LevelDecoder kQ1_0{128, false, dec_q1_0};
constexpr LevelDecoder kQ2_0{64, false, dec_q2_0};

}  // namespace

float ue4m3_to_f32_half(uint8_t v) {
  if (v == 0 || v == 0x7F) return 0.0f;
  const int e = (v >> 3) & 0xF, m = v & 7;
  // Every UE4M3 value is exact in f32, so ldexp gives the same bits as any exact formula.
  const float raw = e == 0 ? std::ldexp((float)m, -9) : std::ldexp(1.0f + (float)m / 8.0f, e - 7);
  return raw * 0.5f;
}

uint8_t f32_to_ue4m3(float x) {
  if (!(x > 0.0f)) return 0;
  if (x > 448.0f) x = 448.0f;
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const int exp = (int)((bits >> 23) & 0xFF) - 127 + 7;
  if (exp <= 0) {  // subnormal range: multiples of 2^-9, round half up, at most 7
    int m = (int)(x * 512.0f + 0.5f);
    if (m > 7) m = 7;
    return (uint8_t)(m < 1 ? 0 : m);
  }
  if (exp >= 15) return 0x7E;
  int man = (int)((bits >> 20) & 7) + (int)((bits >> 19) & 1);  // round half up on bit 19
  int e = exp;
  if (man > 7) {
    man = 0;
    ++e;
  }
  if (e >= 15) return 0x7E;
  return (uint8_t)((e << 3) | man);
}

const LevelDecoder* legacy_level_decoder(QType t) {
  switch (t) {
    case QType::Q4_0: return &kQ4_0;
    case QType::Q4_1: return &kQ4_1;
    case QType::Q5_0: return &kQ5_0;
    case QType::Q5_1: return &kQ5_1;
    case QType::Q8_0: return &kQ8_0;
    case QType::Q8_1: return &kQ8_1;
    case QType::IQ4_NL: return &kIQ4_NL;
    case QType::MXFP4: return &kMXFP4;
    case QType::NVFP4: return &kNVFP4;
    case QType::Q1_0: return &kQ1_0;
    case QType::Q2_0: return &kQ2_0;
    default: return nullptr;
  }
}

}  // namespace memra::quant_detail
