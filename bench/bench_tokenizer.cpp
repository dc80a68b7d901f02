// Tokenization throughput (MB/s of UTF-8 input) for SPM and BPE vocabularies on 1 MB of mixed
// text generated deterministically here: English prose, code, numbers, punctuation, accented
// Latin, Cyrillic, CJK and emoji, with newlines and runs of spaces.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string mixed_text(size_t bytes) {
  static const char* const kWords[] = {
      "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "model", "token", "engine",
      "memory", "bandwidth", "kernel", "throughput", "latency", "I'm", "they're", "don't", "we'll",
      "Hello", "World", "GPU", "H200", "llama.cpp", "café", "naïve", "Äpfel", "über", "Straße",
      "привет", "мир", "日本語", "中文", "한국어", "🙂", "👋🏽", "🇺🇸", "ελληνικά", "مرحبا"};
  static const char* const kCode[] = {
      "for (int i = 0; i < n; ++i) {\n", "  x[i] += y[i] * 2.5f;\n", "}\n", "def f(a, b):\n",
      "    return a ** b\n", "if (ptr == nullptr) return -1;\n", "#include <vector>\n",
      "std::vector<int32_t> ids;\n"};
  static const char* const kPunct[] = {".", ",", "!", "?", ";", ":", " -", " (", ")", "\"", "'", "..."};
  std::mt19937 rng(20261129);
  std::string s;
  s.reserve(bytes + 64);
  while (s.size() < bytes) {
    const unsigned r = rng() % 100;
    if (r < 70) {
      s += kWords[rng() % std::size(kWords)];
      s += (rng() % 8 == 0) ? kPunct[rng() % std::size(kPunct)] : "";
      s += (rng() % 16 == 0) ? "\n" : (rng() % 20 == 0 ? "   " : " ");
    } else if (r < 85) {
      s += std::to_string(rng() % 1000000);
      s += ' ';
    } else if (r < 95) {
      s += kCode[rng() % std::size(kCode)];
    } else {
      s += "\n\n\t";
    }
  }
  // keep the input valid UTF-8: cut at a character boundary
  size_t n = bytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s;
}

const std::string& text_1mb() {
  static const std::string t = mixed_text(1 << 20);
  return t;
}

const memra::tok::Tokenizer* load(const std::string& rel) {
  static std::vector<std::pair<std::string, std::unique_ptr<memra::tok::Tokenizer>>> cache;
  for (auto& [k, v] : cache)
    if (k == rel) return v.get();
  const std::filesystem::path p = std::filesystem::path(MEMRA_SHARED_DIR) / "models" / rel;
  if (!std::filesystem::exists(p)) return nullptr;
  const auto f = memra::gguf::File::open(p.string());
  cache.emplace_back(rel, std::make_unique<memra::tok::Tokenizer>(memra::tok::Tokenizer::from_gguf(f)));
  return cache.back().second.get();
}

void BM_Tokenize(benchmark::State& state, const std::string& rel) {
  const auto* tok = load(rel);
  if (!tok) {
    state.SkipWithError(("missing shared/models/" + rel).c_str());
    return;
  }
  const std::string& text = text_1mb();
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tok->tokenize(text, false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
  state.counters["MB/s"] = benchmark::Counter(static_cast<double>(text.size()) / 1e6,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Detokenize(benchmark::State& state, const std::string& rel) {
  const auto* tok = load(rel);
  if (!tok) {
    state.SkipWithError(("missing shared/models/" + rel).c_str());
    return;
  }
  const auto ids = tok->tokenize(text_1mb(), false, false);
  for (auto _ : state) {
    auto s = tok->detokenize(ids);
    benchmark::DoNotOptimize(s.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text_1mb().size()));
}

BENCHMARK_CAPTURE(BM_Tokenize, spm_llama, std::string("vocab/ggml-vocab-llama-spm.gguf"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenize, bpe_gpt2, std::string("vocab/ggml-vocab-gpt-2.gguf"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenize, bpe_deepseek_llm, std::string("vocab/ggml-vocab-deepseek-llm.gguf"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tokenize, bpe_qwen2_synth, std::string("synth/qwen3-f32.gguf"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Detokenize, spm_llama, std::string("vocab/ggml-vocab-llama-spm.gguf"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Detokenize, bpe_gpt2, std::string("vocab/ggml-vocab-gpt-2.gguf"))->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
