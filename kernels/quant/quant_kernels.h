#pragma once
// Launchers of the quant family: activation quantization to q8_1 and weight dequantization.
// They write into caller memory, never allocate, and return the launch status.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace memra::cuda {

// x: rows x n f32 (row stride ld_x elements) -> y: rows x (n/32) BlockQ8_1, dense.
// Byte-identical to the CPU reference quantizer (quantize_row(Q8_1)): same amax/127 scale, the
// same correctly rounded division and reciprocal, roundf, s = f16(d * sum(q)).
struct QuantizeQ8_1Params {
  const float* x = nullptr;
  void* y = nullptr;
  int64_t n = 0;  // multiple of 32
  int64_t rows = 1;
  int64_t ld_x = 0;  // 0 = n
};
cudaError_t launch_quantize_q8_1(const QuantizeQ8_1Params& p, cudaStream_t stream);

// Weights rows x cols in their GGUF block layout (row stride row_bytes; 0 = dense) -> f32 or f16
// rows (row stride ld_out elements; 0 = cols). Bit-identical to the CPU dequantize_row (f16
// output: the CPU f32 value rounded to nearest even). Types: MEMRA_CUDA_WTYPES, F16, BF16, F32.
struct DequantizeParams {
  QType type = QType::F32;
  const void* w = nullptr;
  size_t row_bytes = 0;
  int64_t rows = 0, cols = 0;
  void* out = nullptr;
  bool out_f16 = false;
  int64_t ld_out = 0;
};
cudaError_t launch_dequantize(const DequantizeParams& p, cudaStream_t stream);

// f32 rows -> f16 or bf16 rows (round to nearest even), for the GEMM's activation operand.
struct ConvertParams {
  const float* x = nullptr;
  int64_t rows = 0, cols = 0, ld_x = 0;  // ld_x 0 = cols
  void* out = nullptr;                   // dense rows x cols
  bool to_bf16 = false;
};
cudaError_t launch_convert_f32(const ConvertParams& p, cudaStream_t stream);

// True when the CUDA kernels have a decoder for this weight type (quantized or float).
bool cuda_weight_type_supported(QType t);

}  // namespace memra::cuda
