// The mmvs decode matvec replayed on the CPU (no GPU here): the kernel's own task code
// (kernels/matvec/mmvs_task.cuh, __host__ __device__) run over the split-plane copy that
// split_layout.h's repack makes from real GGUF rows, with the kernel's lane order (lane l: tasks
// l, l+32, ... summed in order) and warp shuffle tree. Checked against the f64 product of
// lib/quant's dequantizations of the original GGUF rows and of the q8_1 activations: a wrong
// byte offset, nibble, scale index or plane offset anywhere shows as a ~1e-2 error. On the GPU
// the same kernel is gated by kernel-check --section mmvs. Every task's dot is also replayed on
// the activation in the interleaved order (q8s_order.h, kernels.mmvs_act_il: GXI) and must give
// the same bits as the plain order (GX), and every Q6_K task's on the Q6_K variant of that order
// (kernels.mmvs_act_il_q6k: GXQ6).
#include <gtest/gtest.h>

#include "backend_cuda/warp_replay.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "matvec/mmvs_task.cuh"
#include "matvec/q8s_order.h"
#include "matvec/split_layout.h"
#include "quant/quant.h"

using memra::QType;
namespace sp = memra::cuda::sp;
namespace mm = memra::cuda::mmvs;

namespace {

using memra::test::shuffle_sum;

template <QType T>
void replay_layout(int64_t n, int64_t k, uint64_t seed, bool il, bool split, int max_warps = 4) {
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

  const auto pl = sp::plan(T, n, k, il);
  const auto L = sp::layout(T, il);
  ASSERT_GT(pl.blocks_per_row, 0);
  std::vector<uint8_t> packed;
  mm::Src src{w.data(), nullptr, nullptr};
  if (L.repacked) {
    packed.assign(pl.total_bytes, 0xA5);
    sp::repack(T, w.data(), rb, n, k, il, packed.data());
    src = {packed.data(), L.d_src >= 0 ? packed.data() + pl.d_offset : nullptr,
           L.aux_src >= 0 ? packed.data() + pl.aux_offset : nullptr};
  }
  std::vector<int8_t> xq((size_t)k);
  std::vector<float> xds((size_t)(k / 32) * 2);
  sp::q8_1_to_q8s(xq1.data(), 1, k, xq.data(), xds.data(), [](uint16_t h) { return memra::fp16_to_f32(h); });
  // The same row in the interleaved order, the unused bytes of a short last group junk.
  std::vector<int8_t> xil((size_t)memra::cuda::q8s::il_row_bytes(k), (int8_t)0x7B);
  memra::cuda::q8s::to_interleaved(xq.data(), k, xil.data());
  std::vector<int8_t> xq6((size_t)memra::cuda::q8s::il_row_bytes(k), (int8_t)0x3C);
  if constexpr (T == QType::Q6_K) memra::cuda::q8s::to_interleaved(xq.data(), k, xq6.data(), memra::cuda::q8s::Order::il_q6k);
  const auto* ds2 = reinterpret_cast<const float2*>(xds.data());
  int64_t il_mismatches = 0;

  // Independent oracle: f64 product of the dequantized GGUF rows and activations.
  std::vector<float> wd((size_t)(n * k)), xd((size_t)k);
  for (int64_t r = 0; r < n; ++r) memra::dequantize_row(T, w.data() + r * rb, wd.data() + r * k, k);
  memra::dequantize_row(QType::Q8_1, xq1.data(), xd.data(), k);

  const int n_tasks = (int)(k / 64);
  const mm::Geo g{pl.body_row_bytes, pl.blocks_per_row, n_tasks, il};
  double num = 0, den = 0;
  const int wpr = mm::warps_per_row(T, n_tasks, split, max_warps);
  for (int64_t r = 0; r < n; ++r) {
    // Sub-warp s: task groups s, s + wpr, ...; its lanes' sums, its xor tree, then the partials
    // in sub-warp order (the kernel's order).
    float got = 0.f;
    for (int s = 0; s < wpr; ++s) {
      std::vector<float> acc(32, 0.f);
      for (int lane = 0; lane < 32; ++lane)
        for (int t = lane + 32 * s; t < n_tasks; t += 32 * wpr) {
          mm::Task<T> task;
          task.load(src, r, t, g);
          const float d = task.dot(t, xq.data(), ds2);
          const float di = task.dot(t, mm::GXI{xil.data(), ds2});
          il_mismatches += std::memcmp(&d, &di, 4) != 0;
          if constexpr (T == QType::Q6_K) {
            const float d6 = task.dot(t, mm::GXQ6{xq6.data(), ds2});
            il_mismatches += std::memcmp(&d, &d6, 4) != 0;
          }
          acc[lane] += d;
        }
      got = s == 0 ? shuffle_sum(acc) : got + shuffle_sum(acc);
    }
    double ref = 0;
    for (int64_t i = 0; i < k; ++i) ref += (double)wd[r * k + i] * (double)xd[i];
    num += (got - ref) * (got - ref);
    den += ref * ref;
  }
  EXPECT_EQ(il_mismatches, 0) << memra::qtype_name(T) << " " << n << "x" << k << ": interleaved activation order";
  EXPECT_LT(std::sqrt(num / den), 1e-5) << memra::qtype_name(T) << " " << n << "x" << k << (il ? " interleaved" : " blocked")
                                        << " warps/row " << wpr;
}

template <QType T>
void replay(int64_t n, int64_t k, uint64_t seed) {
  for (bool split : {true, false}) {
    replay_layout<T>(n, k, seed, true, split);
    replay_layout<T>(n, k, seed, false, split);
  }
  replay_layout<T>(n, k, seed, true, true, 2);  // kernels.mmvs_split_max_warps = 2
  replay_layout<T>(n, k, seed, false, true, 2);
}

}  // namespace

