#pragma once
// The word-level pieces of the split-plane int8 decode attention (kernels/attn/attn_decode_i8.cu),
// host-callable so that a CPU test checks them (tests/backend_cuda/test_attn_i8_words.cpp).
#include <cstdint>

#include "quant/weight_decode.cuh"  // MEMRA_HD, wq::byte_perm

namespace memra::cuda::attn {

// One ldmatrix.trans register of an int8 V tile read as 16-bit pairs holds, byte by byte: key k
// element e, key k element e + 1, key k + 1 element e, key k + 1 element e + 1. The two words are
// the f16 pairs (key k, key k + 1) of element e (lo) and of element e + 1 (hi) as 1024 + 128 + q:
// the byte with its sign bit flipped (q + 128) under 0x64, the exponent byte of 1024. Subtracting
// 1152 (f16 0x6480) from each half gives q exactly.
struct I8PairWords {
  uint32_t lo, hi;
};
MEMRA_HD I8PairWords i8_pair_words(uint32_t r) {
  const uint32_t u = r ^ 0x80808080u;
  return {wq::byte_perm(u, 0x64646464u, 0x4240u), wq::byte_perm(u, 0x64646464u, 0x4341u)};
}
constexpr uint16_t kI8PairBias = 0x6480u;  // f16 1152

// ldmatrix .x4 row addresses of lane `lane` into a warp's 16-key int8 tile (row = key, 8 chunks of
// 16 bytes): lane l gives row l % 8 of matrix l / 8, and register i of every lane comes from matrix i.
// K (B fragments of block bb, non-transposed): matrices 0 / 1 = keys 0-7 at chunks 2bb / 2bb + 1
// (b0, b1 of the keys 0-7 n-tile), 2 / 3 = keys 8-15 at the same chunks.
MEMRA_HD int i8_k_ldsm_row(int lane) { return (lane >> 4) * 8 + (lane & 7); }
MEMRA_HD int i8_k_ldsm_chunk(int lane, int bb) { return 2 * bb + ((lane >> 3) & 1); }
// V (A fragments of m-tiles j, j + 1, transposed): matrices 0 / 1 = keys 0-7 / 8-15 at chunk j, 2 / 3
// the same at chunk j + 1.
MEMRA_HD int i8_v_ldsm_row(int lane) { return ((lane >> 3) & 1) * 8 + (lane & 7); }
MEMRA_HD int i8_v_ldsm_chunk(int lane, int j) { return j + (lane >> 4); }
// The element of row r (0..15) of V m-tile mt: the transposed read gives a lane elements 2g, 2g + 1
// of its chunk, placed in rows g and g + 8.
MEMRA_HD int i8_v_row_element(int mt, int r) { return 16 * mt + 2 * (r & 7) + (r >> 3); }

// Scale b (0..3) of two keys' 8-byte scale rows (words x = scales 0, 1; y = scales 2, 3) side by
// side: key a's in the low half, key b's in the high half.
MEMRA_HD uint32_t i8_scale_pair(uint32_t ax, uint32_t ay, uint32_t bx, uint32_t by, int b) {
  return wq::byte_perm(b < 2 ? ax : ay, b < 2 ? bx : by, b & 1 ? 0x7632u : 0x5410u);
}

}  // namespace memra::cuda::attn
