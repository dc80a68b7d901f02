#pragma once
// The operand words of the decode attention's tensor-core scores (attn_mma_scores.cuh), host and
// device: the CPU replay (tests/backend_cuda/test_attn_mma_scores_emul.cpp) checks the kernel's own
// word and fragment choices against the dp4a path's integer sums.
#include <cstdint>

#include "quant/weight_decode.cuh"  // MEMRA_HD, wq::byte_perm

namespace memra::cuda::attn {

// Word w (0..7) of block b's quants (b = 0..3 of a q8_0 head slice at head_dim 128, 34 bytes each)
// in the order both operands use: the natural order where the quants start on a word (odd b:
// offset 34 b + 2), else quants 2 + 4w .. 5 + 4w for w < 7 and quants 0, 1, 30, 31 for w = 7.
// q8: the query block's 8 natural words (quants 4w .. 4w + 3).
MEMRA_HD uint32_t ms_query_word(const uint32_t* q8, int b, int w) {
  if (b & 1) return q8[w];
  return w < 7 ? wq::byte_perm(q8[w], q8[w + 1], 0x5432) : wq::byte_perm(q8[0], q8[7], 0x7610);
}
// The same word of a key's staged slice (row: its first byte; 4-byte aligned).
MEMRA_HD uint32_t ms_key_word(const uint8_t* row, int b, int w) {
  if (b & 1) return *reinterpret_cast<const uint32_t*>(row + 34 * b + 2 + 4 * w);
  const int ox = w < 7 ? 4 + 4 * w : 0, oy = w < 7 ? ox : 32;  // the same word twice unless w = 7
  const uint32_t x = *reinterpret_cast<const uint32_t*>(row + 34 * b + ox);
  const uint32_t y = *reinterpret_cast<const uint32_t*>(row + 34 * b + oy);
  return wq::byte_perm(x, y, w < 7 ? 0x3210 : 0x5432);
}
// Lane (g, t)'s B fragment {b0, b1} of block b: column g = head g / 2 with its query quants masked
// to one half of the block's k (half g % 2: k 0..15 in b0, k 16..31 in b1). q8h: head g / 2's
// block b natural words.
struct MsWords {
  uint32_t b0, b1;
};
MEMRA_HD MsWords ms_query_fragment(const uint32_t* q8h, int g, int b, int t) {
  const uint32_t w = ms_query_word(q8h, b, (g & 1) ? t + 4 : t);
  return (g & 1) ? MsWords{0u, w} : MsWords{w, 0u};
}

}  // namespace memra::cuda::attn
