#include "case_util.h"

#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "core/parallel.h"
#include "matvec/split_layout.h"
#include "quant/quant.h"

namespace memra::kc {
namespace {

ThreadPool& pool() {
  static ThreadPool p(0);
  return p;
}

}  // namespace

ThreadPool& ref_pool() { return pool(); }

std::vector<uint8_t> random_weight_bytes(Env& env, QType t, int64_t rows, int64_t cols) {
  const auto& tr = qtype_traits(t);
  MEMRA_CHECK(cols % tr.block_elems == 0, "cols {} not a multiple of {}'s block", cols, tr.name);
  if (!tr.quantized) {
    const auto v = env.normal((size_t)(rows * cols));
    std::vector<uint8_t> out((size_t)(rows * cols) * tr.block_bytes);
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == QType::F32) std::memcpy(&out[4 * i], &v[i], 4);
      else {
        const uint16_t h = t == QType::F16 ? f32_to_fp16(v[i]) : f32_to_bf16(v[i]);
        std::memcpy(&out[2 * i], &h, 2);
      }
    }
    return out;
  }
  const int64_t nblocks = rows * cols / tr.block_elems;
  std::vector<uint8_t> out((size_t)nblocks * tr.block_bytes);
  fill_random_blocks(t, out.data(), nblocks, env.rng());
  return out;
}

std::vector<uint8_t> quantized_weight_bytes(Env& env, QType t, int64_t rows, int64_t cols) {
  MEMRA_CHECK(has_quantizer(t), "no CPU quantizer for {}", qtype_name(t));
  const auto f = env.normal((size_t)(rows * cols));
  const size_t rb = *qtype_row_bytes(t, cols);
  std::vector<uint8_t> out(rb * rows);
  pool().parallel_for((size_t)rows, [&](size_t a, size_t b) {
    for (size_t r = a; r < b; ++r) quantize_row(t, f.data() + r * cols, out.data() + r * rb, cols);
  });
  return out;
}

std::vector<float> dequantize_rows(QType t, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
  const size_t rb = *qtype_row_bytes(t, cols);
  MEMRA_CHECK(bytes.size() >= rb * rows, "dequantize_rows: {} bytes for {} rows of {}", bytes.size(), rows, rb);
  std::vector<float> out((size_t)(rows * cols));
  pool().parallel_for((size_t)rows, [&](size_t a, size_t b) {
    for (size_t r = a; r < b; ++r) dequantize_row(t, bytes.data() + r * rb, out.data() + r * cols, cols);
  });
  return out;
}

std::vector<double> matmul_f64(const std::vector<float>& w, const std::vector<float>& x, int64_t n, int64_t k,
                               int64_t m) {
  std::vector<double> y((size_t)(m * n));
  pool().parallel_for((size_t)n, [&](size_t a, size_t b) {
    for (size_t r = a; r < b; ++r) {
      const float* wr = w.data() + r * k;
      for (int64_t j = 0; j < m; ++j) {
        const float* xj = x.data() + j * k;
        double s = 0;
        for (int64_t i = 0; i < k; ++i) s += (double)wr[i] * (double)xj[i];
        y[(size_t)j * n + r] = s;
      }
    }
  }, 16);
  return y;
}

void q8_1_to_q8s(const std::vector<uint8_t>& blocks, int64_t m, int64_t k, std::vector<int8_t>& xq,
                 std::vector<float>& xds) {
  xq.assign((size_t)(m * k), 0);
  xds.assign((size_t)(m * (k / 32) * 2), 0.f);
  cuda::sp::q8_1_to_q8s(blocks.data(), m, k, xq.data(), xds.data(), [](uint16_t h) { return fp16_to_f32(h); });
}

void q8_0_blocks_to_planes(const uint8_t* blocks, int row_elems, uint8_t* planes) {
  for (int b = 0; b < row_elems / 32; ++b) {
    std::memcpy(planes + 32 * b, blocks + 34 * b + 2, 32);
    std::memcpy(planes + row_elems + 2 * b, blocks + 34 * b, 2);
  }
}

}  // namespace memra::kc