TEST(MmvsReplay, Q4_K) {
  replay<QType::Q4_K>(5, 2304, 1);
  replay<QType::Q4_K>(3, 4096, 2);
  replay<QType::Q4_K>(2, 12288, 9);  // 4 warps per row
  replay<QType::Q8_0>(2, 8192, 11);   // 2
}
// Task<Q4_K>::dot takes the high nibbles' integer sum in place (k_quant_dot<true>: q & 0xF0 per byte,
// unsigned dp4a, one shift of the sum) instead of shifting each word first (k_quant_dot<false>, the
// form every earlier receipt ran): the same float bits on every task position, for random headers
// (finite d, dmin), every nibble and activation byte value (extremes included).
TEST(MmvsReplay, Q4kHighNibblesInPlaceSameBits) {
  std::mt19937_64 rng(77);
  std::uniform_int_distribution<uint32_t> u32;
  std::normal_distribution<float> nd(0.f, 1.f);
  const auto shifted = [](uint4 q, int shift, int) { return mm::mask4(q, shift, 0x0F0F0F0Fu); };
  int64_t mismatches = 0, checked = 0;
  for (int it = 0; it < 20000; ++it) {
    const int t = it & 255;  // task position: j = t & 3 picks the header's scale words
    uint4 h{0, u32(rng), u32(rng), u32(rng)};
    h.x = (uint32_t)memra::f32_to_fp16(0.01f * nd(rng)) | ((uint32_t)memra::f32_to_fp16(0.01f * nd(rng)) << 16);
    uint4 q0{u32(rng), u32(rng), u32(rng), u32(rng)}, q1{u32(rng), u32(rng), u32(rng), u32(rng)};
    if (it % 7 == 0) q0 = q1 = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};  // every nibble 15
    std::vector<int8_t> xq((size_t)(64 * (t + 1)));
    for (auto& v : xq) v = (int8_t)(u32(rng) & 0xFF);
    if (it % 5 == 0) std::fill(xq.begin(), xq.end(), (int8_t)-128);
    std::vector<float> xds((size_t)(4 * (t + 1)));
    for (auto& v : xds) v = nd(rng);
    const mm::GX x{xq.data(), reinterpret_cast<const float2*>(xds.data())};
    const float a = mm::k_quant_dot<true>(h, q0, q1, t, x, shifted);
    const float b = mm::k_quant_dot<false>(h, q0, q1, t, x, shifted);
    mismatches += std::memcmp(&a, &b, 4) != 0;
    ++checked;
  }
  EXPECT_EQ(mismatches, 0) << "of " << checked;
}

