// Reference quantizers of the 32-element formats and the FP4 / IQ4 formats: Q4_0 Q4_1 Q5_0 Q5_1
// Q8_0 Q8_1 MXFP4 NVFP4 IQ4_NL IQ4_XS. Every rounding step follows ggml's reference quantizer so
// the bytes agree (float->int8 truncation, roundf, nearest_int, the IQ4 scale search).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "quant/iq_grids.h"
#include "quant/levels.h"
#include "quant/quantize_impl.h"

namespace memra::quant_detail {
namespace {

// C's float -> int8_t conversion as x86 performs it (truncate toward zero).
inline int trunc_i8(float f) { return (int8_t)(int)f; }

// Largest magnitude and its signed value (first one on ties, as ggml scans).
inline void abs_max(const float* x, int n, float* amax, float* max) {
  *amax = 0.0f;
  *max = 0.0f;
  for (int j = 0; j < n; ++j)
    if (*amax < std::fabs(x[j])) {
      *amax = std::fabs(x[j]);
      *max = x[j];
    }
}

inline void min_max(const float* x, int n, float* mn, float* mx) {
  *mn = FLT_MAX;
  *mx = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    if (x[j] < *mn) *mn = x[j];
    if (x[j] > *mx) *mx = x[j];
  }
}

// Index of the FP4 value closest to x / e (first one on ties).
inline int best_index_fp4(float x, float e) {
  int best = 0;
  float best_err = std::fabs((float)iq::kValuesFP4[0] * e - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs((float)iq::kValuesFP4[i] * e - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

// Sorted 16-entry table: x picks level i once it reaches the midpoint of val[i-1] and val[i];
// compared at 2x so the midpoint is exact. The level is the number of midpoints x has reached (the
// midpoints increase with i), counted with 15 independent compares instead of a binary search's 4
// dependent steps: the same index for every x (NaN: 0 either way), and the compiler vectorizes the
// count (the IQ4 search calls it 16 times per weight; quantizing IQ4_XS was 5.6x Q4_K's time).
inline int best_index_int8(const int8_t (&val)[16], float x) {
  const float x2 = x + x;
  int idx = 0;
  for (int j = 1; j < 16; ++j) idx += x2 >= (float)(val[j - 1] + val[j]);
  return idx;
}

constexpr float kGroupMaxEps = 1e-15f;

// The IQ4 search shared by IQ4_NL (one 32-block) and IQ4_XS (eight 32-blocks + 6-bit scales):
// weights x^2, ntry = 7 scale candidates around -max/127 and +max/127.
void iq4_impl(int super, const float* x, uint8_t* dh, uint8_t* q4, uint16_t* scales_h,
              uint8_t* scales_l) {
  constexpr int kBlock = 32, kTry = 7;
  const int8_t (&values)[16] = iq::kValuesIQ4NL;
  float scales[8], weight[kBlock];
  uint8_t L[256];
  std::memset(q4, 0, super / 2);
  store_f16(dh, 0.0f);
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < super / kBlock; ++ib) {
    const float* xb = x + ib * kBlock;
    uint8_t* Lb = L + ib * kBlock;
    for (int j = 0; j < kBlock; ++j) weight[j] = xb[j] * xb[j];
    float amax, max;
    abs_max(xb, kBlock, &amax, &max);
    if (amax < kGroupMaxEps) {
      scales[ib] = 0;
      std::memset(Lb, 0, kBlock);
      continue;
    }
    float d = -max / values[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < kBlock; ++j) {
      const float al = id * xb[j];
      const int l = best_index_int8(iq::kValuesIQ4NL, al);
      Lb[j] = (uint8_t)l;
      const float q = values[l];
      const float w = weight[j];
      sumqx += w * q * xb[j];
      sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -kTry; itry <= kTry; ++itry) {
      id = (itry + values[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < kBlock; ++j) {
        const float al = id * xb[j];
        const int l = best_index_int8(iq::kValuesIQ4NL, al);
        const float q = values[l];
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    const float abs_d = std::fabs(d);
    if (abs_d > amax_scale) {
      amax_scale = abs_d;
      max_scale = d;
    }
  }
  if (super / kBlock > 1) {
    *scales_h = 0;
    const float d = -max_scale / 32;
    store_f16(dh, d);
    const float id = d ? 1 / d : 0.f;
    for (int ib = 0; ib < super / kBlock; ++ib) {
      int l = nearest_int(id * scales[ib]);
      l = std::max(-32, std::min(31, l));
      const float dl = d * l;
      const float idl = dl ? 1 / dl : 0.f;
      uint8_t* Lb = L + ib * kBlock;
      const float* xb = x + ib * kBlock;
      for (int j = 0; j < kBlock; ++j) Lb[j] = (uint8_t)best_index_int8(iq::kValuesIQ4NL, idl * xb[j]);
      l += 32;
      const uint8_t l_l = (uint8_t)(l & 0xf), l_h = (uint8_t)(l >> 4);
      if (ib % 2 == 0)
        scales_l[ib / 2] = l_l;
      else
        scales_l[ib / 2] |= (uint8_t)(l_l << 4);
      *scales_h |= (uint16_t)(l_h << 2 * (ib % 8));
    }
  } else {
    store_f16(dh, scales[0]);
    const float id = scales[0] ? 1 / scales[0] : 0;
    for (int j = 0; j < super; ++j) L[j] = (uint8_t)best_index_int8(iq::kValuesIQ4NL, id * x[j]);
  }
  for (int i = 0; i < super / 32; ++i)
    for (int j = 0; j < 16; ++j)
      q4[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

}  // namespace

void quantize_q4_0(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32, y += 18) {
    float amax, max;
    abs_max(x, 32, &amax, &max);
    const float d = max / -8;
    const float id = d ? 1.0f / d : 0.0f;
    store_f16(y, d);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, trunc_i8(x[j] * id + 8.5f));
      const int q1 = std::min(15, trunc_i8(x[16 + j] * id + 8.5f));
      y[2 + j] = (uint8_t)(q0 | q1 << 4);
    }
  }
}

void quantize_q4_1(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32, y += 20) {
    float mn, mx;
    min_max(x, 32, &mn, &mx);
    const float d = (mx - mn) / 15;
    const float id = d ? 1.0f / d : 0.0f;
    store_f16(y, d);
    store_f16(y + 2, mn);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, trunc_i8((x[j] - mn) * id + 0.5f));
      const int q1 = std::min(15, trunc_i8((x[16 + j] - mn) * id + 0.5f));
      y[4 + j] = (uint8_t)(q0 | q1 << 4);
    }
  }
}

void quantize_q5_0(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32, y += 22) {
    float amax, max;
    abs_max(x, 32, &amax, &max);
    const float d = max / -16;
    const float id = d ? 1.0f / d : 0.0f;
    store_f16(y, d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(31, trunc_i8(x[j] * id + 16.5f));
      const int q1 = std::min(31, trunc_i8(x[16 + j] * id + 16.5f));
      y[6 + j] = (uint8_t)((q0 & 0x0F) | (q1 & 0x0F) << 4);
      qh |= (uint32_t)((q0 & 0x10) >> 4) << j;
      qh |= (uint32_t)((q1 & 0x10) >> 4) << (j + 16);
    }
    std::memcpy(y + 2, &qh, 4);
  }
}

