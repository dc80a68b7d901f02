// The kv_f16_fa_auto side of logits.jsonl (a third of its prompts are held back): llama.cpp in its
// default CPU configuration (F16 KV cache, flash attention auto, n_ctx 256, 2 threads) against the
// CPU oracle with tests/engine/test_llamacpp_fa.cpp's rig (F16 KV cache, activations quantized,
// attention GgmlFlashAttn, and Exact for comparison), on random prompts of a stories260K file:
// last-position max|diff|/max|ref| of both modes, how often GgmlFlashAttn is not the closer one,
// and last-position argmax differences (with llama.cpp's top-2 margin). Built and run by
// scripts/llamacpp-diff.sh. Usage: fa_diff MODEL.gguf [prompts] [len] [tol: count the prompts past it]
#include <algorithm>
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

using namespace memra;

using llamacpp_diff::argmax;
using llamacpp_diff::rel_err;

int main(int argc, char** argv) {
  const std::string path = argv[1];
  const int prompts = argc > 2 ? std::atoi(argv[2]) : 100;
  const int len = argc > 3 ? std::atoi(argv[3]) : 9;
  const double tol = argc > 4 ? std::atof(argv[4]) : 1e-2;
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(path.c_str(), llama_model_default_params());
  const int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
  auto file = std::make_shared<const gguf::File>(gguf::File::open(path));
  const bool ggml_order = argc > 5 && std::string(argv[5]) == "ggml_order";
  auto make_be = [&](backend::AttentionNumerics n) {
    backend::CpuBackendOptions bo;
    bo.threads = 2;
    bo.quantize_activations = true;
    bo.attention_numerics = n;
    if (n == backend::AttentionNumerics::GgmlFlashAttn && ggml_order) bo.f32_order = backend::F32Order::Ggml;
    return backend::make_cpu_backend(bo);
  };
  auto be_fa = make_be(backend::AttentionNumerics::GgmlFlashAttn);
  auto be_ex = make_be(backend::AttentionNumerics::Exact);
  std::mt19937 g(77);
  double worst_fa = 0, worst_ex = 0;
  int not_closer = 0, argmax_diff = 0;
  double min_margin_argmax_diff = 1e9;
  std::vector<double> fas;
  for (int p = 0; p < prompts; ++p) {
    std::vector<int32_t> toks(len);
    toks[0] = 1;  // BOS, as the records' prompt_ids
    for (int i = 1; i < len; ++i) toks[i] = 3 + (int)(g() % (uint32_t)(nv - 6));
    const auto cp = llamacpp_diff::context_params(true);
    llama_context* ctx = llama_init_from_model(model, cp);
    llama_batch b = llama_batch_get_one(toks.data(), len);
    llama_decode(ctx, b);
    std::vector<float> ref(llama_get_logits_ith(ctx, -1), llama_get_logits_ith(ctx, -1) + nv);
    llama_free(ctx);
    auto run = [&](backend::Backend& be) {
      engine::SessionOptions so;
      so.kv = {256, QType::F16, QType::F16};
      engine::Session s(file, be, so);
      return s.prefill(toks, false);
    };
    const auto fa = run(*be_fa), ex = run(*be_ex);
    const double efa = rel_err(ref.data(), fa.data(), nv), eex = rel_err(ref.data(), ex.data(), nv);
    fas.push_back(efa);
    worst_fa = std::max(worst_fa, efa);
    worst_ex = std::max(worst_ex, eex);
    not_closer += !(efa < eex);
    const int top = argmax(ref.data(), nv);
    if (argmax(fa.data(), nv) != top) {
      ++argmax_diff;
      min_margin_argmax_diff = std::min(min_margin_argmax_diff, llamacpp_diff::margin(ref.data(), nv));
    }
  }
  std::sort(fas.begin(), fas.end());
  const int past = (int)(fas.end() - std::upper_bound(fas.begin(), fas.end(), tol));
  std::printf("%s [kv_f16_fa_auto] %d prompts of %d ids: GgmlFlashAttn worst %.2e (median %.2e, 99th %.2e), Exact worst "
              "%.2e; GgmlFlashAttn past %.0e in %d, not closer in %d; argmax differs in %d (smallest llama.cpp margin there %.4f)\n",
              path.c_str(), prompts, len, worst_fa, fas[fas.size() / 2], fas[fas.size() * 99 / 100], worst_ex, tol, past, not_closer,
              argmax_diff, argmax_diff ? min_margin_argmax_diff : 0.0);
  llama_model_free(model);
  return 0;
}
