// The v2 decode matvec's byte path replayed on the CPU (no GPU here): the same pass geometry and
// window arithmetic as the kernel (kernels/matvec/matvec_v2.cuh), granules copied from a weight
// buffer with padded rows and an unaligned base, chunks decoded from the window as each lane does.
// Checked against (a) the f64 product of lib/quant's dequantizations (an independent oracle) and
// (b) the v1 lane order (chunks l, l+32, ... decoded straight from the row), bit for bit: v2 is
// meant to change the load path only. On the GPU the same claims are gated by kernel-check
// --section matvec_v2 / matvec_v2_id.
#include <gtest/gtest.h>

#include "backend_cuda/warp_replay.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "matvec/matvec_v2.cuh"
#include "quant/quant.h"

using memra::QType;
namespace v2 = memra::cuda::v2;
namespace wq = memra::cuda::wq;

namespace {

// Offsets of the f16 scale fields (format facts), set to finite values in random blocks.
std::vector<int> f16_fields(QType t) {
  if (t == QType::Q4_K) return {0, 2};
  if (t == QType::Q6_K) return {208};
  return {0};
}

std::vector<uint8_t> random_row(QType t, int64_t k, std::mt19937_64& rng) {
  const auto& tr = memra::qtype_traits(t);
  std::vector<uint8_t> row((size_t)(k / tr.block_elems) * tr.block_bytes);
  for (auto& b : row) b = (uint8_t)(rng() & 0xFF);
  std::uniform_real_distribution<float> mag(1e-3f, 5e-2f);
  for (size_t b = 0; b < row.size(); b += tr.block_bytes)
    for (int off : f16_fields(t)) {
      const uint16_t h = memra::f32_to_fp16((rng() & 1 ? -1.f : 1.f) * mag(rng));
      std::memcpy(row.data() + b + off, &h, 2);
    }
  return row;
}

using memra::test::shuffle_sum;

template <QType T>
struct Replay {
  using G = v2::Geom<T>;
  using Tr = wq::WTraits<T>;

  // v2: one row through the windows of its passes; lo/hi bound the weight allocation.
  static float v2_row(const uint8_t* wr, int n_chunks, const uint8_t* lo, const uint8_t* hi, const uint8_t* x) {
    const int row_data = n_chunks / Tr::kSubs * Tr::kBytes;
    const int n_pass = (n_chunks + G::kPassChunks - 1) / G::kPassChunks;
    const int delta = v2::window_delta(wr);
    std::vector<float> acc(32, 0.f);
    for (int pass = 0; pass < n_pass; ++pass) {
      const uint8_t* start = wr + pass * G::kPassBytes;
      EXPECT_EQ(v2::window_delta(start), delta);
      const int len = v2::pass_len<T>(pass, row_data);
      const int n_gran = v2::window_granules(delta, len);
      EXPECT_LE(n_gran, G::kBufGranules);
      EXPECT_LE(n_gran, 32 * G::kLoadsPerLane);
      alignas(16) uint8_t buf[G::kBufGranules * 16];
      std::memset(buf, 0xA5, sizeof buf);  // bytes no granule fills must never be decoded
      const uint8_t* base = start - delta;
      for (int g = 0; g < n_gran; ++g)
        for (int i = 0; i < 16; ++i) {
          const uint8_t* p = base + 16 * g + i;
          buf[16 * g + i] = (p >= lo && p < hi) ? *p : 0;
        }
      const int c0 = pass * G::kPassChunks;
      const int nc = std::min(G::kPassChunks, n_chunks - c0);
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < G::kChunksPerLane; ++i) {
          const int c = lane + 32 * i;
          if (c >= nc) continue;
          wq::Chunk ch;
          Tr::decode(buf + delta + (c / Tr::kSubs) * Tr::kBytes, c % Tr::kSubs, ch);
          acc[lane] += wq::chunk_dot_q8_1<T>(ch, x + (size_t)(c0 + c) * 36);
        }
    }
    return shuffle_sum(acc);
  }

  // v1's order (kernels/matvec/matvec_q.cuh at m = 1): lane l, chunks l, l+32, ... from the row.
  static float v1_row(const uint8_t* wr, int n_chunks, const uint8_t* x) {
    std::vector<float> acc(32, 0.f);
    for (int lane = 0; lane < 32; ++lane)
      for (int c = lane; c < n_chunks; c += 32) {
        wq::Chunk ch;
        Tr::decode(wr + (size_t)(c / Tr::kSubs) * Tr::kBytes, c % Tr::kSubs, ch);
        acc[lane] += wq::chunk_dot_q8_1<T>(ch, x + (size_t)c * 36);
      }
    return shuffle_sum(acc);
  }

