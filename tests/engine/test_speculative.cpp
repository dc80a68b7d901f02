// Greedy speculative decoding (lib/engine/speculative.h): the output is plain greedy decoding's,
// token for token, whatever the drafter proposes; the target batches and acceptance counts are
// what the algorithm's arithmetic says. Expected tokens come from engine::generate with argmax
// (itself checked against llama.cpp in test_stories.cpp) and from ../shared/reference.
#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <random>

#include "core/error.h"
#include "engine/speculative.h"
#include "ref_util.h"

namespace memra {
namespace {

using engine::Drafter;
using engine::SpecOptions;
using testref::make_rig;

std::string model_path(const std::string& name) { return testref::shared_dir() + "/models/" + name; }

std::vector<int32_t> plain_greedy(engine::Session& s, std::span<const int32_t> prompt, int n,
                                  std::vector<int32_t> eog = {}) {
  s.reset();
  return engine::generate(s, prompt, {n, std::move(eog)}, [](std::span<const float> l) { return engine::argmax(l); })
      .tokens;
}

engine::SpecResult speculate(engine::Session& s, Drafter& d, std::span<const int32_t> prompt, int n, int k,
                             std::vector<int32_t> eog = {}) {
  s.reset();
  SpecOptions o;
  o.n_predict = n;
  o.k = k;
  o.eog_ids = std::move(eog);
  return engine::generate_speculative(s, d, prompt, o);
}

// Replays a known sequence from a given position of the history, with an optional wrong token.
class ReplayDrafter final : public Drafter {
 public:
  ReplayDrafter(std::vector<int32_t> full, int wrong_every = 0) : full_(std::move(full)), wrong_every_(wrong_every) {}
  std::vector<int32_t> propose(std::span<const int32_t> history, int k) override {
    std::vector<int32_t> out;
    for (size_t i = history.size(); i < full_.size() && (int)out.size() < k; ++i) {
      const bool wrong = wrong_every_ > 0 && (int)(i % (size_t)wrong_every_) == 0;
      out.push_back(wrong ? (full_[i] == 0 ? 1 : 0) : full_[i]);
    }
    return out;
  }
  std::string name() const override { return "replay"; }

 private:
  std::vector<int32_t> full_;
  int wrong_every_;
};

class RandomDrafter final : public Drafter {
 public:
  RandomDrafter(int n_vocab, uint64_t seed) : n_vocab_(n_vocab), rng_(seed) {}
  std::vector<int32_t> propose(std::span<const int32_t>, int k) override {
    std::vector<int32_t> out((size_t)k);
    for (auto& id : out) id = (int32_t)(rng_() % (uint64_t)n_vocab_);
    return out;
  }
  std::string name() const override { return "random"; }

