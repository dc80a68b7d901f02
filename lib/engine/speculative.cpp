#include "engine/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_map>

#include "core/error.h"

namespace memra::engine {

namespace {

using clock = std::chrono::steady_clock;

double ms_since(clock::time_point t) { return std::chrono::duration<double, std::milli>(clock::now() - t).count(); }

// Takes s back to `to` positions. Attention-only caches truncate. A cache with recurrent layers
// returns to its checkpoint (at position ckpt, which must be <= to) and runs tokens[ckpt .. to)
// again, where tokens holds at least what s held from position 0 (or from `offset` on: tokens[i]
// is position offset + i).
void roll_back(Session& s, int to, std::span<const int32_t> tokens, int offset, int ckpt) {
  if (to >= s.n_past()) return;
  if (!s.has_recurrent_state()) {
    s.truncate(to);
    return;
  }
  MEMRA_CHECK(ckpt >= offset && ckpt <= to, "speculative: no checkpoint to roll back to position {}", to);
  s.rollback_to_checkpoint();
  if (to > ckpt) (void)s.prefill_argmax(tokens.subspan((size_t)(ckpt - offset), (size_t)(to - ckpt)), false);
}

// softmax(logits)[id] at temperature 1, in double.
double top_probability(std::span<const float> logits, int32_t id) {
  double m = -INFINITY;
  for (float v : logits) m = std::max(m, (double)v);
  double sum = 0.0;
  for (float v : logits) sum += std::exp((double)v - m);
  return std::exp((double)logits[(size_t)id] - m) / sum;
}

// max(0, p - q) over p's candidates (q: the proposal's distribution, or null for q = 1 on x).
// Empty weights (total 0) when p <= q everywhere.
Distribution residual(const Distribution& p, const Distribution* q, int32_t x) {
  Distribution r;
  std::unordered_map<int32_t, double> qp;
  if (q)
    for (size_t i = 0; i < q->ids.size(); ++i) qp[q->ids[i]] = q->weights[i] / q->total;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    const int32_t y = p.ids[i];
    double qy = 0.0;
    if (!q) {
      qy = y == x ? 1.0 : 0.0;
    } else if (const auto it = qp.find(y); it != qp.end()) {
      qy = it->second;
    }
    const double w = std::max(0.0, p.weights[i] / p.total - qy);
    if (w <= 0.0) continue;
    r.ids.push_back(y);
    r.weights.push_back(w);
    r.total += w;
  }
  return r;
}

// Verify rows of a sampled batch (the rejection rule, speculative.h): the proposals kept (a) and
// the token drawn after them.
struct Verdict {
  int a = 0;
  int32_t next = 0;
};
Verdict verify_sampled(std::span<const float> rows, int64_t nv, std::span<const int32_t> batch, const Proposal& prop,
                       Sampler& ts) {
  Verdict v;
  const int n_draft = (int)batch.size() - 1;
  for (; v.a < n_draft; ++v.a) {
    const Distribution p = ts.distribution(rows.subspan((size_t)(v.a * nv), (size_t)nv));
    const int32_t x = batch[(size_t)v.a + 1];
    const Distribution* q = prop.q.empty() ? nullptr : &prop.q[(size_t)v.a];
    const double px = p.prob(x), qx = q ? q->prob(x) : 1.0;
    if (ts.uniform() * qx < px) {  // probability min(1, p(x) / q(x))
      ts.accept(x);
      continue;
    }
    const Distribution r = residual(p, q, x);
    v.next = ts.draw(r.total > 0.0 ? r : p);
    ts.accept(v.next);
    return v;
  }
  v.next = ts.draw(ts.distribution(rows.subspan((size_t)(n_draft * nv), (size_t)nv)));
  ts.accept(v.next);
  return v;
}

}  // namespace

Drafter::~Drafter() = default;

void ModelDrafter::prime(std::span<const int32_t> prompt) {
  s_.reset();
  held_.clear();
  ckpt_ = -1;
  // The whole prompt, as the target runs it: the same batch gives the same cache bytes (a prefill
  // of one token fewer can take other GEMM shapes on a device, and a draft that is the target
  // itself would then disagree with it at near-ties). The first proposal runs the target's first
  // token on top.
  if (prompt.empty()) return;
  MEMRA_CHECK((int64_t)prompt.size() < s_.n_ctx(), "draft model: prompt of {} tokens exceeds its context n_ctx={}",
              prompt.size(), s_.n_ctx());
  s_.prefill(prompt, false);
  held_.assign(prompt.begin(), prompt.end());
}

ModelDrafter::ModelDrafter(Session& draft, const std::optional<SamplerOptions>& sampling) : s_(draft) {
  if (sampling) {
    SamplerOptions o = *sampling;
    o.seed ^= 0x6a09e667f3bcc908ull;  // not the target's stream of draws
    sampler_.emplace(o);
  }
}

