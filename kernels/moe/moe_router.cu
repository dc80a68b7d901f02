// The FFN norm + router + top-k of a decode batch in one launch (moe_kernels.h,
// MoeRouterFusedParams; kernels.moe_router_fused).
// Why: before its experts could start, the device-routed MoE step ran four small launches in a row
// per layer (the FFN norm, the router's float matvec, the top-k on one block at 7.9 us, the q8_1
// quantizer): 15.3 us exposed per layer on an H100 (rf46t), 11.2 us as this one launch; qwen3-30b-a3b
// tg128 1.075x (bench/notes/moe-device-route.md).
#include <cmath>

#include "common/launch.cuh"
#include "matvec/mmvs_task.cuh"
#include "moe/moe_kernels.h"
#include "moe/route_math.cuh"
#include "norm/norm_math.cuh"
#include "norm/q8_1_emit.cuh"

namespace memra::cuda {
namespace {

constexpr int kRfThreads = 256;
constexpr int kRfWarps = kRfThreads / 32;
constexpr int kRfPre = 16;  // float4 chunks of a router row per lane loaded before the wait (2048 columns)

// The (key, id) pair that ranks first (route_ranks_first), carrying the pair's probability.
__device__ __forceinline__ void route_pick(double& key, int& id, double& prob, double k2, int id2, double p2) {
  if (route_ranks_first(k2, id2, key, id)) key = k2, id = id2, prob = p2;
}

__device__ __forceinline__ double warp_sum_f64(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One warp routes token j from the logits the grid wrote (read past L1). Expert e = lane + 32 i
// lives in lane (e % 32)'s registers; PER * 32 >= n_expert. sel_p / sel_id: shared scratch of K.
template <int PER>
__device__ void route_token_warp(const MoeRouterFusedParams& p, int j, double* sel_p, int* sel_id) {
  const int lane = threadIdx.x & 31, E = p.n_expert, K = p.k_used;
  const float* lg = p.logits + (int64_t)j * p.ld_logits;
  double pr[PER];
  uint32_t open = 0;  // bit i: expert lane + 32 i exists and is not picked yet
  double mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    const int e = lane + 32 * i;
    pr[i] = 0.0;
    if (e < E) {
      float l = __ldcg(lg + e);
      if (p.router_bias) l = __fadd_rn(l, p.router_bias[e]);
      pr[i] = l;  // the logit, until the probabilities below
      mx = fmax(mx, (double)l);
      open |= 1u << i;
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (p.gating == 0) {  // softmax over every expert
    double part = 0.0;
#pragma unroll
    for (int i = 0; i < PER; ++i)
      if (open >> i & 1u) part += pr[i] = exp(pr[i] - mx);
    const double sum = warp_sum_f64(part);
#pragma unroll
    for (int i = 0; i < PER; ++i) pr[i] /= sum;
  } else if (p.gating == 1) {
#pragma unroll
    for (int i = 0; i < PER; ++i) pr[i] = 1.0 / (1.0 + exp(-pr[i]));
  }
  const bool sb = p.gating != 2 && p.selection_bias;
  double key[PER];
#pragma unroll
  for (int i = 0; i < PER; ++i) key[i] = sb && (open >> i & 1u) ? pr[i] + (double)p.selection_bias[lane + 32 * i] : pr[i];
  for (int k = 0; k < K; ++k) {
    double best = 0.0, bp = 0.0;
    int id = -1;
#pragma unroll
    for (int i = 0; i < PER; ++i)
      if (open >> i & 1u) route_pick(best, id, bp, key[i], lane + 32 * i, pr[i]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const double k2 = __shfl_xor_sync(0xffffffffu, best, o);
      const int id2 = __shfl_xor_sync(0xffffffffu, id, o);
      const double p2 = __shfl_xor_sync(0xffffffffu, bp, o);
      route_pick(best, id, bp, k2, id2, p2);
    }
    if (id >= 0 && (id & 31) == lane) open &= ~(1u << (id >> 5));
    if (lane == 0) sel_id[k] = id, sel_p[k] = bp;
  }
  __syncwarp();
  if (lane != 0) return;
  route_write_weights(sel_p, sel_id, K, p.gating, p.norm_topk, p.weights_scale, p.ids + (int64_t)j * K,
                      p.weights + (int64_t)j * K);
}

// Dynamic shared memory: the norm weights [cols] (when there are some), then the token rows
// [n][cols]: x after the wait, h in place once the scales are known.
// NT: the token rows a warp's accumulators cover (1: decode, kMoeRouterFusedMaxTokens: a batch).
// Every global load is issued in groups with no branch between them (each a predicated load), so a
// warp waits for one round trip per group rather than one per chunk.
template <int PER, int NT>
__global__ void __launch_bounds__(kRfThreads) moe_router_fused_kernel(MoeRouterFusedParams p) {
  extern __shared__ __align__(16) float4 sm4[];
  __shared__ float red[32];
  __shared__ float inv_s[kMoeRouterFusedMaxTokens];
  __shared__ bool last_s;
  __shared__ double sel_p[NT][kMoeRouteMaxK];
  __shared__ int sel_id[NT][kMoeRouteMaxK];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int n = p.n_tokens, cols = p.cols, nc = cols / 4;  // float4 chunks per row
  const int e = blockIdx.x * kRfWarps + warp;              // this warp's router row
  const bool has_row = e < p.n_expert;
  const bool has_w = p.norm_w != nullptr;
  const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
  float4* nw_s = sm4;                        // [nc] when has_w
  float4* row_s = sm4 + (has_w ? nc : 0);    // [n][nc]
  // Before the wait (weights are never written during a step): the router row's first chunks into
  // registers, the norm weights into shared memory.
  const float4* wr = reinterpret_cast<const float4*>(p.router + (int64_t)(has_row ? e : 0) * p.ld_router);
  // Weights stream once: 16-byte loads that do not allocate in L1 (mmvs::ldw16, the loads
  // scripts/check-pdl-loads.py accepts before the wait).
  const auto ldw = [](const float4* q) {
    const uint4 u = mmvs::ldw16(reinterpret_cast<const uint8_t*>(q));
    return make_float4(__uint_as_float(u.x), __uint_as_float(u.y), __uint_as_float(u.z), __uint_as_float(u.w));
  };
  float4 wpre[kRfPre];
#pragma unroll
  for (int i = 0; i < kRfPre; ++i) wpre[i] = has_row && lane + 32 * i < nc ? ldw(wr + lane + 32 * i) : zero;
  // rows x nc chunks of src into dst, 4 loads per thread in flight; weights (before the wait) through ldw.
  const auto stage = [&](float4* dst, const float* src, int64_t ld, int rows, bool weights) {
    const int total = rows * nc;
    for (int c0 = t; c0 < total; c0 += 4 * kRfThreads) {
      float4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int c = c0 + u * kRfThreads;
        const float4* q = reinterpret_cast<const float4*>(src + (int64_t)(c / nc) * ld) + c % nc;
        v[u] = c >= total ? zero : weights ? ldw(q) : *q;
      }
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (c0 + u * kRfThreads < total) dst[c0 + u * kRfThreads] = v[u];
    }
  };
  if (has_w) stage(nw_s, p.norm_w, 0, 1, true);
  pdl_wait();
  stage(row_s, p.x, p.ld_x, n, false);
  __syncthreads();

  // Each token's scale in launch_rms_norm's order: thread t < T sums its chunks t, t + T, ... (each
  // chunk's elements in order), then the block tree (the other threads add +0).
  const int T = rms_norm_threads(cols);
  for (int j = 0; j < n; ++j) {
    float ss = 0.0f;
    if (t < T)
      for (int c = t; c < nc; c += T) {
        const float4 u = row_s[j * nc + c];
        ss += __fmul_rn(u.x, u.x);
        ss += __fmul_rn(u.y, u.y);
        ss += __fmul_rn(u.z, u.z);
        ss += __fmul_rn(u.w, u.w);
      }
    const float sum = norm_block_sum(ss, red);  // its barriers also order the reads before the writes below
    if (t == 0) inv_s[j] = norm_scale(sum, cols, p.eps);
  }
  __syncthreads();
  // h in place: the same f32 values launch_rms_norm writes.
  for (int g = t; g < n * nc; g += kRfThreads) {
    const float4 u = row_s[g], wv = has_w ? nw_s[g % nc] : zero;
    const float inv = inv_s[g / nc];
    row_s[g] = make_float4(normed_by(u.x, inv, has_w, wv.x), normed_by(u.y, inv, has_w, wv.y),
                           normed_by(u.z, inv, has_w, wv.z), normed_by(u.w, inv, has_w, wv.w));
  }
  __syncthreads();

  // h and its q8_1 blocks to global memory, the (token, chunk) pairs spread over the grid; an 8-lane
  // group is one q8_1 block (nc % 8 == 0), every lane of a warp in the emit's shuffles.
  const int total = n * nc;
  for (int base = (blockIdx.x * kRfWarps + warp) * 32; base < total; base += gridDim.x * kRfThreads) {
    const int g = base + lane;
    const bool valid = g < total;
    const int j = valid ? g / nc : 0, c = valid ? g % nc : 0;
    const float4 y4 = valid ? row_s[g] : zero;
    if (valid) reinterpret_cast<float4*>(p.h + (int64_t)j * p.ld_h)[c] = y4;
    const float y[4] = {y4.x, y4.y, y4.z, y4.w};
    emit_q8_1_block8(y, lane, valid,
                     static_cast<uint8_t*>(p.hq) + ((int64_t)j * (cols / 32) + c / 8) * kQ81BlockBytes);
  }

  // The router row against every token's h: each lane's chunks in increasing order, then the tree.
  if (has_row) {
    float acc[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[j] = 0.0f;
    const auto chunk = [&](int c, float4 wv) {
#pragma unroll
      for (int j = 0; j < NT; ++j)
        if (j < n) {
          const float4 hv = row_s[j * nc + c];
          acc[j] = fmaf(hv.x, wv.x, acc[j]);
          acc[j] = fmaf(hv.y, wv.y, acc[j]);
          acc[j] = fmaf(hv.z, wv.z, acc[j]);
          acc[j] = fmaf(hv.w, wv.w, acc[j]);
        }
    };
#pragma unroll
    for (int i = 0; i < kRfPre; ++i)
      if (lane + 32 * i < nc) chunk(lane + 32 * i, wpre[i]);
    // Rows past the preloaded columns: 8 chunks per lane requested at a time.
    for (int c0 = lane + 32 * kRfPre; c0 < nc; c0 += 32 * 8) {
      float4 wv[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) wv[u] = c0 + 32 * u < nc ? ldw(wr + c0 + 32 * u) : zero;
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (c0 + 32 * u < nc) chunk(c0 + 32 * u, wv[u]);
    }
#pragma unroll
    for (int j = 0; j < NT; ++j)
      if (j < n) {
        const float v = warp_sum_f32(acc[j]);
        if (lane == 0) p.logits[(int64_t)j * p.ld_logits + e] = v;
      }
    if (lane == 0) __threadfence();  // the logits before this block's ticket
  }

  // The last block to finish routes the tokens.
  __syncthreads();
  if (t == 0) {
    __threadfence();
    last_s = atomicAdd(p.ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last_s) return;
  __threadfence();
  if (warp < n) route_token_warp<PER>(p, warp, sel_p[warp], sel_id[warp]);
  if (t == 0) *p.ticket = 0u;  // every block has taken its ticket
}

template <int PER, int NT>
cudaError_t launch_per(const MoeRouterFusedParams& p, cudaStream_t s) {
  static const cudaError_t attr = cudaFuncSetAttribute(moe_router_fused_kernel<PER, NT>,
                                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                       (int)kMoeRouterFusedMaxSmem);
  if (attr != cudaSuccess) return attr;
  const dim3 grid((unsigned)((p.n_expert + kRfWarps - 1) / kRfWarps));
  const size_t smem = moe_router_fused_smem(p.n_tokens, p.cols, p.norm_w != nullptr);
  return launch_kernel(moe_router_fused_kernel<PER, NT>, grid, dim3(kRfThreads), smem, s, p);
}

template <int PER>
cudaError_t launch_tokens(const MoeRouterFusedParams& p, cudaStream_t s) {
  return p.n_tokens == 1 ? launch_per<PER, 1>(p, s) : launch_per<PER, kMoeRouterFusedMaxTokens>(p, s);
}

}  // namespace

cudaError_t launch_moe_router_fused(const MoeRouterFusedParams& p, cudaStream_t s) {
  const auto a16 = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  if (!p.x || !p.router || !p.h || !p.hq || !p.logits || !p.ids || !p.weights || !p.ticket) return cudaErrorInvalidValue;
  if (p.n_tokens < 1 || p.n_tokens > kMoeRouterFusedMaxTokens || p.n_expert <= 0 || p.n_expert > kMoeRouteMaxExperts ||
      p.k_used <= 0 || p.k_used > p.n_expert || p.k_used > kMoeRouteMaxK || p.gating < 0 || p.gating > 2)
    return cudaErrorInvalidValue;
  if (p.cols <= 0 || p.cols % 32 || p.cols > (1 << 24) || p.ld_x < p.cols || p.ld_h < p.cols ||
      p.ld_router < p.cols || p.ld_logits < p.n_expert || p.ld_x % 4 || p.ld_h % 4 || p.ld_router % 4)
    return cudaErrorInvalidValue;
  if (!a16(p.x) || !a16(p.h) || !a16(p.router) || (p.norm_w && !a16(p.norm_w))) return cudaErrorInvalidValue;
  // h must not overlap x (other blocks still read x while one writes h).
  const auto* xb = reinterpret_cast<const char*>(p.x);
  const auto* hb = reinterpret_cast<const char*>(p.h);
  const int64_t last = (int64_t)(p.n_tokens - 1);
  if (hb < xb + (last * p.ld_x + p.cols) * 4 && xb < hb + (last * p.ld_h + p.cols) * 4) return cudaErrorInvalidValue;
  if (moe_router_fused_smem(p.n_tokens, p.cols, p.norm_w != nullptr) > kMoeRouterFusedMaxSmem)
    return cudaErrorInvalidValue;
  if (p.n_expert <= 128) return launch_tokens<4>(p, s);
  if (p.n_expert <= 256) return launch_tokens<8>(p, s);
  if (p.n_expert <= 512) return launch_tokens<16>(p, s);
  return launch_tokens<32>(p, s);
}

}  // namespace memra::cuda
