#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "core/error.h"
#include "sample/chain.h"

namespace memra {

void validate(const SamplerOptions& o) {
  MEMRA_CHECK(std::isfinite(o.temperature), "sampler: temperature must be finite, got {}", o.temperature);
  MEMRA_CHECK(o.top_p > 0.0f && o.top_p <= 1.0f, "sampler: top_p must be in (0, 1], got {}", o.top_p);
  MEMRA_CHECK(o.min_p >= 0.0f && o.min_p <= 1.0f, "sampler: min_p must be in [0, 1], got {}", o.min_p);
  MEMRA_CHECK(o.typical_p > 0.0f && o.typical_p <= 1.0f, "sampler: typical_p must be in (0, 1], got {}",
              o.typical_p);
  MEMRA_CHECK(o.repeat_penalty > 0.0f && std::isfinite(o.repeat_penalty),
              "sampler: repeat_penalty must be > 0, got {}", o.repeat_penalty);
  MEMRA_CHECK(std::isfinite(o.frequency_penalty), "sampler: frequency_penalty must be finite, got {}",
              o.frequency_penalty);
  MEMRA_CHECK(std::isfinite(o.presence_penalty), "sampler: presence_penalty must be finite, got {}",
              o.presence_penalty);
  MEMRA_CHECK(o.penalty_last_n >= 0, "sampler: penalty_last_n must be >= 0, got {}", o.penalty_last_n);
}

int32_t argmax(std::span<const float> logits) {
  MEMRA_CHECK(!logits.empty(), "argmax of an empty logits row");
  int32_t best = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (std::isnan(v)) continue;
    if (best < 0 || v > logits[(size_t)best]) best = (int32_t)i;
  }
  return best < 0 ? 0 : best;
}

void candidate_order_all(std::span<const float> logit, std::vector<int32_t>& id, std::vector<uint64_t>& keys,
                         std::vector<uint64_t>& tmp) {
  const size_t n = logit.size();
  MEMRA_CHECK(n <= 0xffffffffu, "candidate_order_all: {} entries", n);
  keys.resize(n);
  tmp.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const float v = logit[i] == 0.0f ? 0.0f : logit[i];  // -0 and +0 compare equal: one key
    uint32_t b = 0;
    std::memcpy(&b, &v, 4);
    const uint32_t ascending = (b & 0x80000000u) ? ~b : (b | 0x80000000u);  // unsigned order = float order
    keys[i] = (uint64_t)~ascending << 32 | (uint64_t)i;                     // high half: logit descending
  }
  // LSD radix sort on the high 32 bits, 8 at a time; stable, so equal logits keep ascending ids.
  for (int shift = 32; shift < 64; shift += 8) {
    size_t count[257] = {};
    for (size_t i = 0; i < n; ++i) ++count[((keys[i] >> shift) & 0xff) + 1];
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (size_t i = 0; i < n; ++i) tmp[count[(keys[i] >> shift) & 0xff]++] = keys[i];
    keys.swap(tmp);
  }
  id.resize(n);
  for (size_t i = 0; i < n; ++i) id[i] = (int32_t)(uint32_t)keys[i];
}

bool top_k_ids(std::span<const float> logit, int32_t k, std::vector<int32_t>& id, std::vector<float>& block_max) {
  const int64_t n = (int64_t)logit.size();
  constexpr int64_t kBlocks = 1024;
  if (k < 1 || n < 4 * kBlocks || k > kBlocks / 2) return false;
  // t = the k-th largest of the blocks' maxima: those k maxima are k distinct entries, so at least
  // k entries are >= t, the k-th largest entry is >= t, and every entry of the first k is too.
  const int64_t len = (n + kBlocks - 1) / kBlocks;
  block_max.resize((size_t)kBlocks);
  const float* v = logit.data();
  for (int64_t b = 0; b < kBlocks; ++b) {
    // Eight independent maxima (a max is exact in any order), so the compare-selects do not wait on
    // each other; `x > m ? x : m` never takes a NaN.
    float m[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t i = b * len;
    const int64_t e = std::min(n, (b + 1) * len);
    for (; i + 8 <= e; i += 8)
      for (int j = 0; j < 8; ++j) m[j] = v[i + j] > m[j] ? v[i + j] : m[j];
    for (; i < e; ++i) m[0] = v[i] > m[0] ? v[i] : m[0];
    for (int j = 1; j < 8; ++j) m[0] = m[j] > m[0] ? m[j] : m[0];
    block_max[(size_t)b] = m[0];
  }
  std::nth_element(block_max.begin(), block_max.begin() + (k - 1), block_max.end(), std::greater<float>());
  const float t = block_max[(size_t)(k - 1)];
  // NaN ranks as -inf: no maximum takes it, and above a threshold > -inf none is gathered. At -inf
  // (fewer than k blocks with a value above it) the NaNs and -infs would have to be ordered: decline.
  if (!(t > -INFINITY)) return false;
  id.clear();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {  // most runs of 16 hold none: one test for the run
    bool any = false;
    for (int j = 0; j < 16; ++j) any |= v[i + j] >= t;
    if (any)
      for (int j = 0; j < 16; ++j)
        if (v[i + j] >= t) id.push_back((int32_t)(i + j));
  }
  for (; i < n; ++i)
    if (v[i] >= t) id.push_back((int32_t)i);
  const auto cmp = [&](int32_t a, int32_t b) { return sample_chain::before(logit[(size_t)a], a, logit[(size_t)b], b); };
  std::partial_sort(id.begin(), id.begin() + k, id.end(), cmp);
  id.resize((size_t)k);
  return true;
}

Sampler::Sampler(const SamplerOptions& options) : opt_(options) { validate(opt_); }

void Sampler::accept(int32_t token) {
  if (opt_.penalty_last_n == 0) return;
  window_.push_back(token);
  while (window_.size() > (size_t)opt_.penalty_last_n) window_.pop_front();
}

void Sampler::reset() {
  window_.clear();
  draws_ = 0;
}

int32_t Sampler::count_in_window(int32_t token) const {
  return (int32_t)std::count(window_.begin(), window_.end(), token);
}

void Sampler::set_window(std::span<const int32_t> tokens) {
  window_.clear();
  for (int32_t t : tokens) accept(t);
}

double Distribution::prob(int32_t id) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == id) return total > 0 ? weights[i] / total : 0.0;
  return 0.0;
}

