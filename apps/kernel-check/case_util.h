#pragma once
// Host helpers shared by the quant/matvec/gemm cases: seeded random weights in GGUF block layout,
// their CPU dequantization, and f64 reference products.
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "quant/types.h"
#include "registry.h"

namespace memra::kc {

// Random weight rows of type t: for block types, random bytes with every f16 scale field
// overwritten by a finite value of random sign and magnitude in [1e-3, 5e-2] (so every quant bit
// pattern occurs, but no NaN/Inf scale); for F32/F16/BF16, N(0,1) values.
std::vector<uint8_t> random_weight_bytes(Env& env, QType t, int64_t rows, int64_t cols);
// Realistic weight rows: N(0,1) values through the CPU reference quantizer (quantize_row).
std::vector<uint8_t> quantized_weight_bytes(Env& env, QType t, int64_t rows, int64_t cols);
// CPU dequantization (lib/quant dequantize_row), rows x cols f32.
std::vector<float> dequantize_rows(QType t, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols);
// The references' worker pool (one per process, all cores).
ThreadPool& ref_pool();
// y[j][r] = sum_k w[r][k] * x[j][k] in f64 (threaded over r).
std::vector<double> matmul_f64(const std::vector<float>& w, const std::vector<float>& x, int64_t n, int64_t k,
                               int64_t m);

// q8_1 blocks of m rows of k values as the q8s planes of the mmvs matvec (kernels/matvec/mmvs.h):
// xq int8 [m][k], xds {d, sum of the 32 quants} per block, d widened from the block's f16.
void q8_1_to_q8s(const std::vector<uint8_t>& blocks, int64_t m, int64_t k, std::vector<int8_t>& xq,
                 std::vector<float>& xds);

// q8_0 blocks of one KV cache row of row_elems elements (quantize_row's output) in the split-plane
// order of kv.planes (kernels/kv/kv_kernels.h, KvAppendParams::scale_plane): every block's 32
// quants in block order, then every block's 2-byte scale from byte row_elems on.
void q8_0_blocks_to_planes(const uint8_t* blocks, int row_elems, uint8_t* planes);

}  // namespace memra::kc