void quantize_q5_1(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32, y += 24) {
    float mn, mx;
    min_max(x, 32, &mn, &mx);
    const float d = (mx - mn) / 31;
    const float id = d ? 1.0f / d : 0.0f;
    store_f16(y, d);
    store_f16(y + 2, mn);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int q0 = (uint8_t)(int)((x[j] - mn) * id + 0.5f);
      const int q1 = (uint8_t)(int)((x[16 + j] - mn) * id + 0.5f);
      y[8 + j] = (uint8_t)((q0 & 0x0F) | (q1 & 0x0F) << 4);
      qh |= (uint32_t)((q0 & 0x10) >> 4) << j;
      qh |= (uint32_t)((q1 & 0x10) >> 4) << (j + 16);
    }
    std::memcpy(y + 4, &qh, 4);
  }
}

void quantize_q8_0(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32, y += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d ? 1.0f / d : 0.0f;
    store_f16(y, d);
    for (int j = 0; j < 32; ++j) y[2 + j] = (uint8_t)(int8_t)std::round(x[j] * id);
  }
}

void quantize_q8_1(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32, y += 36) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d ? 1.0f / d : 0.0f;
    store_f16(y, d);
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int8_t q = (int8_t)std::round(x[j] * id);
      y[4 + j] = (uint8_t)q;
      sum += q;
    }
    store_f16(y + 2, (float)sum * d);
  }
}

