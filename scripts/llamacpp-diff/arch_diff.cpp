// memra's CPU oracle against llama.cpp (libllama, CPU) on a synth model: random prompts (100 tokens
// by default, the length of the records the reference holds back), every position's logits, then 16
// greedy steps teacher-forced with llama.cpp's tokens, with the settings of the reference records
// (n_ctx 256, F32 KV cache, flash attention off except minimax-m3) and of tests/engine's rig. The
// first prompt starts with seq33's tokens, so its first 33 rows can be compared with the reference
// file to show that this llama.cpp is the reference's (--dump). Built and run by
// scripts/llamacpp-diff.sh; not part of CI.
// Usage: arch_diff MODEL.gguf [--fa] [--len N] [--prompts N] [--gelu table|exact] [--order exact|ggml]
//                  [--quant] [--margin M] [--dump FILE]
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

namespace {

using llamacpp_diff::argmax;
using llamacpp_diff::rel_err;

struct Args {
  std::string model, dump;
  bool fa = false, quant = false, gelu_exact = false, ggml_order = false;
  int len = 100, prompts = 3;
  double margin = 0.05;  // quantized: argmax differences count only past this llama.cpp margin
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (s == "--fa") a.fa = true;
    else if (s == "--quant") a.quant = true;
    else if (s == "--len") a.len = std::stoi(next());
    else if (s == "--prompts") a.prompts = std::stoi(next());
    else if (s == "--gelu") a.gelu_exact = next() == "exact";
    else if (s == "--order") a.ggml_order = next() == "ggml";
    else if (s == "--margin") a.margin = std::stod(next());
    else if (s == "--dump") a.dump = next();
    else if (a.model.empty()) a.model = s;
    else { std::fprintf(stderr, "arch_diff: unknown argument '%s'\n", s.c_str()); return 2; }
  }
  if (a.model.empty() || a.len < 1 || a.len > 200) {
    std::fprintf(stderr, "usage: arch_diff MODEL.gguf [--fa] [--len 1..200] [--prompts N] [--gelu table|exact] "
                         "[--order exact|ggml] [--quant] [--margin M] [--dump FILE]\n");
    return 2;
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model* model = llama_model_load_from_file(a.model.c_str(), llama_model_default_params());
  if (!model) {
    std::printf("%s: llama.cpp cannot load it\n", a.model.c_str());
    return 1;
  }
  const int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
  auto file = std::make_shared<const gguf::File>(gguf::File::open(a.model));
  std::mt19937 g(424242);
  double worst_prompt = 0, worst_decode = 0, worst_last = 0;
  int prompts_diverged = 0, last_argmax_diffs = 0;
  for (int sq = 0; sq < a.prompts; ++sq) {
    static const int kSeq33[33] = {115, 727, 18,  546, 72,  132, 128, 939, 869, 141, 69,  983, 745, 331, 825, 915, 47,
                                   589, 87,  317, 447, 722, 902, 738, 619, 8,   789, 382, 550, 57,  944, 222, 383};
    std::vector<int32_t> toks(a.len);
    // ids 3 .. n_vocab - 4 (the synth files' control tokens sit at both ends); seq33 where it fits
    for (int i = 0; i < a.len; ++i)
      toks[i] = (sq == 0 && i < 33 && nv >= 1024) ? kSeq33[i] : 3 + (int)(g() % (uint32_t)(nv - 6));

    const auto cp = llamacpp_diff::context_params(false, a.fa);
    llama_context* ctx = llama_init_from_model(model, cp);
    llama_batch b = llama_batch_init(a.len, 0, 1);
    for (int i = 0; i < a.len; ++i) {
      b.token[i] = toks[i];
      b.pos[i] = i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = 1;
    }
    b.n_tokens = a.len;
    if (llama_decode(ctx, b)) {
      std::printf("llama_decode failed\n");
      return 1;
    }
    std::vector<float> ref((size_t)a.len * nv);
    for (int i = 0; i < a.len; ++i) std::memcpy(&ref[(size_t)i * nv], llama_get_logits_ith(ctx, i), nv * 4);

    // The CPU oracle with tests/engine's rig settings (ref_util.h make_rig).
    backend::CpuBackendOptions bo;
    bo.threads = 2;
    bo.quantize_activations = a.quant;
    bo.gelu_numerics = a.gelu_exact ? backend::GeluNumerics::Exact : backend::GeluNumerics::GgmlF16Table;
    if (a.ggml_order) bo.f32_order = backend::F32Order::Ggml;
    if (a.fa) {
      bo.attention_numerics = backend::AttentionNumerics::GgmlFlashAttnF32Cache;
      bo.f32_order = backend::F32Order::Ggml;
    }
    auto be = backend::make_cpu_backend(bo);
    engine::SessionOptions so;
    so.kv = {256, QType::F32, QType::F32};
    engine::Session s(file, *be, so);
    const auto got = s.prefill(toks, true);

    double wp = 0;
    int wpos = -1;
    for (int i = 0; i < a.len; ++i) {
      const double e = rel_err(&ref[(size_t)i * nv], &got[(size_t)i * nv], nv);
      if (e > wp) wp = e, wpos = i;
    }
    const double last_err = rel_err(&ref[(size_t)(a.len - 1) * nv], &got[(size_t)(a.len - 1) * nv], nv);
    const bool last_argmax_differs =
        argmax(&ref[(size_t)(a.len - 1) * nv], nv) != argmax(&got[(size_t)(a.len - 1) * nv], nv);
    last_argmax_diffs += last_argmax_differs;
    if (last_argmax_differs) {
      std::printf("  prompt %d: last-position argmax differs, llama.cpp margin %.4f\n", sq,
                  llamacpp_diff::margin(&ref[(size_t)(a.len - 1) * nv], nv));
    }
    worst_prompt = std::max(worst_prompt, wp);
    worst_last = std::max(worst_last, last_err);
    if (sq == 0 && !a.dump.empty()) {
      FILE* f = std::fopen(a.dump.c_str(), "wb");
      std::fwrite(ref.data(), 4, ref.size(), f);
      std::fclose(f);
      f = std::fopen((a.dump + ".memra").c_str(), "wb");
      std::fwrite(got.data(), 4, got.size(), f);
      std::fclose(f);
    }

    // 16 greedy steps with llama.cpp's tokens fed to both.
    std::vector<float> last(ref.end() - nv, ref.end()), ours(got.end() - nv, got.end());
    double wd = 0;
    int first_div = -1;
    double div_margin = 0;
    for (int step = 0; step < 16; ++step) {
      const int id = argmax(last.data(), nv);
      const double margin = llamacpp_diff::margin(last.data(), nv);
      if (argmax(ours.data(), nv) != id && (!a.quant || margin > a.margin) && first_div < 0) {
        first_div = step;
        div_margin = margin;
      }
      llama_batch b1 = llama_batch_init(1, 0, 1);
      b1.token[0] = id;
      b1.pos[0] = a.len + step;
      b1.n_seq_id[0] = 1;
      b1.seq_id[0][0] = 0;
      b1.logits[0] = 1;
      b1.n_tokens = 1;
      llama_decode(ctx, b1);
      std::memcpy(last.data(), llama_get_logits_ith(ctx, 0), nv * 4);
      llama_batch_free(b1);
      ours = s.decode(id);
      wd = std::max(wd, rel_err(last.data(), ours.data(), nv));
    }
    worst_decode = std::max(worst_decode, wd);
    prompts_diverged += first_div >= 0;
    std::printf("  prompt %d: worst max|diff|/max|ref| %.2e (position %d), last position %.2e, decode steps %.2e, "
                "greedy argmax differs from step %d (llama.cpp margin %.3f)\n",
                sq, wp, wpos, last_err, wd, first_div, div_margin);
    llama_batch_free(b);
    llama_free(ctx);
  }
  std::printf("%s%s%s len %d, %d prompts: worst prompt %.2e, worst last position %.2e, worst decode %.2e, "
              "prompts with a greedy argmax difference %d, with a last-position argmax difference %d\n",
              a.model.c_str(), a.fa ? " (fa)" : "", a.quant ? " (quantized activations)" : "", a.len, a.prompts,
              worst_prompt, worst_last, worst_decode, prompts_diverged, last_argmax_diffs);
  llama_model_free(model);
  return 0;
}
