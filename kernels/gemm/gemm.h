#pragma once
// Prefill GEMM y[m][n] = x[m][k] . W[n][k]^T through cuBLASLt, f32 accumulation:
//   quantized W: dequantized to f16 in caller scratch (launch_dequantize), x rounded to f16;
//   F16 W: used in place, x rounded to f16;   BF16 W: in place, x rounded to bf16;
//   F32 W: plain f32 GEMM (CUBLAS_COMPUTE_32F: no TF32).
// The launcher never allocates: the caller passes the cuBLASLt handle, its workspace and scratch
// of gemm_scratch_bytes(). cuBLASLt failures map to cudaErrorNotSupported (no algorithm for the
// shape) or cudaErrorUnknown; gemm_last_error() has cuBLASLt's own text for the calling thread.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace memra::cuda {

struct GemmParams {
  QType w_type = QType::F16;
  const void* w = nullptr;
  size_t w_row_bytes = 0;  // 0 = dense
  int64_t n = 0;           // output features (rows of W)
  int64_t k = 0;           // input features
  int64_t m = 0;           // activation rows
  const float* x = nullptr;
  int64_t ldx = 0;  // 0 = k
  float* y = nullptr;
  int64_t ldy = 0;  // 0 = n
  void* scratch = nullptr;  // gemm_scratch_bytes(w_type, n, k, m) bytes, 256-byte aligned
  // x already rounded to the GEMM's operand type (bf16 for BF16 W, else f16), dense m x k: the
  // conversion is skipped (gemm_x_operand_bf16 says which type). Ignored for F32 W.
  const void* x_conv = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Scratch for the converted operands: f16 W (quantized types only) followed by x as f16/bf16.
size_t gemm_scratch_bytes(QType w_type, int64_t n, int64_t k, int64_t m);
// The type x is rounded to for a W of w_type: bf16 for BF16 W, f16 for every other non-F32 type.
inline bool gemm_x_operand_bf16(QType w_type) { return w_type == QType::BF16; }
cudaError_t launch_gemm(const GemmParams& p, cudaStream_t stream);
const char* gemm_last_error();

}  // namespace memra::cuda
