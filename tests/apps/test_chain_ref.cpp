// rp-q4-probe --chain's CPU side (apps/rp-q4-probe/chain_ref.h, kernels/matvec_rp/chain_persist.h):
// the page layout the GPU kernel streams and the f64 oracle its outputs are checked against. The
// oracle's nibble convention is tied to the project's Q4_0 decoder (lib/quant, gated by llama.cpp's
// quantization vectors), so a kernel and an oracle that agreed on a wrong order could not pass.
#include <gtest/gtest.h>

#include <array>
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

// Q4_0 block h (at a row of `cols` columns) as GGUF's 18 bytes through the project's decoder.
std::array<float, 32> decoded_q4_0(uint64_t h, int64_t cols) {
  uint8_t gguf[18];
  const uint16_t dbits = block_scale_bits(h, cols);
  std::memcpy(gguf, &dbits, 2);
  for (int w = 0; w < 4; ++w) {
    const uint32_t v = block_word(h, w);
    std::memcpy(gguf + 2 + 4 * w, &v, 4);
  }
  std::array<float, 32> wf{};
  dequantize_row(QType::Q4_0, gguf, wf.data(), 32);
  return wf;
}

// Calls place(layer, wm, mat, row, unit) for every `unit_cols`-column unit of every weight row; the
// byte ranges it returns ({offset, length}) must cover the chain's weight buffer exactly once.
template <class Place>
void expect_one_place_each(const Dims& d, int64_t unit_cols, Place place) {
  const uint64_t total = (uint64_t)d.n_layers * layer_bytes(d);
  std::vector<uint8_t> uses(total, 0);
  for (int layer = 0; layer < d.n_layers; ++layer)
    for (int wm = 0; wm < kWMats; ++wm) {
      const int mat = wm_mat(wm);
      for (int64_t r = 0; r < mat_rows(d, mat); ++r)
        for (int64_t u = 0; u < mat_cols(d, mat) / unit_cols; ++u)
          for (const auto& [off, len] : place(layer, wm, mat, r, u)) {
            ASSERT_LE(off + len, total);
            for (uint64_t i = 0; i < len; ++i) ++uses[off + i];
          }
    }
  for (uint64_t i = 0; i < total; ++i) ASSERT_EQ(uses[i], 1) << "byte " << i;
}

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

TEST(ChainLayout, EveryWeightByteHasOnePlace) {
  const Dims d = small_dims();
  int64_t misaligned = 0;
  expect_one_place_each(d, 32, [&](int layer, int wm, int, int64_t r, int64_t b) {
    const uint64_t q = block_qs_offset(d, layer, wm, r, b);
    misaligned += q % 16 != 0;  // a block's quants must be one 16-byte load
    return Ranges{{q, 16}, {block_d_offset(d, layer, wm, r, b), 2}};
  });
  EXPECT_EQ(misaligned, 0);
}

TEST(ChainLayout, EveryQ4KSuperBlockHasOnePlace) {
  const Dims d = small_dims();
  int64_t misplaced = 0;
  expect_one_place_each(d, 256, [&](int layer, int wm, int mat, int64_t r, int64_t u) {
    const uint64_t pg = superblock_page_offset(d, layer, wm, r, u);
    // In the task's page where the kernel reads it (page u / 4; the GLU's gate and up alternate).
    int64_t t = (int64_t)layer * layer_tasks(d) + r / kTaskRows;
    for (int m = 0; m < mat; ++m) t += mat_tasks(d, m);
    const Task k = task_at(d, t);
    misplaced += k.mat != mat || pg < k.w_off ||
                 (pg - k.w_off) != (uint64_t)(mat == kGlu ? 2 * (u / 4) + (wm == kWUp ? 1 : 0) : u / 4) * kPageBytes;
    const int rr = (int)(r % kTaskRows), sb = (int)(u % 4);
    Ranges out{{pg + q4k_header_page_offset(rr, sb), (uint64_t)kQ4KHeaderBytes}};
    for (int v = 0; v < 8; ++v) {
      const uint32_t o = q4k_unit_page_offset(rr, sb, v);
      // The quants in the row's 512 bytes, 16-byte units, the 8 units of a super-block in its own 128 bytes.
      misplaced += o % 16 != 0 || o / (kPageCols / 2) != (uint32_t)rr || o % (kPageCols / 2) / 128 != (uint32_t)sb;
      out.push_back({pg + o, 16});
    }
    return out;
  });
  EXPECT_EQ(misplaced, 0);
}