// llama.cpp's x86-64 CPU backend (AVX/AVX2 build) quantizes matmul activations with its own
// from_float, not the reference above: the multiplier is 127 / amax (not 1 / (amax / 127), which
// can differ in the last bit) and the products round half to even (not half away from zero). Same
// block layout and scale; with q8_1, s = d * (sum of the quants).
// Bit for bit also where a block's amax is subnormal and 127 / amax overflows (checked against a
// built ggml by scripts/llamacpp-diff.sh).
template <bool Q81>
void quantize_q8_cpu(const float* x, uint8_t* y, int64_t nb) {
  constexpr int kBytes = Q81 ? 36 : 34, kQs = Q81 ? 4 : 2;
  for (int64_t i = 0; i < nb; ++i, x += 32, y += kBytes) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    store_f16(y, d);
    uint32_t sum = 0;  // of the int32 conversions, wrapping, as the vector sum does
    for (int j = 0; j < 32; ++j) {
      // x86's conversion: the default rounding mode (half to even); a product that is not a finite
      // int32 (amax so small that 127 / amax overflows) becomes INT32_MIN, which the saturating
      // packs to int8 make -128.
      const float v = x[j] * id;
      const int32_t q32 = std::fabs(v) < 2147483648.0f ? (int32_t)std::nearbyint(v) : INT32_MIN;
      y[kQs + j] = (uint8_t)(int8_t)std::clamp<int32_t>(q32, -128, 127);
      sum += (uint32_t)q32;
    }
    if (Q81) store_f16(y + 2, d * (float)(int32_t)sum);
  }
}
void quantize_q8_0_cpu(const float* x, uint8_t* y, int64_t nb) { quantize_q8_cpu<false>(x, y, nb); }
void quantize_q8_1_cpu(const float* x, uint8_t* y, int64_t nb) { quantize_q8_cpu<true>(x, y, nb); }

void quantize_mxfp4(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 32, y += 17) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    // Shared exponent: floor(log2(amax)) - 2, so amax lands in [4, 8) times 2^e: FP4's top
    // values 4 and 6 (doubled: 8, 12 with the half scale).
    const uint8_t e = amax > 0.0f ? (uint8_t)(std::floor(std::log2(amax)) - 2 + 127) : 0;
    const float d = e8m0_to_f32_half(e);
    y[0] = e;
    for (int j = 0; j < 16; ++j)
      y[1 + j] = (uint8_t)(best_index_fp4(x[j], d) | best_index_fp4(x[16 + j], d) << 4);
  }
}

void quantize_nvfp4(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += 36) {
    for (int s = 0; s < 4; ++s, x += 16) {
      float amax = 0.0f;
      for (int j = 0; j < 16; ++j) amax = std::max(amax, std::fabs(x[j]));
      const uint8_t ue = f32_to_ue4m3(amax / 6.0f);  // maps amax to the largest E2M1 value, 6
      y[s] = ue;
      const float d = ue4m3_to_f32_half(ue);
      for (int j = 0; j < 8; ++j)
        y[4 + 8 * s + j] = (uint8_t)(best_index_fp4(x[j], d) | best_index_fp4(x[8 + j], d) << 4);
    }
  }
}

void quantize_q1_0(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 128, y += 18) {
    float sum_abs = 0.0f;
    for (int j = 0; j < 128; ++j) sum_abs += std::fabs(x[j]);
    store_f16(y, sum_abs / 128);  // mean |x| minimises the L1 error of a +-d code
    std::memset(y + 2, 0, 16);
    for (int j = 0; j < 128; ++j)
      if (x[j] >= 0.0f) y[2 + j / 8] |= (uint8_t)(1 << (j % 8));
  }
}

void quantize_q2_0(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 64, y += 18) {
    float amax = 0.0f;
    for (int j = 0; j < 64; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
    store_f16(y, amax);
    std::memset(y + 2, 0, 16);
    for (int j = 0; j < 64; ++j) {
      const int q = std::max(0, std::min(3, (int)std::round(x[j] * id) + 1));
      y[2 + j / 4] |= (uint8_t)(q << (2 * (j % 4)));
    }
  }
}

void quantize_iq4_nl(const float* x, uint8_t* y, int64_t nb) {
  uint16_t unused_h;
  for (int64_t i = 0; i < nb; ++i, x += 32, y += 18) iq4_impl(32, x, y, y + 2, &unused_h, nullptr);
}

void quantize_iq4_xs(const float* x, uint8_t* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += 256, y += 136) {
    uint16_t sh = 0;
    iq4_impl(256, x, y, y + 8, &sh, y + 4);
    std::memcpy(y + 2, &sh, 2);
  }
}

}  // namespace memra::quant_detail
