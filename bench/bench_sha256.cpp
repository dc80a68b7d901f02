// SHA-256 throughput: the portable block function against the x86 SHA extensions (the model-file
// hashes of receipts and gguf-synth's digest go through whichever this CPU has).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "core/sha256.h"

namespace {

void run(benchmark::State& st, void (*blocks)(uint32_t*, const uint8_t*, size_t)) {
  std::vector<uint8_t> data(1 << 22);
  for (size_t i = 0; i < data.size(); ++i) data[i] = (uint8_t)(i * 131 + 7);
  uint32_t h[8] = {};
  for (auto _ : st) {
    blocks(h, data.data(), data.size() / 64);
    benchmark::DoNotOptimize(h);
  }
  st.SetBytesProcessed((int64_t)st.iterations() * (int64_t)data.size());
}

void BM_Sha256Portable(benchmark::State& st) { run(st, memra::sha256_detail::blocks_portable); }
void BM_Sha256ShaExtensions(benchmark::State& st) {
  if (!memra::sha256_detail::shani_available()) {
    st.SkipWithError("no SHA extensions on this CPU");
    return;
  }
  run(st, memra::sha256_detail::blocks_shani);
}
BENCHMARK(BM_Sha256Portable)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Sha256ShaExtensions)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