// The fragment loads of the tensor-core consumers: lanes (g, t) read word t of one block (Q4_0) or
// quant unit (Q4_K) of rows g = 0..7 of a row group; the 32 words must fall in 32 different banks.
TEST(ChainLayout, MmaFragmentLoadsHitEveryBankOnce) {
  for (int rg = 0; rg < 4; ++rg)
    for (int unit = 0; unit < kPageBlocks; ++unit) {
      uint32_t q40 = 0, q4k = 0;  // bank masks
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, t = lane & 3, r = 8 * rg + g;
        q40 |= 1u << (q4_0_word_offset(r, unit, t) / 4 % 32);
        q4k |= 1u << ((q4k_unit_page_offset(r, unit / 8, unit % 8) + 4 * t) / 4 % 32);
      }
      ASSERT_EQ(q40, 0xFFFFFFFFu) << "Q4_0 rows " << 8 * rg << ".. block " << unit;
      ASSERT_EQ(q4k, 0xFFFFFFFFu) << "Q4_K rows " << 8 * rg << ".. unit " << unit;
    }
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
                    (uint64_t)((r % kTaskRows) * (kPageCols / 2) + ((b % kPageBlocks) ^ (r % 8)) * 16));
        }
  }
  EXPECT_EQ(next, (uint64_t)d.n_layers * layer_bytes(d));
}

// Both schedules (ChainParams::split) as the kernel walks them (ItemIter, the kernel's own code): every
// page of every task exactly once over the grid, an item inside one task, a CTA's items in chain order;
// split: every CTA's share of a matrix within one page of every other's, and its pages contiguous bytes.
TEST(ChainLayout, ScheduleItemsCoverEveryPageOnce) {
  Dims real;  // qwen3-8b's shapes
  real.n_layers = 2;
  for (const Dims& d : {small_dims(), real})
    for (const bool split : {false, true})
      for (const int grid : {1, 3, 7, 264}) {
        const int64_t n_tasks = (int64_t)d.n_layers * layer_tasks(d);
        std::vector<std::vector<uint8_t>> seen((size_t)n_tasks);
        for (int64_t t = 0; t < n_tasks; ++t) seen[(size_t)t].assign((size_t)task_at(d, t).pages, 0);
        std::vector<int64_t> share_min(4 * d.n_layers, INT64_MAX), share_max(4 * d.n_layers, 0);
        for (int cta = 0; cta < grid; ++cta) {
          ItemIter items(cta);
          Item it;
          int last = -1;
          std::vector<int64_t> share(4 * d.n_layers, 0);
          uint64_t next_byte = 0;
          while (items.next(d, split, cta, grid, it)) {
            ASSERT_GE(it.t, 0);
            ASSERT_LT(it.t, n_tasks);
            const Task k = task_at(d, it.t);
            ASSERT_EQ(it.k.w_off, k.w_off);
            ASSERT_TRUE(0 <= it.pg0 && it.pg0 < it.pg1 && it.pg1 <= k.pages) << it.pg0 << ".." << it.pg1;
            const int m = 4 * k.layer + k.mat;
            ASSERT_GE(m, last) << "items out of chain order";
            if (split && m == last) {
              ASSERT_EQ(k.w_off + (uint64_t)it.pg0 * kPageBytes, next_byte) << "a share's pages are contiguous";
            }
            next_byte = k.w_off + (uint64_t)it.pg1 * kPageBytes;
            last = m;
            share[(size_t)m] += it.pg1 - it.pg0;
            for (int pg = it.pg0; pg < it.pg1; ++pg) ++seen[(size_t)it.t][(size_t)pg];
          }
          for (size_t m = 0; m < share.size(); ++m) {
            share_min[m] = std::min(share_min[m], share[m]);
            share_max[m] = std::max(share_max[m], share[m]);
          }
        }
        for (int64_t t = 0; t < n_tasks; ++t)
          for (uint8_t v : seen[(size_t)t]) ASSERT_EQ(v, 1) << "task " << t << " split " << split << " grid " << grid;
        if (split) {
          for (size_t m = 0; m < share_min.size(); ++m) EXPECT_LE(share_max[m] - share_min[m], 1) << "matrix " << m;
        }
      }
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
    const auto wf = decoded_q4_0(h, cols);
    int8_t x[32];
    for (auto& v : x) v = (int8_t)q8(rng);
    double want = 0;
    for (int j = 0; j < 32; ++j) want += (double)wf[j] * x[j];
    EXPECT_EQ((double)fp16_to_f32(dbits) * (double)block_dot(h, x), want) << "block " << i;
  }
}

