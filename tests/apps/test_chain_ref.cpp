// rp-q4-probe --chain's CPU side (apps/rp-q4-probe/chain_ref.h, kernels/matvec_rp/chain_persist.h):
// the page layout the GPU kernel streams and the f64 oracle its outputs are checked against. The
// oracle's nibble convention is tied to the project's Q4_0 decoder (lib/quant, gated by llama.cpp's
// quantization vectors), so a kernel and an oracle that agreed on a wrong order could not pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "quant/quant.h"
#include "rp-q4-probe/chain_ref.h"

namespace memra::chain {
namespace {

Dims small_dims() {
  Dims d;
  d.n_layers = 2;
  d.hidden = 1024;
  d.qkv = 1088;  // not a multiple of a page's columns: rows are what it counts
  d.ffn = 2048;
  return d;
}

int wm_mat(int wm) { return wm <= kWO ? wm : wm == kWDown ? kDown : kGlu; }

TEST(ChainLayout, EveryWeightByteHasOnePlace) {
  const Dims d = small_dims();
  const uint64_t total = (uint64_t)d.n_layers * layer_bytes(d);
  std::vector<uint8_t> uses(total, 0);
  for (int layer = 0; layer < d.n_layers; ++layer)
    for (int wm = 0; wm < kWMats; ++wm) {
      const int mat = wm_mat(wm);
      for (int64_t r = 0; r < mat_rows(d, mat); ++r)
        for (int64_t b = 0; b < mat_cols(d, mat) / 32; ++b) {
          const uint64_t q = block_qs_offset(d, layer, wm, r, b), s = block_d_offset(d, layer, wm, r, b);
          ASSERT_LE(q + 16, total);
          ASSERT_LE(s + 2, total);
          ASSERT_EQ(q % 16, 0u) << "a block's quants must be one 16-byte load";
          for (int i = 0; i < 16; ++i) ++uses[q + i];
          for (int i = 0; i < 2; ++i) ++uses[s + i];
        }
    }
  for (uint64_t i = 0; i < total; ++i) ASSERT_EQ(uses[i], 1) << "byte " << i;
}

TEST(ChainLayout, TasksAreContiguousRunsOfTheirOwnPages) {
  const Dims d = small_dims();
  const int64_t n = (int64_t)d.n_layers * layer_tasks(d);
  uint64_t next = 0;
  for (int64_t t = 0; t < n; ++t) {
    const Task k = task_at(d, t);
    ASSERT_EQ(k.w_off, next) << "task " << t;
    const uint64_t end = k.w_off + (uint64_t)k.pages * kPageBytes;
    next = end;
    const int wms[2] = {k.mat == kGlu ? (int)kWGate : k.mat == kDown ? (int)kWDown : k.mat, (int)kWUp};
    for (int i = 0; i < (k.mat == kGlu ? 2 : 1); ++i)
      for (int64_t r = k.row_block * kTaskRows; r < (k.row_block + 1) * kTaskRows; ++r)
        for (int64_t b = 0; b < k.cols / 32; ++b) {
          const uint64_t q = block_qs_offset(d, k.layer, wms[i], r, b);
          ASSERT_GE(q, k.w_off);
          ASSERT_LT(q, end);
          // Page p of the task holds block b of row r where the kernel looks for it.
          const uint64_t page = (q - k.w_off) / kPageBytes;
          const int64_t kc = b / kPageBlocks;
          ASSERT_EQ(page, (uint64_t)(k.mat == kGlu ? 2 * kc + i : kc));
          ASSERT_EQ(q - k.w_off - page * kPageBytes,
                    (uint64_t)((r % kTaskRows) * (kPageCols / 2) + (b % kPageBlocks) * 16));
        }
  }
  EXPECT_EQ(next, (uint64_t)d.n_layers * layer_bytes(d));
}

TEST(ChainLayout, EveryTaskWaitsForTheMatrixItReads) {
  const Dims d = small_dims();
  for (int64_t t = 0; t < (int64_t)d.n_layers * layer_tasks(d); ++t) {
    const Task k = task_at(d, t);
    const int in = in_slot(k.layer, k.mat);
    if (k.dep < 0) {
      EXPECT_EQ(in, 0) << "only the first qkv reads the chain's input";
      continue;
    }
    EXPECT_LT(k.dep, 4 * k.layer + k.mat) << "a dependency must come earlier";
    EXPECT_EQ(in, 1 + k.dep) << "the slot read is the one the awaited counter completes";
    EXPECT_EQ(k.dep_count, (uint32_t)mat_tasks(d, k.dep % 4));
    EXPECT_GE(mat_rows(d, k.dep % 4), k.cols) << "the input has the columns the matrix reads";
  }
}

TEST(ChainRef, BlockDotIsTheQ4_0DecodersDot) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> q8(-127, 127);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t h = block_hash(rng(), i % 3, i % kWMats, i * 37 % 4096, i % 128);
    const int64_t cols = i % 2 ? 4096 : 12288;
    const uint16_t dbits = block_scale_bits(h, cols);
    ASSERT_EQ(f16_bits_to_float(dbits), fp16_to_f32(dbits));
    uint8_t gguf[18];
    std::memcpy(gguf, &dbits, 2);
    for (int w = 0; w < 4; ++w) {
      const uint32_t v = block_word(h, w);
      std::memcpy(gguf + 2 + 4 * w, &v, 4);
    }
    float wf[32];
    dequantize_row(QType::Q4_0, gguf, wf, 32);
    int8_t x[32];
    for (auto& v : x) v = (int8_t)q8(rng);
    double want = 0;
    for (int j = 0; j < 32; ++j) want += (double)wf[j] * x[j];
    EXPECT_EQ((double)fp16_to_f32(dbits) * (double)block_dot(h, x), want) << "block " << i;
  }
}

