#pragma once
// CPU reference for every weight format of lib/quant/types.h: dequantize, reference quantizers
// (byte-exact with ggml's where ggml's is deterministic, see README.md), activation quantization
// and the integer-block dot product that llama.cpp's CPU backend uses in "quantize activations"
// mode. Rows are contiguous; n is the element count of the row and must be a multiple of the
// type's block size (a clear memra::Error names the type, n and the block otherwise).
#include <cstdint>
#include <random>
#include <vector>

#include "quant/types.h"

namespace memra {

// True for every type dequantize_row accepts (all quantized types, F32, F16, BF16, FP8_E4M3).
bool has_dequantizer(QType t);
// dst[0..n) = the values encoded by the row at src. FP8_E4M3 decodes with scale 1 here; use
// dequantize_fp8_rows for scaled FP8 tensors.
void dequantize_row(QType t, const void* src, float* dst, int64_t n);

// Types with a reference quantizer: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K
// IQ4_NL IQ4_XS MXFP4 NVFP4 Q1_0 Q2_0 TQ1_0 TQ2_0, FP8_E4M3 (scale 1, saturating), F32 F16 BF16.
// Not IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ1_S IQ1_M (codebook searches; dequantize only).
bool has_quantizer(QType t);
// dst receives qtype_row_bytes(t, n) bytes. Uses ggml's imatrix-free path (what llama-quantize
// does without --imatrix).
void quantize_row(QType t, const float* src, void* dst, int64_t n);

// ---- activation quantization + dot product (llama.cpp CPU backend semantics)
// A matmul's activation row in vec_dot_type form the way llama.cpp's x86-64 CPU backend makes it
// (its from_float): Q8_0 and Q8_1 with the multiplier 127 / amax and products rounded half to
// even, which differ from quantize_row's reference bytes now and then (a tie, a last-bit
// multiplier); every other type as quantize_row.
void quantize_activation_row(QType t, const float* src, void* dst, int64_t n);
// The activation format ggml pairs with a weight type: Q8_0, Q8_1 or Q8_K. Throws for a type
// without an integer dot product (F32/F16/BF16/FP8/integer types, Q8_1, Q8_K).
QType vec_dot_type(QType weight);
bool has_vec_dot(QType weight);
// Dot product of one weight row (n elements of type `weight`) with one activation row already
// quantized to vec_dot_type(weight): integer sums per block times the block scales, as ggml does.
float vec_dot(QType weight, int64_t n, const void* w, const void* act_q);

// ---- FP8 E4M3 (OCP "E4M3FN": bias 7, no infinities, S.1111.111 is NaN, max 448)
float fp8_e4m3_to_f32(uint8_t v);
uint8_t f32_to_fp8_e4m3(float f);  // round to nearest even, saturates to +-448, NaN -> 0x7F
inline constexpr int64_t kFp8ScaleBlock = 128;
// A [rows x cols] FP8 tensor (row-major, rows = output features). scale_grid is either one
// per-tensor scale (grid_rows = grid_cols = 1) or the [ceil(rows/128) x ceil(cols/128)] grid
// (row-major); element (r, c) decodes to fp8(r, c) * scale_grid[r/128 * grid_cols + c/128].
// Any other grid shape is an error.
void dequantize_fp8_rows(const uint8_t* src, float* dst, int64_t rows, int64_t cols,
                         const float* scale_grid, int64_t grid_rows, int64_t grid_cols);
// Inverse: chooses each block's scale as amax/448 (1 for an all-zero block) and writes it to
// scale_grid (same shape rules), then encodes src / scale.
void quantize_fp8_rows(const float* src, uint8_t* dst, int64_t rows, int64_t cols,
                       float* scale_grid, int64_t grid_rows, int64_t grid_cols);

// ---- random blocks (kernel-check gates, kernel probes)
// Byte offsets of the f16 scale fields inside one block (GGUF format facts): Q4_0 Q5_0 Q8_0
// IQ4_NL IQ4_XS {0}; Q4_1 Q5_1 Q4_K Q5_K {0, 2}; Q2_K {80, 82}; Q3_K {108}; Q6_K {208}. Other
// types: an error.
std::vector<int> block_f16_scale_offsets(QType t);
// n_blocks blocks of t at dst: random bytes (8 at a time from rng), then every f16 scale field
// set to a finite value of random sign and magnitude in [1e-3, 5e-2], so no block decodes to
// Inf / NaN and the products stay in the range real weights give.
void fill_random_blocks(QType t, uint8_t* dst, int64_t n_blocks, std::mt19937_64& rng);

}  // namespace memra