TEST(MmvsReplay, WarpsPerRow) {
  EXPECT_EQ(mm::warps_per_row(QType::Q4_K, 64, true), 1);   // 4096 weights
  EXPECT_EQ(mm::warps_per_row(QType::Q4_K, 80, true), 2);   // 5120
  EXPECT_EQ(mm::warps_per_row(QType::Q6_K, 128, true), 2);  // 8192
  EXPECT_EQ(mm::warps_per_row(QType::Q8_0, 192, true), 4);  // 12288
  EXPECT_EQ(mm::warps_per_row(QType::Q4_K, 400, true), 4);  // 25600
  EXPECT_EQ(mm::warps_per_row(QType::Q4_K, 400, false), 1);
  EXPECT_EQ(mm::warps_per_row(QType::Q8_0, 192, true, 2), 2);  // kernels.mmvs_split_max_warps = 2
  EXPECT_EQ(mm::warps_per_row(QType::Q6_K, 400, true, 2), 2);
  EXPECT_EQ(mm::warps_per_row(QType::Q4_K, 80, true, 2), 2);
  EXPECT_EQ(mm::warps_per_row(QType::Q4_K, 64, true, 2), 1);
  EXPECT_EQ(mm::warps_per_row(QType::Q4_0, 192, true), 1);  // measured slower for Q4_0
  // kernels.mmvs_split_min_k = 5184 (81 tasks): 5120-weight rows on one warp, longer rows as before.
  EXPECT_EQ(mm::warps_per_row(QType::Q4_K, 80, true, 2, 81), 1);
  EXPECT_EQ(mm::warps_per_row(QType::Q6_K, 81, true, 2, 81), 2);
  EXPECT_EQ(mm::warps_per_row(QType::Q8_0, 128, true, 2, 81), 2);
  EXPECT_EQ(mm::warps_per_row(QType::Q4_K, 400, true, 2, 81), 2);
  EXPECT_EQ(mm::warps_per_row(QType::Q4_K, 80, true, 2, 65), 2);  // the default
}
TEST(MmvsReplay, Q6_K) {
  replay<QType::Q6_K>(5, 2304, 3);
  replay<QType::Q6_K>(3, 5120, 4);  // 2 warps per row
  replay<QType::Q6_K>(2, 14336, 10);
}
TEST(MmvsReplay, Q8_0) {
  replay<QType::Q8_0>(5, 2304, 5);
  replay<QType::Q8_0>(3, 64, 6);
}
TEST(MmvsReplay, Q5_K) {
  replay<QType::Q5_K>(5, 2304, 12);
  replay<QType::Q5_K>(3, 5120, 13);   // 2 warps per row
  replay<QType::Q5_K>(2, 12288, 14);  // 4
}
TEST(MmvsReplay, IQ4_XS) {
  replay<QType::IQ4_XS>(5, 2304, 15);
  replay<QType::IQ4_XS>(3, 5120, 16);   // 2 warps per row
  replay<QType::IQ4_XS>(2, 12288, 17);  // 4
}
TEST(MmvsReplay, Q4_0) {
  replay<QType::Q4_0>(5, 2304, 7);
  replay<QType::Q4_0>(3, 4160, 8);
}

