#pragma once
// Speculative decoding. Greedy (SpecOptions::sampling unset): a drafter proposes up to k tokens, the target model scores the
// last committed token and the k proposals in one batch (Session::prefill with every position's
// logits), the longest prefix of proposals that equals the target's own greedy choices is kept,
// and the target's choice after it is emitted too. Every emitted token is the argmax of a target
// logit row for exactly the tokens before it, so the output is plain greedy decoding's
// (engine::generate with argmax) whenever the target's batched rows choose as its one-token steps
// do: bit for bit on the CPU backend (tests/engine/test_speculative.cpp), and on a device the
// decode == verify identity of its kernels. The drafter only changes how many target batches run.
//
// Sampled (SpecOptions::sampling set: temperature, top-k / top-p / min-p / typical, penalties): the
// target's distribution at each verify row is the sampler chain's (Sampler::distribution, its
// penalty window holding the prompt, the emitted tokens and the proposals accepted so far); a
// proposal x drawn from the drafter's distribution q is accepted with probability min(1, p(x) /
// q(x)), a rejection draws the row's token from max(0, p - q) normalized, and a batch whose every
// proposal was accepted draws one more token from its last row (the rejection rule of speculative
// sampling: each emitted token is distributed as the target sampler's draw given the tokens before
// it, whatever the drafter proposes). A drafter that proposes deterministically (prompt lookup,
// a greedy draft) has q = 1 on its token. The tokens are not plain sampling's for the same seed
// (the draws are used differently), only their distribution is the same.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/session.h"
#include "sample/sampler.h"

namespace memra::engine {

// A drafter's proposals and, when it drew them at random, the distribution each was drawn from.
struct Proposal {
  std::vector<int32_t> tokens;
  std::vector<Distribution> q;  // one per token, or empty: chosen deterministically (q = 1 on each)
};

// Proposes continuations of the committed sequence (prompt + every emitted token).
class Drafter {
 public:
  virtual ~Drafter();
  // Called once with the prompt before the first proposal (a model drafter prefills it here, so
  // that the time is counted with the prompt's).
  virtual void prime(std::span<const int32_t> prompt) { (void)prompt; }
  // Up to k proposed tokens that continue history (fewer or none when it has no guess).
  virtual std::vector<int32_t> propose(std::span<const int32_t> history, int k) = 0;
  // The proposals of sampled speculative decoding; by default propose()'s, deterministic.
  virtual Proposal propose_sampled(std::span<const int32_t> history, int k) { return {propose(history, k), {}}; }
  virtual std::string name() const = 0;
};

// A smaller model with the same vocabulary, decoded greedily (propose) or, given sampler options,
// drawing its proposals with them (propose_sampled: its own sampler, seeded with the options' seed
// mixed with a constant, its penalty window the history and its own proposals). Its cache follows
// the committed sequence: at each proposal it keeps the longest prefix it already holds and runs
// the rest (a draft with recurrent layers returns to the checkpoint it saved before its last
// proposals).
class ModelDrafter final : public Drafter {
 public:
  explicit ModelDrafter(Session& draft, const std::optional<SamplerOptions>& sampling = std::nullopt);
  void prime(std::span<const int32_t> prompt) override;
  std::vector<int32_t> propose(std::span<const int32_t> history, int k) override;
  Proposal propose_sampled(std::span<const int32_t> history, int k) override;
  std::string name() const override { return "model"; }
  // Stop proposing at the first token the draft gives a probability below p (greedy: the argmax's
  // softmax probability at temperature 1, which needs the logits on the host; sampled: the top
  // candidate's after the chain). 0 (the default): always k.
  void set_p_min(double p);

 private:
  // Brings the cache to a prefix of history that leaves at least its last token to run; returns
  // the tokens to run (the caller runs them, then calls ran()). k is capped by the context (0: none).
  std::span<const int32_t> sync(std::span<const int32_t> history, int& k);
  void ran(std::span<const int32_t> tail, int k);

  Session& s_;
  std::optional<Sampler> sampler_;
  double p_min_ = 0.0;
  std::vector<int32_t> held_;  // the tokens in the draft session's cache, in order
  int ckpt_ = -1;              // recurrent draft: the position of its checkpoint (-1: none)
};

// Prompt lookup: the most recent earlier occurrence of the history's last n tokens (n from
// n_max down to n_min) proposes the tokens that followed it. No model; wins on text that repeats
// its context (code edits, summaries, extraction).
class NgramDrafter final : public Drafter {
 public:
  NgramDrafter(int n_min, int n_max);
  std::vector<int32_t> propose(std::span<const int32_t> history, int k) override;
  std::string name() const override { return "ngram"; }

 private:
  int n_min_, n_max_;
};

struct SpecOptions {
  int n_predict = 128;
  int k = 4;  // tokens drafted per target batch (at most; capped at Backend::max_verify_rows() - 1)
  std::vector<int32_t> eog_ids;   // generation stops after emitting one of these
  // Unset: greedy by the logits alone (each row's argmax picked on the backend). Set: every token
  // drawn by a Sampler with these options (its window starts with the prompt) under the rejection
  // rule above; temperature 0 with penalties is greedy on the penalized logits.
  std::optional<SamplerOptions> sampling;
};

struct SpecResult {
  std::vector<int32_t> tokens;  // generated ids (an end-of-generation id included)
  std::string stop;             // "eog", "length" or "callback"
  int n_prompt = 0;
  int k = 0;                // proposals per batch at most: SpecOptions::k, capped so that a batch
                            // stays within the target backend's max_verify_rows()
  double prefill_ms = 0.0;  // the target's prompt and the drafter's prime
  double decode_ms = 0.0;   // everything after the first token: drafting and verifying
  double draft_ms = 0.0;    // the part of decode_ms spent in the drafter
  int64_t n_verify = 0;     // target batches after the prompt
  int64_t n_drafted = 0;    // proposals scored by the target
  int64_t n_accepted = 0;   // proposals kept: equal to the target's choice (greedy) or accepted by the rule
  std::vector<int64_t> accepted_hist;  // [a]: target batches that accepted a proposals (a <= k)
  double decode_tok_s() const {
    return decode_ms > 0 && tokens.size() > 1 ? (double)(tokens.size() - 1) * 1e3 / decode_ms : 0.0;
  }
  double acceptance() const { return n_drafted > 0 ? (double)n_accepted / (double)n_drafted : 0.0; }
};

// Prefills prompt into target (on top of what it holds; the drafter sees the prompt and what is
// emitted) and emits up to n_predict tokens, greedy or sampled as described above. Checks that prompt + n_predict fits the context; a proposal never runs the
// target past prompt + n_predict positions (the last batches draft fewer tokens), so the context
// bound is plain generation's. on_token as in generate().
SpecResult generate_speculative(Session& target, Drafter& drafter, std::span<const int32_t> prompt,
                                const SpecOptions& opts, const TokenFn& on_token = {});

}  // namespace memra::engine