// The lane terms the kernel computes (chain_persist.h, shared with the CUDA code) against f64 dots of
// the blocks the project's GGUF decoders give.
TEST(ChainRef, LaneTermsAreTheDecodersDots) {
  std::mt19937_64 rng(13);
  std::uniform_int_distribution<int> q8(-127, 127);
  for (int i = 0; i < 500; ++i) {
    const uint64_t h = block_hash(rng(), i % 3, i % kWMats, i * 37 % 4096, i % 16);
    int8_t xq[256];
    for (auto& v : xq) v = (int8_t)q8(rng);
    const float dx = std::ldexp(1.f + (float)(i % 7) / 8, -7 + i % 5);
    const auto words = [&](const int8_t* p, uint32_t out[8]) { std::memcpy(out, p, 32); };
    const auto sum = [&](const int8_t* p) {
      int s = 0;
      for (int j = 0; j < 32; ++j) s += p[j];
      return s;
    };
    // Q4_0: one block.
    {
      const uint16_t dbits = block_scale_bits(h, 4096);
      uint32_t w[4];
      for (int k = 0; k < 4; ++k) w[k] = block_word(h, k);
      const auto wf = decoded_q4_0(h, 4096);
      uint32_t x[8];
      words(xq, x);
      double want = 0, mag = 0;
      for (int j = 0; j < 32; ++j) {
        want += (double)wf[j] * xq[j] * dx;
        mag += std::fabs((double)wf[j] * xq[j] * dx);
      }
      EXPECT_NEAR(q4_0_term(w, dbits, x, dx, sum(xq)), want, 1e-6 * mag) << "Q4_0 block " << i;
    }
    // Q4_K: the 8 lanes of one super-block.
    {
      uint8_t sb[kQ4KBytes];
      superblock_bytes(h, sb);
      float wf[256];
      dequantize_row(QType::Q4_K, sb, wf, 256);
      uint32_t hdr[4], q[32];
      std::memcpy(hdr, sb, 16);
      std::memcpy(q, sb + 16, 128);
      const uint32_t sc[3] = {hdr[1], hdr[2], hdr[3]};
      for (int j = 0; j < 8; ++j) {
        uint32_t x[8];
        words(xq + 32 * j, x);
        double want = 0, mag = 0;
        for (int e = 0; e < 32; ++e) {
          want += (double)wf[32 * j + e] * xq[32 * j + e] * dx;
          mag += std::fabs((double)wf[32 * j + e] * xq[32 * j + e] * dx);
        }
        EXPECT_NEAR(q4_k_term(q + 8 * (j / 2), j, hdr[0], sc, x, dx, sum(xq + 32 * j)), want, 2e-6 * mag + 1e-30)
            << "Q4_K super-block " << i << " lane " << j;
      }
    }
  }
}

