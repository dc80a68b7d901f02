// The routed-MoE combine and the head-wise sigmoid gate (moe_kernels.h).
#include "act/act_math.cuh"
#include "moe/moe_kernels.h"

namespace memra::cuda {

namespace {

__global__ void moe_combine_kernel(MoeCombineParams p) {
  const int t = blockIdx.y;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= p.cols) return;
  float acc = 0.0f;
  for (int k = 0; k < p.k_used; ++k) {
    const int64_t s = (int64_t)t * p.k_used + k;
    acc = __fadd_rn(acc, __fmul_rn(p.w[s], p.d[(int64_t)p.rows[s] * p.ld_d + c]));
  }
  p.out[(int64_t)t * p.ld_out + c] = acc;
}

__global__ void gather_rows_kernel(GatherRowsParams p) {
  const int r = blockIdx.y;
  const float* src = p.src + (int64_t)p.idx[r] * p.ld_src;
  float* dst = p.dst + (int64_t)r * p.ld_dst;
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < p.cols; c += gridDim.x * blockDim.x) dst[c] = src[c];
}

__global__ void head_gate_kernel(HeadGateParams p) {
  const int r = blockIdx.y;
  const int64_t width = (int64_t)p.n_head * p.head_dim;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < width; i += (int64_t)gridDim.x * blockDim.x) {
    const int h = (int)(i / p.head_dim);
    float* x = p.x + (int64_t)r * p.ld_x + i;
    *x = __fmul_rn(*x, sigmoid(p.gate[(int64_t)r * p.ld_gate + h]));
  }
}

}  // namespace

cudaError_t launch_moe_combine(const MoeCombineParams& p, cudaStream_t s) {
  if (!p.d || !p.rows || !p.w || !p.out || p.n_tokens < 0 || p.k_used <= 0 || p.cols <= 0 || p.ld_out < p.cols ||
      p.ld_d < p.cols || p.n_tokens > 65535)
    return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
  const dim3 grid((unsigned)((p.cols + 255) / 256), (unsigned)p.n_tokens);
  moe_combine_kernel<<<grid, 256, 0, s>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_gather_rows(const GatherRowsParams& p, cudaStream_t s) {
  if (!p.src || !p.idx || !p.dst || p.rows < 0 || p.cols <= 0 || p.ld_src < p.cols || p.ld_dst < p.cols ||
      p.rows > 65535)
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  const dim3 grid((unsigned)std::min((p.cols + 255) / 256, 16), (unsigned)p.rows);
  gather_rows_kernel<<<grid, 256, 0, s>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_head_gate(const HeadGateParams& p, cudaStream_t s) {
  if (!p.x || !p.gate || p.rows < 0 || p.n_head <= 0 || p.head_dim <= 0 || p.ld_gate < p.n_head ||
      p.ld_x < (int64_t)p.n_head * p.head_dim || p.rows > 65535)
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  const int64_t width = (int64_t)p.n_head * p.head_dim;
  const dim3 grid((unsigned)std::min<int64_t>((width + 255) / 256, 64), (unsigned)p.rows);
  head_gate_kernel<<<grid, 256, 0, s>>>(p);
  return cudaGetLastError();
}

}  // namespace memra::cuda
