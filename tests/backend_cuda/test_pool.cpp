// Pool size classes (host-only logic; allocation itself needs a GPU and is exercised by
// kernel-check on the H200).
#include <gtest/gtest.h>

#include "backend/cuda/pool.h"

using memra::cuda::PoolAllocator;

TEST(PoolAllocator, SmallSizesRoundTo512Bytes) {
  EXPECT_EQ(PoolAllocator::round_size(0), 512u);
  EXPECT_EQ(PoolAllocator::round_size(1), 512u);
  EXPECT_EQ(PoolAllocator::round_size(512), 512u);
  EXPECT_EQ(PoolAllocator::round_size(513), 1024u);
  EXPECT_EQ(PoolAllocator::round_size((1u << 20) - 1), 1u << 20);
}

TEST(PoolAllocator, LargeSizesRoundTo2MiB) {
  EXPECT_EQ(PoolAllocator::round_size(1u << 20), 2u << 20);
  EXPECT_EQ(PoolAllocator::round_size((2u << 20) + 1), 4u << 20);
  EXPECT_EQ(PoolAllocator::round_size(117440512), 117440512u);  // 56 MiB: already a multiple
}
