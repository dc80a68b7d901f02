// KV cache storage: exact for f32, f16 rounding for f16, the lib/quant row codec for q8_0 / q5_1,
// and clear errors for overflow and bad geometry.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "backend_cpu/test_data.h"
#include "core/error.h"
#include "core/half.h"
#include "kv/kv.h"
#include "quant/quant.h"

namespace memra::kv {
namespace {

using testdata::randv;

KvShape shape2() {
  KvShape s;
  s.layers = {{2, 32, 32}, {2, 32, 16}};
  return s;
}

// Writes 5 positions at offset 3 of layer 1, reads them back and returns them with the input.
void roundtrip(QType tk, QType tv, std::vector<float>& k_in, std::vector<float>& v_in,
               std::vector<float>& k_out, std::vector<float>& v_out) {
  KvCache c(shape2(), {16, tk, tv});
  k_in = randv(5 * 64, 1);
  v_in = randv(5 * 32, 2);
  c.write(1, 3, 5, k_in.data(), 64, v_in.data(), 32);
  EXPECT_EQ(c.n_written(), 8);
  k_out.assign(5 * 64, 0.0f);
  v_out.assign(5 * 32, 0.0f);
  c.read_k(1, 3, 5, k_out.data());
  c.read_v(1, 3, 5, v_out.data());
}

TEST(KvCache, F32IsExact) {
  std::vector<float> ki, vi, ko, vo;
  roundtrip(QType::F32, QType::F32, ki, vi, ko, vo);
  EXPECT_EQ(ki, ko);
  EXPECT_EQ(vi, vo);
}

TEST(KvCache, F16RoundsToNearest) {
  std::vector<float> ki, vi, ko, vo;
  roundtrip(QType::F16, QType::F16, ki, vi, ko, vo);
  for (size_t i = 0; i < ki.size(); ++i) EXPECT_EQ(ko[i], fp16_to_f32(f32_to_fp16(ki[i])));
  for (size_t i = 0; i < vi.size(); ++i) EXPECT_EQ(vo[i], fp16_to_f32(f32_to_fp16(vi[i])));
}

TEST(KvCache, Q8_0KeysQ5_1ValuesUseTheRowCodec) {
  std::vector<float> ki, vi, ko, vo;
  roundtrip(QType::Q8_0, QType::Q5_1, ki, vi, ko, vo);
  // Expected: each position's row through quantize_row -> dequantize_row.
  std::vector<uint8_t> qb(*qtype_row_bytes(QType::Q8_0, 64));
  std::vector<float> ref(64);
  for (int p = 0; p < 5; ++p) {
    quantize_row(QType::Q8_0, ki.data() + p * 64, qb.data(), 64);
    dequantize_row(QType::Q8_0, qb.data(), ref.data(), 64);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(ko[(size_t)(p * 64 + i)], ref[(size_t)i]);
  }
  std::vector<uint8_t> vb(*qtype_row_bytes(QType::Q5_1, 32));
  std::vector<float> vref(32);
  for (int p = 0; p < 5; ++p) {
    quantize_row(QType::Q5_1, vi.data() + p * 32, vb.data(), 32);
    dequantize_row(QType::Q5_1, vb.data(), vref.data(), 32);
    for (int i = 0; i < 32; ++i) {
      EXPECT_EQ(vo[(size_t)(p * 32 + i)], vref[(size_t)i]);
      EXPECT_NEAR(vo[(size_t)(p * 32 + i)], vi[(size_t)(p * 32 + i)], 0.25);  // 5-bit step
    }
  }
}

TEST(KvCache, OverflowNamesTheContext) {
  KvCache c(shape2(), {8, QType::F32, QType::F32});
  auto k = randv(4 * 64, 1), v = randv(4 * 64, 2);
  try {
    c.write(0, 6, 4, k.data(), 64, v.data(), 64);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n_ctx=8"), std::string::npos) << e.what();
  }
}

TEST(KvCache, RowNotMultipleOfBlockIsAnError) {
  KvShape s;
  s.layers = {{1, 8, 8}};  // 8-element rows cannot hold a 32-element q8_0 block
  try {
    KvCache c(s, {16, QType::Q8_0, QType::F16});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Q8_0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_kv_type("q3_k"), Error);
  EXPECT_EQ(parse_kv_type("q5_1"), QType::Q5_1);
  EXPECT_EQ(parse_kv_type("F16"), QType::F16);
  // "auto": the GPU's K q8_0 / V q5_1, the CPU's f16 (llama.cpp's defaults on each side).
  EXPECT_EQ(resolve_kv_type("auto", false, true), QType::Q8_0);
  EXPECT_EQ(resolve_kv_type("auto", true, true), QType::Q5_1);
  EXPECT_EQ(resolve_kv_type("auto", false, false), QType::F16);
  EXPECT_EQ(resolve_kv_type("auto", true, false), QType::F16);
  EXPECT_EQ(resolve_kv_type("q4_0", true, true), QType::Q4_0);
  EXPECT_THROW(resolve_kv_type("q3_k", false, true), Error);
}

TEST(KvCache, TruncateForgetsLaterPositions) {
  KvCache c(shape2(), {16, QType::F32, QType::F32});
  auto k = randv(6 * 64, 1), v = randv(6 * 64, 2);
  c.write(0, 0, 6, k.data(), 64, v.data(), 64);
  c.truncate(2);
  EXPECT_EQ(c.n_written(), 2);
  EXPECT_THROW(c.truncate(-1), Error);
}

// A recurrent layer (no K/V rows, a state): zero at the start, counted per layer, kept by a
// truncate that forgets nothing, cleared by truncate(0), and a rollback to a middle position is
// an error (the state has no history).
TEST(KvCache, RecurrentStateCountsAndRefusesRollback) {
  KvShape s;
  s.layers = {{2, 32, 32}, {0, 0, 0, 10}};
  KvCache c(s, {16, QType::F32, QType::F32});
  EXPECT_TRUE(c.has_state());
  float* st = c.state(1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(st[i], 0.0f);
  EXPECT_THROW(c.state(0), Error);
  auto k = randv(4 * 64, 1), v = randv(4 * 64, 2);
  EXPECT_THROW(c.write(1, 0, 1, k.data(), 64, v.data(), 64), Error);
  c.write(0, 0, 4, k.data(), 64, v.data(), 64);
  st[3] = 1.5f;
  c.advance(1, 4);
  EXPECT_EQ(c.state_pos(1), 4);
  EXPECT_EQ(c.n_written(), 4);
  c.truncate(4);  // nothing to forget
  EXPECT_EQ(c.state(1)[3], 1.5f);
  EXPECT_THROW(c.truncate(2), Error);
  c.truncate(0);
  EXPECT_EQ(c.state(1)[3], 0.0f);
  EXPECT_EQ(c.state_pos(1), 0);
  EXPECT_EQ(c.n_written(), 0);
  KvShape bad;
  bad.layers = {{2, 32, 32, 10}};
  EXPECT_THROW(KvCache(bad, {16, QType::F32, QType::F32}), Error);
}

// Indexer keys (MiniMax-M3's sparse attention): f32 rows beside K/V whatever type_k is, counted per
// layer, written without gaps, forgotten by truncate like K/V.
TEST(KvCache, IndexKeysAreF32RowsTruncatedWithKv) {
  KvShape s;
  s.layers = {{2, 32, 32}, {2, 32, 32, 0, 8}};
  KvCache c(s, {16, QType::F16, QType::F16});
  EXPECT_EQ(c.bytes(), 2u * (2 * 16 * 64 * 2) + 16 * 8 * sizeof(float));
  auto ik = randv(5 * 8, 3);
  EXPECT_THROW(c.write_index(0, 0, 1, ik.data(), 8), Error);  // layer 0 keeps none
  EXPECT_THROW(c.index_keys(0), Error);
  EXPECT_THROW(c.write_index(1, 2, 1, ik.data(), 8), Error);  // a gap: positions 0, 1 unwritten
  EXPECT_THROW(c.write_index(1, 14, 3, ik.data(), 8), Error);  // past n_ctx
  c.write_index(1, 0, 5, ik.data(), 8);
  EXPECT_EQ(c.index_written(1), 5);
  EXPECT_EQ(c.index_written(0), 0);
  for (int i = 0; i < 5 * 8; ++i) EXPECT_EQ(c.index_keys(1)[i], ik[(size_t)i]);  // f32: exact
  auto k = randv(5 * 64, 1), v = randv(5 * 64, 2);
  c.write(1, 0, 5, k.data(), 64, v.data(), 64);
  c.truncate(3);
  EXPECT_EQ(c.index_written(1), 3);
  c.write_index(1, 3, 1, ik.data(), 8);
  EXPECT_EQ(c.index_written(1), 4);
  c.truncate(0);
  EXPECT_EQ(c.index_written(1), 0);
  KvShape bad;
  bad.layers = {{0, 0, 0, 10, 8}};  // recurrent and indexer keys
  EXPECT_THROW(KvCache(bad, {16, QType::F32, QType::F32}), Error);
}

}  // namespace
}  // namespace memra::kv
