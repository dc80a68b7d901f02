// stories260K against llama.cpp's default CPU configuration (F16 KV cache, flash attention on:
// config kv_f16_fa_auto in ../shared/reference/logits.jsonl, and every generate.jsonl record),
// with the CPU backend's two attention numerics (Exact vs GgmlFlashAttn).
#include <fmt/format.h>

#include "ref_util.h"

namespace memra {
namespace {

using backend::AttentionNumerics;

const char* const kModels[] = {"stories260K.gguf", "stories260K-f16.gguf", "stories260K-q8_0.gguf",
                               "stories260K-q4_0.gguf"};

bool is_quantized(const std::string& model) { return model.find("q8_0") != std::string::npos ||
                                                     model.find("q4_0") != std::string::npos; }

// Bounds on max|diff|/max|ref| for GgmlFlashAttn vs llama.cpp's kv_f16_fa_auto logits, measured
// (2 threads): F32 file 1.6e-7 / 2.3e-7 (exact mode 2.1e-4 / 3.0e-4). Quantized files: one prompt
// 2.3e-7 (q8_0) / 9.3e-8 (q4_0), the other 3.6e-3 / 6.3e-3 (exact 9.1e-3 / 7.6e-3): q8 activation
// rounding turns the 1e-7 differences that remain upstream (matmul / silu summation order, not
// attention) into one-step jumps. F16 file: 5.0e-4 / 5.8e-4 (exact 3.8e-4 / 6.9e-4), dominated
// by the F16-weight gap that kv_f32_fa_off shows too (test_stories.cpp: 2.6e-4..4.5e-4), so no
// "closer" claim is made for it.
// Those two visible prompts were lucky for the F32 file: on 600 random 8-9-token prompts against
// the reference's llama.cpp (scripts/llamacpp-diff.sh, fa_diff) the F32 file's error had a median
// of ~1e-6 and half the prompts past 1e-6, 99th percentile 4.9e-4, worst 2.8e-3 (the f16 roundings
// of Q, K and V flip where our f32 arithmetic before them is not ggml's to the last bit; with
// F32Order::Ggml the median falls to 3e-7, the tail stays). F16 file worst 1.1e-3, q8_0 1.7e-2,
// q4_0 1.4e-2; GgmlFlashAttn was not the closer mode on 0-3% of the prompts of a file, and the
// argmax differed only where llama.cpp's top-2 margin was 0.0002 (F16) / 0.011 (q8_0). So: a bound
// per prompt from those tails (F32 5e-3, F16 3e-3, quantized 3e-2), the closer-than-exact claim
// over a file's prompts together (the sum of their errors), the argmax where the margin is clear
// (kGreedyMarginTol / kQuantMarginTol below), and the near-exact claim on the best prompt of a
// file (kTolBest: half of random prompts meet it for the F32 file, most for the quantized ones).
constexpr double kTolF32 = 5e-3;
constexpr double kTolBest = 1e-6;  // the best prompt of the F32 and quantized files
constexpr double kTolQuant = 3e-2;
constexpr double kTolF16 = 3e-3;
// Greedy sequences (generate.jsonl was recorded in exactly this configuration) are compared up to
// the first step whose recorded top-2 margin is below kGreedyMarginTol; for the quantized files
// up to kQuantMarginTol, because the upstream 1e-7 differences above flip a step now and then
// (measured, llamacpp mode: 4 of 16 quantized records diverge at steps with recorded margins
// 0.004..0.096; exact mode: 6 of 16). F32 / F16 files: 5e-3, as test_stories.cpp's kFloatMarginTol
// (scripts/llamacpp-diff.sh's gen_diff --kv-f16-fa, an F16 cache with this rounding, 200 random prompts: one left
// llama.cpp's at a margin of 0.0019; every visible record's margins are 0.025 and up).
constexpr double kGreedyMarginTol = 5e-3;
constexpr double kQuantMarginTol = 0.1;

testref::Rig make_fa_rig(const std::string& model, AttentionNumerics numerics) {
  testref::Rig r;
  r.file = std::make_shared<const gguf::File>(gguf::File::open(testref::shared_dir() + "/models/" + model));
  backend::CpuBackendOptions bo;
  bo.threads = 2;
  bo.quantize_activations = true;
  bo.attention_numerics = numerics;
  r.be = backend::make_cpu_backend(bo);
  engine::SessionOptions so;
  so.kv = {256, QType::F16, QType::F16};
  r.session = std::make_unique<engine::Session>(r.file, *r.be, so);
  return r;
}

double logits_err(const std::string& model, const nlohmann::json& row, AttentionNumerics numerics,
                  int32_t* top = nullptr) {
  auto rig = make_fa_rig(model, numerics);
  const auto ids = row["prompt_ids"].get<std::vector<int32_t>>();
  const auto ref = row["logits"].get<std::vector<float>>();
  const auto got = rig.session->prefill(ids, false);
  EXPECT_EQ(got.size(), ref.size());
  if (got.size() != ref.size()) return INFINITY;
  if (top) *top = testref::argmax(got.data(), got.size());
  return testref::rel_max_err(got.data(), ref.data(), ref.size());
}

TEST(LlamaCppFlashAttn, LogitsMatchKvF16FaAuto) {
  MEMRA_REQUIRE_SHARED();
  const auto rows = testref::read_jsonl(testref::shared_dir() + "/reference/logits.jsonl");
  for (const char* model : kModels) {
    const std::string m = model;
    int cases = 0;
    double best = INFINITY, sum_fa = 0, sum_exact = 0;
    for (const auto& row : rows) {
      if (row["model"] != model || row["config"] != "kv_f16_fa_auto" || !row.contains("logits")) continue;
      ++cases;
      int32_t top = -1;
      const double exact = logits_err(model, row, AttentionNumerics::Exact);
      const double fa = logits_err(model, row, AttentionNumerics::GgmlFlashAttn, &top);
      best = std::min(best, fa);
      sum_fa += fa;
      sum_exact += exact;
      fmt::print("{} [kv_f16_fa_auto] '{}': max|diff|/max|ref| exact {:.3e}, llamacpp {:.3e}\n", model,
                 row["prompt"].get<std::string>(), exact, fa);
      const auto top5 = row["top5_logits"].get<std::vector<double>>();
      if (top5.size() < 2 || top5[0] - top5[1] > (is_quantized(m) ? kQuantMarginTol : kGreedyMarginTol)) {
        EXPECT_EQ(top, row["top5"][0].get<int32_t>()) << model;
      }
      EXPECT_LE(fa, m == "stories260K-f16.gguf" ? kTolF16 : is_quantized(m) ? kTolQuant : kTolF32) << model;
    }
    EXPECT_GT(cases, 0) << "no kv_f16_fa_auto logits for " << model;
    if (m != "stories260K-f16.gguf" && cases > 0) {
      EXPECT_LT(sum_fa, sum_exact) << model << ": the llama.cpp rounding is not closer than the exact path";
      EXPECT_LE(best, kTolBest) << model;
    }
  }
}

// Greedy steps equal to llama.cpp's, and the step beyond which the comparison stops.
size_t greedy_same(const std::string& model, const nlohmann::json& row, AttentionNumerics numerics,
                   std::string* note) {
  auto rig = make_fa_rig(model, numerics);
  const auto prompt = row["prompt_ids"].get<std::vector<int32_t>>();
  const auto ref = row["generated_ids"].get<std::vector<int32_t>>();
  const auto margins = row["top2_margins"].get<std::vector<double>>();
  std::vector<double> ours;
  const auto got = engine::generate(*rig.session, prompt, {(int)ref.size(), {}},
                                    [&](std::span<const float> l) {
                                      ours.push_back(testref::top2_margin(l.data(), l.size()));
                                      return engine::argmax(l);
                                    })
                       .tokens;
  size_t same = 0;
  while (same < got.size() && same < ref.size() && got[same] == ref[same]) ++same;
  if (same < ref.size() && same < ours.size())
    *note = fmt::format("; at step {} recorded margin {:.4f}, ours {:.4f}", same, margins[same], ours[same]);
  return same;
}

TEST(LlamaCppFlashAttn, GreedyEqualsLlamaCpp) {
  MEMRA_REQUIRE_SHARED();
  const auto rows = testref::read_jsonl(testref::shared_dir() + "/reference/generate.jsonl");
  int cases = 0;
  size_t total_fa = 0, total_exact = 0;
  for (const auto& row : rows) {
    const std::string model = row["model"];
    ++cases;
    const auto margins = row["top2_margins"].get<std::vector<double>>();
    const double tol = is_quantized(model) ? kQuantMarginTol : kGreedyMarginTol;
    size_t upto = margins.size();
    for (size_t i = 0; i < margins.size(); ++i)
      if (margins[i] < tol) {
        upto = i;
        break;
      }
    std::string note, note_exact;
    const size_t same = greedy_same(model, row, AttentionNumerics::GgmlFlashAttn, &note);
    const size_t same_exact = greedy_same(model, row, AttentionNumerics::Exact, &note_exact);
    total_fa += same;
    total_exact += same_exact;
    fmt::print("{} '{}': llamacpp {} / exact {} of {} greedy tokens equal (asserted up to step {}){}\n", model,
               row["prompt"].get<std::string>(), same, same_exact, margins.size(), upto, note);
    EXPECT_GE(same, upto) << model << " prompt '" << row["prompt"].get<std::string>()
                          << "': first difference at step " << same;
  }
  EXPECT_GT(cases, 0);
  fmt::print("greedy tokens equal to llama.cpp over all records: llamacpp {}, exact {}\n", total_fa,
             total_exact);
  EXPECT_GT(total_fa, total_exact) << "the llama.cpp rounding should reproduce more greedy tokens";
}

}  // namespace
}  // namespace memra
