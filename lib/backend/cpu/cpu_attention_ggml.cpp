// Attention in llama.cpp's CPU flash-attention rounding for an F16 KV cache (the numeric class of
// llama.cpp's default CPU run). The steps follow ggml's one-chunk flash-attention kernel as built
// for x86-64 with AVX2/F16C/FMA (the reference build, shared/reference/README.md):
//   - Q is rounded to f16 (the K type's vec_dot type) once per row;
//   - s = dot_f16(K_j, Q): 4 x 8 f32 FMA lanes over whole 32-element steps, reduced pairwise, the
//     tail added one exact f16*f16 product at a time to an f64 sum; then s * scale in f32;
//   - online softmax in f32: on a new maximum the f16 accumulator is scaled by expf(M_old - M) and
//     v_j added with weight 1, otherwise v_j is added with weight expf(s - M); every update of the
//     accumulator is rounded to f16; S = S * ms + vs;
//   - with an attention sink s: if s > M the f32 copy of the accumulator and S are scaled by
//     expf(M - s) and S += 1, else S += expf(s - M);
//   - out = f32(accumulator) * (1 / S).
// The accumulator update is an FMA (ggml's AVX2 vec_mad_f16 uses _mm256_fmadd_ps; for the tail
// elements fused or not made no difference on the reference records).
#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_internal.h"
#include "core/half.h"







namespace memra::backend::cpu {

namespace {

constexpr int kLanes = 8;              // one AVX register of f32
constexpr int kRegs = 4;               // accumulators per step
constexpr int kStep = kLanes * kRegs;  // elements per SIMD step

inline float round_f16(float x) { return fp16_to_f32(f32_to_fp16(x)); }

// A product rounded to f32 before any later addition, whatever -ffp-contract says: ggml's
// `S = S*ms + vs` is not fused in the reference build (fusing it moved stories260K's logits by
// 4e-5 relative; unfused they match to 1.6e-7).
inline float mul_unfused(float a, float b) {
  volatile float p = a * b;
  return p;
}

// ggml_vec_dot_f16 (AVX path). k and q hold exact f16 values.
float dot_f16(const float* k, const float* q, int n) {
  double sumf = 0.0;
  const int np = n & ~(kStep - 1);
  if (np > 0) {
    float acc[kRegs][kLanes] = {};
    for (int i = 0; i < np; i += kStep)
      for (int r = 0; r < kRegs; ++r)
        for (int l = 0; l < kLanes; ++l) {
          const int e = i + r * kLanes + l;
          acc[r][l] = std::fma(k[e], q[e], acc[r][l]);
        }
    // Pairwise register reduction (0+=2, 1+=3, 0+=1), then 128-bit halves, then two hadds.
    float x[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const float a02 = acc[0][l] + acc[2][l];
      const float a13 = acc[1][l] + acc[3][l];
      x[l] = a02 + a13;
    }
    float t0[4];
    for (int l = 0; l < 4; ++l) t0[l] = x[l] + x[l + 4];
    sumf = (double)((t0[0] + t0[1]) + (t0[2] + t0[3]));
  }
  for (int i = np; i < n; ++i) sumf += (double)(k[i] * q[i]);  // the f16 product is exact in f32
  return (float)sumf;
}

}  // namespace

void ggml_fa_f16_row(const float* q, const float* K, int64_t k_stride, const float* V, int64_t v_stride,
                     int lo, int hi, int dk, int dv, float scale, float softcap, const float* sink, float* out) {
  thread_local std::vector<float> q16, acc;  // acc holds f16 values (rounded after every update)
  q16.resize((size_t)dk);
  acc.assign((size_t)dv, 0.0f);
  for (int i = 0; i < dk; ++i) q16[(size_t)i] = round_f16(q[i]);
  // ggml folds the softcap divisor into the scale: s = cap * tanh(dot * (scale / cap)).
  const float sc = softcap > 0.0f ? scale / softcap : scale;
  float S = 0.0f;
  float M = -INFINITY;
  for (int j = lo; j <= hi; ++j) {
    float s = dot_f16(K + (int64_t)j * k_stride, q16.data(), dk) * sc;
    if (softcap > 0.0f) s = softcap * std::tanh(s);
    float ms = 1.0f, vs = 1.0f;
    if (s > M) {
      const float m_old = M;
      M = s;
      ms = std::exp(m_old - M);
      for (int d = 0; d < dv; ++d) acc[(size_t)d] = round_f16(acc[(size_t)d] * ms);
    } else {
      vs = std::exp(s - M);
    }
    const float* vj = V + (int64_t)j * v_stride;
    for (int d = 0; d < dv; ++d) acc[(size_t)d] = round_f16(std::fma(vj[d], vs, acc[(size_t)d]));
    S = mul_unfused(S, ms) + vs;
  }
  // The sink after the keys, on the f32 copy of the accumulator (ggml's order).
  float ms = 1.0f;
  if (sink) {
    float vs = 1.0f;
    if (*sink > M) {
      ms = std::exp(M - *sink);
    } else {
      vs = std::exp(*sink - M);
    }
    S = mul_unfused(S, ms) + vs;
  }
  const float s_inv = S == 0.0f ? 0.0f : 1.0f / S;
  for (int d = 0; d < dv; ++d) out[d] = (sink ? mul_unfused(acc[(size_t)d], ms) : acc[(size_t)d]) * s_inv;
}

}  // namespace memra::backend::cpu