  static void run(int64_t n, int64_t k, int pad, int shift) {
    SCOPED_TRACE(::testing::Message() << memra::qtype_name(T) << " " << n << "x" << k << " pad " << pad
                                      << " shift " << shift);
    std::mt19937_64 rng(1234 + (uint64_t)k + 7 * (uint64_t)pad + 131 * (uint64_t)shift);
    const size_t dense = *memra::qtype_row_bytes(T, k), stride = dense + (size_t)pad;
    // 64 spare bytes before and after so that out-of-allocation granules read defined memory
    // here; the replay still zeroes them, as the kernel does.
    std::vector<uint8_t> mem(64 + shift + stride * (size_t)n + 64);
    for (auto& b : mem) b = (uint8_t)(rng() & 0xFF);
    const size_t aligned0 = (16 - reinterpret_cast<uintptr_t>(mem.data()) % 16) % 16;
    uint8_t* w = mem.data() + 32 + aligned0 + shift;
    std::vector<std::vector<uint8_t>> rows;
    for (int64_t r = 0; r < n; ++r) {
      rows.push_back(random_row(T, k, rng));
      std::memcpy(w + r * stride, rows.back().data(), dense);
    }
    const uint8_t* hi = w + (size_t)(n - 1) * stride + dense;
    std::vector<float> xf((size_t)k);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (auto& v : xf) v = nd(rng);
    std::vector<uint8_t> xq((size_t)(k / 32) * 36);
    memra::quantize_row(QType::Q8_1, xf.data(), xq.data(), k);
    std::vector<float> xd((size_t)k), wd((size_t)k);
    memra::dequantize_row(QType::Q8_1, xq.data(), xd.data(), k);
    double err2 = 0, ref2 = 0;
    for (int64_t r = 0; r < n; ++r) {
      const float got = v2_row(w + r * stride, (int)(k / 32), w, hi, xq.data());
      const float v1 = v1_row(rows[r].data(), (int)(k / 32), xq.data());
      uint32_t a, b;
      std::memcpy(&a, &got, 4);
      std::memcpy(&b, &v1, 4);
      EXPECT_EQ(a, b) << "row " << r << ": v2 " << got << " vs v1 order " << v1;
      memra::dequantize_row(T, rows[r].data(), wd.data(), k);
      double ref = 0;
      for (int64_t i = 0; i < k; ++i) ref += (double)wd[i] * (double)xd[i];
      err2 += ((double)got - ref) * ((double)got - ref);
      ref2 += ref * ref;
    }
    ASSERT_GT(ref2, 0.0);
    EXPECT_LE(std::sqrt(err2 / ref2), 1e-5);  // kernel-check's matvec tolerance
  }
};

}  // namespace

TEST(MatvecV2Replay, PassGeometryIsWholeGranules) {
  EXPECT_EQ(v2::Geom<QType::Q4_K>::kPassBytes, 2304);
  EXPECT_EQ(v2::Geom<QType::Q6_K>::kPassBytes, 3360);
  EXPECT_EQ(v2::Geom<QType::Q8_0>::kPassBytes, 4352);
  EXPECT_EQ(v2::Geom<QType::Q4_0>::kPassBytes, 2304);
  EXPECT_EQ(v2::Geom<QType::Q8_0>::kLoadsPerLane, 9);  // 273 granules with an unaligned start
  EXPECT_EQ(v2::window_granules(0, 2304), 144);
  EXPECT_EQ(v2::window_granules(12, 1260), 80);  // Q6_K k = 1536 row starting at 12 mod 16
}

// k = 1536: one partial pass (Q6_K rows of 1260 B start at every even offset mod 16);
// k = 14336: 3.5 passes; pad 6 walks the row starts through the offsets mod 16; shift 2 makes the
// first and last granule stick out of the allocation.
TEST(MatvecV2Replay, Q4_K) {
  for (auto [k, pad, shift] : {std::tuple{1536, 0, 0}, {14336, 0, 0}, {4096, 4, 0}, {4096, 0, 4}})
    Replay<QType::Q4_K>::run(37, k, pad, shift);
}
TEST(MatvecV2Replay, Q6_K) {
  for (auto [k, pad, shift] : {std::tuple{1536, 0, 0}, {14336, 0, 0}, {4096, 6, 0}, {1536, 0, 2}})
    Replay<QType::Q6_K>::run(37, k, pad, shift);
}
TEST(MatvecV2Replay, Q8_0) {
  for (auto [k, pad, shift] : {std::tuple{1536, 0, 0}, {14336, 0, 0}, {4096, 6, 0}, {1536, 0, 2}})
    Replay<QType::Q8_0>::run(37, k, pad, shift);
}
TEST(MatvecV2Replay, Q4_0) {
  for (auto [k, pad, shift] : {std::tuple{1536, 0, 0}, {14336, 0, 0}, {4096, 6, 0}, {1536, 0, 2}})
    Replay<QType::Q4_0>::run(37, k, pad, shift);
}
