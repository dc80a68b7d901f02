// minimax-m3 (MiniMax Sparse Attention) beyond the llama.cpp records: a 100-token sequence, where
// every query past position 11 attends to 3 of up to 25 key blocks, gives the same logits whether
// it runs as one prefill, in small chunks, as one-token decode steps after a shorter prefill, or
// again after a rollback (the indexer keys are cached and truncated with K/V).
#include <fmt/format.h>

#include <random>

#include "ref_util.h"

namespace memra {
namespace {

std::string model_path() { return testref::shared_dir() + "/models/synth/minimax-m3-f32.gguf"; }

std::vector<int32_t> tokens(int n) {
  std::mt19937 g(1234);
  std::uniform_int_distribution<int32_t> d(3, 1020);
  std::vector<int32_t> ids((size_t)n);
  for (auto& x : ids) x = d(g);
  return ids;
}

struct Rig2 {
  std::shared_ptr<const gguf::File> file;
  std::unique_ptr<backend::Backend> be;
};

Rig2 rig2() {
  Rig2 r;
  r.file = std::make_shared<const gguf::File>(gguf::File::open(model_path()));
  r.be = backend::make_cpu_backend({2, false});
  return r;
}

engine::SessionOptions opts(int max_batch) {
  engine::SessionOptions o;
  o.kv = {160, QType::F32, QType::F32};
  o.max_batch = max_batch;
  return o;
}

double rows_err(const std::vector<float>& got, const std::vector<float>& ref, size_t ref_row0, size_t nv) {
  double worst = 0;
  for (size_t r = 0; r < got.size() / nv; ++r)
    worst = std::max(worst, testref::rel_max_err(got.data() + r * nv, ref.data() + (ref_row0 + r) * nv, nv));
  return worst;
}

TEST(MinimaxM3, ChunkedPrefillEqualsOneBatch) {
  MEMRA_REQUIRE_SHARED();
  auto r = rig2();
  const auto ids = tokens(100);
  engine::Session one(r.file, *r.be, opts(512)), chunked(r.file, *r.be, opts(7));
  const auto a = one.prefill(ids, true), b = chunked.prefill(ids, true);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(rows_err(b, a, 0, 1024), 0.0);  // every row computed alone: the same bits
}

TEST(MinimaxM3, DecodeStepsEqualOnePrefill) {
  MEMRA_REQUIRE_SHARED();
  auto r = rig2();
  const auto ids = tokens(100);
  engine::Session one(r.file, *r.be, opts(512)), steps(r.file, *r.be, opts(512));
  const auto a = one.prefill(ids, true);
  steps.prefill(std::span<const int32_t>(ids).first(40));
  double worst = 0;
  for (size_t i = 40; i < ids.size(); ++i) {
    const auto l = steps.decode(ids[i]);
    worst = std::max(worst, testref::rel_max_err(l.data(), a.data() + i * 1024, 1024));
  }
  EXPECT_EQ(worst, 0.0);
}

TEST(MinimaxM3, RollbackRecomputesTheSame) {
  MEMRA_REQUIRE_SHARED();
  auto r = rig2();
  const auto ids = tokens(100);
  engine::Session s(r.file, *r.be, opts(512));
  const auto a = s.prefill(ids, true);
  s.truncate(53);  // mid-block: positions 53.. and their indexer keys forgotten
  std::vector<int32_t> other(ids.begin() + 53, ids.end());
  std::reverse(other.begin(), other.end());
  s.prefill(other);  // overwrite the tail with something else
  s.truncate(53);
  const auto b = s.prefill(std::span<const int32_t>(ids).subspan(53), true);
  EXPECT_EQ(rows_err(b, a, 53, 1024), 0.0);
}

// In llama.cpp's numerics (flash attention on, as the references ran) batches under 64 rows run
// ggml's one-chunk kernel row by row (64 rows or more: its tiled kernel, other bits), so chunks of 7
// and one-token decode steps give the same bits.
TEST(MinimaxM3, LlamaCppNumericsChunksEqualDecodeSteps) {
  MEMRA_REQUIRE_SHARED();
  const auto ids = tokens(100);
  auto make = [&](int max_batch) {
    testref::Rig r;
    r.file = std::make_shared<const gguf::File>(gguf::File::open(model_path()));
    backend::CpuBackendOptions bo;
    bo.threads = 2;
    bo.attention_numerics = backend::AttentionNumerics::GgmlFlashAttnF32Cache;
    bo.f32_order = backend::F32Order::Ggml;
    r.be = backend::make_cpu_backend(bo);
    r.session = std::make_unique<engine::Session>(r.file, *r.be, opts(max_batch));
    return r;
  };
  auto chunked = make(7), steps = make(512);
  const auto a = chunked.session->prefill(ids, true);
  const auto b = steps.session->prefill(std::span<const int32_t>(ids).first(40), true);
  EXPECT_EQ(rows_err(b, a, 0, 1024), 0.0);
  double worst = 0;
  for (size_t i = 40; i < ids.size(); ++i) {
    const auto l = steps.session->decode(ids[i]);
    worst = std::max(worst, testref::rel_max_err(l.data(), a.data() + i * 1024, 1024));
  }
  EXPECT_EQ(worst, 0.0);
}

}  // namespace
}  // namespace memra
