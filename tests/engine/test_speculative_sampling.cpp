// Sampled speculative decoding (lib/engine/speculative.h, SpecOptions::sampling): whatever the
// drafter proposes, the emitted tokens are distributed as plain sampling's. The expected
// distribution is computed exactly from the target (every prefix's logits through the sampler
// chain: P(t1) P(t2 | t1) P(t3 | t1 t2) ...) and the empirical one of many seeded runs is held to it
// by a chi-square test (fixed seeds: the verdict is reproducible; the threshold is the 1 - 1e-6
// quantile, while the rule's usual slips move the statistic by hundreds). With temperature 0 and
// penalties the output must be plain penalized greedy decoding's, token for token.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>
#include <random>

#include "engine/speculative.h"
#include "ref_util.h"
#include "sample/sampler.h"

namespace memra {
namespace {

using engine::Drafter;
using testref::make_rig;

std::string model_path(const std::string& name) { return testref::shared_dir() + "/models/" + name; }

SamplerOptions chain(uint64_t seed) {
  SamplerOptions o;
  o.temperature = 1.0f;
  o.top_k = 3;
  o.top_p = 1.0f;
  o.min_p = 0.0f;
  o.typical_p = 1.0f;
  o.repeat_penalty = 1.5f;  // each row's distribution depends on the tokens accepted before it
  o.penalty_last_n = 64;
  o.seed = seed;
  return o;
}

// Every sequence of n tokens with its probability under plain sampling (the chain's distribution
// at each prefix, its penalty window the prompt and the prefix).
void exact(engine::Session& s, const SamplerOptions& o, std::vector<int32_t>& seq, size_t n_prompt, double prob, int n,
           std::map<std::vector<int32_t>, double>& out) {
  if ((int)(seq.size() - n_prompt) == n) {
    out[std::vector<int32_t>(seq.begin() + (long)n_prompt, seq.end())] += prob;
    return;
  }
  s.reset();
  const auto logits = s.prefill(seq, false);
  Sampler sm(o);
  sm.set_window(seq);
  const Distribution d = sm.distribution(logits);
  for (int32_t id : d.ids) {
    seq.push_back(id);
    exact(s, o, seq, n_prompt, prob * d.prob(id), n, out);
    seq.pop_back();
  }
}

// The exact distribution of the n tokens after `prompt` under the plain chain o.
std::map<std::vector<int32_t>, double> plain_probs(engine::Session& s, const SamplerOptions& o,
                                                    const std::vector<int32_t>& prompt, int n) {
  std::map<std::vector<int32_t>, double> out;
  std::vector<int32_t> seq = prompt;
  exact(s, o, seq, prompt.size(), 1.0, n, out);
  return out;
}

// The chi-square statistic of counts against n x probs (cells expected below 5 pooled); fails the
// test for an outcome of probability 0.
struct Chi2 {
  double stat = 0;
  int df = 0;
  double threshold = 0;
};
Chi2 chi2(const std::map<std::vector<int32_t>, int>& counts, const std::map<std::vector<int32_t>, double>& probs, int n) {
  Chi2 c;
  for (const auto& [seq, k] : counts)
    EXPECT_TRUE(probs.count(seq)) << "an impossible sequence was emitted: " << fmt::format("{}", fmt::join(seq, " "));
  double pooled_e = 0, pooled_o = 0;
  int cells = 0;
  for (const auto& [seq, p] : probs) {
    const double e = p * n;
    const auto it = counts.find(seq);
    const double o = it == counts.end() ? 0.0 : it->second;
    if (e < 5) {
      pooled_e += e;
      pooled_o += o;
      continue;
    }
    c.stat += (o - e) * (o - e) / e;
    ++cells;
  }
  if (pooled_e > 0) {
    c.stat += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
    ++cells;
  }
  c.df = std::max(cells - 1, 1);
  // Wilson-Hilferty: the chi-square quantile at 1 - 1e-6 (z = 4.753).
  const double d = c.df, z = 4.753;
  c.threshold = d * std::pow(1 - 2 / (9 * d) + z * std::sqrt(2 / (9 * d)), 3);
  return c;
}

struct Tally {
  std::map<std::vector<int32_t>, int> counts;
  int64_t drafted = 0, accepted = 0;
};

Tally run_many(engine::Session& target, Drafter& d, std::span<const int32_t> prompt, int n_predict, int k, int runs) {
  Tally t;
  for (int i = 0; i < runs; ++i) {
    target.reset();
    engine::SpecOptions o;
    o.n_predict = n_predict;
    o.k = k;
    o.sampling = chain((uint64_t)i + 1);
    const auto r = engine::generate_speculative(target, d, prompt, o);
    EXPECT_EQ((int)r.tokens.size(), n_predict);
    ++t.counts[r.tokens];
    t.drafted += r.n_drafted;
    t.accepted += r.n_accepted;
  }
  return t;
}

void expect_plain_distribution(const char* what, const Tally& t, const std::map<std::vector<int32_t>, double>& probs,
                               int runs) {
  const Chi2 c = chi2(t.counts, probs, runs);
  fmt::print("{}: {} runs, {} sequences possible, chi2 {:.1f} on {} df (threshold {:.1f}); {} of {} proposals accepted\n",
             what, runs, probs.size(), c.stat, c.df, c.threshold, t.accepted, t.drafted);
  EXPECT_LT(c.stat, c.threshold) << what << ": the emitted sequences are not distributed as plain sampling's";
  EXPECT_GT(t.accepted, 0) << what;
  EXPECT_LT(t.accepted, t.drafted) << what << ": no rejection exercised";
}

const std::vector<int32_t> kPrompt{1, 403, 407, 261, 378};

// A draft whose q is far from the target's p: the target's own file sampled flatter and wider
// (temperature 2.5, top-k 6, no penalty, against the target's 1.0 / 3 / 1.5), so each row has
// tokens with p > q, with p < q and with p = 0 < q (always rejected); 4 tokens from batches of up
// to 3 rows, so accepted runs, rejections, the residual draw and the bonus draw all occur.
TEST(SpeculativeSampling, FlatterDraftLeavesThePlainDistribution) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("stories260K.gguf"), false, QType::F32);
  auto draft = make_rig(model_path("stories260K.gguf"), false, QType::F32);
  const int n = 4, runs = 4000;
  const auto probs = plain_probs(*target.session, chain(0), kPrompt, n);
  SamplerOptions flat = chain(5);
  flat.temperature = 2.5f;
  flat.top_k = 6;
  flat.repeat_penalty = 1.0f;
  engine::ModelDrafter md(*draft.session, flat);
  expect_plain_distribution("flatter draft", run_many(*target.session, md, kPrompt, n, 2, runs), probs, runs);
}

