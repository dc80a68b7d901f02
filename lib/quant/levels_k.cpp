// Level decoders of the 256-element super-block formats: Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K and the
// ternary TQ1_0 TQ2_0.
#include "quant/levels.h"

namespace memra::quant_detail {
namespace {

// Q2_K: {u8 scales[16] (low nibble scale, high nibble min), u8 qs[64], f16 d, f16 dmin}.
// Each 128-element half uses 32 bytes of qs; element 32*j + l of the half sits at bit 2*j of
// qs[l]. value = d*sc*q - dmin*m per 16-element group.
void dec_q2_k(const uint8_t* b, int16_t* l, float* s, float* o) {
  const uint8_t* sc = b;
  const uint8_t* qs = b + 16;
  const float d = load_f16(b + 80), dmin = load_f16(b + 82);
  for (int g = 0; g < 16; ++g) {
    s[g] = d * (float)(sc[g] & 0xF);
    o[g] = -(dmin * (float)(sc[g] >> 4));
  }
  for (int half = 0; half < 2; ++half)
    for (int j = 0; j < 4; ++j)
      for (int e = 0; e < 32; ++e)
        l[128 * half + 32 * j + e] = (int16_t)((qs[32 * half + e] >> (2 * j)) & 3);
}

// 6-bit scales of Q3_K packed into 12 bytes: low nibbles in bytes 0..7 (j < 8) / high nibbles
// (j >= 8), top two bits in bytes 8..11.
inline int q3k_scale(const uint8_t* sc, int j) {
  const int lo = j < 8 ? sc[j] & 0xF : sc[j - 8] >> 4;
  const int hi = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (lo | hi << 4) - 32;
}

// Q3_K: {u8 hmask[32], u8 qs[64], u8 scales[12], f16 d}; level = 2 low bits - (high bit ? 0 : 4).
void dec_q3_k(const uint8_t* b, int16_t* l, float* s, float*) {
  const uint8_t* hm = b;
  const uint8_t* qs = b + 32;
  const uint8_t* sc = b + 96;
  const float d = load_f16(b + 108);
  for (int g = 0; g < 16; ++g) s[g] = d * (float)q3k_scale(sc, g);
  for (int half = 0; half < 2; ++half)
    for (int j = 0; j < 4; ++j) {
      const int bit = 4 * half + j;  // hmask bit of this 32-element run
      for (int e = 0; e < 32; ++e) {
        const int low = (qs[32 * half + e] >> (2 * j)) & 3;
        l[128 * half + 32 * j + e] = (int16_t)(low - (((hm[e] >> bit) & 1) ? 0 : 4));
      }
    }
}

// The 8 (scale, min) 6-bit pairs of Q4_K / Q5_K in 12 bytes.
inline void k4_scale_min(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q4_K: {f16 d, f16 dmin, u8 scales[12], u8 qs[128]}; 64-element chunks: low nibbles of 32
// bytes then their high nibbles.
void dec_q4_k(const uint8_t* b, int16_t* l, float* s, float* o) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  for (int g = 0; g < 8; ++g) {
    int sc, m;
    k4_scale_min(g, b + 4, &sc, &m);
    s[g] = d * (float)sc;
    o[g] = -(dmin * (float)m);
  }
  const uint8_t* qs = b + 16;
  for (int c = 0; c < 4; ++c)
    for (int e = 0; e < 32; ++e) {
      l[64 * c + e] = (int16_t)(qs[32 * c + e] & 0xF);
      l[64 * c + 32 + e] = (int16_t)(qs[32 * c + e] >> 4);
    }
}

// Q5_K: {f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]}; 5th bit of element 64c+e at
// bit 2c of qh[e], of element 64c+32+e at bit 2c+1.
void dec_q5_k(const uint8_t* b, int16_t* l, float* s, float* o) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  for (int g = 0; g < 8; ++g) {
    int sc, m;
    k4_scale_min(g, b + 4, &sc, &m);
    s[g] = d * (float)sc;
    o[g] = -(dmin * (float)m);
  }
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int c = 0; c < 4; ++c)
    for (int e = 0; e < 32; ++e) {
      l[64 * c + e] = (int16_t)((qs[32 * c + e] & 0xF) | (((qh[e] >> (2 * c)) & 1) << 4));
      l[64 * c + 32 + e] = (int16_t)((qs[32 * c + e] >> 4) | (((qh[e] >> (2 * c + 1)) & 1) << 4));
    }
}

