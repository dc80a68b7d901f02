#pragma once
// The rotation arithmetic every CUDA kernel that applies RoPE shares (rope.cu; the decode
// attention's q/k prologue, attn_decode.cu): one definition, so fused and unfused forms give the
// same bits.
#include "norm/norm_math.cuh"
#include "norm/q8_1_emit.cuh"
#include "rope/rope_kernels.h"

namespace memra::cuda {

// cos/sin (times mscale) of pair j at position pos (the formula of rope_kernels.h).
__device__ __forceinline__ void rope_cs(const RopeAngles& a, int j, float pos, float& cs, float& sn) {
  float theta_extrap = pos * powf(a.theta_scale, (float)j);
  if (a.freq_factors) theta_extrap /= a.freq_factors[j];
  const float theta_interp = a.freq_scale * theta_extrap;
  float theta = theta_interp, mscale = a.attn_factor;
  if (a.ext_factor != 0.0f) {
    const float y = ((float)j - a.corr_lo) / fmaxf(0.001f, a.corr_hi - a.corr_lo);
    const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * a.ext_factor;
    theta = theta_interp * (1.0f - mix) + theta_extrap * mix;
    mscale *= 1.0f + 0.1f * logf(1.0f / a.freq_scale);
  }
  sincosf(theta, &sn, &cs);
  cs *= mscale;
  sn *= mscale;
}

// The rotation, every product and sum rounded on its own (no FMA contraction), so every kernel
// that rotates gives the same bits.
__device__ __forceinline__ void rope_rotate(float x0, float x1, float cs, float sn, float& y0, float& y1) {
  y0 = __fsub_rn(__fmul_rn(x0, cs), __fmul_rn(x1, sn));
  y1 = __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, cs));
}

// One head held by a warp, lane l owning elements l + 32 t (t < N = head_dim / 32), full rotation
// (n_rot == head_dim). NeoX pairs (t, t + N/2) sit in one lane (N even); Normal pairs (2j, 2j+1)
// are lanes l and l ^ 1.
// The head norm's weights in that layout (zeros without a norm).
template <int N>
__device__ __forceinline__ void head_norm_weights(const float* w, int lane, float (&wv)[N]) {
#pragma unroll
  for (int t = 0; t < N; ++t) wv[t] = w ? w[lane + 32 * t] : 0.0f;
}
// cos/sin of the pairs this lane rotates, in the order norm_rope_head uses them.
template <bool NEOX, int N>
__device__ __forceinline__ void head_rope_cs(const RopeAngles& a, int lane, float pos, float (&cs)[N], float (&sn)[N]) {
#pragma unroll
  for (int t = 0; t < N; ++t) {
    if (NEOX && t >= N / 2) {
      cs[t] = sn[t] = 0.0f;
      continue;
    }
    rope_cs(a, NEOX ? lane + 32 * t : (lane + 32 * t) >> 1, pos, cs[t], sn[t]);
  }
}
// RMSNorm over the head (when has_w: the arithmetic of head_rms_norm_kernel) then the rotation:
// o = rope(norm(v)). All 32 lanes call it.
template <bool NEOX, int N>
__device__ __forceinline__ void norm_rope_head(float (&v)[N], bool has_w, const float (&wv)[N], int head_dim, float eps,
                                               const float (&cs)[N], const float (&sn)[N], int lane, float (&o)[N]) {
  if (has_w) {
    float ss = 0.0f;
#pragma unroll
    for (int t = 0; t < N; ++t) ss += __fmul_rn(v[t], v[t]);
    const float inv = norm_scale(warp_sum_f32(ss), head_dim, eps);
#pragma unroll
    for (int t = 0; t < N; ++t) v[t] = normed_by(v[t], inv, true, wv[t]);
  }
  if constexpr (NEOX) {
#pragma unroll
    for (int t = 0; t < N / 2; ++t) rope_rotate(v[t], v[t + N / 2], cs[t], sn[t], o[t], o[t + N / 2]);
  } else {
    const bool first = (lane & 1) == 0;
#pragma unroll
    for (int t = 0; t < N; ++t) {
      const float other = __shfl_xor_sync(0xffffffffu, v[t], 1);
      float y0, y1;
      if (first) rope_rotate(v[t], other, cs[t], sn[t], y0, y1);
      else rope_rotate(other, v[t], cs[t], sn[t], y0, y1);
      o[t] = first ? y0 : y1;
    }
  }
}
// norm_rope_head's element lane + 32 idx of the rotated head (idx: e.g. the calling warp's index, so that
// warp w holds its own 32-element block of the head).
template <bool NEOX, int N>
__device__ __forceinline__ float norm_rope_head_at(float (&v)[N], bool has_w, const float (&wv)[N], int head_dim,
                                                   float eps, const float (&cs)[N], const float (&sn)[N], int lane,
                                                   int idx) {
  float o[N];
  norm_rope_head<NEOX, N>(v, has_w, wv, head_dim, eps, cs, sn, lane, o);
  float mine = o[0];
#pragma unroll
  for (int t = 1; t < N; ++t)
    if (t == idx) mine = o[t];
  return mine;
}

}  // namespace memra::cuda