std::span<const int32_t> ModelDrafter::sync(std::span<const int32_t> history, int& k) {
  // Proposing k tokens runs the history's tail and k - 1 proposals: positions up to
  // history.size() + k - 2.
  k = (int)std::min<int64_t>(k, (int64_t)s_.n_ctx() - (int64_t)history.size() + 1);
  if (history.empty() || k <= 0) {
    k = 0;
    return {};
  }
  size_t keep = 0;
  while (keep < held_.size() && keep < history.size() && held_[keep] == history[keep]) ++keep;
  keep = std::min(keep, history.size() - 1);  // the last token always runs: its logits are the first guess
  if (keep < held_.size()) {
    if (s_.has_recurrent_state() && (ckpt_ < 0 || (size_t)ckpt_ > keep)) {
      s_.reset();  // no checkpoint at or before keep: start over
      ckpt_ = -1;
      keep = 0;
    } else {
      roll_back(s_, (int)keep, history, 0, ckpt_);
    }
    held_.resize(keep);
  }
  return history.subspan(keep);
}

void ModelDrafter::ran(std::span<const int32_t> tail, int k) {
  held_.insert(held_.end(), tail.begin(), tail.end());
  // The proposals are decoded on top of the history; with recurrent layers the state here is the
  // point the next proposal may have to come back to.
  if (s_.has_recurrent_state() && k > 1) {
    s_.save_checkpoint();
    ckpt_ = s_.n_past();
  }
}

void ModelDrafter::set_p_min(double p) {
  MEMRA_CHECK(p >= 0.0 && p <= 1.0, "draft model: p_min must be in [0, 1], got {}", p);
  p_min_ = p;
}

std::vector<int32_t> ModelDrafter::propose(std::span<const int32_t> history, int k) {
  std::vector<int32_t> out;
  const auto tail = sync(history, k);
  if (k <= 0) return out;
  if (p_min_ > 0.0) {  // the argmax's probability needs the logits
    std::vector<float> logits = s_.prefill(tail, false);
    ran(tail, k);
    for (int i = 0; i < k; ++i) {
      const int32_t d = argmax(logits);
      if (top_probability(logits, d) < p_min_) break;
      out.push_back(d);
      if (i + 1 == k) break;
      logits = s_.decode(d);
      held_.push_back(d);
    }
    return out;
  }
  int32_t d = s_.prefill_argmax(tail, false)[0];
  ran(tail, k);
  for (int i = 0; i < k; ++i) {
    out.push_back(d);
    if (i + 1 == k) break;
    d = s_.decode_argmax(d);
    held_.push_back(out.back());
  }
  return out;
}

Proposal ModelDrafter::propose_sampled(std::span<const int32_t> history, int k) {
  if (!sampler_) return {propose(history, k), {}};
  Proposal out;
  const auto tail = sync(history, k);
  if (k <= 0) return out;
  std::vector<float> logits = s_.prefill(tail, false);
  ran(tail, k);
  sampler_->set_window(history);
  for (int i = 0; i < k; ++i) {
    Distribution q = sampler_->distribution(logits);
    if (p_min_ > 0.0 && q.weights[0] / q.total < p_min_) break;  // (candidate 0: the largest weight)
    const int32_t d = sampler_->draw(q);
    sampler_->accept(d);
    out.tokens.push_back(d);
    out.q.push_back(std::move(q));
    if (i + 1 == k) break;
    logits = s_.decode(d);
    held_.push_back(d);
  }
  return out;
}

NgramDrafter::NgramDrafter(int n_min, int n_max) : n_min_(n_min), n_max_(n_max) {
  MEMRA_CHECK(n_min >= 1 && n_max >= n_min, "ngram drafter: need 1 <= n_min <= n_max, got {} and {}", n_min, n_max);
}

std::vector<int32_t> NgramDrafter::propose(std::span<const int32_t> history, int k) {
  const int64_t len = (int64_t)history.size();
  for (int64_t n = std::min<int64_t>(n_max_, len - 1); n >= n_min_ && k > 0; --n) {
    const auto tail = history.subspan((size_t)(len - n));
    // The most recent earlier occurrence: starts at j < len - n.
    for (int64_t j = len - n - 1; j >= 0; --j) {
      if (!std::equal(tail.begin(), tail.end(), history.begin() + j)) continue;
      const int64_t from = j + n, to = std::min<int64_t>(len, from + k);
      return std::vector<int32_t>(history.begin() + from, history.begin() + to);
    }
  }
  return {};
}

