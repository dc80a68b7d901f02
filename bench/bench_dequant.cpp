// CPU dequantize throughput per type (lib/quant reference path): 16 rows of 4096 elements per
// iteration. bytes_per_second counts the quantized bytes read; the "out" counter the f32 bytes
// written. Rows come from our quantizer on N(0,1) data, or (types without one) from the ggml
// reference rows in ../shared/reference/quant tiled to 4096.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>
#include <vector>

#include "quant/quant.h"
#include "tests/quant/ref_rows.h"

namespace {

constexpr int64_t kRowLen = 4096, kRows = 16;

std::vector<uint8_t> make_rows(memra::QType t, std::string* why) {
  const uint64_t row_bytes = *memra::qtype_row_bytes(t, kRowLen);
  std::vector<uint8_t> data(row_bytes * kRows);
  if (memra::has_quantizer(t)) {
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(kRowLen);
    for (int64_t r = 0; r < kRows; ++r) {
      for (auto& v : x) v = nd(rng);
      memra::quantize_row(t, x.data(), data.data() + r * row_bytes, kRowLen);
    }
    return data;
  }
  const auto dir = memra::test::ref_quant_dir();
  if (!std::filesystem::exists(dir)) {
    *why = "no quantizer and no reference rows at " + dir.string();
    return {};
  }
  const auto rows = memra::test::load_ref_rows(std::string(memra::qtype_name(t)));
  size_t off = 0, k = 0;
  while (off < data.size()) {  // tile the 1024-element reference rows
    const auto& q = rows[k++ % rows.size()].quant;
    const size_t n = std::min(q.size(), data.size() - off);
    std::memcpy(data.data() + off, q.data(), n);
    off += n;
  }
  return data;
}

void BM_Dequantize(benchmark::State& state, memra::QType t) {
  std::string why;
  const auto data = make_rows(t, &why);
  if (data.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const uint64_t row_bytes = *memra::qtype_row_bytes(t, kRowLen);
  std::vector<float> out(kRowLen * kRows);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r)
      memra::dequantize_row(t, data.data() + r * row_bytes, out.data() + r * kRowLen, kRowLen);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed((int64_t)state.iterations() * (int64_t)data.size());
  state.counters["out"] = benchmark::Counter((double)state.iterations() * kRows * kRowLen * 4,
                                             benchmark::Counter::kIsRate,
                                             benchmark::Counter::kIs1000);
}

const int kRegistered = [] {
  for (const auto& tr : memra::kQTypeTable) {
    if (!memra::has_dequantizer(tr.type)) continue;
    benchmark::RegisterBenchmark(("dequantize/" + std::string(tr.name)).c_str(), BM_Dequantize,
                                 tr.type);
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
