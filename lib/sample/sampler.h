#pragma once
// The CPU sampler: the reference the device sampler (kernels/sample) is checked against. The chain,
// its order and where CPU and device may differ are documented in lib/sample/chain.h.
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace memra {

struct SamplerOptions {
  float temperature = 0.8f;  // <= 0: greedy (argmax after penalties; ties -> smallest id)
  int32_t top_k = 40;        // <= 0: off (all of the vocabulary stays a candidate)
  float top_p = 0.95f;       // 1: off; must be in (0, 1]
  float min_p = 0.05f;       // 0: off; must be in [0, 1]
  float typical_p = 1.0f;    // 1: off; must be in (0, 1]
  float repeat_penalty = 1.0f;     // 1: off; must be > 0
  float frequency_penalty = 0.0f;  // 0: off
  float presence_penalty = 0.0f;   // 0: off
  int32_t penalty_last_n = 64;     // window of accepted tokens the penalties count; 0: off
  uint64_t seed = 0;
};

// Throws memra::Error naming the first field out of range.
void validate(const SamplerOptions& o);

// Largest value, ties to the smallest index (NaN never wins). Throws on an empty span.
int32_t argmax(std::span<const float> logits);

// Every id of `logit` (no NaN) in candidate order (sample_chain::before: logit descending, id
// ascending; -0 and +0 one value), by a stable radix sort of the logits' order-preserving bits: the
// permutation any correct sort gives (a strict total order), in O(n). The sampler's top_k-off path
// (the whole vocabulary ranked); `keys` / `tmp` are scratch.
void candidate_order_all(std::span<const float> logit, std::vector<int32_t>& id, std::vector<uint64_t>& keys,
                         std::vector<uint64_t>& tmp);
// The first k ids of `logit` in candidate order, found among the entries at or above the k-th
// largest of 1024 block maxima (each of the first k is one of them), then ordered by
// sample_chain::before: the k a full sort gives first, in its order. A NaN entry ranks as -inf.
// false (id untouched) where the threshold does not apply (fewer than 4096 entries, k > 512, or the
// threshold is -inf): the caller sorts instead. `block_max` is scratch.
bool top_k_ids(std::span<const float> logit, int32_t k, std::vector<int32_t>& id, std::vector<float>& block_max);

// The distribution one sample() call draws from: the candidates that survive the chain, in
// candidate order, with their temperature weights (probability = weight / total). Greedy: the
// argmax alone, weight 1, and `greedy` set (drawing from it consumes no draw, as sample() does not).
struct Distribution {
  std::vector<int32_t> ids;
  std::vector<double> weights;
  double total = 0.0;
  bool greedy = false;
  double prob(int32_t id) const;  // 0 for an id that is not a candidate
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);

  // Picks the next token from one position's logits (not modified). Consumes one draw of the
  // counter-based generator unless greedy. Does not record the token: call accept().
  int32_t sample(std::span<const float> logits);
  // The same chain without the draw: sample(logits) == draw(distribution(logits)), id for id.
  Distribution distribution(std::span<const float> logits);
  // One draw from d as the chain's last stage draws (the first candidate whose cumulative weight
  // exceeds u * total); consumes one draw unless d is greedy. Throws on an empty distribution.
  int32_t draw(const Distribution& d);
  // u in [0, 1) from the counter-based generator; consumes one draw (speculative acceptance).
  double uniform();
  // Adds a token (prompt or generated) to the penalty window.
  void accept(int32_t token);
  // Clears the window and rewinds the draw counter to 0.
  void reset();
  // The window becomes the last penalty_last_n of tokens (the draw counter is kept).
  void set_window(std::span<const int32_t> tokens);

  const SamplerOptions& options() const { return opt_; }
  uint64_t draws() const { return draws_; }
  // The window (oldest first) as the device sampler takes it.
  std::vector<int32_t> window() const { return {window_.begin(), window_.end()}; }
  // Occurrences of a token in the window (what the penalties use).
  int32_t count_in_window(int32_t token) const;

 private:
  // Penalties, top-k and the filters into cand_ / id_; returns the candidates kept (0: greedy, the
  // choice in greedy_).
  int32_t candidates(std::span<const float> logits);

  SamplerOptions opt_;
  std::deque<int32_t> window_;
  int32_t greedy_ = 0;
  std::vector<float> cand_;
  uint64_t draws_ = 0;
  // Scratch reused between calls (one sampler per sequence; not thread-safe).
  std::vector<float> logit_;
  std::vector<int32_t> id_;
  std::vector<double> p_, score_;
  std::vector<int32_t> order_;
  std::vector<uint64_t> keys_, keys_tmp_;  // candidate_order_all's scratch
  std::vector<float> block_max_;           // top_k_ids' scratch
};

}  // namespace memra