// Q6_K: {u8 ql[128], u8 qh[64], i8 scales[16], f16 d}; per 128 elements 64 ql bytes and 32 qh
// bytes; value = (d * scale) * (q - 32).
void dec_q6_k(const uint8_t* b, int16_t* l, float* s, float*) {
  const float d = load_f16(b + 208);
  for (int g = 0; g < 16; ++g) s[g] = d * (float)(int8_t)b[192 + g];
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b + 64 * half;
    const uint8_t* qh = b + 128 + 32 * half;
    int16_t* y = l + 128 * half;
    for (int e = 0; e < 32; ++e) {
      y[e] = (int16_t)(((ql[e] & 0xF) | (((qh[e] >> 0) & 3) << 4)) - 32);
      y[e + 32] = (int16_t)(((ql[e + 32] & 0xF) | (((qh[e] >> 2) & 3) << 4)) - 32);
      y[e + 64] = (int16_t)(((ql[e] >> 4) | (((qh[e] >> 4) & 3) << 4)) - 32);
      y[e + 96] = (int16_t)(((ql[e + 32] >> 4) | (((qh[e] >> 6) & 3) << 4)) - 32);
    }
  }
}

// Q8_K: {f32 d, i8 qs[256], i16 bsums[16]}.
void dec_q8_k(const uint8_t* b, int16_t* l, float* s, float*) {
  std::memcpy(&s[0], b, 4);
  for (int e = 0; e < 256; ++e) l[e] = (int8_t)b[4 + e];
}

// TQ1_0: {u8 qs[48], u8 qh[4], f16 d}: five trits per byte stored as ceil(v * 256 / 243); trit
// n of byte q is ((q * 3^n) mod 256) * 3 >> 8. qs[0..32) carry elements 0..160 (trit n of byte m
// is element 32n + m), qs[32..48) elements 160..240, qh four trits each for 240..256.
void dec_tq1_0(const uint8_t* b, int16_t* l, float* s, float*) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  s[0] = load_f16(b + 52);
  auto trit = [](uint8_t q, int n) {
    const uint8_t v = (uint8_t)(q * kPow3[n]);
    return (int16_t)((((uint16_t)v * 3) >> 8) - 1);
  };
  int e = 0;
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m) l[e++] = trit(b[m], n);
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m) l[e++] = trit(b[32 + m], n);
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) l[e++] = trit(b[48 + j], n);
}

// TQ2_0: {u8 qs[64], f16 d}; element 128h + 32n + m at bits 2n of qs[32h + m]; value (q-1)*d.
void dec_tq2_0(const uint8_t* b, int16_t* l, float* s, float*) {
  s[0] = load_f16(b + 64);
  for (int h = 0; h < 2; ++h)
    for (int n = 0; n < 4; ++n)
      for (int m = 0; m < 32; ++m)
        l[128 * h + 32 * n + m] = (int16_t)(((b[32 * h + m] >> (2 * n)) & 3) - 1);
}

constexpr LevelDecoder kQ2_K{16, true, dec_q2_k};
constexpr LevelDecoder kQ3_K{16, false, dec_q3_k};
constexpr LevelDecoder kQ4_K{32, true, dec_q4_k};
constexpr LevelDecoder kQ5_K{32, true, dec_q5_k};
constexpr LevelDecoder kQ6_K{16, false, dec_q6_k};
constexpr LevelDecoder kQ8_K{256, false, dec_q8_k};
constexpr LevelDecoder kTQ1_0{256, false, dec_tq1_0};
constexpr LevelDecoder kTQ2_0{256, false, dec_tq2_0};

}  // namespace

const LevelDecoder* k_level_decoder(QType t) {
  switch (t) {
    case QType::Q2_K: return &kQ2_K;
    case QType::Q3_K: return &kQ3_K;
    case QType::Q4_K: return &kQ4_K;
    case QType::Q5_K: return &kQ5_K;
    case QType::Q6_K: return &kQ6_K;
    case QType::Q8_K: return &kQ8_K;
    case QType::TQ1_0: return &kTQ1_0;
    case QType::TQ2_0: return &kTQ2_0;
    default: return nullptr;
  }
}

}  // namespace memra::quant_detail
