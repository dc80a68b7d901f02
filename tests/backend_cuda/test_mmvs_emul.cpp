// The mmvs decode matvec replayed on the CPU (no GPU here): the kernel's own task code
// (kernels/matvec/mmvs_task.cuh, __host__ __device__) run over the split-plane copy that
// split_layout.h's repack makes from real GGUF rows, with the kernel's lane order (lane l: tasks
// l, l+32, ... summed in order) and warp shuffle tree. Checked against the f64 product of
// lib/quant's dequantizations of the original GGUF rows and of the q8_1 activations: a wrong
// byte offset, nibble, scale index or plane offset anywhere shows as a ~1e-2 error. On the GPU
// the same kernel is gated by kernel-check --section mmvs.
#include <gtest/gtest.h>

#include "backend_cuda/warp_replay.h"

#include <cmath>
#include <random>
#include <vector>

#include "core/half.h"
#include "matvec/mmvs_task.cuh"
#include "matvec/split_layout.h"
#include "quant/quant.h"

using memra::QType;
namespace sp = memra::cuda::sp;
namespace mm = memra::cuda::mmvs;

namespace {

using memra::test::shuffle_sum;

template <QType T>
void replay(int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  // Realistic weights through the reference quantizer, and q8_1 activations.
  std::vector<float> wf((size_t)(n * k)), xf((size_t)k);
  for (auto& v : wf) v = nd(rng);
  for (auto& v : xf) v = nd(rng);
  const size_t rb = *memra::qtype_row_bytes(T, k);
  std::vector<uint8_t> w(rb * (size_t)n), xq1((size_t)(k / 32) * 36);
  for (int64_t r = 0; r < n; ++r) memra::quantize_row(T, wf.data() + r * k, w.data() + r * rb, k);
  memra::quantize_row(QType::Q8_1, xf.data(), xq1.data(), k);

  const auto pl = sp::plan(T, n, k);
  ASSERT_GT(pl.blocks_per_row, 0);
  std::vector<uint8_t> packed;
  const uint8_t *body = w.data(), *dpl = nullptr;
  if (sp::layout(T).repacked) {
    packed.assign(pl.total_bytes, 0xA5);
    sp::repack(T, w.data(), rb, n, k, packed.data());
    body = packed.data();
    dpl = packed.data() + pl.d_offset;
  }
  std::vector<int8_t> xq((size_t)k);
  std::vector<float> xds((size_t)(k / 32) * 2);
  sp::q8_1_to_q8s(xq1.data(), 1, k, xq.data(), xds.data(), [](uint16_t h) { return memra::fp16_to_f32(h); });

  // Independent oracle: f64 product of the dequantized GGUF rows and activations.
  std::vector<float> wd((size_t)(n * k)), xd((size_t)k);
  for (int64_t r = 0; r < n; ++r) memra::dequantize_row(T, w.data() + r * rb, wd.data() + r * k, k);
  memra::dequantize_row(QType::Q8_1, xq1.data(), xd.data(), k);

  const mm::Geo g{pl.body_row_bytes, pl.blocks_per_row};
  const int n_tasks = (int)(k / 64);
  double num = 0, den = 0;
  for (int64_t r = 0; r < n; ++r) {
    std::vector<float> acc(32, 0.f);
    for (int lane = 0; lane < 32; ++lane)
      for (int t = lane; t < n_tasks; t += 32) {
        mm::Task<T> task;
        task.load(body, dpl, r, t, g);
        acc[lane] += task.dot(t, xq.data(), reinterpret_cast<const float2*>(xds.data()));
      }
    const float got = shuffle_sum(acc);
    double ref = 0;
    for (int64_t i = 0; i < k; ++i) ref += (double)wd[r * k + i] * (double)xd[i];
    num += (got - ref) * (got - ref);
    den += ref * ref;
  }
  EXPECT_LT(std::sqrt(num / den), 1e-5) << memra::qtype_name(T) << " " << n << "x" << k;
}

}  // namespace

TEST(MmvsReplay, Q4_K) {
  replay<QType::Q4_K>(5, 2304, 1);
  replay<QType::Q4_K>(3, 4096, 2);
}
TEST(MmvsReplay, Q6_K) {
  replay<QType::Q6_K>(5, 2304, 3);
  replay<QType::Q6_K>(3, 5120, 4);
}
TEST(MmvsReplay, Q8_0) {
  replay<QType::Q8_0>(5, 2304, 5);
  replay<QType::Q8_0>(3, 64, 6);
}
TEST(MmvsReplay, Q4_0) {
  replay<QType::Q4_0>(5, 2304, 7);
  replay<QType::Q4_0>(3, 4160, 8);
}

TEST(MmvsLayout, RepackKeepsEveryByte) {
  // The split copy holds exactly the GGUF bytes (no padding beyond the d plane's alignment).
  for (QType t : {QType::Q4_0, QType::Q8_0, QType::Q6_K}) {
    const int64_t n = 7, k = 1024;
    const auto pl = sp::plan(t, n, k);
    const size_t gguf = *memra::qtype_row_bytes(t, k) * (size_t)n;
    EXPECT_EQ(pl.body_row_bytes * (size_t)n + (size_t)n * (size_t)pl.blocks_per_row * 2, gguf) << memra::qtype_name(t);
    EXPECT_EQ(pl.d_offset % 256, 0u);
    EXPECT_EQ(pl.body_row_bytes % 16, 0u);
  }
  EXPECT_EQ(sp::plan(QType::Q4_K, 3, 4096).total_bytes, 0u);  // used in place
  EXPECT_EQ(sp::plan(QType::Q5_K, 3, 4096).blocks_per_row, 0);  // no mmvs kernel
  EXPECT_EQ(sp::plan(QType::Q8_0, 3, 96).blocks_per_row, 0);    // k % 64
}
