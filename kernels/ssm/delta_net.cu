// The Gated DeltaNet layer (ssm_kernels.h).
#include "ssm/ssm_kernels.h"

namespace memra::cuda {

namespace {

constexpr int kMaxConv = 8;

__device__ __forceinline__ int64_t channels_of(const DeltaNetParams& p) {
  return 2LL * p.n_k_heads * p.head_k_dim + (int64_t)p.n_v_heads * p.head_v_dim;
}

// One thread per channel: the causal convolution over (state, inputs) in token order, SiLU.
__global__ void conv_silu_kernel(DeltaNetParams p) {
  const int64_t C = channels_of(p);
  const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const int dc = p.d_conv;
  float w[kMaxConv], hist[kMaxConv];
#pragma unroll
  for (int j = 0; j < kMaxConv; ++j) {
    w[j] = j < dc ? p.conv_w[c * dc + j] : 0.0f;
    hist[j] = j < dc - 1 ? p.conv_state[(int64_t)j * C + c] : 0.0f;
  }
  for (int t = 0; t < p.n_tokens; ++t) {
    const float xin = p.qkv[(int64_t)t * p.ld_qkv + c];
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxConv - 1; ++j)
      if (j < dc - 1) acc = fmaf(hist[j], w[j], acc);
    acc = fmaf(xin, w[dc - 1], acc);
    p.x[(int64_t)t * C + c] = acc / (1.0f + expf(-acc));
#pragma unroll
    for (int j = 0; j < kMaxConv - 2; ++j)
      if (j < dc - 2) hist[j] = hist[j + 1];
    if (dc >= 2) hist[dc - 2] = xin;
  }
#pragma unroll
  for (int j = 0; j < kMaxConv - 1; ++j)
    if (j < dc - 1) p.conv_state[(int64_t)j * C + c] = hist[j];
}

// Sum over the block (blockDim.x a multiple of 32, <= 1024); every thread gets the total.
__device__ float block_sum(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, n_warps = blockDim.x >> 5;
  __syncthreads();  // red reused from the previous call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float s = 0.0f;
  for (int i = 0; i < n_warps; ++i) s += red[i];
  return s;
}

// Block h = value head h; SPLIT adjacent threads share state row j = threadIdx.x / SPLIT, each
// holding DK / SPLIT of its elements in registers (blockDim.x = dv * SPLIT); row dots combine the
// parts with xor shuffles.
template <int DK, int SPLIT>
__global__ void delta_rule_kernel(DeltaNetParams p) {
  constexpr int kPart = DK / SPLIT;
  __shared__ float sq[DK], sk[DK], red[32];
  const int h = blockIdx.x, tid = threadIdx.x, dv = p.head_v_dim;
  const int j = tid / SPLIT, part = tid % SPLIT;
  const int kh = h % p.n_k_heads;
  const int64_t C = channels_of(p);
  float* S_row = p.state + ((int64_t)h * dv + j) * DK + part * kPart;
  float S[kPart];
#pragma unroll
  for (int i = 0; i < kPart; ++i) S[i] = S_row[i];
  const float dtb = p.dt_bias[h], ah = p.a[h];
  const float inv_sqrt_dk = rsqrtf((float)DK);
  for (int t = 0; t < p.n_tokens; ++t) {
    const float* xt = p.x + (int64_t)t * C;
    const float* qt = xt + (int64_t)kh * DK;
    const float* kt = xt + (int64_t)(p.n_k_heads + kh) * DK;
    float ssq = 0.0f, ssk = 0.0f;
    for (int i = tid; i < DK; i += blockDim.x) {
      ssq = fmaf(qt[i], qt[i], ssq);
      ssk = fmaf(kt[i], kt[i], ssk);
    }
    const float tq = block_sum(ssq, red);
    const float tk = block_sum(ssk, red);
    const float scale_q = 1.0f / fmaxf(sqrtf(tq), p.eps), scale_k = 1.0f / fmaxf(sqrtf(tk), p.eps);
    for (int i = tid; i < DK; i += blockDim.x) {
      sq[i] = qt[i] * scale_q;
      sk[i] = kt[i] * scale_k;
    }
    __syncthreads();
    const float z = p.alpha[(int64_t)t * p.ld_alpha + h] + dtb;
    const float sp = z > 20.0f ? z : log1pf(expf(z));
    const float decay = expf(sp * ah);
    const float b = 1.0f / (1.0f + expf(-p.beta[(int64_t)t * p.ld_beta + h]));
    const float v = xt[2LL * p.n_k_heads * DK + (int64_t)h * dv + j];
    const float* skp = sk + part * kPart;
    const float* sqp = sq + part * kPart;
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kPart; ++i) {
      S[i] *= decay;
      dot = fmaf(S[i], skp[i], dot);
    }
#pragma unroll
    for (int o = 1; o < SPLIT; o <<= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    const float d = (v - dot) * b;
    float out = 0.0f;
#pragma unroll
    for (int i = 0; i < kPart; ++i) {
      S[i] = fmaf(skp[i], d, S[i]);
      out = fmaf(S[i], sqp[i], out);
    }
#pragma unroll
    for (int o = 1; o < SPLIT; o <<= 1) out += __shfl_xor_sync(0xffffffffu, out, o);
    if (part == 0) p.out[(int64_t)t * p.ld_out + (int64_t)h * dv + j] = out * inv_sqrt_dk;
    __syncthreads();  // sq / sk are rewritten for the next token
  }
#pragma unroll
  for (int i = 0; i < kPart; ++i) S_row[i] = S[i];
}

}  // namespace

bool delta_net_supported(const DeltaNetParams& p) {
  return (p.head_k_dim == 64 || p.head_k_dim == 128) && p.head_v_dim >= 32 && p.head_v_dim <= 256 &&
         p.head_v_dim % 32 == 0 && p.d_conv >= 1 && p.d_conv <= kMaxConv && p.n_k_heads > 0 && p.n_v_heads > 0 &&
         p.n_v_heads % p.n_k_heads == 0 && p.n_tokens >= 0;
}

cudaError_t launch_delta_net(const DeltaNetParams& p, cudaStream_t s) {
  if (!delta_net_supported(p) || !p.qkv || !p.alpha || !p.beta || !p.conv_w || !p.dt_bias || !p.a ||
      !p.conv_state || !p.state || !p.x || !p.out)
    return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
  const int64_t C = p.channels();
  conv_silu_kernel<<<(unsigned)((C + 255) / 256), 256, 0, s>>>(p);
  if (p.head_k_dim == 64)
    delta_rule_kernel<64, 1><<<p.n_v_heads, p.head_v_dim, 0, s>>>(p);
  else
    delta_rule_kernel<128, 2><<<p.n_v_heads, 2 * p.head_v_dim, 0, s>>>(p);
  return cudaGetLastError();
}

}  // namespace memra::cuda
