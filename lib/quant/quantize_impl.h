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

// ggml's make_qkx2_quants (asymmetric levels [0, nmax], weighted least squares over nstep + 1
// candidate scales); returns the scale, *the_min = -min.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad);
// The same for the 8 sub-blocks of 32 of a superblock at once (n = 32, use_mad false), byte for
// byte: x[256], weights[8][32] -> L[256], scales[8], the_mins[8].
void make_qkx2_quants_x8(int nmax, const float* x, const float (*weights)[32], uint8_t* L, float* scales,
                         float* the_mins, float rmin, float rdelta, int nstep);

// ggml's make_qx_quants (symmetric, weights x^2): returns the scale, L = level + nmax; and the
// same for 8 sub-blocks of n <= 32 consecutive values at once (AVX2 CPUs only), byte for byte.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L);
void make_qx_quants_x8(int n, int nmax, const float* x, int8_t* L, float* scales);

void quantize_q4_0(const float* x, uint8_t* y, int64_t nb);
void quantize_q4_1(const float* x, uint8_t* y, int64_t nb);
void quantize_q5_0(const float* x, uint8_t* y, int64_t nb);
void quantize_q5_1(const float* x, uint8_t* y, int64_t nb);
void quantize_q8_0(const float* x, uint8_t* y, int64_t nb);
void quantize_q8_1(const float* x, uint8_t* y, int64_t nb);
void quantize_q8_0_cpu(const float* x, uint8_t* y, int64_t nb);  // quantize_activation_row's Q8_0
void quantize_q8_1_cpu(const float* x, uint8_t* y, int64_t nb);  // and Q8_1
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
