// The split-K decode attention's split count (cuda::attn_decode_splits): a pure host function of
// the cache capacity, the heads, the SM count and the config's caps. Expected values from the
// rule's arithmetic: min(ceil(blocks_per_sm x SMs / blocks per split), n_ctx / min_split_keys,
// max_splits), at least 1; blocks per split = kv heads for groups of 1 to 8, else query heads.
#include <gtest/gtest.h>

#include "attn/attn_kernels.h"

namespace {

using memra::cuda::attn_decode_splits;
using memra::cuda::kAttnMinSplitKeys;

TEST(AttnDecodeSplits, DefaultRule) {
  // 132 SMs (the H200), 32 / 8 heads: ceil(4 x 132 / 8) = 66.
  EXPECT_EQ(attn_decode_splits(16512, 32, 8, 132, 96), 66);
  EXPECT_EQ(attn_decode_splits(16512, 32, 8, 132, 96, kAttnMinSplitKeys, 4), 66);  // the defaults spelled out
  EXPECT_EQ(attn_decode_splits(16512, 32, 8, 132, 64), 64);  // the old cap
  EXPECT_EQ(attn_decode_splits(4227, 32, 8, 132, 96), 33);   // the cache length caps it: 4227 / 128
  EXPECT_EQ(attn_decode_splits(100, 32, 8, 132, 96), 1);     // at least one
  EXPECT_EQ(attn_decode_splits(16512, 64, 4, 132, 96), 9);   // group 16: per query head, ceil(528 / 64)
  EXPECT_EQ(attn_decode_splits(16512, 9, 3, 132, 96), 96);   // 3 kv heads: ceil(528 / 3) = 176, capped
  EXPECT_EQ(attn_decode_splits(16512, 32, 8, 132, 5000), 66);  // max_splits clamped to 1024 first
  EXPECT_EQ(attn_decode_splits(16512, 32, 8, 132, 0), 1);      // ... and to 1
}

TEST(AttnDecodeSplits, BlocksPerSmAndSplitKeys) {
  // kernels.attn_blocks_per_sm = 8: ceil(1056 / 8) = 132, then the caps.
  EXPECT_EQ(attn_decode_splits(16512, 32, 8, 132, 96, 128, 8), 96);
  EXPECT_EQ(attn_decode_splits(16512, 32, 8, 132, 128, 128, 8), 128);  // 16512 / 128 = 129, then 128
  EXPECT_EQ(attn_decode_splits(16512, 32, 8, 132, 132, 128, 8), 129);  // the cache length
  EXPECT_EQ(attn_decode_splits(16512, 32, 8, 132, 132, 64, 8), 132);   // 16512 / 64 = 258
  // kernels.attn_f16_split_keys = 64: the cache length cap halves its key count.
  EXPECT_EQ(attn_decode_splits(4227, 32, 8, 132, 96, 64, 4), 66);  // 4227 / 64 = 66
  EXPECT_EQ(attn_decode_splits(3000, 32, 8, 132, 96, 64, 4), 46);  // 3000 / 64 = 46
  EXPECT_EQ(attn_decode_splits(3000, 32, 8, 132, 96, 32, 4), 66);  // 3000 / 32 = 93, then 66
  EXPECT_EQ(attn_decode_splits(16512, 32, 8, 132, 96, 128, 1), 17);  // ceil(132 / 8)
}

}  // namespace
