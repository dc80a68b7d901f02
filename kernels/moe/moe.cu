// The routed-MoE combine and the head-wise sigmoid gate (moe_kernels.h).
#include <cmath>

#include "act/act_math.cuh"
#include "moe/moe_kernels.h"
#include "moe/route_math.cuh"

namespace memra::cuda {

namespace {

__global__ void moe_combine_kernel(MoeCombineParams p) {
  const int t = blockIdx.y;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= p.cols) return;
  float acc = 0.0f;
  for (int k = 0; k < p.k_used; ++k) {
    const int64_t s = (int64_t)t * p.k_used + k;
    const int64_t row = p.rows ? p.rows[s] : s;
    acc = __fadd_rn(acc, __fmul_rn(p.w[s], p.d[row * p.ld_d + c]));
  }
  if (p.residual) acc = __fadd_rn(p.residual[(int64_t)t * p.ld_residual + c], acc);
  p.out[(int64_t)t * p.ld_out + c] = acc;
}

constexpr int kRouteThreads = 256;

// The (key, id) pair that ranks first (route_ranks_first).
__device__ __forceinline__ void route_better(double& key, int& id, double k2, int id2) {
  if (route_ranks_first(k2, id2, key, id)) key = k2, id = id2;
}

__device__ double route_block_sum(double v, double* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  double s = 0.0;
  for (int w = 0; w < kRouteThreads / 32; ++w) s += red[w];
  return s;
}

// One block per token (MoeRouteParams).
__global__ void __launch_bounds__(kRouteThreads) moe_route_kernel(MoeRouteParams p) {
  __shared__ double prob[kMoeRouteMaxExperts];
  __shared__ double key[kMoeRouteMaxExperts];
  __shared__ bool taken[kMoeRouteMaxExperts];
  __shared__ double red_key[kRouteThreads / 32];
  __shared__ int red_id[kRouteThreads / 32];
  __shared__ int sel[kMoeRouteMaxK];
  __shared__ double sel_p[kMoeRouteMaxK];
  __shared__ double red[kRouteThreads / 32];
  const int t = blockIdx.x, E = p.n_expert, K = p.k_used;
  const float* lg = p.logits + (int64_t)t * p.ld;
  // The logits (plus the router bias, an f32 add) and the gating's max.
  double mx = -INFINITY;
  for (int e = threadIdx.x; e < E; e += kRouteThreads) {
    const float l = p.router_bias ? __fadd_rn(lg[e], p.router_bias[e]) : lg[e];
    prob[e] = l;  // the logit, until the probabilities below
    taken[e] = false;
    mx = fmax(mx, (double)l);
  }
  for (int o = 16; o > 0; o >>= 1) mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
  __syncthreads();
  mx = red[0];
  for (int w = 1; w < kRouteThreads / 32; ++w) mx = fmax(mx, red[w]);
  if (p.gating == 0) {  // softmax over every expert
    double part = 0.0;
    for (int e = threadIdx.x; e < E; e += kRouteThreads) part += prob[e] = exp(prob[e] - mx);
    const double sum = route_block_sum(part, red);
    for (int e = threadIdx.x; e < E; e += kRouteThreads) prob[e] /= sum;
  } else if (p.gating == 1) {
    for (int e = threadIdx.x; e < E; e += kRouteThreads) prob[e] = 1.0 / (1.0 + exp(-prob[e]));
  }
  for (int e = threadIdx.x; e < E; e += kRouteThreads)
    key[e] = p.gating != 2 && p.selection_bias ? prob[e] + (double)p.selection_bias[e] : prob[e];
  __syncthreads();
  // The k largest keys, one block-wide arg-max per slot.
  for (int k = 0; k < K; ++k) {
    double best = 0.0;
    int id = -1;
    for (int e = threadIdx.x; e < E; e += kRouteThreads)
      if (!taken[e]) route_better(best, id, key[e], e);
    for (int o = 16; o > 0; o >>= 1) {
      const double k2 = __shfl_xor_sync(0xffffffffu, best, o);
      const int id2 = __shfl_xor_sync(0xffffffffu, id, o);
      route_better(best, id, k2, id2);
    }
    if ((threadIdx.x & 31) == 0) red_key[threadIdx.x >> 5] = best, red_id[threadIdx.x >> 5] = id;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kRouteThreads / 32; ++w) route_better(best, id, red_key[w], red_id[w]);
      sel[k] = id;
      sel_p[k] = prob[id];
      taken[id] = true;
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  route_write_weights(sel_p, sel, K, p.gating, p.norm_topk, p.weights_scale, p.ids + (int64_t)t * K,
                      p.weights + (int64_t)t * K);
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

cudaError_t launch_moe_route(const MoeRouteParams& p, cudaStream_t s) {
  if (!p.logits || !p.ids || !p.weights || p.n_tokens < 0 || p.n_tokens > 0x7fffffff || p.n_expert <= 0 ||
      p.n_expert > kMoeRouteMaxExperts || p.k_used <= 0 || p.k_used > p.n_expert || p.k_used > kMoeRouteMaxK ||
      p.ld < p.n_expert || p.gating < 0 || p.gating > 2)
    return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
  moe_route_kernel<<<(unsigned)p.n_tokens, kRouteThreads, 0, s>>>(p);
  return cudaGetLastError();
}

cudaError_t launch_moe_combine(const MoeCombineParams& p, cudaStream_t s) {
  if (!p.d || !p.w || !p.out || p.n_tokens < 0 || p.k_used <= 0 || p.cols <= 0 || p.ld_out < p.cols ||
      p.ld_d < p.cols || p.n_tokens > 65535 || (p.residual && p.ld_residual < p.cols))
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