TEST(MmvsLayout, RepackKeepsEveryByte) {
  // The split copy holds exactly the GGUF bytes (no padding beyond the planes' alignment), each
  // byte once: every GGUF byte of a row is found in the copy, and the byte counts agree.
  for (bool il : {false, true})
    for (QType t : {QType::Q4_0, QType::Q8_0, QType::Q6_K, QType::Q4_K, QType::Q5_K, QType::IQ4_XS}) {
      const int64_t n = 7, k = 2304;  // 36 tasks: one full group of 32 and one of 4
      const auto L = sp::layout(t, il);
      const auto pl = sp::plan(t, n, k, il);
      const size_t rb = *memra::qtype_row_bytes(t, k);
      if (!L.repacked) {
        EXPECT_TRUE(t == QType::Q4_K && !il);
        EXPECT_EQ(pl.total_bytes, 0u);
        continue;
      }
      const size_t planes = (L.d_src >= 0 ? 2u : 0u) + (L.aux_src >= 0 ? (size_t)L.aux_bytes : 0u);
      EXPECT_EQ(pl.body_row_bytes * (size_t)n + (size_t)n * (size_t)pl.blocks_per_row * planes, rb * (size_t)n)
          << memra::qtype_name(t);
      EXPECT_EQ(pl.d_offset % 256, 0u);
      EXPECT_EQ(pl.aux_offset % 256, 0u);
      EXPECT_EQ(pl.body_row_bytes % 16, 0u);
      // A permutation: the copy's bytes outside the alignment gaps have the same value histogram
      // as the GGUF rows (position-dependent values), and as many of them.
      std::vector<uint8_t> src(rb * (size_t)n);
      for (size_t i = 0; i < src.size(); ++i) src[i] = (uint8_t)(i * 131 + 7);
      // Q5_K's qh bytes are carried as a bit permutation (q5k_hi_words, checked on its own
      // below): zero them in the source, so that its aux words are zero too and both sides count
      // the same 32 zero bytes per superblock.
      if (t == QType::Q5_K)
        for (size_t b = 0; b < src.size(); b += 176) std::memset(src.data() + b + 16, 0, 32);
      // IQ4_XS's qs nibbles are carried in another order (iq4xs_task_nibbles, checked below): make
      // every qs byte hold one nibble value twice, so that any nibble order keeps the byte multiset.
      if (t == QType::IQ4_XS)
        for (size_t b = 0; b < src.size(); b += 136)
          for (int i = 8; i < 136; ++i) src[b + i] = (uint8_t)(((src[b + 8] & 0xF) * 0x11));
      std::vector<uint8_t> dst(pl.total_bytes, 0);
      sp::repack(t, src.data(), rb, n, k, il, dst.data());
      std::vector<int> hist_src(256, 0), hist_dst(256, 0);
      for (uint8_t b : src) ++hist_src[b];
      size_t used = 0;
      for (size_t i = 0; i < dst.size(); ++i) {
        const bool gap = (L.aux_src >= 0 && i >= pl.body_row_bytes * (size_t)n && i < pl.aux_offset) ||
                         (L.d_src >= 0 && i >= (L.aux_src >= 0 ? pl.aux_offset + (size_t)n * pl.blocks_per_row * L.aux_bytes
                                                               : pl.body_row_bytes * (size_t)n) &&
                          i < pl.d_offset);
        if (gap) continue;
        ++hist_dst[dst[i]];
        ++used;
      }
      EXPECT_EQ(used, src.size()) << memra::qtype_name(t);
      EXPECT_EQ(hist_src, hist_dst) << memra::qtype_name(t) << (il ? " interleaved" : " blocked");
    }
  EXPECT_EQ(sp::plan(QType::Q3_K, 3, 4096, true).blocks_per_row, 0);  // no mmvs kernel
  EXPECT_EQ(sp::plan(QType::Q8_0, 3, 96, true).blocks_per_row, 0);    // k % 64
}

// Q5_K's high-bit words (split_layout.h q5k_hi_words): element 4 w + b of task j's first (second)
// half at bit 8 b + w of its u32, from bit 2 j (2 j + 1) of qh[4 w + b]; every qh bit exactly once.
TEST(MmvsLayout, Q5kHighBitWordsArePermutationOfQh) {
  std::mt19937_64 rng(21);
  for (int rep = 0; rep < 64; ++rep) {
    uint8_t qh[32], out[32];
    for (auto& b : qh) b = (uint8_t)rng();
    sp::q5k_hi_words(qh, out);
    int ones_in = 0, ones_out = 0;
    for (int i = 0; i < 32; ++i) {
      ones_in += __builtin_popcount(qh[i]);
      ones_out += __builtin_popcount(out[i]);
    }
    EXPECT_EQ(ones_in, ones_out);
    for (int j = 0; j < 4; ++j)
      for (int half = 0; half < 2; ++half) {
        uint32_t v;
        std::memcpy(&v, out + 8 * j + 4 * half, 4);
        for (int l = 0; l < 32; ++l) {
          const int w = l / 4, b = l % 4;
          ASSERT_EQ((v >> (8 * b + w)) & 1u, (uint32_t)(qh[l] >> (2 * j + half)) & 1u) << j << " " << half << " " << l;
          // the task code's view: bit 4 of byte b of q5k_hi(v, w) is element 4 w + b's bit
          ASSERT_EQ((mm::q5k_hi(v, w) >> (8 * b + 4)) & 1u, (v >> (8 * b + w)) & 1u);
        }
      }
  }
}

