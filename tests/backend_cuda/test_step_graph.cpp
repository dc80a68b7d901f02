// The decode-step graph bookkeeping (lib/backend/cuda/step_graph.h): which steps are captured or
// replayed, and that a key differing in any field (memory the step touches) never matches.
#include <gtest/gtest.h>

#include "backend/cuda/step_graph.h"

using memra::cuda::choose_step_mode;
using memra::cuda::SeenKeys;
using memra::cuda::StepCache;
using memra::cuda::StepKey;
using memra::cuda::StepMode;

namespace {
int a, b, c;  // distinct addresses
StepKey base() { return {&a, &b, &c, 1, 512, 512, 7, 3, 1}; }
}  // namespace

TEST(StepGraph, OnlySingleTokenStepsAreGraphed) {
  EXPECT_EQ(choose_step_mode(true, 2, true, true), StepMode::Eager);
  EXPECT_EQ(choose_step_mode(true, 512, false, true), StepMode::Eager);
  EXPECT_EQ(choose_step_mode(false, 1, true, true), StepMode::Eager);  // kernels.cuda_graph = false
}

TEST(StepGraph, FirstEagerThenCaptureThenReplay) {
  EXPECT_EQ(choose_step_mode(true, 1, false, false), StepMode::Eager);
  EXPECT_EQ(choose_step_mode(true, 1, false, true), StepMode::Capture);
  EXPECT_EQ(choose_step_mode(true, 1, true, true), StepMode::Replay);
}

TEST(StepGraph, EveryKeyFieldMatters) {
  StepCache<int> cache(8);
  cache.insert(base(), 42);
  ASSERT_NE(cache.find(base()), nullptr);
  EXPECT_EQ(*cache.find(base()), 42);
  std::vector<StepKey> others(10, base());
  others[0].owner = &b;
  others[1].scratch = &a;
  others[2].logits = &a;
  others[3].logits_rows = 2;
  others[4].logits_cols = 511;
  others[5].logits_ld = 513;
  others[6].kv_serial = 8;
  others[7].weight_gen = 4;
  others[8].n_tokens = 2;
  others[9].attn_head_split = 1;
  for (size_t i = 0; i < others.size(); ++i) EXPECT_EQ(cache.find(others[i]), nullptr) << "field " << i;
}

TEST(StepGraph, CacheEvictsLeastRecentlyUsed) {
  StepCache<int> cache(2);
  StepKey k1 = base(), k2 = base(), k3 = base();
  k2.kv_serial = 100;
  k3.kv_serial = 200;
  EXPECT_TRUE(cache.insert(k1, 1).empty());
  EXPECT_TRUE(cache.insert(k2, 2).empty());
  ASSERT_NE(cache.find(k1), nullptr);  // k1 becomes the most recent
  const auto evicted = cache.insert(k3, 3);
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0], 2);
  EXPECT_EQ(cache.find(k2), nullptr);
  EXPECT_NE(cache.find(k1), nullptr);
  EXPECT_NE(cache.find(k3), nullptr);
  // Re-inserting a key hands back the value it replaces.
  const auto replaced = cache.insert(k3, 33);
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0], 3);
  EXPECT_EQ(*cache.find(k3), 33);
  EXPECT_EQ(cache.clear().size(), 2u);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(StepGraph, SeenKeysAreBounded) {
  SeenKeys seen(2);
  StepKey k1 = base(), k2 = base(), k3 = base();
  k2.n_tokens = 5;
  k3.n_tokens = 6;
  seen.add(k1);
  seen.add(k2);
  seen.add(k1);  // no duplicate
  EXPECT_TRUE(seen.contains(k1));
  seen.add(k3);  // drops the oldest (k1)
  EXPECT_FALSE(seen.contains(k1));
  EXPECT_TRUE(seen.contains(k2));
  EXPECT_TRUE(seen.contains(k3));
  seen.clear();
  EXPECT_FALSE(seen.contains(k2));
}
