// CPU dequantize throughput per type (lib/quant reference path): 16 rows of 4096 elements per
// iteration. bytes_per_second counts the quantized bytes read; the "out" counter the f32 bytes
// written. Rows come from our quantizer on N(0,1) data, or (types without one) from the ggml
// reference rows in ../shared/reference/quant tiled to 4096.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <random>
#include <vector>

#include "quant/quant.h"
#include "quant/quantize_impl.h"
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

// Quantizer throughput (f32 bytes in per second): the cost gguf-synth pays per weight.
void BM_Quantize(benchmark::State& state, memra::QType t) {
  std::vector<float> x(kRowLen * kRows);
  uint64_t seed = 1;
  for (auto& v : x) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v = (float)((int64_t)(seed >> 33) % 2001 - 1000) / 1000.0f;
  }
  const uint64_t row_bytes = *memra::qtype_row_bytes(t, kRowLen);
  std::vector<uint8_t> out(row_bytes * kRows);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r) memra::quantize_row(t, x.data() + r * kRowLen, out.data() + r * row_bytes, kRowLen);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed((int64_t)state.iterations() * (int64_t)x.size() * 4);
}

// The Q4_K scale search itself: 8 scalar make_qkx2_quants calls vs one make_qkx2_quants_x8
// (same bytes, tests/quant/test_qkx2_x8.cpp), per 256-weight superblock.
void BM_Qkx2(benchmark::State& state, bool x8) {
  float x[256], w[8][32];
  uint64_t seed = 7;
  for (auto& v : x) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v = (float)((int64_t)(seed >> 33) % 2001 - 1000) / 1000.0f;
  }
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l) w[j][l] = 0.5f + std::fabs(x[32 * j + l]);
  uint8_t L[256], aux[32];
  float sc[8], mn[8];
  for (auto _ : state) {
    if (x8) {
      memra::quant_detail::make_qkx2_quants_x8(15, x, w, L, sc, mn, -1.f, 0.1f, 20);
    } else {
      for (int j = 0; j < 8; ++j)
        sc[j] = memra::quant_detail::make_qkx2_quants(32, 15, x + 32 * j, w[j], L + 32 * j, &mn[j], aux, -1.f,
                                                       0.1f, 20, false);
    }
    benchmark::DoNotOptimize(L);
    benchmark::DoNotOptimize(sc);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed((int64_t)state.iterations() * 256);
}

const int kRegistered = [] {
  benchmark::RegisterBenchmark("qkx2_search/scalar", BM_Qkx2, false);
  benchmark::RegisterBenchmark("qkx2_search/x8", BM_Qkx2, true);
  for (memra::QType t : {memra::QType::Q4_K, memra::QType::Q5_K, memra::QType::Q6_K, memra::QType::Q8_0})
    benchmark::RegisterBenchmark(("quantize/" + std::string(memra::qtype_name(t))).c_str(), BM_Quantize, t);
  for (const auto& tr : memra::kQTypeTable) {
    if (!memra::has_dequantizer(tr.type)) continue;
    benchmark::RegisterBenchmark(("dequantize/" + std::string(tr.name)).c_str(), BM_Dequantize,
                                 tr.type);
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