// A sampled draft model (the q4_0 file of the same model: q close to p, most proposals accepted)
// and prompt lookup (deterministic proposals: q = 1 on the proposed token).
TEST(SpeculativeSampling, DraftModelAndPromptLookupLeaveThePlainDistribution) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("stories260K.gguf"), false, QType::F32);
  auto draft = make_rig(model_path("stories260K-q4_0.gguf"), true, QType::F32);
  const int n = 4, runs = 4000;
  const auto probs = plain_probs(*target.session, chain(0), kPrompt, n);
  engine::ModelDrafter md(*draft.session, chain(77));
  md.set_p_min(0.9);  // (spec.draft_p_min: fewer proposals, the same distribution)
  expect_plain_distribution("draft model, p_min 0.9", run_many(*target.session, md, kPrompt, n, 3, runs), probs, runs);

  // A prompt that repeats itself, so the lookup proposes.
  const std::vector<int32_t> rep{1, 403, 407, 261, 378, 403, 407, 261, 378, 403, 407};
  const auto probs_rep = plain_probs(*target.session, chain(0), rep, n);
  engine::NgramDrafter ng(1, 3);
  expect_plain_distribution("prompt lookup", run_many(*target.session, ng, rep, n, 3, runs), probs_rep, runs);
}

// Temperature 0 with a repetition penalty: greedy on the penalized logits, so the output is plain
// generation's with the same sampler, token for token, for every drafter and k.
TEST(SpeculativeSampling, PenalizedGreedyEqualsPlainPenalizedGreedy) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("stories260K.gguf"), false, QType::F32);
  auto draft = make_rig(model_path("stories260K-q8_0.gguf"), true, QType::F32);
  SamplerOptions o = chain(3);
  o.temperature = 0.0f;
  o.repeat_penalty = 1.3f;
  o.frequency_penalty = 0.2f;
  const int n = 80;
  target.session->reset();
  Sampler plain(o);
  for (int32_t id : kPrompt) plain.accept(id);
  const auto want = engine::generate(*target.session, kPrompt, {n, {}}, [&](std::span<const float> l) {
                      const int32_t id = plain.sample(l);
                      plain.accept(id);
                      return id;
                    }).tokens;
  // The penalty must matter here, or this test says nothing about the window.
  target.session->reset();
  const auto unpenalized =
      engine::generate(*target.session, kPrompt, {n, {}}, [](std::span<const float> l) { return engine::argmax(l); }).tokens;
  ASSERT_NE(want, unpenalized);
  engine::ModelDrafter greedy_md(*draft.session);
  engine::ModelDrafter penalized_md(*draft.session, o);
  engine::NgramDrafter ng(1, 3);
  for (Drafter* d : {static_cast<Drafter*>(&greedy_md), static_cast<Drafter*>(&penalized_md), static_cast<Drafter*>(&ng)})
    for (int k : {1, 3, 6}) {
      target.session->reset();
      engine::SpecOptions so;
      so.n_predict = n;
      so.k = k;
      so.sampling = o;
      const auto r = engine::generate_speculative(*target.session, *d, kPrompt, so);
      EXPECT_EQ(r.tokens, want) << d->name() << " k=" << k;
      EXPECT_EQ(target.session->n_past(), (int)kPrompt.size() + n - 1);
    }
}

// A draft that is the target itself, sampling with the target's options: q = p at every row (the
// CPU backend's batch rows are its one-token steps' bytes), so every proposal is accepted.
TEST(SpeculativeSampling, SelfDraftWithTheSameSamplerAcceptsEverything) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("stories260K.gguf"), false, QType::F32);
  auto draft = make_rig(model_path("stories260K.gguf"), false, QType::F32);
  SamplerOptions o = chain(21);
  o.top_k = 40;
  o.top_p = 0.95f;
  o.temperature = 0.8f;
  for (int k : {1, 4, 8}) {
    engine::ModelDrafter md(*draft.session, o);
    target.session->reset();
    engine::SpecOptions so;
    so.n_predict = 60;
    so.k = k;
    so.sampling = o;
    const auto r = engine::generate_speculative(*target.session, md, kPrompt, so);
    EXPECT_EQ(r.tokens.size(), 60u);
    EXPECT_EQ(r.n_accepted, r.n_drafted) << "k=" << k;
    EXPECT_GT(r.n_drafted, 0);
  }
}

}  // namespace
}  // namespace memra
