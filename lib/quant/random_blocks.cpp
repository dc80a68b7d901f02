// Random blocks of a quantized type for kernel gates and probes (quant.h).
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "quant/quant.h"

namespace memra {

std::vector<int> block_f16_scale_offsets(QType t) {
  switch (t) {
    case QType::Q4_0: case QType::Q5_0: case QType::Q8_0: case QType::IQ4_NL: case QType::IQ4_XS:
      return {0};
    case QType::Q4_1: case QType::Q5_1: case QType::Q4_K: case QType::Q5_K:
      return {0, 2};
    case QType::Q2_K: return {80, 82};
    case QType::Q3_K: return {108};
    case QType::Q6_K: return {208};
    default:
      MEMRA_FAIL("no f16 scale-field table for {}", qtype_name(t));
  }
}

void fill_random_blocks(QType t, uint8_t* dst, int64_t n_blocks, std::mt19937_64& rng) {
  const auto& tr = qtype_traits(t);
  MEMRA_CHECK(tr.quantized, "fill_random_blocks: {} is not a block type", tr.name);
  const auto fields = block_f16_scale_offsets(t);
  const size_t n = (size_t)n_blocks * tr.block_bytes;
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t r = rng();
    std::memcpy(dst + i, &r, std::min<size_t>(8, n - i));
  }
  std::uniform_real_distribution<float> mag(1e-3f, 5e-2f);
  for (int64_t b = 0; b < n_blocks; ++b)
    for (int off : fields) {
      const float v = (rng() & 1 ? -1.f : 1.f) * mag(rng);
      const uint16_t h = f32_to_fp16(v);
      std::memcpy(dst + (size_t)b * tr.block_bytes + off, &h, 2);
    }
}

}  // namespace memra
