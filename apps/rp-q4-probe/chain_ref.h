#pragma once
// The CPU side of rp-q4-probe --chain (kernels/matvec_rp/chain_persist.h): the chain's q8 rule and
// one matrix of the chain computed in f64 from the hash-generated weights, so the GPU's outputs
// can be checked matrix by matrix from the GPU's own inputs. Header-only: tests/apps checks it
// against the project's Q4_0 decoder (lib/quant), which the llama.cpp quantization vectors gate.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "matvec_rp/chain_persist.h"
#include "quant/quant.h"

namespace memra::chain {

// A q8 block of 32 outputs by the chain's rule (the kernel's float operations, in the same order).
struct Q8Block {
  int8_t q[32];
  float d;
  int32_t s;
};
inline Q8Block quantize_block(const float* y, bool unit) {
  Q8Block b{};
  float amax = 0.f;
  for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(y[i]));
  const float inv = q8_inv_scale(amax);
  b.s = 0;
  for (int i = 0; i < 32; ++i) {
    const int q = amax > 0.f ? (int)std::nearbyint(y[i] * inv) : 0;
    b.q[i] = (int8_t)q;
    b.s += q;
  }
  b.d = q8_stored_scale(amax, unit);
  return b;
}

// The exact integer dot of weight block (row, blk) with the activation block's quants x[0..31]:
// sum over j of (nibble_j - 8) * x_j, nibble j = low nibble of quant byte j (j < 16) or the high
// nibble of byte j - 16.
inline int32_t block_dot(uint64_t h, const int8_t* x) {
  int32_t s = 0;
  for (int w = 0; w < 4; ++w) {
    const uint32_t v = block_word(h, w);
    for (int b = 0; b < 4; ++b) {
      const int j = 4 * w + b;
      const int lo = (int)((v >> (8 * b)) & 0xF), hi = (int)((v >> (8 * b + 4)) & 0xF);
      s += (lo - 8) * x[j] + (hi - 8) * x[j + 16];
    }
  }
  return s;
}

// The 144 GGUF bytes of Q4_K super-block h.
inline void superblock_bytes(uint64_t h, uint8_t out[kQ4KBytes]) {
  for (int w = 0; w < kQ4KBytes / 4; ++w) {
    const uint32_t v = superblock_word(h, w);
    std::memcpy(out + 4 * w, &v, 4);
  }
}

// Row `row` of weight matrix `wm` of `layer` against the activation planes (cols values): f64.
// Q4_0 from the integer dot of each block; Q4_K through the project's GGUF decoder (dequantize_row).
inline double ref_row(uint64_t seed, int layer, int wm, int64_t row, int64_t cols, const int8_t* xq,
                      const float* xd, int wtype = kQ4_0) {
  double acc = 0;
  if (wtype == kQ4_K) {
    uint8_t sb[kQ4KBytes];
    float wf[256];
    for (int64_t u = 0; u < cols / 256; ++u) {
      superblock_bytes(block_hash(seed, layer, wm, row, u), sb);
      dequantize_row(QType::Q4_K, sb, wf, 256);
      for (int i = 0; i < 256; ++i) acc += (double)wf[i] * (double)xd[(u * 256 + i) / 32] * (double)xq[u * 256 + i];
    }
    return acc;
  }
  for (int64_t blk = 0; blk < cols / 32; ++blk) {
    const uint64_t h = block_hash(seed, layer, wm, row, blk);
    const double dw = (double)f16_bits_to_float(block_scale_bits(h, cols));
    acc += dw * (double)xd[blk] * (double)block_dot(h, xq + blk * 32);
  }
  return acc;
}

// Output `r` of matrix `mat` of `layer` (the GLU: SiLU(gate) * up) from its input planes.
inline double ref_output(const Dims& d, uint64_t seed, int layer, int mat, int64_t r, const int8_t* xq,
                         const float* xd, int wtype) {
  const int64_t cols = mat_cols(d, mat);
  if (mat == kGlu) {
    const double g = ref_row(seed, layer, kWGate, r, cols, xq, xd, wtype);
    const double u = ref_row(seed, layer, kWUp, r, cols, xq, xd, wtype);
    return g / (1.0 + std::exp(-g)) * u;
  }
  return ref_row(seed, layer, mat == kDown ? kWDown : mat, r, cols, xq, xd, wtype);
}

// Every output of matrix `mat` of `layer` from its input planes.
inline std::vector<double> ref_matrix(const Dims& d, uint64_t seed, int layer, int mat, const int8_t* xq,
                                      const float* xd, int wtype = kQ4_0) {
  std::vector<double> y((size_t)mat_rows(d, mat));
  for (int64_t r = 0; r < mat_rows(d, mat); ++r) y[(size_t)r] = ref_output(d, seed, layer, mat, r, xq, xd, wtype);
  return y;
}

}  // namespace memra::chain