// mma.m16n8k32 .s8 as PTX defines its fragments (lane = 4 g + t: A rows g and g + 8 at k 4t..4t+3 in
// a0 / a1 and 16 + 4t.. in a2 / a3, B column g at k 4t.. in b0 and 16 + 4t.. in b1, C rows g and g + 8 at
// columns 2t, 2t + 1): every lane's operand words in, c += A B in every lane's C.
void emulate_mma_s8(const uint32_t a[32][4], const uint32_t b[32][2], int64_t c[32][4]) {
  const auto byte_of = [](uint32_t w, int j) { return (int)(int8_t)(uint8_t)(w >> (8 * j)); };
  int a_m[16][32] = {}, b_m[32][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    for (int j = 0; j < 4; ++j) {
      a_m[g][4 * t + j] = byte_of(a[lane][0], j);
      a_m[g + 8][4 * t + j] = byte_of(a[lane][1], j);
      a_m[g][16 + 4 * t + j] = byte_of(a[lane][2], j);
      a_m[g + 8][16 + 4 * t + j] = byte_of(a[lane][3], j);
      b_m[4 * t + j][g] = byte_of(b[lane][0], j);
      b_m[16 + 4 * t + j][g] = byte_of(b[lane][1], j);
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    for (int e = 0; e < 4; ++e) {
      const int row = g + 8 * (e / 2), col = 2 * t + (e % 2);
      for (int k = 0; k < 32; ++k) c[lane][e] += (int64_t)a_m[row][k] * b_m[k][col];
    }
  }
}

// The tensor-core consumers' operands (ChainParams::mma): one Q4_0 page in its swizzled layout, every
// warp share (2 row groups x 32 / BPW column groups), each lane's A and B words as the kernel forms them
// (q4_0_word_offset, mma_a_words, mma_b_words), put through mma.m16n8k32 as PTX defines its fragments
// (emulated here), must leave in lane (g, t) the exact integer dots of rows g and g + 8 with blocks 2t
// and 2t + 1 of the share, computed from the project's Q4_0 decoder; a swapped nibble half, word or row
// of the operands fails it.
TEST(ChainRef, MmaFragmentsGiveEachLaneItsBlockDots) {
  std::mt19937_64 rng(29);
  std::uniform_int_distribution<int> q8(-127, 127);
  const int64_t cols = 4096;
  std::vector<uint8_t> page(kPageQsBytes);
  std::vector<uint64_t> hash(kTaskRows * kPageBlocks);
  for (int r = 0; r < kTaskRows; ++r)
    for (int b = 0; b < kPageBlocks; ++b) {
      const uint64_t h = hash[(size_t)(r * kPageBlocks + b)] = block_hash(rng(), 0, 0, r, b);
      for (int t = 0; t < 4; ++t) {
        const uint32_t w = block_word(h, t);
        std::memcpy(&page[q4_0_word_offset(r, b, t)], &w, 4);
      }
    }
  int8_t xq[kPageCols];
  for (auto& v : xq) v = (int8_t)q8(rng);
  // The exact dot of row r's block b (its decoded weights / d + 8: the nibbles) with the activation.
  const auto want_dot = [&](int r, int b) {
    const uint64_t h = hash[(size_t)(r * kPageBlocks + b)];
    const auto wf = decoded_q4_0(h, cols);
    const float d = fp16_to_f32(block_scale_bits(h, cols));
    int s = 0;
    for (int j = 0; j < 32; ++j) s += ((int)std::lround(wf[(size_t)j] / d) + 8) * xq[32 * b + j];
    return s;
  };
  for (const int bpw : {8, 4})
    for (int rg = 0; rg < 2; ++rg)
      for (int qq = 0; qq < kPageBlocks / bpw; ++qq) {
        int64_t c[32][4] = {};
        for (int i = 0; i < bpw; ++i) {
          uint32_t a[32][4], b[32][2];  // the operands of MMA i from every lane
          for (int lane = 0; lane < 32; ++lane) {
            const int g = lane >> 2, t = lane & 3, r0 = rg * 16 + g, blk = qq * bpw + i;
            uint32_t w0, w1, xlo = 0, xhi = 0;
            std::memcpy(&w0, &page[q4_0_word_offset(r0, blk, t)], 4);
            std::memcpy(&w1, &page[q4_0_word_offset(r0 + 8, blk, t)], 4);
            mma_a_words(w0, w1, a[lane]);
            if (g < bpw) {  // the kernel's lanes of column g load block qq * bpw + g's words t and 4 + t
              std::memcpy(&xlo, xq + 32 * (qq * bpw + g) + 4 * t, 4);
              std::memcpy(&xhi, xq + 32 * (qq * bpw + g) + 16 + 4 * t, 4);
            }
            mma_b_words(g, i, xlo, xhi, b[lane]);
          }
          emulate_mma_s8(a, b, c);
        }
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          if (2 * t >= bpw) continue;  // (columns past the share: zero, unused)
          for (int e = 0; e < 4; ++e) {
            const int r = rg * 16 + g + 8 * (e / 2), b = qq * bpw + 2 * t + (e % 2);
            ASSERT_EQ(c[lane][e], want_dot(r, b)) << "bpw " << bpw << " rows " << rg << " group " << qq << " lane " << lane
                                                  << " c" << e;
          }
        }
      }
}

