#pragma once
// The q8_1 activation block (ggml's layout, 36 bytes): d = max|x|/127 as f16, s = d*sum(q) as
// f16, then 32 int8 quants q = round(x/d) (round half away from zero, like roundf).
#include <cstdint>

namespace memra::cuda {

struct BlockQ8_1 {
  uint16_t d;  // f16 bits
  uint16_t s;  // f16 bits of d * sum(qs)
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_1) == 36, "q8_1 block is 36 bytes");

}  // namespace memra::cuda
