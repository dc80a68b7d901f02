// Fused dequantize-and-dot for the common 32-element block formats, used when a matmul has one
// or two activation rows (decode), where dequantizing a row into memory first costs more than
// the dot itself (measured on SmolLM2-135M Q4_1: 63% of decode time in dequantize_row).
// Each block is decoded with exactly the dequantizer's arithmetic (s * (float)level (+ offset))
// and element j of a block lands in accumulator lane j, the lane dot_f32 uses for it: the result
// is bit-identical to dequant_row + dot_f32 (test_backend_cpu checks this).
#include <cstring>

#include "backend/cpu/cpu_internal.h"
#include "core/half.h"

namespace memra::backend::cpu {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MEMRA_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MEMRA_HOT
#endif

namespace {

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_f32(h);
}

// Splits 16 packed bytes into their 16 low and 16 high nibbles as whole 16-byte vectors: the
// byte-by-byte form compiled to scalar inserts, and 8-byte pieces stall store-to-load
// forwarding when the convert loop reads them back 16 bytes at a time.
typedef uint8_t u8x16 __attribute__((vector_size(16)));
inline void nibbles(const uint8_t* p, uint8_t* q) {
  u8x16 v;
  std::memcpy(&v, p, 16);
  const u8x16 lo = v & (uint8_t)0x0F, hi = v >> 4;
  std::memcpy(q, &lo, 16);
  std::memcpy(q + 16, &hi, 16);
}

inline float finish(const float* acc) {
  double s = 0.0;
  for (int l = 0; l < 32; ++l) s += acc[l];
  return (float)s;
}

MEMRA_HOT float dot_q4_0(const uint8_t* w, const float* x, int64_t n) {
  float acc[32] = {};
  for (int64_t b = 0; b < n / 32; ++b, w += 18, x += 32) {
    const float d = f16_at(w);
    // Levels to bytes first, then one widening convert per lane: keeps both loops vectorized.
    uint8_t q[32];
    nibbles(w + 2, q);
    for (int l = 0; l < 32; ++l) acc[l] += d * ((float)q[l] - 8.0f) * x[l];
  }
  return finish(acc);
}

MEMRA_HOT float dot_q4_1(const uint8_t* w, const float* x, int64_t n) {
  float acc[32] = {};
  for (int64_t b = 0; b < n / 32; ++b, w += 20, x += 32) {
    const float d = f16_at(w), m = f16_at(w + 2);
    uint8_t q[32];
    nibbles(w + 4, q);
    for (int l = 0; l < 32; ++l) acc[l] += (d * (float)q[l] + m) * x[l];
  }
  return finish(acc);
}

MEMRA_HOT float dot_q8_0(const uint8_t* w, const float* x, int64_t n) {
  float acc[32] = {};
  for (int64_t b = 0; b < n / 32; ++b, w += 34, x += 32) {
    const float d = f16_at(w);
    const auto* q = reinterpret_cast<const int8_t*>(w + 2);
    for (int l = 0; l < 32; ++l) acc[l] += d * (float)q[l] * x[l];
  }
  return finish(acc);
}

}  // namespace

bool has_fused_dot(QType t) { return t == QType::Q4_0 || t == QType::Q4_1 || t == QType::Q8_0; }

float fused_dot(QType t, const uint8_t* w, const float* x, int64_t n) {
  switch (t) {
    case QType::Q4_0: return dot_q4_0(w, x, n);
    case QType::Q4_1: return dot_q4_1(w, x, n);
    case QType::Q8_0: return dot_q8_0(w, x, n);
    default: return 0.0f;
  }
}

}  // namespace memra::backend::cpu