 private:
  int n_vocab_;
  std::mt19937_64 rng_;
};

// The premise on the CPU backend: the rows of a batch are the bytes of one-token steps at the
// same positions (every row's matmuls, norms and attention in the same order), so a verify batch
// chooses what decoding would, including at near-ties, at any batch size (Backend::max_verify_rows
// unbounded).
TEST(Speculative, CpuBatchRowsAreDecodeBytes) {
  MEMRA_REQUIRE_SHARED();
  struct Case {
    const char* file;
    bool quantize_act;
  };
  for (const Case& c : {Case{"stories260K.gguf", false}, Case{"stories260K-q4_0.gguf", true},
                        Case{"synth/llama-q4_k_m.gguf", true}, Case{"synth/qwen3-q8_0.gguf", true}}) {
    auto rig = make_rig(model_path(c.file), c.quantize_act, QType::F16);
    auto& s = *rig.session;
    const int nv = s.n_vocab();
    const std::vector<int32_t> prompt{1, 403, 407, 261, 378};
    std::vector<int32_t> toks;
    std::vector<float> one;
    auto logits = s.prefill(prompt, false);
    for (int i = 0; i < 20; ++i) {  // past the CUDA backend's 8 rows: the CPU has no limit (max_verify_rows)
      toks.push_back(engine::argmax(logits));
      logits = s.decode(toks.back());
      one.insert(one.end(), logits.begin(), logits.end());
    }
    s.truncate((int)prompt.size());
    const auto batch = s.prefill(toks, true);
    ASSERT_EQ(batch.size(), one.size());
    EXPECT_GE(rig.be->max_verify_rows(), 1 << 20);
    for (size_t r = 0; r < toks.size(); ++r)
      EXPECT_EQ(0, std::memcmp(batch.data() + r * nv, one.data() + r * nv, (size_t)nv * 4))
          << c.file << ": batch row " << r << " differs from the one-token step";
  }
}

// Output == plain greedy for a draft model of the same vocabulary (the q4_0 file of the same
// model: mostly right, sometimes not), the n-gram drafter, and every k.
TEST(Speculative, GreedyOutputUnchangedByDraftAndK) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("stories260K.gguf"), false, QType::F16);
  auto draft = make_rig(model_path("stories260K-q4_0.gguf"), true, QType::F16);
  engine::ModelDrafter md(*draft.session);
  engine::NgramDrafter ng(1, 3);
  for (const std::vector<int32_t>& prompt : {std::vector<int32_t>{1, 403, 407, 261, 378}, std::vector<int32_t>{1, 432}}) {
    const auto want = plain_greedy(*target.session, prompt, 60);
    for (Drafter* d : {static_cast<Drafter*>(&md), static_cast<Drafter*>(&ng)}) {
      for (int k : {1, 2, 3, 5, 8}) {
        const auto r = speculate(*target.session, *d, prompt, 60, k);
        EXPECT_EQ(r.tokens, want) << d->name() << " k=" << k;
        EXPECT_EQ(r.stop, "length");
        EXPECT_EQ(target.session->n_past(), (int)prompt.size() + 59) << "the cache holds every emitted token but the last";
        fmt::print("{} k={}: {} target batches for {} tokens, {} of {} proposals accepted\n", d->name(), k, r.n_verify,
                   r.tokens.size(), r.n_accepted, r.n_drafted);
        if (d == &md && k == 3) {
          EXPECT_GT(r.n_accepted, r.n_drafted / 2) << "a q4_0 copy of the model should mostly agree";
        }
      }
    }
  }
}

// Against llama.cpp's greedy generations directly (the same margin rule as test_stories.cpp:
// compared up to the first step where its two configurations part).
TEST(Speculative, EqualsLlamaCppGreedy) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("stories260K.gguf"), false, QType::F32);
  auto draft = make_rig(model_path("stories260K-q8_0.gguf"), true, QType::F32);
  engine::ModelDrafter md(*draft.session);
  int cases = 0;
  for (const auto& row : testref::read_jsonl(testref::shared_dir() + "/reference/generate.jsonl")) {
    if (row["model"] != "stories260K.gguf") continue;
    ++cases;
    const auto prompt = row["prompt_ids"].get<std::vector<int32_t>>();
    const auto ref = row["generated_ids"].get<std::vector<int32_t>>();
    size_t upto = ref.size();
    if (row.contains("first_divergence_vs_f32_kv_no_fa") && !row["first_divergence_vs_f32_kv_no_fa"].is_null())
      upto = row["first_divergence_vs_f32_kv_no_fa"].get<size_t>();
    const auto margins = row["top2_margins"].get<std::vector<double>>();
    for (size_t i = 0; i < margins.size() && i < upto; ++i)
      if (margins[i] < 0.005) upto = i;
    const auto r = speculate(*target.session, md, prompt, (int)ref.size(), 4);
    size_t same = 0;
    while (same < r.tokens.size() && same < ref.size() && r.tokens[same] == ref[same]) ++same;
    EXPECT_GE(same, upto) << "prompt '" << row["prompt"].get<std::string>() << "'";
  }
  EXPECT_GT(cases, 0);
}