TEST(ChainRef, ScalesStayNormalAndNearTheirBase) {
  for (uint64_t i = 0; i < 100000; ++i) {
    const uint64_t h = mix64(i);
    for (int64_t cols : {4096, 12288}) {
      const float v = std::fabs(f16_bits_to_float(block_scale_bits(h, cols)));
      ASSERT_TRUE(std::isnormal(v));
      ASSERT_GE(v, cols > 4096 ? std::ldexp(1.f, -11) : std::ldexp(1.f, -10));
      ASSERT_LT(v, cols > 4096 ? std::ldexp(1.f, -8) : std::ldexp(1.f, -7));
    }
  }
}

TEST(ChainRef, QuantizeBlockFollowsTheRule) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int i = 0; i < 1000; ++i) {
    float y[32];
    const float scale = std::ldexp(1.f, i % 40 - 20);
    for (auto& v : y) v = nd(rng) * scale;
    const Q8Block b = quantize_block(y, false);
    const Q8Block u = quantize_block(y, true);
    EXPECT_EQ(std::memcmp(u.q, b.q, 32), 0);
    EXPECT_EQ(u.d, 1.f / 127.f);
    EXPECT_EQ(u.s, b.s);
    int32_t s = 0, qmax = 0;
    float amax = 0;
    for (int j = 0; j < 32; ++j) {
      s += b.q[j];
      qmax = std::max(qmax, std::abs((int)b.q[j]));
      amax = std::max(amax, std::fabs(y[j]));
      EXPECT_LE(std::fabs(b.q[j] * b.d - y[j]), 0.5f * b.d * (1 + 1e-5f)) << i << " " << j;
    }
    EXPECT_EQ(qmax, 127);
    EXPECT_EQ(b.d, amax / 127.f);
    EXPECT_EQ(b.s, s);
  }
  float zero[32] = {};
  const Q8Block z = quantize_block(zero, false);
  EXPECT_EQ(z.d, 0.f);
  EXPECT_EQ(z.s, 0);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(z.q[j], 0);
}

TEST(ChainRef, MatrixRowsAreTheirBlocksSums) {
  // ref_matrix against a plain dequantize-and-dot of the same rows (the GLU's SiLU(gate) * up too).
  const Dims d = small_dims();
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> q8(-127, 127);
  std::vector<int8_t> xq((size_t)d.ffn);
  std::vector<float> xd((size_t)d.ffn / 32);
  for (auto& v : xq) v = (int8_t)q8(rng);
  for (size_t b = 0; b < xd.size(); ++b) xd[b] = 0.01f * (float)(b % 7 + 1);
  for (int mat = 0; mat < kMats; ++mat) {
    const auto y = ref_matrix(d, 5, 1, mat, xq.data(), xd.data());
    const int64_t cols = mat_cols(d, mat);
    for (int64_t r : {(int64_t)0, mat_rows(d, mat) - 1}) {
      double dots[2] = {0, 0};
      const int wms[2] = {mat == kGlu ? (int)kWGate : mat == kDown ? (int)kWDown : mat, (int)kWUp};
      for (int i = 0; i < (mat == kGlu ? 2 : 1); ++i)
        for (int64_t b = 0; b < cols / 32; ++b) {
          const uint64_t h = block_hash(5, 1, wms[i], r, b);
          uint8_t gguf[18];
          const uint16_t dbits = block_scale_bits(h, cols);
          std::memcpy(gguf, &dbits, 2);
          for (int w = 0; w < 4; ++w) {
            const uint32_t v = block_word(h, w);
            std::memcpy(gguf + 2 + 4 * w, &v, 4);
          }
          float wf[32];
          dequantize_row(QType::Q4_0, gguf, wf, 32);
          for (int j = 0; j < 32; ++j) dots[i] += (double)wf[j] * xd[(size_t)b] * xq[(size_t)(b * 32 + j)];
        }
      const double want = mat == kGlu ? dots[0] / (1 + std::exp(-dots[0])) * dots[1] : dots[0];
      EXPECT_NEAR(y[(size_t)r], want, 1e-12 * (1 + std::fabs(want))) << "mat " << mat << " row " << r;
    }
  }
}

}  // namespace
}  // namespace memra::chain
