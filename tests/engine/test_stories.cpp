// stories260K against llama.cpp (../shared/reference/{generate,logits}.jsonl).
#include <fmt/format.h>

#include "ref_util.h"

namespace memra {
namespace {

using testref::make_rig;

// Quantized files. generate.jsonl was recorded with an F16 KV cache and flash attention, whose
// logits differ from llama.cpp's own F32-KV/no-FA run by up to 0.25 (reference README); with
// quantized activations and an F32 KV cache we reproduce that second configuration to ~1e-7
// relative at the prompt (LogitsQ*_0 tests below). So sequences are compared up to the first
// step where llama.cpp's two configurations diverge (first_divergence_vs_f32_kv_no_fa) or whose
// recorded margin is below kQuantMarginTol. Why 0.1: q8 activation rounding turns 1e-7
// differences into occasional one-step jumps of a block's scale/2, which add up over a long
// decode; after ~40 steps we measured our margin 0.009 where llama.cpp's was 0.069 (q4_0,
// 'Lily wanted', step 42), i.e. drifts of a few 1e-2.
constexpr double kQuantMarginTol = 0.1;

// Greedy ids and our own top-2 margin at each step.
std::vector<int32_t> greedy(engine::Session& s, const std::vector<int32_t>& prompt, int n,
                            std::vector<double>* margins = nullptr) {
  auto r = engine::generate(s, prompt, {n, {}}, [&](std::span<const float> l) {
    if (margins) margins->push_back(testref::top2_margin(l.data(), l.size()));
    return engine::argmax(l);
  });
  return r.tokens;
}

void check_generations(const std::string& model, bool quantize_act, QType kv, double margin_tol) {
  MEMRA_REQUIRE_SHARED();
  auto rows = testref::read_jsonl(testref::shared_dir() + "/reference/generate.jsonl");
  int cases = 0;
  for (const auto& row : rows) {
    if (row["model"] != model) continue;
    ++cases;
    auto rig = make_rig(testref::shared_dir() + "/models/" + model, quantize_act, kv);
    const auto prompt = row["prompt_ids"].get<std::vector<int32_t>>();
    const auto ref = row["generated_ids"].get<std::vector<int32_t>>();
    const auto margins = row["top2_margins"].get<std::vector<double>>();
    size_t upto = ref.size();
    if (row.contains("first_divergence_vs_f32_kv_no_fa") && !row["first_divergence_vs_f32_kv_no_fa"].is_null())
      upto = row["first_divergence_vs_f32_kv_no_fa"].get<size_t>();
    for (size_t i = 0; i < margins.size(); ++i)
      if (margins[i] < margin_tol) {
        upto = std::min(upto, i);
        break;
      }
    std::vector<double> ours;
    const auto got = greedy(*rig.session, prompt, (int)ref.size(), &ours);
    size_t same = 0;
    while (same < got.size() && same < ref.size() && got[same] == ref[same]) ++same;
    fmt::print("{} prompt '{}': {} of {} greedy tokens equal (compared up to step {}){}\n", model,
               row["prompt"].get<std::string>(), same, ref.size(), upto,
               same < ref.size() ? fmt::format("; at step {} recorded margin {:.4f}, ours {:.4f}", same,
                                               margins[same], ours[same])
                                 : std::string());
    EXPECT_GE(same, upto) << model << " prompt '" << row["prompt"].get<std::string>()
                          << "': first difference at step " << same;
  }
  EXPECT_GT(cases, 0) << "no generate.jsonl rows for " << model;
}

// F32 / F16 files: llama.cpp's own two configurations differ by up to 0.01 / 0.02 in these logits
// (reference README), so a step whose margin is a few 1e-3 is a coin toss between correct
// implementations. scripts/llamacpp-diff.sh (gen_diff, 300 random prompts against the reference's
// llama.cpp) found our greedy ids leaving llama.cpp's only at such steps (margins 0.0003-0.003), one
// of them (0.0003) before llama.cpp's own configurations part. Bound 0.005: below every margin of
// the visible records (0.025 and up), so those are still compared over all 64 steps.
constexpr double kFloatMarginTol = 0.005;
TEST(Stories260K, GreedyF32EqualsLlamaCpp) {
  check_generations("stories260K.gguf", false, QType::F32, kFloatMarginTol);
}
TEST(Stories260K, GreedyF16EqualsLlamaCpp) {
  check_generations("stories260K-f16.gguf", false, QType::F32, kFloatMarginTol);
}
TEST(Stories260K, GreedyQ8_0UpToSmallMargin) {
  check_generations("stories260K-q8_0.gguf", true, QType::F32, kQuantMarginTol);
}
TEST(Stories260K, GreedyQ4_0UpToSmallMargin) {
  check_generations("stories260K-q4_0.gguf", true, QType::F32, kQuantMarginTol);
}

// Next-token logits at the last prompt position.
void check_logits(const std::string& model, const std::string& config, bool quantize_act, QType kv,
                  double tol) {
  MEMRA_REQUIRE_SHARED();
  auto rows = testref::read_jsonl(testref::shared_dir() + "/reference/logits.jsonl");
  int cases = 0;
  for (const auto& row : rows) {
    if (row["model"] != model || row["config"] != config || !row.contains("logits")) continue;
    ++cases;
    auto rig = make_rig(testref::shared_dir() + "/models/" + model, quantize_act, kv);
    const auto ids = row["prompt_ids"].get<std::vector<int32_t>>();
    const auto ref = row["logits"].get<std::vector<float>>();
    const auto got = rig.session->prefill(ids, false);
    ASSERT_EQ(got.size(), ref.size());
    const double err = testref::rel_max_err(got.data(), ref.data(), ref.size());
    fmt::print("{} [{}] '{}': max|diff|/max|ref| = {:.3e} (tol {:.0e})\n", model, config,
               row["prompt"].get<std::string>(), err, tol);
    EXPECT_LE(err, tol) << model << " " << config;
    // The argmax where llama.cpp's top-2 margin is clear of the numeric noise (kQuantMarginTol for
    // quantized activations, kFloatMarginTol otherwise).
    const auto top = row["top5_logits"].get<std::vector<double>>();
    if (top.size() < 2 || top[0] - top[1] > (quantize_act ? kQuantMarginTol : kFloatMarginTol)) {
      EXPECT_EQ(testref::argmax(got.data(), got.size()), row["top5"][0].get<int32_t>());
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(Stories260K, LogitsF32MatchLlamaCpp) { check_logits("stories260K.gguf", "kv_f32_fa_off", false, QType::F32, 1e-4); }
// F16 weights, exact f32 activations. llama.cpp rounds activations to f16 before an F16
// matmul; we measured 2.6e-4..4.5e-4 on the visible records with or without that rounding, and up
// to 2.1e-3 at the last position of 9-token random prompts against the reference's llama.cpp
// (scripts/llamacpp-diff.sh, arch_diff, ~500 prompts; most under 8e-4), so the bound is 3e-3 (the
// brief's 1e-4 is for the F32 file, met with 200x room). Why rounding does not close it (layer-0
// activations dumped through llama.cpp's eval callback, 9-token prompt): llama.cpp's F16 matmul
// outputs equal round_f16(x) . w to 1e-7, and our normed inputs are bit-identical to its, but the
// attention output and the SwiGLU output differ from its in the last bits (in 60-80% of the values,
// also with F32Order::Ggml: its vectorized exp / SiLU and dot orders), and one f16 rounding flip
// among them moves the logits by 1e-5..2e-4: with only ffn_up left F16 the error per prompt is
// either ~3e-7 (no flip) or 1e-5..2e-4.
// Without the rounding the miss is systematic (2.7e-4 per matmul), so neither mode is closer.
TEST(Stories260K, LogitsF16MatchLlamaCpp) {
  check_logits("stories260K-f16.gguf", "kv_f32_fa_off", false, QType::F32, 3e-3);
}
// Quantized files: same numeric class (q8_0 activations). Most prompts agree to ~1e-7; one
// activation block whose rounding flips moves the logits by ~1e-2 relative: on random 7-11-token
// prompts 1-4% of them reached 1.0e-2..1.8e-2 (arch_diff, ~900 prompts per file), and llama.cpp's
// own two configurations differ by up to 0.25 absolute here (README). Bound 3e-2.
constexpr double kQuantLogitsTol = 3e-2;
TEST(Stories260K, LogitsQ8_0CloseToLlamaCpp) {
  check_logits("stories260K-q8_0.gguf", "kv_f32_fa_off", true, QType::F32, kQuantLogitsTol);
}
TEST(Stories260K, LogitsQ4_0CloseToLlamaCpp) {
  check_logits("stories260K-q4_0.gguf", "kv_f32_fa_off", true, QType::F32, kQuantLogitsTol);
}

}  // namespace
}  // namespace memra