// A drafter that knows the answer: every proposal accepted, so each target batch yields k + 1
// tokens and n - 1 tokens after the prompt's take ceil((n - 1) / (k + 1)) batches. With a wrong
// token planted at fixed positions the output is still the same and the counts drop.
TEST(Speculative, BatchCountsFollowAcceptance) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("synth/llama-q4_k_m.gguf"), true, QType::F16);
  const std::vector<int32_t> prompt{1, 7, 99, 42};
  const int n = 41;
  const auto want = plain_greedy(*target.session, prompt, n);
  std::vector<int32_t> full = prompt;
  full.insert(full.end(), want.begin(), want.end());
  for (int k : {1, 3, 4, 8}) {
    ReplayDrafter perfect(full);
    const auto r = speculate(*target.session, perfect, prompt, n, k);
    EXPECT_EQ(r.tokens, want);
    EXPECT_EQ(r.n_verify, (n - 1 + k) / (k + 1)) << "k=" << k;
    EXPECT_EQ(r.n_accepted, r.n_drafted);
    EXPECT_EQ(r.n_drafted, n - 1 - r.n_verify) << "every batch but its bonus token is proposals";
    ReplayDrafter flawed(full, 5);
    const auto f = speculate(*target.session, flawed, prompt, n, k);
    EXPECT_EQ(f.tokens, want) << "k=" << k;
    EXPECT_LT(f.n_accepted, f.n_drafted);
    int64_t hist_sum = 0, hist_acc = 0;
    for (size_t a = 0; a < f.accepted_hist.size(); ++a) hist_sum += f.accepted_hist[a], hist_acc += (int64_t)a * f.accepted_hist[a];
    EXPECT_EQ(hist_sum, f.n_verify);
    EXPECT_EQ(hist_acc, f.n_accepted);
  }
}

// Proposals that are nearly always wrong: the rejection path alone, over several models.
TEST(Speculative, RandomProposalsChangeNothing) {
  MEMRA_REQUIRE_SHARED();
  for (const char* file : {"synth/qwen3-q8_0.gguf", "synth/llama-f32.gguf", "stories260K-f16.gguf"}) {
    auto target = make_rig(model_path(file), std::string(file).find("f32") == std::string::npos, QType::F16);
    const std::vector<int32_t> prompt{1, 5, 9};
    const auto want = plain_greedy(*target.session, prompt, 24);
    RandomDrafter rd(target.session->n_vocab(), 7);
    const auto r = speculate(*target.session, rd, prompt, 24, 4);
    EXPECT_EQ(r.tokens, want) << file;
  }
}

// End of generation inside an accepted run, and n_predict below k + 1: generation stops exactly
// where plain greedy does, and the target never runs past prompt + n_predict positions.
TEST(Speculative, StopsWherePlainGreedyStops) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("stories260K.gguf"), false, QType::F16);
  const std::vector<int32_t> prompt{1, 403, 407, 261, 378};
  const auto free_run = plain_greedy(*target.session, prompt, 30);
  std::vector<int32_t> full = prompt;
  full.insert(full.end(), free_run.begin(), free_run.end());
  const int32_t eog = free_run[9];  // the 10th token (or its first earlier occurrence) ends it
  const auto want = plain_greedy(*target.session, prompt, 30, {eog});
  ASSERT_LE(want.size(), 10u);
  ReplayDrafter perfect(full);
  const auto r = speculate(*target.session, perfect, prompt, 30, 8, {eog});
  EXPECT_EQ(r.tokens, want);
  EXPECT_EQ(r.stop, "eog");
  for (int n : {1, 2, 3, 4, 5}) {
    ReplayDrafter p(full);
    const auto s = speculate(*target.session, p, prompt, n, 4);
    EXPECT_EQ(s.tokens, std::vector<int32_t>(free_run.begin(), free_run.begin() + n)) << "n=" << n;
    EXPECT_LE(target.session->n_past(), (int)prompt.size() + n - 1) << "n=" << n;
  }
  // A callback that stops after the 3rd token.
  ReplayDrafter p(full);
  int seen = 0;
  target.session->reset();
  SpecOptions o;
  o.n_predict = 30;
  o.k = 5;
  const auto c = engine::generate_speculative(*target.session, p, prompt, o, [&](int32_t) { return ++seen < 3; });
  EXPECT_EQ(c.stop, "callback");
  EXPECT_EQ(c.tokens, std::vector<int32_t>(free_run.begin(), free_run.begin() + 3));
}

