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

// Offsets of the f16 scale fields inside one block (GGUF format facts).
std::vector<int> f16_fields(QType t) {
  switch (t) {
    case QType::Q4_0: case QType::Q5_0: case QType::Q8_0: case QType::IQ4_NL: case QType::IQ4_XS:
      return {0};
    case QType::Q4_1: case QType::Q5_1: case QType::Q4_K: case QType::Q5_K:
      return {0, 2};
    case QType::Q2_K: return {80, 82};
    case QType::Q3_K: return {108};
    case QType::Q6_K: return {208};
    default:
      MEMRA_FAIL("kernel-check: no scale-field table for {}", qtype_name(t));
  }
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
  auto out = env.random_bytes((size_t)nblocks * tr.block_bytes);
  const auto fields = f16_fields(t);
  std::uniform_real_distribution<float> mag(1e-3f, 5e-2f);
  for (int64_t b = 0; b < nblocks; ++b)
    for (int off : fields) {
      const float v = (env.rng()() & 1 ? -1.f : 1.f) * mag(env.rng());
      const uint16_t h = f32_to_fp16(v);
      std::memcpy(&out[(size_t)b * tr.block_bytes + off], &h, 2);
    }
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

}  // namespace memra::kc
