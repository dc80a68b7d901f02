#include <cmath>

#include "rope/rope_kernels.h"

namespace memra::cuda {
namespace {

constexpr float kPi = 3.14159265358979323846f;

float corr_dim(int n_rot, int n_ctx_orig, float n_rotations, float base) {
  return (float)n_rot * logf((float)n_ctx_orig / (n_rotations * 2.0f * kPi)) / (2.0f * logf(base));
}

struct RopeArgs {
  const float* x;
  int64_t ld_x;
  float* out;
  int64_t ld_out;
  int rows, n_head, head_dim, n_rot;
  const int32_t* pos0;
  float theta_scale;  // freq_base^(-2/n_rot)
  float freq_scale;
  const float* freq_factors;
  float ext_factor, attn_factor, corr_lo, corr_hi;
};

// One thread per rotated pair; grid-stride over rows * n_head * n_rot/2.
template <bool NEOX>
__global__ void rope_kernel(RopeArgs a) {
  const int half = a.n_rot / 2;
  const int64_t total = (int64_t)a.rows * a.n_head * half;
  const int pos0 = *a.pos0;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
       t += (int64_t)gridDim.x * blockDim.x) {
    const int j = (int)(t % half);
    const int64_t hr = t / half;
    const int h = (int)(hr % a.n_head);
    const int64_t r = hr / a.n_head;
    const float pos = (float)(pos0 + r);
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
    float sn, cs;
    sincosf(theta, &sn, &cs);
    cs *= mscale;
    sn *= mscale;
    const float* hp = a.x + r * a.ld_x + (int64_t)h * a.head_dim;
    float* op = a.out + r * a.ld_out + (int64_t)h * a.head_dim;
    const int i0 = NEOX ? j : 2 * j;
    const int i1 = NEOX ? j + half : 2 * j + 1;
    const float x0 = hp[i0], x1 = hp[i1];
    op[i0] = x0 * cs - x1 * sn;
    op[i1] = x0 * sn + x1 * cs;
    if (j == 0 && op != hp)
      for (int d = a.n_rot; d < a.head_dim; ++d) op[d] = hp[d];
  }
}

}  // namespace

void rope_yarn_corr_dims(int n_rot, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                         float dims[2]) {
  const float start = floorf(corr_dim(n_rot, n_ctx_orig, beta_fast, freq_base));
  const float end = ceilf(corr_dim(n_rot, n_ctx_orig, beta_slow, freq_base));
  dims[0] = fmaxf(0.0f, start);
  dims[1] = fminf((float)(n_rot - 1), end);
}

cudaError_t launch_rope(const RopeParams& p, cudaStream_t s) {
  if (!p.x || !p.out || p.ld_out < (int64_t)p.n_head * p.head_dim || !p.pos0 || p.rows < 0 || p.n_head <= 0 || p.head_dim <= 0 || p.n_rot <= 0 ||
      p.n_rot % 2 || p.n_rot > p.head_dim || p.ld_x < (int64_t)p.n_head * p.head_dim ||
      !(p.freq_base > 0.0f) || !(p.freq_scale > 0.0f))
    return cudaErrorInvalidValue;
  if (p.ext_factor != 0.0f && p.n_ctx_orig <= 0) return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  RopeArgs a{p.x, p.ld_x, p.out, p.ld_out, p.rows, p.n_head, p.head_dim, p.n_rot, p.pos0,
             powf(p.freq_base, -2.0f / (float)p.n_rot), p.freq_scale, p.freq_factors,
             p.ext_factor, p.attn_factor, 0.0f, 0.0f};
  if (p.ext_factor != 0.0f) {
    float dims[2];
    rope_yarn_corr_dims(p.n_rot, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow, dims);
    a.corr_lo = dims[0];
    a.corr_hi = dims[1];
  }
  const int64_t total = (int64_t)p.rows * p.n_head * (p.n_rot / 2);
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((total + threads - 1) / threads, 65535);
  if (p.kind == RopeKind::Neox)
    rope_kernel<true><<<(unsigned)blocks, threads, 0, s>>>(a);
  else
    rope_kernel<false><<<(unsigned)blocks, threads, 0, s>>>(a);
  return cudaGetLastError();
}

}  // namespace memra::cuda
