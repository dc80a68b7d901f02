#pragma once
// The split-plane ("sp") decode layout of a weight matrix: every block's quant bytes in one
// 16-byte-aligned body plane, its f16 scale in a separate d plane, so that the decode matvec
// (kernels/matvec/mmvs.h) reads the weights with aligned 16-byte loads only. Same bytes as the
// GGUF blocks (no padding), in another order:
//   Q4_0: body = qs (16 B per 32 weights),  d plane = d (f16)
//   Q8_0: body = qs (32 B per 32 weights),  d plane = d (f16)
//   Q6_K: body = ql|qh|scales (208 B per 256 weights), d plane = d (f16)
//   Q4_K: the GGUF layout itself (144 B superblocks are already 16-byte aligned): no repack.
// The body plane holds rows one after the other (row r at r * body_row_bytes); the d plane starts
// at d_offset (256-byte aligned) and holds rows * blocks_per_row halves.
//
// Plain C++ (no CUDA) so the repack is unit-tested on the CPU (tests/backend_cuda/test_mmvs_emul).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/types.h"

namespace memra::cuda::sp {

struct Layout {
  bool ok = false;        // the type has a split-plane decode kernel
  bool repacked = false;  // false: the GGUF bytes are used as they are (Q4_K)
  int block_elems = 0;
  int block_bytes = 0;    // GGUF block
  int body_bytes = 0;     // per block in the body plane
  int body_src = 0;       // offset of the body bytes in the GGUF block
  int d_src = 0;          // offset of the f16 d in the GGUF block
};

inline Layout layout(QType t) {
  switch (t) {
    case QType::Q4_0: return {true, true, 32, 18, 16, 2, 0};
    case QType::Q8_0: return {true, true, 32, 34, 32, 2, 0};
    case QType::Q6_K: return {true, true, 256, 210, 208, 0, 208};
    case QType::Q4_K: return {true, false, 256, 144, 144, 0, 0};
    default: return {};
  }
}

struct Plan {
  int64_t blocks_per_row = 0;
  size_t body_row_bytes = 0;
  size_t d_offset = 0;     // bytes from the base to the d plane (0 when not repacked)
  size_t total_bytes = 0;  // of the split copy (0 when not repacked)
};

// k: row length (multiple of the block size, and of 64 for the kernel's 64-weight tasks).
inline Plan plan(QType t, int64_t rows, int64_t k) {
  const Layout L = layout(t);
  Plan p;
  if (!L.ok || k % L.block_elems || k % 64) return p;
  p.blocks_per_row = k / L.block_elems;
  p.body_row_bytes = (size_t)p.blocks_per_row * (size_t)L.body_bytes;
  if (!L.repacked) return p;
  const size_t body = p.body_row_bytes * (size_t)rows;
  p.d_offset = (body + 255) / 256 * 256;
  p.total_bytes = p.d_offset + (size_t)rows * (size_t)p.blocks_per_row * 2;
  return p;
}

// GGUF rows (row stride src_row_bytes) -> the split copy at dst (plan(t, rows, k).total_bytes).
inline void repack(QType t, const uint8_t* src, size_t src_row_bytes, int64_t rows, int64_t k, uint8_t* dst) {
  const Layout L = layout(t);
  const Plan p = plan(t, rows, k);
  uint8_t* dplane = dst + p.d_offset;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + (size_t)r * src_row_bytes;
    uint8_t* body = dst + (size_t)r * p.body_row_bytes;
    for (int64_t b = 0; b < p.blocks_per_row; ++b) {
      const uint8_t* blk = row + (size_t)b * (size_t)L.block_bytes;
      std::memcpy(body + (size_t)b * (size_t)L.body_bytes, blk + L.body_src, (size_t)L.body_bytes);
      std::memcpy(dplane + ((size_t)r * (size_t)p.blocks_per_row + (size_t)b) * 2, blk + L.d_src, 2);
    }
  }
}

// q8_1 blocks (36 B: f16 d, f16 s, int8 qs[32]) of m rows of k -> the q8s planes of mmvs.h:
// xq[m*k] int8 and xds[m*(k/32)] pairs {d as f32, sum of the 32 quants}. half_to_f32 converts
// the f16 bits (passed in so this header needs neither CUDA nor lib/core).
template <class HalfToF32>
inline void q8_1_to_q8s(const uint8_t* blocks, int64_t m, int64_t k, int8_t* xq, float* xds, HalfToF32 half_to_f32) {
  const int64_t nb = k / 32;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = blocks + (size_t)(r * nb + b) * 36;
      uint16_t d;
      std::memcpy(&d, blk, 2);
      int sum = 0;
      for (int e = 0; e < 32; ++e) {
        const int8_t q = (int8_t)blk[4 + e];
        xq[r * k + b * 32 + e] = q;
        sum += q;
      }
      xds[(r * nb + b) * 2] = half_to_f32(d);
      xds[(r * nb + b) * 2 + 1] = (float)sum;
    }
}

}  // namespace memra::cuda::sp
