#pragma once
// Small kernels the CUDA backend needs that no other family provides: the embedding row gather
// (ids read from device memory, so a captured decode graph replays unchanged), element-wise
// add / bias / scale / softcap on f32 rows, and a plain attention for the head dims the
// tensor-core and split-K kernels (kernels/attn) are not built for (stories260K: head_dim 8).
// Launchers write into caller memory, never allocate, and return the launch status.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace memra::cuda {

// out[i] = dequantized row ids[i] of the table (GGUF block layout, any type
// cuda_weight_type_supported accepts), bit-identical to lib/quant's dequantize_row. An id outside
// [0, table_rows) yields a row of NaN (the host checks ids before launching; a kernel cannot throw).
struct EmbedParams {
  QType type = QType::F32;
  const void* table = nullptr;
  size_t row_bytes = 0;
  int64_t table_rows = 0;
  int64_t cols = 0;
  const int32_t* ids = nullptr;  // device [n_tokens]
  int n_tokens = 0;
  float* out = nullptr;
  int64_t ld_out = 0;  // 0 = cols
};
cudaError_t launch_embed(const EmbedParams& p, cudaStream_t stream);

// Element-wise ops on f32 rows [rows, cols] with leading dimensions.
enum class EwiseOp : int {
  Add = 0,      // x += y (y with its own leading dimension)
  AddBias = 1,  // x[r][c] += y[c]
  Scale = 2,    // x *= s
  Softcap = 3,  // x = s * tanhf(x / s)
};
struct EwiseParams {
  EwiseOp op = EwiseOp::Add;
  float* x = nullptr;
  int64_t ld_x = 0;
  const float* y = nullptr;
  int64_t ld_y = 0;
  int64_t rows = 0, cols = 0;
  float s = 1.0f;
};
cudaError_t launch_ewise(const EwiseParams& p, cudaStream_t stream);

// n empty kernels (one 32-thread block each: the PDL wait and trigger, no memory access),
// launched like every decode kernel (launch_kernel: PDL where it is on). A diagnostic for A/B
// runs (kernels.probe_boundaries): what n extra kernel boundaries cost end to end.
cudaError_t launch_boundary_probe(int n, cudaStream_t stream);

// Plain attention over the device KV cache (kernels/kv layout) for any head dims (K and V may
// differ): one block per (query row, head), f32 scores in chunks of 256 keys with an online
// softmax, f32 accumulation. Same visibility rules as kernels/attn (causal from (*pos0) + i,
// optional window, optional softcap). head_dim_v <= 1024.
struct AttnNaiveParams {
  const float* q = nullptr;
  int64_t ld_q = 0;
  const void* k_cache = nullptr;
  QType type_k = QType::F16;
  int64_t k_row_bytes = 0;
  const void* v_cache = nullptr;
  QType type_v = QType::F16;
  int64_t v_row_bytes = 0;
  float* out = nullptr;
  int64_t ld_out = 0;
  int n_tokens = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  const int32_t* pos0 = nullptr;  // device
  float scale = 1.0f;
  int window = 0;
  float softcap = 0.0f;
  // Device [n_head] or null: per-head sink logits (gpt-oss), in the softmax's maximum and
  // denominator with no value row.
  const float* sinks = nullptr;
};
cudaError_t launch_attn_naive(const AttnNaiveParams& p, cudaStream_t stream);

}  // namespace memra::cuda
