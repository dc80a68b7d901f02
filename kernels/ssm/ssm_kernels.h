#pragma once
// The Gated DeltaNet layer (qwen35's linear attention; the math of backend::DeltaNetParams in
// lib/backend/backend.h), one layer over n tokens in two launches:
//   1. the causal depthwise convolution of every channel over (its conv state, the n inputs), SiLU,
//      into the scratch x; the conv state then holds the last d_conv - 1 inputs;
//   2. one block per value head h (one or two threads per state row j): per token, q and k of key head
//      h % n_k_heads L2-normalized (x / max(|x|, eps)), decay exp(softplus(alpha + dt_bias) * a),
//      beta sigmoid(beta logit), S = decay S; d = (v - S k) beta; S += d k^T; out = S q / sqrt(dk).
// The tokens run in order inside each launch (no chunked scan yet); the state stays in registers
// across them.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace memra::cuda {

struct DeltaNetParams {
  const float* qkv = nullptr;  // [n][channels]: q (n_k x dk), k (n_k x dk), v (n_v x dv)
  int64_t ld_qkv = 0;
  const float* alpha = nullptr;  // [n][n_v] raw projections
  int64_t ld_alpha = 0;
  const float* beta = nullptr;  // [n][n_v] raw projections (logits)
  int64_t ld_beta = 0;
  const float* conv_w = nullptr;   // [channels][d_conv]
  const float* dt_bias = nullptr;  // [n_v]
  const float* a = nullptr;        // [n_v]
  float* conv_state = nullptr;     // [d_conv - 1][channels], oldest first
  float* state = nullptr;          // [n_v][dv][dk]
  float* x = nullptr;              // scratch [n][channels]
  float* out = nullptr;            // [n][n_v * dv]
  int64_t ld_out = 0;
  int n_tokens = 0;
  int n_k_heads = 0;
  int n_v_heads = 0;
  int head_k_dim = 0;  // 64 or 128
  int head_v_dim = 0;  // 32 .. 256, a multiple of 32
  int d_conv = 0;      // 1 .. 8
  float eps = 1e-6f;
  int64_t channels() const { return 2LL * n_k_heads * head_k_dim + (int64_t)n_v_heads * head_v_dim; }
};

// Whether launch_delta_net has an instance for this geometry.
bool delta_net_supported(const DeltaNetParams& p);
cudaError_t launch_delta_net(const DeltaNetParams& p, cudaStream_t stream);

}  // namespace memra::cuda
