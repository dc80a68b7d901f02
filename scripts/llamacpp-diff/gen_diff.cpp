// memra's CPU oracle against llama.cpp on greedy generation with a stories260K model, the way the
// reference's generate.jsonl was made (a third of its prompts are held back): llama.cpp with its
// default CPU settings (F16 KV cache, flash attention auto, n_ctx 256, 2 threads, the prompt in one
// decode, then one token per decode, 64 greedy tokens), memra with tests/engine's Stories260K rig
// (F32 KV cache, exact attention; activations quantized for the Q8_0 / Q4_0 files). Prompts are
// random sentences from a small story vocabulary. Reports, per prompt, the first step where the
// greedy ids differ and llama.cpp's top-2 margin there. Built and run by scripts/llamacpp-diff.sh.
// A prompt "fails" as tests/engine's Stories260K tests judge it when the ids differ before the first
// step whose llama.cpp margin is below the test's tolerance (0 for F32 / F16, 0.1 quantized).
// Usage: gen_diff MODEL.gguf [prompts] [--quant] [--kv-f16-fa]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/session.h"
#include "gguf/gguf.h"
#include "diff_util.h"
#include "llama.h"
#include "tokenizer/tokenizer.h"

using namespace memra;

namespace {
using llamacpp_diff::argmax;
using llamacpp_diff::margin;
const char* kWords[] = {"Once", "upon", "a", "time", "there", "was", "little", "girl", "boy", "named", "Lily", "Tim",
                        "She", "He", "liked", "to", "play", "with", "her", "his", "toys", "in", "the", "park", "One",
                        "day", "saw", "big", "red", "ball", "dog", "cat", "tree", "and", "happy", "sad", "went",
                        "home", "mom", "said", "\"", ".", ",", "!", "?", "sun", "sky", "friend", "they", "had", "fun"};
}  // namespace

int main(int argc, char** argv) {
  const std::string path = argv[1];
  const int prompts = argc > 2 ? std::atoi(argv[2]) : 50;
  bool quant = false, f16fa = false;
  for (int i = 3; i < argc; ++i) {
    quant |= std::string(argv[i]) == "--quant";
    f16fa |= std::string(argv[i]) == "--kv-f16-fa";
  }
  const double tol = quant ? 0.1 : 0.0;
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(path.c_str(), llama_model_default_params());
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int nv = llama_vocab_n_tokens(vocab);
  auto file = std::make_shared<const gguf::File>(gguf::File::open(path));
  backend::CpuBackendOptions bo;
  bo.threads = 2;
  bo.quantize_activations = quant;
  if (f16fa) {  // llama.cpp's default run: F16 cache, its flash-attention rounding, its f32 order
    bo.attention_numerics = backend::AttentionNumerics::GgmlFlashAttn;
    bo.f32_order = backend::F32Order::Ggml;
  }
  auto be = backend::make_cpu_backend(bo);
  std::mt19937 g(20261205);
  int diverged = 0, fails = 0;
  double min_div_margin = 1e9;
  for (int p = 0; p < prompts; ++p) {
    std::string text;
    const int nw = 1 + g() % 12;
    for (int i = 0; i < nw; ++i) text += (i ? " " : "") + std::string(kWords[g() % (sizeof(kWords) / sizeof(kWords[0]))]);
    std::vector<llama_token> ids(text.size() + 8);
    const int k = llama_tokenize(vocab, text.data(), (int32_t)text.size(), ids.data(), (int32_t)ids.size(), true, false);
    ids.resize(k);
    // llama.cpp twice: its default configuration (what generate.jsonl holds), and F32 KV with flash
    // attention off, whose first divergence from the first bounds the comparison as in the test
    // (first_divergence_vs_f32_kv_no_fa).
    auto run_llama = [&](bool defaults, std::vector<double>* margins) {
      const auto cp = llamacpp_diff::context_params(defaults);
      llama_context* ctx = llama_init_from_model(model, cp);
      llama_batch b = llama_batch_get_one(ids.data(), (int32_t)ids.size());
      llama_decode(ctx, b);
      std::vector<int32_t> out;
      for (int step = 0; step < 64; ++step) {
        const float* l = llama_get_logits_ith(ctx, -1);
        int32_t id = argmax(l, nv);
        if (margins) margins->push_back(margin(l, nv));
        out.push_back(id);
        llama_batch b1 = llama_batch_get_one(&id, 1);
        llama_decode(ctx, b1);
      }
      llama_free(ctx);
      return out;
    };
    std::vector<double> margins;
    const std::vector<int32_t> ref = run_llama(true, &margins);
    const std::vector<int32_t> alt = run_llama(false, nullptr);
    int self_div = 64;
    for (int i = 0; i < 64; ++i)
      if (ref[i] != alt[i]) {
        self_div = i;
        break;
      }
    engine::SessionOptions so;
    so.kv = {256, f16fa ? QType::F16 : QType::F32, f16fa ? QType::F16 : QType::F32};
    engine::Session s(file, *be, so);
    std::vector<float> last = s.prefill(std::vector<int32_t>(ids.begin(), ids.end()), false);
    int first = -1;
    for (int step = 0; step < 64; ++step) {
      const int id = argmax(last.data(), nv);
      if (id != ref[step]) {
        first = step;
        break;
      }
      if (step + 1 < 64) last = s.decode(id);
    }
    if (first >= 0) {
      ++diverged;
      min_div_margin = std::min(min_div_margin, margins[first]);
      double before = 1e9;
      for (int i = 0; i < first; ++i) before = std::min(before, margins[i]);
      int upto = self_div;
      for (int i = 0; i < self_div; ++i)
        if (margins[i] < tol) {
          upto = i;
          break;
        }
      const bool fail = first < upto;
      fails += fail;
      std::printf("  prompt %d (%zu ids): greedy differs at step %d, llama.cpp margin there %.4f (smallest before %.4f)%s\n",
                  p, ids.size(), first, margins[first], before, fail ? "  <- the test would fail" : "");
    }
  }
  std::printf("%s%s%s: %d prompts x 64 greedy tokens, %d differ from llama.cpp, %d before a step under the margin %.2g%s\n",
              path.c_str(), quant ? " (activations quantized)" : "", f16fa ? " (F16 KV, ggml flash-attention numerics)" : "",
              prompts, diverged, fails, tol,
              diverged ? (", smallest llama.cpp margin at a first difference " + std::to_string(min_div_margin)).c_str() : "");
  llama_model_free(model);
  return 0;
}
