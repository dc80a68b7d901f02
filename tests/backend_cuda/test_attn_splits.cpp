// The split-K decode attention's split count (cuda::attn_decode_splits): a pure host function of
// the cache capacity, the heads, the SM count and the config's caps. Expected values from the
// rule's arithmetic: min(ceil(blocks_per_sm x SMs / blocks per split), n_ctx / min_split_keys,
// max_splits), at least 1; blocks per split = kv heads for groups of 1 to 8, else query heads.
#include <gtest/gtest.h>

#include <algorithm>

#include "attn/attn_kernels.h"

namespace {

using memra::cuda::attn_decode_grid_key;
using memra::cuda::attn_decode_grid_splits;
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

// kernels.attn_grid_round (AttnParams::grid_splits): the trimmed grid of a one-token decode launch
// must cover every split its row uses (the kernel's attn::splits_used: one split up to 128 keys,
// else ceil(len / 128) capped by n_splits; restated here from that rule), never exceed n_splits,
// equal the used count at round 1, and be the same for every length of one step-graph key (so that a
// graph captured at one length is right at every length that replays it), for any n_splits.
TEST(AttnDecodeSplits, GridTrimCoversTheUsedSplitsAndFollowsItsKey) {
  const auto used = [](int64_t len, int n) -> int64_t {
    return len <= kAttnMinSplitKeys ? 1 : std::min<int64_t>(n, (len + kAttnMinSplitKeys - 1) / kAttnMinSplitKeys);
  };
  for (int round : {1, 2, 3, 8, 64})
    for (int n : {1, 2, 8, 33, 66, 96, 129}) {
      int64_t prev_key = -1;  // (len 1's key and grid)
      int prev_grid = 1;
      for (int64_t len = 1; len <= 20000; ++len) {
        const int g = attn_decode_grid_splits(len, n, round);
        const int64_t key = attn_decode_grid_key(len, round);
        ASSERT_GE(g, used(len, n)) << "round " << round << ", n_splits " << n << ", len " << len;
        ASSERT_LE(g, n) << "round " << round << ", n_splits " << n << ", len " << len;
        ASSERT_GE(g, 1);
        if (round == 1) {
          ASSERT_EQ(g, used(len, n)) << "n_splits " << n << ", len " << len;
        }
        ASSERT_LT(g, used(len, n) + round) << "rounded up by less than one round";
        if (key == prev_key) {
          ASSERT_EQ(g, prev_grid) << "round " << round << ", n_splits " << n << ", len " << len;
        }
        ASSERT_GE(key, prev_key) << "keys do not go back as the row grows";
        prev_key = key;
        prev_grid = g;
      }
    }
  // Worked values: 66 splits, 4097 keys use 33 (rounds 1 / 8: 33 / 40); 128 keys one split; off: 0.
  EXPECT_EQ(attn_decode_grid_splits(4097, 66, 1), 33);
  EXPECT_EQ(attn_decode_grid_splits(4097, 66, 8), 40);
  EXPECT_EQ(attn_decode_grid_splits(16385, 66, 8), 66);
  EXPECT_EQ(attn_decode_grid_splits(128, 66, 8), 1);
  EXPECT_EQ(attn_decode_grid_key(128, 8), -1);
  EXPECT_EQ(attn_decode_grid_key(4097, 8), 5);
  EXPECT_EQ(attn_decode_grid_splits(4097, 66, 0), 0);
  EXPECT_EQ(attn_decode_grid_key(4097, 0), 0);
}

}  // namespace