int32_t Sampler::candidates(std::span<const float> logits) {
  MEMRA_CHECK(!logits.empty(), "sampler: empty logits row");
  const int32_t n_vocab = (int32_t)logits.size();
  const bool penalize = opt_.repeat_penalty != 1.0f || opt_.frequency_penalty != 0.0f ||
                        opt_.presence_penalty != 0.0f;
  const sample_chain::ChainParams cp{opt_.temperature, opt_.top_p, opt_.min_p, opt_.typical_p};
  const auto sort_by_score = [](int32_t* order, const double* score, int32_t n) {
    std::sort(order, order + n, [score](int32_t a, int32_t b) {
      return score[a] < score[b] || (score[a] == score[b] && a < b);
    });
  };
  const auto filter = [&](std::span<const float> from, int32_t k) {
    id_.resize(k);
    cand_.resize(k);
    for (int32_t i = 0; i < k; ++i) cand_[i] = from[id_[i]];
    p_.resize(k);
    score_.resize(k);
    order_.resize(k);
    return sample_chain::filter(cand_.data(), id_.data(), k, cp, p_.data(), score_.data(), order_.data(),
                                sort_by_score);
  };
  // A top-k without penalties reads the row as given (top_k_ids ranks NaN as -inf itself): no copy
  // of the vocabulary first. The same ids in the same order as the copy's path below.
  if (!penalize && opt_.temperature > 0.0f && opt_.top_k > 0 && opt_.top_k < n_vocab &&
      top_k_ids(logits, opt_.top_k, id_, block_max_))
    return filter(logits, opt_.top_k);

  logit_.resize(logits.size());
  // NaN would break the candidate order; it ranks as -inf (the device does the same).
  for (int32_t i = 0; i < n_vocab; ++i) logit_[i] = std::isnan(logits[i]) ? -INFINITY : logits[i];
  if (penalize) {
    for (size_t i = 0; i < window_.size(); ++i) {
      const int32_t t = window_[i];
      if (t < 0 || t >= n_vocab) continue;
      // Penalize each distinct token once, at its first occurrence in the window.
      if (std::find(window_.begin(), window_.begin() + (long)i, t) != window_.begin() + (long)i) continue;
      logit_[t] = sample_chain::penalize(logit_[t], count_in_window(t), opt_.repeat_penalty,
                                         opt_.frequency_penalty, opt_.presence_penalty);
    }
  }
  if (opt_.temperature <= 0.0f) {
    greedy_ = argmax(logit_);
    return 0;
  }

  const int32_t k = opt_.top_k > 0 ? std::min(opt_.top_k, n_vocab) : n_vocab;
  // (logit, id) is a strict total order, so every correct sort gives the same permutation: the
  // whole vocabulary (top_k off) by a radix sort (the heap of partial_sort at k = n took ~25 ms per
  // token at 151936 entries on the build machine; bench/bench_sampler.cpp), a top-k by the ids at
  // or above a threshold every one of the k first reaches (top_k_ids), else partial_sort.
  if (k == n_vocab) {
    candidate_order_all(logit_, id_, keys_, keys_tmp_);
  } else if (!top_k_ids(logit_, k, id_, block_max_)) {
    id_.resize(logits.size());
    std::iota(id_.begin(), id_.end(), 0);
    const auto cmp = [&](int32_t a, int32_t b) { return sample_chain::before(logit_[a], a, logit_[b], b); };
    std::partial_sort(id_.begin(), id_.begin() + k, id_.end(), cmp);
  }
  return filter(logit_, k);
}

int32_t Sampler::sample(std::span<const float> logits) {
  const int32_t n = candidates(logits);
  if (n == 0) return greedy_;
  const double total = sample_chain::temperature_weights(cand_.data(), n, (double)opt_.temperature, p_.data());
  return id_[sample_chain::draw_index(p_.data(), n, total, uniform())];
}

Distribution Sampler::distribution(std::span<const float> logits) {
  Distribution d;
  const int32_t n = candidates(logits);
  if (n == 0) {
    d.ids = {greedy_};
    d.weights = {1.0};
    d.total = 1.0;
    d.greedy = true;
    return d;
  }
  d.total = sample_chain::temperature_weights(cand_.data(), n, (double)opt_.temperature, p_.data());
  d.ids.assign(id_.begin(), id_.begin() + n);
  d.weights.assign(p_.begin(), p_.begin() + n);
  return d;
}

int32_t Sampler::draw(const Distribution& d) {
  MEMRA_CHECK(!d.ids.empty() && d.ids.size() == d.weights.size(), "sampler: draw from an empty distribution");
  if (d.greedy) return d.ids[0];
  return d.ids[(size_t)sample_chain::draw_index(d.weights.data(), (int32_t)d.ids.size(), d.total, uniform())];
}

double Sampler::uniform() { return sample_chain::uniform01(opt_.seed, draws_++); }

}  // namespace memra
