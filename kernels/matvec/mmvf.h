#pragma once
// "mmvf2": the decode matvec of float weights (F16, BF16, F32) with f32 activations, built like
// mmvs (kernels/matvec/mmvs.h) where the first float kernel (matvec.h "mmvf") is not:
//   - each warp serves rows_per_warp consecutive rows (1, 2 or 4), so one activation load (two
//     16-byte loads of f32 per 8 weights) serves that many rows' 16-byte weight loads: the
//     activation's L1 traffic per weight byte falls from 2x to 1x / 0.5x;
//   - each lane keeps two 8-weight chunks per row in flight (chunks c and c + 32);
//   - launched as a programmatic dependent launch (common/launch.cuh): the first chunks' weights are
//     requested before the dependency wait, while the previous kernel drains;
//   - optional epilogues: the GLU pair (y = act(W x) * (W2 x), the rows of both in the same warp) and
//     the residual add (y = residual + W x), each with the operation of the unfused kernel
//     (launch_glu's __fmul_rn(act(gate), up), add_rms_norm's add), so the same bits as the unfused
//     chain.
// Arithmetic per row: lane l takes chunks l, l + 32, ... in increasing order and accumulates each
// chunk's 8 products into its f32 sum by fused multiply-adds in element order; then the warp's xor
// tree (16, 8, 4, 2, 1). Neither depends on rows_per_warp or m, so a row gets the same bits in every
// instance and at every m (decode == verify; kernel-check section "mmvf").
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace memra::cuda {

inline constexpr int kMmvfMaxM = 8;

struct MmvfParams {
  QType w_type = QType::F16;  // F16, BF16 or F32
  const void* w = nullptr;    // n_rows rows of row_bytes (16-byte aligned)
  const void* w2 = nullptr;   // GLU partner (same type and shape), with glu != 0
  size_t row_bytes = 0;       // 0 = dense; a multiple of 16
  int glu = 0;                // 0 none, 1 SiLU(W x) * W2 x, 2 GELU-tanh(W x) * W2 x
  int64_t n_rows = 0;
  int64_t n_cols = 0;         // a multiple of 8
  int m = 1;                  // 1 .. kMmvfMaxM
  const float* x = nullptr;   // m rows, stride ldx (a multiple of 4), 16-byte aligned
  int64_t ldx = 0;            // 0 = n_cols
  float* y = nullptr;         // m rows, stride ldy
  int64_t ldy = 0;            // 0 = n_rows
  // y[j][r] = residual[j][r] + (W x)[j][r] (no GLU); y may be residual (each element is read and
  // written by one lane).
  const float* residual = nullptr;
  int64_t ld_residual = 0;    // 0 = ldy
  int rows_per_warp = 2;      // 1, 2 or 4
  bool preload = true;        // the first chunks' weights before the dependency wait (timing only)
};

// cudaErrorInvalidValue for parameters outside the above, cudaErrorNotSupported for a weight type
// that is not F16 / BF16 / F32.
cudaError_t launch_mmvf(const MmvfParams& p, cudaStream_t stream);

}  // namespace memra::cuda