// The same for a Q4_K page (split planes, swizzled units): each lane's A words as the kernel's
// mma_page_q4k forms them (two MMAs per chunk from the same four words), B as for Q4_0, through the
// emulated MMA, then each lane's scaling of its two sub-blocks of rows g and g + 8 (q4_k_scaled with the
// rows' headers read from the page) must equal the f64 dot of the project's Q4_K decoder's weights with
// the activation block (d scale q - dmin min against dx q8).
TEST(ChainRef, MmaQ4KFragmentsGiveEachLaneItsSubBlockTerms) {
  std::mt19937_64 rng(31);
  std::uniform_int_distribution<int> q8(-127, 127);
  constexpr int kSbs = kPageCols / 256;
  std::vector<uint8_t> page(kPageBytes);
  std::vector<std::array<float, 256>> wf(kTaskRows * kSbs);
  for (int r = 0; r < kTaskRows; ++r)
    for (int sb = 0; sb < kSbs; ++sb) {
      // Random GGUF bytes (not the chain's generator, whose mins equal their scales) with normal f16 d, dmin.
      uint8_t gguf[kQ4KBytes];
      for (auto& v : gguf) v = (uint8_t)rng();
      const uint16_t dm[2] = {exact_f16_bits(std::ldexp(1.f + (float)(rng() % 64) / 64, -13 + (int)(rng() % 3))),
                              exact_f16_bits(std::ldexp(1.f + (float)(rng() % 64) / 64, -12 + (int)(rng() % 3)))};
      std::memcpy(gguf, dm, 4);
      dequantize_row(QType::Q4_K, gguf, wf[(size_t)(r * kSbs + sb)].data(), 256);
      std::memcpy(&page[q4k_header_page_offset(r, sb)], gguf, kQ4KHeaderBytes);
      for (int v = 0; v < 8; ++v) std::memcpy(&page[q4k_unit_page_offset(r, sb, v)], gguf + 16 + 16 * v, 16);
    }
  int8_t xq[kPageCols];
  for (auto& v : xq) v = (int8_t)q8(rng);
  float xd[kPageBlocks];
  int xs[kPageBlocks];
  for (int b = 0; b < kPageBlocks; ++b) {
    xd[b] = std::ldexp(1.f + (float)(b % 7) / 8, -9 + b % 5);
    xs[b] = 0;
    for (int j = 0; j < 32; ++j) xs[b] += xq[32 * b + j];
  }
  const auto word_at = [&](int r, int sb, int unit, int t) {
    uint32_t w;
    std::memcpy(&w, &page[q4k_unit_page_offset(r, sb, unit) + 4 * t], 4);
    return w;
  };
  for (const int bpw : {8, 4})
    for (int rg = 0; rg < 2; ++rg)
      for (int qq = 0; qq < kPageBlocks / bpw; ++qq) {
        const int blk0 = qq * bpw, sb = blk0 / 8;
        int64_t c[32][4] = {};
        for (int m = 0; m < bpw / 2; ++m)
          for (int h = 0; h < 2; ++h) {
            uint32_t a[32][4], b[32][2];
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane >> 2, t = lane & 3, r0 = rg * 16 + g, cu = 2 * ((blk0 & 7) / 2 + m);
              mma_a_words_q4k(word_at(r0, sb, cu, t), word_at(r0 + 8, sb, cu, t), word_at(r0, sb, cu + 1, t),
                              word_at(r0 + 8, sb, cu + 1, t), h, a[lane]);
              uint32_t xlo = 0, xhi = 0;
              if (g < bpw) {
                std::memcpy(&xlo, xq + 32 * (blk0 + g) + 4 * t, 4);
                std::memcpy(&xhi, xq + 32 * (blk0 + g) + 16 + 4 * t, 4);
              }
              mma_b_words(g, 2 * m + h, xlo, xhi, b[lane]);
            }
            emulate_mma_s8(a, b, c);
          }
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane >> 2, t = lane & 3;
          if (2 * t >= bpw) continue;
          for (int e = 0; e < 4; ++e) {
            const int r = rg * 16 + g + 8 * (e / 2), bi = blk0 + 2 * t + (e % 2), j = bi % 8;
            uint32_t hd[4];
            std::memcpy(hd, &page[q4k_header_page_offset(r, sb)], 16);
            const uint32_t sc[3] = {hd[1], hd[2], hd[3]};
            const float got = q4_k_scaled((int)c[lane][e], j, hd[0], sc, xd[bi], xs[bi]);
            double want = 0, mag = 0;
            for (int k = 0; k < 32; ++k) {
              const double v = (double)wf[(size_t)(r * kSbs + sb)][(size_t)(32 * j + k)] * xq[32 * bi + k] * xd[bi];
              want += v;
              mag += std::fabs(v);
            }
            ASSERT_NEAR(got, want, 2e-6 * mag + 1e-30)
                << "bpw " << bpw << " rows " << rg << " group " << qq << " lane " << lane << " c" << e;
          }
        }
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

