// CPU reference engine: decode and prefill throughput (tok/s) on a GGUF model.
//   bench_cpu_decode [--model=PATH] [--threads=N] [--quantize_activations=0|1] [benchmark flags]
// Default model: ../shared/models/stories260K.gguf. The decode benchmark appends one token per
// iteration after a 16-token prompt (KV f32), resetting before the context fills.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/session.h"
#include "gguf/gguf.h"

namespace {

std::string g_model = std::string(MEMRA_SHARED_DIR) + "/models/stories260K.gguf";
int g_threads = 2;
bool g_quant_act = false;

struct Rig {
  std::shared_ptr<const memra::gguf::File> file;
  std::unique_ptr<memra::backend::Backend> be;
  std::unique_ptr<memra::engine::Session> s;
  explicit Rig(int n_ctx) {
    file = std::make_shared<const memra::gguf::File>(memra::gguf::File::open(g_model));
    be = memra::backend::make_cpu_backend({g_threads, g_quant_act});
    memra::engine::SessionOptions o;
    o.kv = {n_ctx, memra::QType::F32, memra::QType::F32};
    s = std::make_unique<memra::engine::Session>(file, *be, o);
  }
};

void BM_Decode(benchmark::State& st) {
  Rig r(512);
  std::vector<int32_t> prompt(16);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = (int32_t)(1 + 17 * i % 200);
  r.s->prefill(prompt);
  int32_t tok = 1;
  for (auto _ : st) {
    if (r.s->n_past() >= 500) {
      st.PauseTiming();
      r.s->truncate(16);
      st.ResumeTiming();
    }
    auto l = r.s->decode(tok);
    tok = memra::engine::argmax(l);
    benchmark::DoNotOptimize(tok);
  }
  st.counters["tok/s"] = benchmark::Counter((double)st.iterations(), benchmark::Counter::kIsRate);
}

void BM_Prefill(benchmark::State& st) {
  Rig r(512);
  const int n = (int)st.range(0);
  std::vector<int32_t> prompt((size_t)n);
  for (int i = 0; i < n; ++i) prompt[(size_t)i] = 1 + 13 * i % 300;
  for (auto _ : st) {
    r.s->reset();
    benchmark::DoNotOptimize(r.s->prefill(prompt));
  }
  st.counters["tok/s"] = benchmark::Counter((double)st.iterations() * n, benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond)->MinTime(3.0)->UseRealTime();
BENCHMARK(BM_Prefill)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--model=", 8) == 0) g_model = argv[i] + 8;
    else if (std::strncmp(argv[i], "--threads=", 10) == 0) g_threads = std::atoi(argv[i] + 10);
    else if (std::strncmp(argv[i], "--quantize_activations=", 23) == 0) g_quant_act = argv[i][23] == '1';
    else rest.push_back(argv[i]);
  }
  int n = (int)rest.size();
  benchmark::Initialize(&n, rest.data());
  benchmark::AddCustomContext("model", g_model);
  benchmark::AddCustomContext("threads", std::to_string(g_threads));
  benchmark::AddCustomContext("quantize_activations", g_quant_act ? "1" : "0");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