// IQ4_XS's re-laid indices (split_layout.h iq4xs_task_nibbles): nibble n of u32 w is element 8 w + n
// of the task, element e of sub-block s (s = e / 32, i = e % 32) coming from the low (i < 16) or high
// nibble of qs byte 16 s + i % 16; and the task code's lookup gives each element's codebook value.
TEST(MmvsLayout, Iq4xsTaskNibblesInElementOrder) {
  std::mt19937_64 rng(22);
  for (int rep = 0; rep < 64; ++rep) {
    uint8_t qs[32], out[32];
    for (auto& b : qs) b = (uint8_t)rng();
    sp::iq4xs_task_nibbles(qs, out);
    for (int w = 0; w < 8; ++w) {
      uint32_t v;
      std::memcpy(&v, out + 4 * w, 4);
      const uint4 vals = mm::iq4_vals(v, v);
      for (int n = 0; n < 8; ++n) {
        const int e = 8 * w + n, sb = e / 32, i = e % 32;
        const int want = i < 16 ? qs[16 * sb + i % 16] & 0xF : qs[16 * sb + i % 16] >> 4;
        ASSERT_EQ((int)((v >> (4 * n)) & 0xFu), want) << w << " " << n;
        const uint32_t word = n < 4 ? vals.x : vals.y;
        ASSERT_EQ((int)(int8_t)(word >> (8 * (n % 4))), (int)memra::cuda::wq::kIq4Codebook[want]) << w << " " << n;
      }
    }
  }
}

TEST(MmvsLayout, InterleavedChunksAreContiguousPerLoad) {
  // Chunk c of tasks 32g .. 32g + n - 1: 16-byte steps, one contiguous run per (group, chunk),
  // the runs tiling the row body exactly.
  for (int C : {2, 3, 4})
    for (int64_t n_tasks : {int64_t{24}, int64_t{36}, int64_t{64}}) {
      std::vector<int> hit((size_t)(n_tasks * C), 0);
      for (int64_t t = 0; t < n_tasks; ++t)
        for (int c = 0; c < C; ++c) {
          const size_t off = sp::il_chunk(t, c, C, n_tasks);
          ASSERT_EQ(off % 16, 0u);
          ASSERT_LT(off / 16, hit.size());
          ++hit[off / 16];
          if (t % 32) {
            EXPECT_EQ(off, sp::il_chunk(t - 1, c, C, n_tasks) + 16);
          }
        }
      for (int h : hit) EXPECT_EQ(h, 1);
    }
}

