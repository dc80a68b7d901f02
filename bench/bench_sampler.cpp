// The host sampler's cost per drawn token (memra::Sampler::sample on a row of logits): what sampled
// generation pays on the host per token when the row is copied back (run-gen without
// sample.on_backend; bench/notes/device-sampler.md). Vocabulary 151936 (qwen3) and 32000 (llama 2),
// the run-gen defaults (top_k 40, top_p 0.95, min_p 0.05, temperature 0.8), with penalties, and
// top_k off (the whole vocabulary ranked).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "sample/sampler.h"

namespace {

void BM_SamplerDraw(benchmark::State& st) {
  const int n_vocab = (int)st.range(0);
  memra::SamplerOptions o;
  o.seed = 1;
  o.top_k = (int32_t)st.range(1);
  if (st.range(2)) {
    o.repeat_penalty = 1.1f;
    o.presence_penalty = 0.3f;
  }
  std::vector<float> logits((size_t)n_vocab);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (auto& x : logits) x = nd(rng);
  memra::Sampler s(o);
  for (auto _ : st) {
    const int32_t id = s.sample(logits);
    s.accept(id);
    benchmark::DoNotOptimize(id);
  }
  st.counters["vocab"] = n_vocab;
}
// vocabulary, top_k (0: off), penalties
BENCHMARK(BM_SamplerDraw)
    ->Args({151936, 40, 0})
    ->Args({151936, 40, 1})
    ->Args({151936, 0, 0})
    ->Args({32000, 40, 0})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