// A draft session that is the target's own model proposes exactly the target's choices.
TEST(Speculative, SelfDraftAcceptsEverything) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("synth/qwen3-q4_k_m.gguf"), true, QType::F16);
  auto draft = make_rig(model_path("synth/qwen3-q4_k_m.gguf"), true, QType::F16);
  engine::ModelDrafter md(*draft.session);
  const std::vector<int32_t> prompt{1, 2, 3, 4, 5, 6};
  const auto want = plain_greedy(*target.session, prompt, 33);
  const auto r = speculate(*target.session, md, prompt, 33, 4);
  EXPECT_EQ(r.tokens, want);
  EXPECT_EQ(r.n_accepted, r.n_drafted);
  EXPECT_EQ(r.n_verify, (33 - 1 + 4) / 5);
  // The draft primes the whole prompt, one batch of the target's shape: on a device a prefill of
  // another shape (the prompt minus its last token, as it once did) takes other GEMM bits, and a self
  // draft then disagrees at near-ties (49 of 56 accepted on the H100, spec40). Its cache holds the
  // prompt after prime(), then the target's first token on top after the first proposal.
  draft.session->reset();
  md.prime(prompt);
  EXPECT_EQ(draft.session->n_past(), (int)prompt.size());
  std::vector<int32_t> history = prompt;
  history.push_back(want[0]);
  const auto d = md.propose(history, 3);
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(draft.session->n_past(), (int)prompt.size() + 1 + 2);  // the first token, then 2 of the 3 proposals
}

TEST(Speculative, NgramDrafterProposesWhatFollowedTheLastMatch) {
  engine::NgramDrafter ng(1, 3);
  const std::vector<int32_t> h{5, 6, 7, 8, 9, 5, 6, 7, 1, 5, 6};
  // "5 6" last occurred at 5..6 (followed by 7 1 5), before that at 0..1 (7 8 9): the most recent wins,
  // and the 3-gram "1 5 6" has no earlier occurrence.
  EXPECT_EQ(ng.propose(h, 3), (std::vector<int32_t>{7, 1, 5}));
  EXPECT_EQ(ng.propose(h, 1), (std::vector<int32_t>{7}));
  // A proposal stops at the end of the history.
  EXPECT_EQ(ng.propose(std::vector<int32_t>{3, 4, 3}, 5), (std::vector<int32_t>{4, 3}));
  EXPECT_TRUE(ng.propose(std::vector<int32_t>{1, 2, 3}, 4).empty());
  EXPECT_TRUE(ng.propose(std::vector<int32_t>{1}, 4).empty());
  // The longest n-gram wins over a more recent shorter one.
  engine::NgramDrafter ng2(1, 2);
  EXPECT_EQ(ng2.propose(std::vector<int32_t>{4, 9, 1, 9, 2, 4, 9}, 2), (std::vector<int32_t>{1, 9}));
  EXPECT_THROW(engine::NgramDrafter(0, 2), Error);
  EXPECT_THROW(engine::NgramDrafter(3, 2), Error);
}

TEST(Speculative, BadArgumentsAreErrors) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("stories260K.gguf"), false, QType::F16, /*n_ctx=*/16);
  engine::NgramDrafter ng(1, 2);
  const std::vector<int32_t> prompt{1, 403, 407};
  SpecOptions o;
  o.k = 0;
  EXPECT_THROW(engine::generate_speculative(*target.session, ng, prompt, o), Error);
  o.k = 4;
  o.n_predict = 14;  // 3 + 14 > 16
  try {
    engine::generate_speculative(*target.session, ng, prompt, o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds context n_ctx=16"), std::string::npos) << e.what();
  }
  o.n_predict = 13;  // fits exactly: the last batches draft fewer tokens
  EXPECT_NO_THROW(engine::generate_speculative(*target.session, ng, prompt, o));
  EXPECT_THROW(engine::generate_speculative(*target.session, ng, std::vector<int32_t>{}, o), Error);
}

