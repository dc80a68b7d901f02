#pragma once
// Small kernels of the routed-MoE FFN and the head-wise gate (lib/backend/cuda/cuda_moe_ops.cpp).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace memra::cuda {

// out[t][c] = sum over k = 0 .. k_used-1, in that order, of w[t k_used + k] * d[row[t k_used + k]][c]
// (each product rounded to f32 before it is added: the CPU oracle's slot order and rounding).
struct MoeCombineParams {
  const float* d = nullptr;  // expert outputs, one row per (token, slot)
  int64_t ld_d = 0;
  const int32_t* rows = nullptr;  // device [n_tokens * k_used]; null: row = t k_used + k
  const float* w = nullptr;       // device [n_tokens * k_used]
  float* out = nullptr;
  int64_t ld_out = 0;
  int n_tokens = 0;
  int k_used = 0;
  int cols = 0;
  // Optional (kernels.moe_combine_residual): out[t][c] = residual[t][c] + the sum, one rounded f32
  // add after the sum (add_rms_norm's add of the summed row); out may alias residual.
  const float* residual = nullptr;
  int64_t ld_residual = 0;
};
cudaError_t launch_moe_combine(const MoeCombineParams& p, cudaStream_t stream);

// The router on the device (kernels.moe_device_route): per token, the selected expert ids and their
// weights from the router logits, as backend::moe_route computes them (f64 probabilities, the
// selection key = probability + selection bias, the k largest keys in descending order with ties to
// the lower id, the f64 renormalization floored at 2^-14); the router bias is added to the logits in
// f32 first. gating: 0 softmax, 1 sigmoid, 2 softmax over the k largest logits (gpt-oss).
struct MoeRouteParams {
  const float* logits = nullptr;  // [n_tokens][ld] (n_expert used)
  int64_t ld = 0;
  const float* router_bias = nullptr;     // [n_expert] or null
  const float* selection_bias = nullptr;  // [n_expert] or null
  int n_tokens = 0;
  int n_expert = 0;  // <= kMoeRouteMaxExperts
  int k_used = 0;    // 1 .. min(n_expert, kMoeRouteMaxK)
  int gating = 0;
  bool norm_topk = true;
  float weights_scale = 1.0f;
  int32_t* ids = nullptr;  // [n_tokens * k_used]
  float* weights = nullptr;
};
inline constexpr int kMoeRouteMaxExperts = 1024;
inline constexpr int kMoeRouteMaxK = 64;
cudaError_t launch_moe_route(const MoeRouteParams& p, cudaStream_t stream);

