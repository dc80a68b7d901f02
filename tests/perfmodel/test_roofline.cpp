// The roofline accounting checked against figures stated in ../shared/anchors/llamacpp-h200.md
// (computed there independently of this code) on the tensor plans of the real shapes.
#include <gtest/gtest.h>

#include "perfmodel/roofline.h"
#include "synth/plan.h"
#include "synth/preset.h"

using namespace memra;

namespace {
std::vector<perf::TensorDesc> descs(const synth::Plan& p) {
  std::vector<perf::TensorDesc> v;
  for (const auto& t : p.tensors) v.push_back({t.name, t.type, t.ne, t.bytes()});
  return v;
}
}  // namespace

TEST(Roofline, MoeDecodeBytesMatchAnchor) {
  // Anchor: qwen3-30b-a3b Q8_0 reads 3,269,566,464 B per token (attention, router, norms, 8 of
  // 128 experts and output).
  const auto plan = synth::make_plan(synth::find_preset("qwen3-30b-a3b").dims, synth::Mix::Q8_0);
  perf::ModelShape s{48, 32, 4, 128, 128, 128, 8};
  const auto b = perf::decode_bytes(descs(plan), s, {}, 0);
  EXPECT_DOUBLE_EQ(b.weights, 3269566464.0);
  EXPECT_DOUBLE_EQ(b.kv, 0.0);
}

TEST(Roofline, DenseDecodeBytesAreFileMinusEmbedding) {
  // Anchor: tg128 255.53 tok/s is 0.249 of 4.8 TB/s on the bytes-read basis (file minus
  // token_embd): bytes = 0.249 * 4.8e12 / 255.53 = 4.677e9 (three significant digits).
  const auto plan = synth::make_plan(synth::find_preset("qwen3-8b").dims, synth::Mix::Q4_K_M);
  perf::ModelShape s{36, 32, 8, 128, 128, 0, 0};
  const auto b = perf::decode_bytes(descs(plan), s, {}, 0);
  EXPECT_NEAR(b.weights / 4.677e9, 1.0, 0.002);
  // token_embd (q4_K, 151936 x 4096) is the only tensor left out.
  EXPECT_DOUBLE_EQ(b.weights, 5021827072.0 - 151936.0 * 4096 / 256 * 144);
}

TEST(Roofline, KvBytesFollowTypesAndDepth) {
  perf::ModelShape s{36, 32, 8, 128, 128, 0, 0};
  // q8_0: 34 B per 32 elements; q5_1: 24 B per 32; 8 kv heads x 128 = 1024 elements per row.
  EXPECT_DOUBLE_EQ(perf::kv_row_bytes(QType::Q8_0, 1024), 1088.0);
  EXPECT_DOUBLE_EQ(perf::kv_row_bytes(QType::Q5_1, 1024), 768.0);
  EXPECT_DOUBLE_EQ(perf::kv_row_bytes(QType::F16, 1024), 2048.0);
  const auto b = perf::decode_bytes({}, s, {QType::Q8_0, QType::Q5_1}, 4096);
  EXPECT_DOUBLE_EQ(b.kv, 4096.0 * 36 * (1088 + 768));
}

TEST(Roofline, PrefillFlopsMatchAnchorOrder) {
  // Anchor: pp512 at 10025 tok/s is "~150 TFLOP/s" on qwen3-8b: about 2 x 7.5e9 FLOPs per token.
  const auto plan = synth::make_plan(synth::find_preset("qwen3-8b").dims, synth::Mix::Q4_K_M);
  perf::ModelShape s{36, 32, 8, 128, 128, 0, 0};
  const double f = perf::prefill_flops(descs(plan), s, 512, 0);
  const double tflops = f / 512 * 10025 / 1e12;
  EXPECT_GT(tflops, 140);
  EXPECT_LT(tflops, 160);
  // Attention term from first principles: 36 layers x 32 heads x (128+128) x 2 x sum_{i=1..n} i.
  const double attn = 2.0 * 36 * 32 * 256 * (512.0 * 513 / 2);
  EXPECT_DOUBLE_EQ(f - perf::prefill_flops(descs(plan), s, 512, 0) + attn, attn);
  EXPECT_DOUBLE_EQ(perf::prefill_flops({}, s, 512, 0), attn);
}