// qwen35's Gated DeltaNet layers keep a recurrent state that a rejected proposal has already
// changed: the target returns to the checkpoint saved before the batch and runs the kept tokens
// again, a draft to the one saved before its proposals. The output stays plain greedy decoding's
// with proposals that are mostly wrong (random, prompt lookup), mostly right (the q8_0 file
// drafting for the q4_k_m one) and right (the model itself), with EOG inside an accepted run.
TEST(Speculative, RecurrentModelsRollBackThroughCheckpoints) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("synth/qwen35-q4_k_m.gguf"), true, QType::F16);
  auto self = make_rig(model_path("synth/qwen35-q4_k_m.gguf"), true, QType::F16);
  auto other = make_rig(model_path("synth/qwen35-q8_0.gguf"), true, QType::F16);
  ASSERT_TRUE(target.session->has_recurrent_state());
  const std::vector<int32_t> prompt{1, 5, 9, 33, 70, 12};
  const auto want = plain_greedy(*target.session, prompt, 40);
  RandomDrafter rd(target.session->n_vocab(), 3);
  engine::NgramDrafter ng(1, 3);
  engine::ModelDrafter md_self(*self.session), md_other(*other.session);
  for (Drafter* d : {static_cast<Drafter*>(&rd), static_cast<Drafter*>(&ng), static_cast<Drafter*>(&md_self),
                     static_cast<Drafter*>(&md_other)}) {
    for (int k : {1, 3, 6}) {
      const auto r = speculate(*target.session, *d, prompt, 40, k);
      EXPECT_EQ(r.tokens, want) << d->name() << " k=" << k;
      EXPECT_EQ(target.session->n_past(), (int)prompt.size() + 39) << d->name() << " k=" << k;
      if (d == &md_self) {
        EXPECT_EQ(r.n_accepted, r.n_drafted) << "k=" << k;
      }
      fmt::print("qwen35 {} k={}: {} of {} proposals accepted\n", d->name(), k, r.n_accepted, r.n_drafted);
    }
  }
  // The cache after a run is the plain run's: one more plain step from it gives plain greedy's next token.
  const auto r = speculate(*target.session, md_other, prompt, 40, 4);
  ASSERT_EQ(r.tokens, want);
  const int32_t next = target.session->decode_argmax(r.tokens.back());
  EXPECT_EQ(next, plain_greedy(*target.session, prompt, 41).back());
  // EOG inside an accepted run: the cache still ends at the last emitted token but one.
  std::vector<int32_t> full = prompt;
  full.insert(full.end(), want.begin(), want.end());
  ReplayDrafter perfect(full);
  const int32_t eog = want[7];
  const auto stop_want = plain_greedy(*target.session, prompt, 40, {eog});
  const auto e = speculate(*target.session, perfect, prompt, 40, 6, {eog});
  EXPECT_EQ(e.tokens, stop_want);
  EXPECT_EQ(target.session->n_past(), (int)(prompt.size() + stop_want.size()) - 1);
  // A checkpoint does not survive a truncate below it.
  target.session->reset();
  target.session->prefill(prompt, false);
  target.session->save_checkpoint();
  target.session->reset();
  target.session->prefill(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}, false);
  EXPECT_THROW(target.session->rollback_to_checkpoint(), Error);
}