// The FFN norm, the router and the top-k of a decode batch in one launch (kernels.moe_router_fused,
// moe_router.cu), in place of launch_rms_norm, the router's float matvec, launch_moe_route and
// launch_quantize_q8_1:
//   h      = rms_norm(x) * norm_w, f32: the bits of launch_rms_norm (its sum order, norm_math.cuh);
//   hq     = h's q8_1 blocks (lib/quant's Q8_1 rule: the bytes launch_quantize_q8_1 writes for h);
//   logits = router . h per expert, f32 (each lane's columns in order, then the warp's xor tree);
//   ids / weights: launch_moe_route's rule on those logits (the same f64 arithmetic; the softmax's
//   sums in another order, so a weight may differ from it in the last f32 bit).
// Grid: ceil(n_expert / 8) blocks of 256 threads; each block stages the norm weights and the token
// rows in shared memory and norms them (every block, the same values), each warp one router row for
// every token; the block that finishes last (ticket: a device counter that is 0 before the launch
// and 0 again after it) routes the tokens, one warp each. Launched with PDL where kernels.pdl is on
// (the router rows' first chunks and the norm weights loaded before the wait).
struct MoeRouterFusedParams {
  const float* x = nullptr;  // the residual stream [n_tokens][ld_x], 16-byte aligned, ld_x % 4 == 0
  int64_t ld_x = 0;
  const float* norm_w = nullptr;  // [cols] or null (ones)
  float eps = 0.0f;
  int cols = 0;                    // % 32 == 0
  const float* router = nullptr;   // F32 [n_expert][ld_router], 16-byte aligned rows
  int64_t ld_router = 0;
  float* h = nullptr;  // [n_tokens][ld_h], must not overlap x
  int64_t ld_h = 0;
  void* hq = nullptr;  // [n_tokens][cols / 32] q8_1 blocks
  float* logits = nullptr;  // [n_tokens][ld_logits]
  int64_t ld_logits = 0;
  const float* router_bias = nullptr;     // [n_expert] or null
  const float* selection_bias = nullptr;  // [n_expert] or null
  int n_tokens = 0;  // 1 .. kMoeRouterFusedMaxTokens
  int n_expert = 0;  // <= kMoeRouteMaxExperts
  int k_used = 0;    // 1 .. min(n_expert, kMoeRouteMaxK)
  int gating = 0;    // MoeRouteParams::gating
  bool norm_topk = true;
  float weights_scale = 1.0f;
  int32_t* ids = nullptr;  // [n_tokens * k_used]
  float* weights = nullptr;
  unsigned* ticket = nullptr;  // device, 0 before the launch (and after it)
};
inline constexpr int kMoeRouterFusedMaxTokens = 8;
// Its dynamic shared memory: the norm weights and the token rows (f32); launches over
// kMoeRouterFusedMaxSmem are refused (qwen3-30b-a3b's 2048 columns at 8 tokens: 72 KiB).
inline constexpr size_t kMoeRouterFusedMaxSmem = 200 * 1024;
inline size_t moe_router_fused_smem(int n_tokens, int cols, bool norm_w) {
  return ((size_t)n_tokens + (norm_w ? 1 : 0)) * (size_t)cols * sizeof(float);
}
cudaError_t launch_moe_router_fused(const MoeRouterFusedParams& p, cudaStream_t stream);

// The slots of a batch grouped by expert for the grouped routed matvec (MatvecParams::groups,
// kernels.moe_device_route_prefill): group g is kMoeGroupStride int32 values [expert, slot 0 ..
// slot 7]; each expert's slots in increasing slot order, eight to a group (the last group of an
// expert holds the rest, its unused entries -1), the experts' groups in expert order; slots whose
// id is outside [0, n_expert) are grouped under the pseudo-expert n_expert (the matvec writes NaN
// rows for them); the groups past the last used one have expert -1. The same groups for the same ids
// on every run (no atomics decide an order).
inline constexpr int kMoeGroupSlots = 8;
inline constexpr int kMoeGroupStride = 1 + kMoeGroupSlots;
// Groups a launch must provide for n_slots slots over n_expert experts (each expert, and the bad ids,
// at most one partial group).
inline int64_t moe_group_capacity(int64_t n_slots, int n_expert) {
  return (n_slots + kMoeGroupSlots - 1) / kMoeGroupSlots + n_expert + 1;
}
struct MoeGroupParams {
  const int32_t* ids = nullptr;  // device [n_slots]: slot s = token * k_used + j
  int n_slots = 0;
  int n_expert = 0;  // <= kMoeRouteMaxExperts
  int32_t* groups = nullptr;  // device [n_groups][kMoeGroupStride]
  int n_groups = 0;           // >= moe_group_capacity(n_slots, n_expert), <= 65535
};
cudaError_t launch_moe_group(const MoeGroupParams& p, cudaStream_t stream);

// dst row i = src row idx[i] (i < rows): the tokens of each expert gathered together.// dst row i = src row idx[i] (i < rows): the tokens of each expert gathered together.
struct GatherRowsParams {
  const float* src = nullptr;
  int64_t ld_src = 0;
  const int32_t* idx = nullptr;  // device [rows]
  float* dst = nullptr;
  int64_t ld_dst = 0;
  int rows = 0;
  int cols = 0;
};
cudaError_t launch_gather_rows(const GatherRowsParams& p, cudaStream_t stream);

// In place: x viewed as [rows][n_head][head_dim], head h of row r times sigmoid(gate[r][h]).
struct HeadGateParams {
  float* x = nullptr;
  int64_t ld_x = 0;
  const float* gate = nullptr;
  int64_t ld_gate = 0;
  int rows = 0;
  int n_head = 0;
  int head_dim = 0;
};
cudaError_t launch_head_gate(const HeadGateParams& p, cudaStream_t stream);

}  // namespace memra::cuda
