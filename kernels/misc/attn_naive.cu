// Plain attention for head dims kernels/attn has no instance for. Not tuned: it exists so that
// every model runs on the device (small test models have head_dim 8); the backend records it as
// the "naive" variant so a benchmark never mistakes it for the fast path.
#include <cmath>

#include "kv/kv_dequant.cuh"
#include "misc/misc_kernels.h"

namespace memra::cuda {
namespace {

constexpr int kThreads = 256;  // = keys per chunk
constexpr int kMaxAcc = 4;     // head_dim_v <= kThreads * kMaxAcc

__global__ void attn_naive_kernel(AttnNaiveParams p) {
  __shared__ float s_score[kThreads];
  __shared__ float s_red[kThreads / 32];
  __shared__ float s_m, s_l;
  const int t = blockIdx.x / p.n_head, h = blockIdx.x % p.n_head;
  const int g = h / (p.n_head / p.n_head_kv);
  const int pos = *p.pos0 + t;
  const int lo = p.window > 0 ? max(0, pos - p.window + 1) : 0;
  const float* q = p.q + (int64_t)t * p.ld_q + (int64_t)h * p.head_dim_k;
  const auto* kc = static_cast<const uint8_t*>(p.k_cache);
  const auto* vc = static_cast<const uint8_t*>(p.v_cache);
  float acc[kMaxAcc];
#pragma unroll
  for (int a = 0; a < kMaxAcc; ++a) acc[a] = 0.f;
  if (threadIdx.x == 0) s_m = -INFINITY, s_l = 0.f;
  __syncthreads();
  for (int j0 = lo; j0 <= pos; j0 += kThreads) {
    const int j = j0 + (int)threadIdx.x;
    float s = -INFINITY;
    if (j <= pos) {
      const uint8_t* kr = kc + (int64_t)j * p.k_row_bytes;
      float dot = 0.f;
      for (int e = 0; e < p.head_dim_k; ++e) {
        float kv;
        kvq::load<1>(p.type_k, kr, g * p.head_dim_k + e, &kv);
        dot = fmaf(q[e], kv, dot);
      }
      s = dot * p.scale;
      if (p.softcap > 0.f) s = p.softcap * tanhf(s / p.softcap);
    }
    // Chunk max (block reduce), then the online-softmax rescale of the running state.
    float m = s;
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) s_red[threadIdx.x >> 5] = m;
    __syncthreads();
    float cm = s_red[0];
    for (int w = 1; w < kThreads / 32; ++w) cm = fmaxf(cm, s_red[w]);
    const float m_old = s_m;
    const float m_new = fmaxf(m_old, cm);
    const float e = j <= pos ? expf(s - m_new) : 0.f;
    s_score[threadIdx.x] = e;
    __syncthreads();
    const float corr = expf(m_old - m_new);  // m_old = -inf on the first chunk -> 0
    const int n = min(kThreads, pos - j0 + 1);
#pragma unroll
    for (int a = 0; a < kMaxAcc; ++a) {
      const int d = (int)threadIdx.x + a * kThreads;
      if (d >= p.head_dim_v) break;
      float v_acc = acc[a] * corr;
      for (int i = 0; i < n; ++i) {
        float vv;
        kvq::load<1>(p.type_v, vc + (int64_t)(j0 + i) * p.v_row_bytes, g * p.head_dim_v + d, &vv);
        v_acc = fmaf(s_score[i], vv, v_acc);
      }
      acc[a] = v_acc;
    }
    if (threadIdx.x == 0) {
      float sum = 0.f;
      for (int i = 0; i < n; ++i) sum += s_score[i];
      s_l = s_l * corr + sum;
      s_m = m_new;
    }
    __syncthreads();
  }
  float l = s_l, corr = 1.0f;
  if (p.sinks) {  // the sink joins the maximum and the denominator, with no value row
    const float sink = p.sinks[h], m_new = fmaxf(s_m, sink);
    corr = expf(s_m - m_new);
    l = l * corr + expf(sink - m_new);
  }
  const float inv = 1.0f / l;
  float* o = p.out + (int64_t)t * p.ld_out + (int64_t)h * p.head_dim_v;
#pragma unroll
  for (int a = 0; a < kMaxAcc; ++a) {
    const int d = (int)threadIdx.x + a * kThreads;
    if (d < p.head_dim_v) o[d] = acc[a] * corr * inv;
  }
}

}  // namespace

cudaError_t launch_attn_naive(const AttnNaiveParams& p, cudaStream_t stream) {
  if (!p.q || !p.k_cache || !p.v_cache || !p.out || !p.pos0 || p.n_tokens < 0 || p.n_head <= 0 ||
      p.n_head_kv <= 0 || p.n_head % p.n_head_kv || p.head_dim_k <= 0 || p.head_dim_v <= 0 ||
      p.head_dim_v > kThreads * kMaxAcc)
    return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
  attn_naive_kernel<<<(unsigned)(p.n_tokens * p.n_head), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace memra::cuda