// The greedy forms the drafters and the verify batches use: Session::prefill_argmax's rows are the
// argmax of prefill's logits rows (in chunks of max_batch too), decode_argmax the argmax of decode's,
// and generate() without a sample function emits what it emits with memra::argmax as one.
TEST(Speculative, BackendArgmaxEqualsArgmaxOfLogits) {
  MEMRA_REQUIRE_SHARED();
  for (int max_batch : {512, 3}) {
    auto rig = make_rig(model_path("stories260K-q8_0.gguf"), true, QType::F16);
    engine::SessionOptions so;
    so.kv = {256, QType::F16, QType::F16};
    so.max_batch = max_batch;
    engine::Session s(rig.file, *rig.be, so);
    const int nv = s.n_vocab();
    const std::vector<int32_t> ids{1, 403, 407, 261, 378, 432, 383, 286};
    const auto logits = s.prefill(ids, true);
    s.reset();
    const auto rows = s.prefill_argmax(ids, true);
    ASSERT_EQ(rows.size(), ids.size());
    for (size_t r = 0; r < ids.size(); ++r)
      EXPECT_EQ(rows[r], engine::argmax(std::span<const float>(logits).subspan(r * nv, (size_t)nv))) << "row " << r;
    s.reset();
    EXPECT_EQ(s.prefill_argmax(ids, false), std::vector<int32_t>{rows.back()});
    EXPECT_EQ(s.n_past(), (int)ids.size());
    const auto one = s.decode(17);
    s.truncate((int)ids.size());
    EXPECT_EQ(s.decode_argmax(17), engine::argmax(one));
    s.reset();
    const auto with_fn = engine::generate(s, ids, {40, {}}, [](std::span<const float> l) { return engine::argmax(l); });
    s.reset();
    const auto on_backend = engine::generate(s, ids, {40, {}}, engine::SampleFn{});
    EXPECT_EQ(on_backend.tokens, with_fn.tokens) << "max_batch " << max_batch;
    EXPECT_EQ(s.n_past(), (int)ids.size() + 39);
  }
  // memra::argmax's rules: ties to the smallest index, NaN never wins.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(engine::argmax(std::vector<float>{nan, 1.0f, 3.0f, 3.0f}), 2);
  EXPECT_EQ(engine::argmax(std::vector<float>{nan, nan}), 0);
}

// spec.draft_p_min: the draft stops at its first unsure token. The output stays plain greedy's at
// every threshold; the proposals thin out as the threshold rises (batch boundaries move with it, so
// this is the file's behaviour, not a law), none pass at 1 (no softmax of this file puts all the
// mass on one token), and the ones that pass at 0.9 are accepted at least as often as all of them.
TEST(Speculative, DraftPMinKeepsTheOutputAndThinsTheProposals) {
  MEMRA_REQUIRE_SHARED();
  auto target = make_rig(model_path("stories260K.gguf"), false, QType::F16);
  auto draft = make_rig(model_path("stories260K-q4_0.gguf"), true, QType::F16);
  const std::vector<int32_t> prompt{1, 403, 407, 261, 378};
  const auto want = plain_greedy(*target.session, prompt, 80);
  engine::ModelDrafter md(*draft.session);
  int64_t last_drafted = -1;
  double acc0 = 0;
  for (double p : {0.0, 0.3, 0.6, 0.9, 1.0}) {
    md.set_p_min(p);
    const auto r = speculate(*target.session, md, prompt, 80, 4);
    EXPECT_EQ(r.tokens, want) << "p_min " << p;
    fmt::print("p_min {}: {} proposals, {} accepted, {} target batches\n", p, r.n_drafted, r.n_accepted, r.n_verify);
    if (last_drafted >= 0) {
      EXPECT_LE(r.n_drafted, last_drafted) << "p_min " << p;
    }
    last_drafted = r.n_drafted;
    if (p == 0.0) acc0 = r.acceptance();
    if (p == 0.9) {
      EXPECT_LT(r.n_drafted, r.n_verify * 4) << "some proposals must fall below 0.9";
      EXPECT_GE(r.acceptance(), acc0);
    }
    if (p == 1.0) {
      EXPECT_EQ(r.n_drafted, 0);
    }
  }
  EXPECT_THROW(md.set_p_min(1.5), Error);
}

}  // namespace
}  // namespace memra