// The probe's real shapes, two layers through the oracle: every matrix's outputs stay within a few
// orders of magnitude of 1 for both weight formats (the generated Q4_K rows once had a mean that
// grew the values ~75x per matrix), so 36 layers cannot overflow f32 or flush to zero.
TEST(ChainRef, LayersKeepTheirMagnitude) {
  const Dims d;  // qwen3-8b's shapes
  for (int wt : {(int)kQ4_0, (int)kQ4_K}) {
    std::vector<int8_t> xq((size_t)d.ffn, 0);
    std::vector<float> xd((size_t)d.ffn / 32, 0.f);
    std::mt19937_64 rng(17);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> x((size_t)d.hidden);
    for (auto& v : x) v = nd(rng);
    for (int64_t b = 0; b < d.hidden / 32; ++b) {
      const Q8Block q = quantize_block(&x[(size_t)(b * 32)], true);
      std::memcpy(&xq[(size_t)(b * 32)], q.q, 32);
      xd[(size_t)b] = q.d;
    }
    for (int layer = 0; layer < 2; ++layer)
      for (int mat = 0; mat < kMats; ++mat) {
        const auto y = ref_matrix(d, 1, layer, mat, xq.data(), xd.data(), wt);
        double ss = 0;
        for (double v : y) ss += v * v;
        const double rms = std::sqrt(ss / (double)y.size());
        EXPECT_GT(rms, 0.05) << "type " << wt << " layer " << layer << " mat " << mat;
        EXPECT_LT(rms, 50.0) << "type " << wt << " layer " << layer << " mat " << mat;
        std::vector<float> yf(y.begin(), y.end());
        for (int64_t b = 0; b < (int64_t)y.size() / 32; ++b) {
          const Q8Block q = quantize_block(&yf[(size_t)(b * 32)], unit_scale_output(mat));
          std::memcpy(&xq[(size_t)(b * 32)], q.q, 32);
          xd[(size_t)b] = q.d;
        }
      }
  }
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
          const auto wf = decoded_q4_0(h, cols);
          for (int j = 0; j < 32; ++j) dots[i] += (double)wf[j] * xd[(size_t)b] * xq[(size_t)(b * 32 + j)];
        }
      const double want = mat == kGlu ? dots[0] / (1 + std::exp(-dots[0])) * dots[1] : dots[0];
      EXPECT_NEAR(y[(size_t)r], want, 1e-12 * (1 + std::fabs(want))) << "mat " << mat << " row " << r;
    }
  }
}

}  // namespace
}  // namespace memra::chain