SpecResult generate_speculative(Session& target, Drafter& drafter, std::span<const int32_t> prompt,
                                const SpecOptions& opts, const TokenFn& on_token) {
  MEMRA_CHECK(!prompt.empty(), "speculative: empty prompt (add at least a BOS token)");
  MEMRA_CHECK(opts.n_predict >= 0, "speculative: n_predict must be >= 0, got {}", opts.n_predict);
  MEMRA_CHECK(opts.k >= 1, "speculative: k (tokens drafted per step) must be >= 1, got {}", opts.k);
  const int64_t need = (int64_t)target.n_past() + (int64_t)prompt.size() + opts.n_predict;
  MEMRA_CHECK(need <= target.n_ctx(), "prompt of {} tokens + {} to generate exceeds context n_ctx={}{}",
              prompt.size(), opts.n_predict, target.n_ctx(),
              target.n_past() ? fmt::format(" ({} tokens already in the cache)", target.n_past()) : "");
  SpecResult r;
  r.n_prompt = (int)prompt.size();
  r.stop = "length";
  // A batch larger than the backend's max_verify_rows() may take other kernels than one-token
  // steps (a GEMM), whose choices could differ at a near-tie: never drafted past it.
  r.k = (int)std::min<int64_t>(opts.k, (int64_t)target.backend().max_verify_rows() - 1);
  r.accepted_hist.assign((size_t)std::max(r.k, 0) + 1, 0);
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  const int n_past0 = target.n_past();

  std::optional<Sampler> ts;  // sampled: the target's sampler, its window the prompt and what is emitted
  if (opts.sampling) {
    ts.emplace(*opts.sampling);
    for (int32_t id : prompt) ts->accept(id);
  }
  const auto t0 = clock::now();
  drafter.prime(prompt);
  int32_t first = 0;
  if (ts) {
    first = ts->draw(ts->distribution(target.prefill(prompt, false)));
    ts->accept(first);
  } else {
    first = target.prefill_argmax(prompt, false)[0];
  }
  r.prefill_ms = ms_since(t0);
  if (opts.n_predict == 0) return r;

  const auto t1 = clock::now();
  // Emits one token; false when generation ends with it.
  auto emit = [&](int32_t id) {
    r.tokens.push_back(id);
    history.push_back(id);
    if (on_token && !on_token(id)) {
      r.stop = "callback";
      return false;
    }
    if (std::find(opts.eog_ids.begin(), opts.eog_ids.end(), id) != opts.eog_ids.end()) {
      r.stop = "eog";
      return false;
    }
    return (int)r.tokens.size() < opts.n_predict;
  };
  const int64_t nv = target.n_vocab();
  const bool recurrent = target.has_recurrent_state();
  std::vector<int32_t> last_batch;  // the last target batch and its first position
  int last_base = 0;
  int32_t cur = first;
  bool going = emit(cur);
  while (going) {
    // cur is emitted but not in the target's cache. The batch [cur, proposals] can yield
    // 1 + proposals tokens: never more than are still wanted.
    const int room = opts.n_predict - (int)r.tokens.size();
    const int k = std::min(r.k, room - 1);
    std::vector<int32_t> batch{cur};
    Proposal prop;
    if (k > 0) {
      const auto td = clock::now();
      if (ts) prop = drafter.propose_sampled(history, k);
      else prop.tokens = drafter.propose(history, k);
      r.draft_ms += ms_since(td);
      auto& d = prop.tokens;
      if ((int)d.size() > k) d.resize((size_t)k);
      MEMRA_CHECK(prop.q.empty() || prop.q.size() >= d.size(), "speculative: the {} drafter gave {} distributions "
                  "for {} proposals", drafter.name(), prop.q.size(), d.size());
      for (int32_t id : d)
        MEMRA_CHECK(id >= 0 && id < nv, "speculative: the {} drafter proposed token {} outside the target's "
                    "vocabulary of {}", drafter.name(), id, nv);
      batch.insert(batch.end(), d.begin(), d.end());
    }
    const int base = target.n_past();
    if (recurrent && batch.size() > 1) target.save_checkpoint();
    const int n_draft = (int)batch.size() - 1;
    ++r.n_verify;
    r.n_drafted += n_draft;
    int a = 0;  // proposals kept
    int32_t next = 0;
    if (ts) {
      const std::vector<float> rows = batch.size() == 1 ? target.decode(cur) : target.prefill(batch, true);
      const Verdict v = verify_sampled(rows, nv, batch, prop, *ts);
      a = v.a;
      next = v.next;
    } else {
      // The target's choice after each token of the batch (picked on the backend: the logits stay there).
      const std::vector<int32_t> choice =
          batch.size() == 1 ? std::vector<int32_t>{target.decode_argmax(cur)} : target.prefill_argmax(batch, true);
      while (a < n_draft && choice[(size_t)a] == batch[(size_t)a + 1]) ++a;  // equal to the target's choice
      next = choice[(size_t)a];
    }
    r.n_accepted += a;
    ++r.accepted_hist[(size_t)a];
    // Keep cur and the accepted proposals in the cache; the rejected ones' rows go (with recurrent
    // layers: back to the batch's start and the kept tokens run again).
    roll_back(target, base + 1 + a, batch, base, base);
    last_batch = batch;
    last_base = base;
    for (int i = 1; i <= a && going; ++i) going = emit(batch[(size_t)i]);
    if (!going) break;
    cur = next;
    going = emit(cur);
  }
  // A stop inside an accepted run leaves proposals past the last emitted token in the cache:
  // drop them, so the cache holds what plain generation's would (every emitted token but the last).
  const int64_t held = (int64_t)n_past0 + (int64_t)prompt.size() + (int64_t)r.tokens.size() - 1;
  if (target.n_past() > held) roll_back(target, (int)held, last_batch, last_base, last_base);
  r.decode_ms = ms_since(t1);
  return r;
}

}  // namespace memra::engine
