#pragma once
// Internal: the reference quantizers, one per type, each encoding nb whole blocks. Ported
// rounding rules and search procedures of ggml's imatrix-free quantizers (README.md).
#include <cstdint>

namespace memra::quant_detail {

// ggml's nearest_int: round to nearest, ties to even, via the 1.5 * 2^23 magic add. Valid for
// |f| <= 2^22.
inline int nearest_int(float f) {
  const float v = f + 12582912.f;
  int32_t i;
  static_assert(sizeof(v) == sizeof(i));
  __builtin_memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

void quantize_q4_0(const float* x, uint8_t* y, int64_t nb);
void quantize_q4_1(const float* x, uint8_t* y, int64_t nb);
void quantize_q5_0(const float* x, uint8_t* y, int64_t nb);
void quantize_q5_1(const float* x, uint8_t* y, int64_t nb);
void quantize_q8_0(const float* x, uint8_t* y, int64_t nb);
void quantize_q8_1(const float* x, uint8_t* y, int64_t nb);
void quantize_mxfp4(const float* x, uint8_t* y, int64_t nb);
void quantize_nvfp4(const float* x, uint8_t* y, int64_t nb);
void quantize_iq4_nl(const float* x, uint8_t* y, int64_t nb);
void quantize_iq4_xs(const float* x, uint8_t* y, int64_t nb);
void quantize_q2_k(const float* x, uint8_t* y, int64_t nb);
void quantize_q3_k(const float* x, uint8_t* y, int64_t nb);
void quantize_q4_k(const float* x, uint8_t* y, int64_t nb);
void quantize_q5_k(const float* x, uint8_t* y, int64_t nb);
void quantize_q6_k(const float* x, uint8_t* y, int64_t nb);
void quantize_q8_k(const float* x, uint8_t* y, int64_t nb);
void quantize_q1_0(const float* x, uint8_t* y, int64_t nb);
void quantize_q2_0(const float* x, uint8_t* y, int64_t nb);
void quantize_tq1_0(const float* x, uint8_t* y, int64_t nb);
void quantize_tq2_0(const float* x, uint8_t* y, int64_t nb);

}  // namespace memra::quant_detail
