#pragma once
// CPU replays of warp-level CUDA code (tests/backend_cuda/test_*_emul.cpp).
#include <vector>

namespace memra::test {

// The warp's xor shuffle tree: after the steps 16, 8, 4, 2, 1 lane 0 holds the sum, added in the
// kernel's order.
inline float shuffle_sum(std::vector<float> acc) {
  for (int o = 16; o > 0; o >>= 1) {
    std::vector<float> next(32);
    for (int l = 0; l < 32; ++l) next[l] = acc[l] + acc[l ^ o];
    acc = next;
  }
  return acc[0];
}

}  // namespace memra::test