// The interleaved q8s order (q8s_order.h): every granule of a row lands on its own 16 bytes
// inside il_row_bytes(k), to_interleaved / from_interleaved are inverse, and granule c of the 32
// tasks of a group (one load instruction of a warp) is one contiguous 512-byte run.
// The Q6_K variant (kernels.mmvs_act_il_q6k): a permutation of the granules into the same padded
// row, in which granule qd of the 32 Q6_K tasks 32 g .. 32 g + 31 (mmvs_task.cuh q6k_granule) is
// one contiguous 512-byte run, and which round-trips.
TEST(Q8sOrder, Q6kVariantIsAPermutationWithContiguousWarpRuns) {
  namespace q8s = memra::cuda::q8s;
  for (int64_t k : {256, 2304, 4096, 5120, 12288, 25600}) {
    const int64_t bytes = q8s::il_row_bytes(k);
    std::vector<int> owner((size_t)bytes, -1);
    for (int u = 0; u < (int)(k / 16); ++u) {
      const int o = q8s::il_granule(u, q8s::Order::il_q6k);
      ASSERT_EQ(o % 16, 0);
      ASSERT_LE(o + 16, bytes) << "k " << k << " granule " << u;
      for (int b = 0; b < 16; ++b) {
        ASSERT_EQ(owner[(size_t)(o + b)], -1) << "k " << k << ": granules " << owner[(size_t)(o + b)] << " and " << u;
        owner[(size_t)(o + b)] = u;
      }
      for (int b = 0; b < 16; ++b) ASSERT_EQ(q8s::byte_of(16 * (int64_t)u + b, q8s::Order::il_q6k), o + b);
    }
    for (int t = 0; t < (int)(k / 64); ++t)  // granule qd of task t: where GXQ6 reads it
      for (int qd = 0; qd < 4; ++qd)
        ASSERT_EQ(q8s::il_granule(mm::q6k_granule(t, qd), q8s::Order::il_q6k), mm::il_task_byte(t, qd)) << "k " << k;
    for (int64_t g = 0; g < k / 2048; ++g)
      for (int qd = 0; qd < 4; ++qd) {
        const int start = q8s::il_granule(mm::q6k_granule((int)(32 * g), qd), q8s::Order::il_q6k);
        for (int l = 0; l < 32; ++l)
          ASSERT_EQ(q8s::il_granule(mm::q6k_granule((int)(32 * g + l), qd), q8s::Order::il_q6k), start + 16 * l);
      }
    std::vector<int8_t> plain((size_t)k), il((size_t)bytes, 0), back((size_t)k, 0);
    for (int64_t e = 0; e < k; ++e) plain[(size_t)e] = (int8_t)(e * 5 + 1);
    q8s::to_interleaved(plain.data(), k, il.data(), q8s::Order::il_q6k);
    q8s::from_interleaved(il.data(), k, back.data(), q8s::Order::il_q6k);
    EXPECT_EQ(plain, back) << "k " << k;
  }
}

TEST(Q8sOrder, InterleavedIsAPermutationWithContiguousWarpRuns) {
  namespace q8s = memra::cuda::q8s;
  for (int64_t k : {64, 2048, 2304, 4096, 5120, 25600}) {
    const int64_t bytes = q8s::il_row_bytes(k);
    EXPECT_EQ(bytes % 2048, 0);
    EXPECT_GE(bytes, k);
    EXPECT_LT(bytes - k, 2048);
    std::vector<int> owner((size_t)bytes, -1);
    for (int u = 0; u < (int)(k / 16); ++u) {
      const int o = q8s::il_granule(u);
      ASSERT_EQ(o % 16, 0);
      ASSERT_LE(o + 16, bytes) << "k " << k << " granule " << u;
      for (int b = 0; b < 16; ++b) {
        ASSERT_EQ(owner[(size_t)(o + b)], -1) << "k " << k << ": granules " << owner[(size_t)(o + b)] << " and " << u;
        owner[(size_t)(o + b)] = u;
      }
      for (int b = 0; b < 16; ++b) ASSERT_EQ(q8s::byte_of(16 * (int64_t)u + b, true), o + b);
      ASSERT_EQ(q8s::byte_of(16 * (int64_t)u + 3, false), 16 * (int64_t)u + 3);
    }
    for (int64_t g = 0; g < k / 2048; ++g)  // full groups: lane l's granule c at run start + 16 l
      for (int c = 0; c < 4; ++c) {
        const int start = q8s::il_granule((int)(4 * 32 * g + c));
        for (int l = 0; l < 32; ++l) ASSERT_EQ(q8s::il_granule((int)(4 * (32 * g + l) + c)), start + 16 * l);
      }
    std::vector<int8_t> plain((size_t)k), il((size_t)bytes, 0), back((size_t)k, 0);
    for (int64_t e = 0; e < k; ++e) plain[(size_t)e] = (int8_t)(e * 7 + 3);
    q8s::to_interleaved(plain.data(), k, il.data());
    q8s::from_interleaved(il.data(), k, back.data());
    EXPECT_EQ(plain, back) << "k " << k;
  }
}
