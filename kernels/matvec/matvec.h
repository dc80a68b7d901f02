#pragma once
// Decode matrix-vector products y[j][r] = sum_k W[r][k] * x[j][k] for m = 1..8 activation rows.
//   quantized W (MEMRA_CUDA_WTYPES): x given as q8_1 blocks (launch_quantize_q8_1), int8 dp4a dot
//     products per 32-element chunk, scales applied in f32 (variant "mmvq");
//   F16 / BF16 / F32 W: x given as f32, f32 FMA accumulation (variant "mmvf").
// Geometry: one warp per output row, rows_per_block warps per CTA; each warp reads its weight row
// once for all m activation rows (decode at m<=8 stays a single pass over the weights).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace memra::cuda {

inline constexpr int kMatvecMaxM = 8;

struct MatvecParams {
  QType w_type = QType::F32;
  const void* w = nullptr;
  size_t w_row_bytes = 0;  // 0 = dense
  int64_t n_rows = 0;      // output features
  int64_t n_cols = 0;      // input features (a multiple of the block size)
  int m = 1;               // activation rows, 1..kMatvecMaxM
  const void* x_q8_1 = nullptr;  // quantized W: m x (n_cols/32) BlockQ8_1, dense
  const float* x_f32 = nullptr;  // float W: m rows of f32, stride ldx
  int64_t ldx = 0;               // 0 = n_cols
  float* y = nullptr;            // m rows, stride ldy
  int64_t ldy = 0;               // 0 = n_rows
  int rows_per_block = 4;        // warps per CTA: 1, 2, 4 or 8
  // Routed experts (the MoE decode path, kernels.moe_device_route): with ids set the launch runs
  // n_slots products at m = 1; slot s multiplies expert ids[s]'s matrix (w + ids[s] * expert_bytes,
  // n_rows rows of w_row_bytes) by activation row s / x_slot_div into output row s (y + s * ldy).
  // An id outside [0, n_experts) writes NaN rows instead of reading out of bounds.
  const int32_t* ids = nullptr;
  int n_slots = 0;
  int n_experts = 0;
  size_t expert_bytes = 0;
  int x_slot_div = 1;
  // With ids, quantized W only (kernels.moe_gate_up_one_launch): a second expert stack of the same
  // type and shape (the MoE up experts beside the gate ones) in the same launch. Slots n_slots ..
  // 2 n_slots - 1 are slots 0 .. n_slots - 1 again on w2 (the same ids, x rows and expert_bytes)
  // into y2 (stride ldy); each row the bits of its own routed launch. The v2 and grouped forms refuse it.
  const void* w2 = nullptr;
  float* y2 = nullptr;
  // Grouped routed experts (kernels.moe_device_route_prefill; quantized W only; ids must be null):
  // groups[g] = [expert, up to 8 slot ids, -1 past the last] (launch_moe_group's layout,
  // moe_kernels.h), n_groups of them; group g multiplies its expert's matrix by the activation rows
  // slot / x_slot_div of its slots at once (one pass over the rows for up to 8 slots) into output
  // rows slot (y + slot * ldy). A group whose expert is -1 does nothing; one whose expert is outside
  // [0, n_experts) writes NaN rows. Each slot's row gets the bits of the routed m = 1 form (the same
  // per-lane chunk order and shuffle tree).
  const int32_t* groups = nullptr;
  int n_groups = 0;
};

cudaError_t launch_matvec(const MatvecParams& p, cudaStream_t stream);

// The grouped form (MatvecParams::groups) on the int8 tensor cores (kernels.moe_grouped_mma;
// matvec_grouped_mma.cu): per 32-weight block one m16n8k32 MMA (two for Q6_K's 16-weight scales)
// for 16 rows x the group's slots, each block scaled as the dp4a form scales it, the blocks summed in
// order: another numeric class than launch_matvec's grouped form. The types of
// matvec_grouped_mma_built (Q8_0, Q4_K, Q6_K, Q4_0, Q5_K, IQ4_XS); others cudaErrorNotSupported.
cudaError_t launch_matvec_grouped_mma(const MatvecParams& p, cudaStream_t stream);
bool matvec_grouped_mma_built(QType t);


}  // namespace memra::cuda
