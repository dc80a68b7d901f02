#pragma once
#include "kv/kv_kernels.h"
// Rotary position embedding on f32 rows viewed as [rows, n_head, head_dim] (out may alias x for
// in place; otherwise the dims >= n_rot are copied through). Row i is at
// position (*pos0) + i, read from device memory so a captured decode graph replays unchanged.
// Angle for pair index j (0 <= j < n_rot/2), as ggml's rope (YaRN included):
//   theta_extrap = pos * freq_base^(-2j/n_rot) / freq_factors[j]
//   theta_interp = freq_scale * theta_extrap
//   ext_factor == 0: theta = theta_interp, mscale = attn_factor
//   else: mix = ramp(j) * ext_factor, theta = theta_interp * (1 - mix) + theta_extrap * mix,
//         mscale = attn_factor * (1 + 0.1 * ln(1 / freq_scale))
//   ramp(j) = 1 - clamp((j - corr_lo) / max(0.001, corr_hi - corr_lo), 0, 1), with corr_lo/hi
//   from (n_ctx_orig, freq_base, beta_fast, beta_slow) as ggml_rope_yarn_corr_dims.
// Normal mode rotates (x[2j], x[2j+1]); NeoX rotates (x[j], x[j + n_rot/2]); dims >= n_rot pass.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace memra::cuda {

enum class RopeKind : int { Normal = 0, Neox = 1 };

struct RopeParams {
  const float* x = nullptr;
  int64_t ld_x = 0;  // floats between rows (>= n_head * head_dim)
  float* out = nullptr;
  int64_t ld_out = 0;
  int rows = 0;
  int n_head = 0;
  int head_dim = 0;
  int n_rot = 0;  // even, <= head_dim
  RopeKind kind = RopeKind::Normal;
  const int32_t* pos0 = nullptr;  // device: position of row 0; no kernel of the step may write it (read before the PDL wait)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  const float* freq_factors = nullptr;  // device [n_rot/2] or null
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int n_ctx_orig = 0;
};
cudaError_t launch_rope(const RopeParams& p, cudaStream_t stream);

// The angle parameters of the formula above, derived on the host from RopeParams (theta_scale =
// freq_base^(-2/n_rot), the YaRN corr dims): what a kernel needs to rotate (rope_math.cuh).
struct RopeAngles {
  float theta_scale = 1.0f;
  float freq_scale = 1.0f;
  const float* freq_factors = nullptr;  // device [n_rot/2] or null
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float corr_lo = 0.0f;
  float corr_hi = 0.0f;
};
RopeAngles rope_angles(const RopeParams& p);

// The q/k preparation of one attention layer in one launch, in place: q heads (rope.out, rows x
// n_head x head_dim, stride rope.ld_out; rope.x is ignored) and k heads (k, n_head_kv heads,
// stride ld_k) each RMS-normed over the head (when q_norm / k_norm is set; qwen3) and rotated.
// Bit-identical to launch_head_rms_norm on q and k followed by launch_rope on q and k: the same
// arithmetic (norm_math.cuh, rope_cs / rope_rotate), the head kept in registers in between.
// Only full rotation (n_rot == head_dim) with head_dim 32, 64, 128 or 256 (NeoX: not 32):
// qk_norm_rope_supported says whether a configuration is covered.
struct QkNormRopeParams {
  RopeParams rope;
  float* k = nullptr;
  int64_t ld_k = 0;
  int n_head_kv = 0;
  const float* q_norm = nullptr;  // [head_dim] or null (no norm)
  const float* k_norm = nullptr;
  float eps = 1e-6f;
  // Optional, both or neither: also append the roped K heads (kv_k.src unused) and the V rows
  // kv_v.src to the caches, same bytes as launch_kv_append_pair(kv_k with src = k, kv_v) after
  // the rotation (kv_*.n_tokens == rope.rows, row_elems == n_head_kv * head_dim; the cache rows are
  // at *rope.pos0 + i, kv_*.pos0 is not read).
  KvAppendParams kv_k, kv_v;
};
bool qk_norm_rope_supported(const RopeParams& p, int head_dim);
cudaError_t launch_qk_norm_rope(const QkNormRopeParams& p, cudaStream_t stream);

// ggml_rope_yarn_corr_dims, on the host (the launcher passes the result to the kernel).
void rope_yarn_corr_dims(int n_rot, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                         float dims[2]);

}  // namespace memra::cuda
