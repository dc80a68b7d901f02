// The key-split choice of the staged prefill attention (kernels/attn/attn_prefill_f16.h), host
// logic only: the expected splits and block counts follow by hand from the rule (~4 equal blocks
// per SM: split = ceil(key tiles of all heads / (4 * SMs)), none when no tile would be cut) and
// the causal tile geometry (64-row query tiles, 64-key tiles at head_dim 128).
#include <gtest/gtest.h>

#include "attn/attn_prefill_f16.h"

namespace {

memra::cuda::AttnParams qwen3_8b(int n_tokens) {
  memra::cuda::AttnParams p;
  p.n_tokens = n_tokens;
  p.n_head = 32;
  p.n_head_kv = 8;
  p.head_dim = 128;
  return p;
}

TEST(AttnPrefillSplit, ChoiceFollowsTheWorkRule) {
  // pp512 from an empty cache: query tile q sees q + 1 key tiles, 36 per head, 1152 in all;
  // ceil(1152 / 528) = 3 < 8 (the longest tile).
  EXPECT_EQ(memra::cuda::attn_prefill_split_tiles(qwen3_8b(512), 0, 132), 3);
  // 256 rows over 768 cached keys: tiles of 13..16 key tiles, 58 per head, 1856 in all -> 4.
  EXPECT_EQ(memra::cuda::attn_prefill_split_tiles(qwen3_8b(256), 768, 132), 4);
  // pp2048: 528 key tiles per head, 16896 in all -> 32, the longest tile itself: no split.
  EXPECT_EQ(memra::cuda::attn_prefill_split_tiles(qwen3_8b(2048), 0, 132), 0);
  // One 64-row tile (one block per head whatever the split): 1 -> split 1 < 1 is false: none.
  EXPECT_EQ(memra::cuda::attn_prefill_split_tiles(qwen3_8b(40), 0, 132), 0);
  EXPECT_EQ(memra::cuda::attn_prefill_split_tiles(qwen3_8b(512), 0, 0), 0);  // no SM count
}

TEST(AttnPrefillSplit, ScratchHoldsThePartials) {
  const auto p = qwen3_8b(512);
  const size_t plain = memra::cuda::attn_prefill_stage_bytes(p, 0);
  // K and V rows: 512 rows x 8 heads x 128 dims x 2 bytes each.
  EXPECT_EQ(plain, 2u * 512 * 8 * 128 * 2);
  // Split 3: tiles of 1..8 key tiles give 1,1,1,2,2,2,3,3 = 15 blocks per head, each leaving
  // 64 rows x (128 + 2) floats.
  EXPECT_EQ(memra::cuda::attn_prefill_stage_bytes(p, 0, 3), plain + (32u * 15 * 64 * 130 * 4 + 255) / 256 * 256);
}

}  // namespace
