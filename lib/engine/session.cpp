#include "engine/session.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "sample/sampler.h"

namespace memra::engine {

Session::Session(std::shared_ptr<const gguf::File> file, backend::Backend& be, const SessionOptions& opts)
    : file_(std::move(file)), be_(be), opts_(opts) {
  MEMRA_CHECK(opts_.max_batch > 0, "session: max_batch must be positive, got {}", opts_.max_batch);
  model_ = model::load_model(file_, be_);
  kv_ = be_.create_kv(model_->kv_shape(), opts_.kv);
}

Session::~Session() = default;

backend::View Session::run(std::span<const int32_t> ids, bool all_logits) {
  const int64_t nv = n_vocab();
  const int64_t rows = all_logits ? (int64_t)ids.size() : 1;
  if (logits_buf_.size < rows * nv) logits_buf_ = be_.alloc(rows * nv);
  backend::View lv = logits_buf_.view(rows, nv);
  model_->forward(be_, *kv_, ids, n_past_, all_logits, lv);
  n_past_ += (int)ids.size();
  return lv;
}

void Session::check_prefill(std::span<const int32_t> ids) const {
  MEMRA_CHECK(!ids.empty(), "prefill: no tokens");
  MEMRA_CHECK((int64_t)n_past_ + (int64_t)ids.size() <= n_ctx(),
              "prompt of {} tokens (after {} already in the cache) exceeds context n_ctx={}",
              ids.size(), n_past_, n_ctx());
}

void Session::prefill_chunks(std::span<const int32_t> ids, bool all_logits,
                             const std::function<void(size_t, size_t, backend::View)>& chunk) {
  check_prefill(ids);
  for (size_t i = 0; i < ids.size(); i += (size_t)opts_.max_batch) {
    const size_t n = std::min(ids.size() - i, (size_t)opts_.max_batch);
    chunk(i, n, run(ids.subspan(i, n), all_logits));
  }
}

std::vector<float> Session::prefill(std::span<const int32_t> ids, bool all_logits) {
  const int64_t nv = n_vocab();
  std::vector<float> out((size_t)((all_logits ? (int64_t)ids.size() : 1) * nv));
  prefill_chunks(ids, all_logits, [&](size_t i, size_t n, backend::View lv) {
    if (all_logits)
      be_.to_host(lv, out.data() + (int64_t)i * nv);
    else if (i + n == ids.size())
      be_.to_host(lv, out.data());
  });
  return out;
}

std::vector<int32_t> Session::prefill_argmax(std::span<const int32_t> ids, bool all_rows) {
  std::vector<int32_t> out(all_rows ? ids.size() : 1);
  prefill_chunks(ids, all_rows, [&](size_t i, size_t n, backend::View lv) {
    if (all_rows)
      be_.argmax_rows(lv, std::span<int32_t>(out).subspan(i, n));
    else if (i + n == ids.size())
      be_.argmax_rows(lv, out);
  });
  return out;
}

int32_t Session::prefill_sample(std::span<const int32_t> ids, backend::TokenSampler& sampler) {
  int32_t id = 0;
  prefill_chunks(ids, false, [&](size_t i, size_t n, backend::View lv) {
    if (i + n == ids.size()) id = sampler.sample(lv);
  });
  return id;
}

void Session::check_decode() const { MEMRA_CHECK(n_past_ < n_ctx(), "decode: context full (n_ctx={})", n_ctx()); }

std::vector<float> Session::decode(int32_t token) {
  check_decode();
  std::vector<float> out((size_t)n_vocab());
  be_.to_host(run(std::span<const int32_t>(&token, 1), false), out.data());
  return out;
}

int32_t Session::decode_argmax(int32_t token) {
  check_decode();
  int32_t id = 0;
  be_.argmax_rows(run(std::span<const int32_t>(&token, 1), false), std::span<int32_t>(&id, 1));
  return id;
}

int32_t Session::decode_sample(int32_t token, backend::TokenSampler& sampler) {
  check_decode();
  return sampler.sample(run(std::span<const int32_t>(&token, 1), false));
}

void Session::truncate(int n) {
  MEMRA_CHECK(n >= 0 && n <= n_past_, "truncate: {} not in [0, {}]", n, n_past_);
  kv_->truncate(n);
  n_past_ = n;
  if (n < ckpt_n_past_) ckpt_n_past_ = -1;
}

bool Session::has_recurrent_state() const { return kv_->has_recurrent_state(); }

void Session::save_checkpoint() {
  kv_->save_checkpoint();
  ckpt_n_past_ = n_past_;
}

void Session::rollback_to_checkpoint() {
  MEMRA_CHECK(ckpt_n_past_ >= 0 && ckpt_n_past_ <= n_past_, "rollback: no checkpoint at or before position {}", n_past_);
  kv_->rollback_to_checkpoint();
  n_past_ = ckpt_n_past_;
}

int32_t argmax(std::span<const float> logits) { return memra::argmax(logits); }

namespace {

// generate()'s loop: first() prefills the prompt and returns the first token, next(id) decodes id
// and returns the token after it. (With n_predict = 0 the sampled forms' first() only prefills: no
// draw is consumed.)
GenerateResult generate_loop(Session& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                             const std::function<int32_t()>& first, const std::function<int32_t(int32_t)>& next,
                             const TokenFn& on_token) {
  MEMRA_CHECK(!prompt.empty(), "generate: empty prompt (add at least a BOS token)");
  MEMRA_CHECK(opts.n_predict >= 0, "generate: n_predict must be >= 0, got {}", opts.n_predict);
  const int64_t need = (int64_t)s.n_past() + (int64_t)prompt.size() + opts.n_predict;
  MEMRA_CHECK(need <= s.n_ctx(), "prompt of {} tokens + {} to generate exceeds context n_ctx={}{}",
              prompt.size(), opts.n_predict, s.n_ctx(),
              s.n_past() ? fmt::format(" ({} tokens already in the cache)", s.n_past()) : "");
  using clock = std::chrono::steady_clock;
  GenerateResult r;
  r.n_prompt = (int)prompt.size();
  r.stop = "length";
  auto t0 = clock::now();
  int32_t id = first();
  r.prefill_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  auto t1 = clock::now();
  for (int i = 0; i < opts.n_predict; ++i) {
    if (i > 0) id = next(id);
    r.tokens.push_back(id);
    if (on_token && !on_token(id)) {
      r.stop = "callback";
      break;
    }
    if (std::find(opts.eog_ids.begin(), opts.eog_ids.end(), id) != opts.eog_ids.end()) {
      r.stop = "eog";
      break;
    }
  }
  r.decode_ms = std::chrono::duration<double, std::milli>(clock::now() - t1).count();
  return r;
}

}  // namespace

GenerateResult generate(Session& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                        const SampleFn& sample, const TokenFn& on_token) {
  // An empty sample function: greedy, the choice made by the backend (the logits stay there).
  if (!sample)
    return generate_loop(
        s, prompt, opts, [&] { return s.prefill_argmax(prompt, false)[0]; },
        [&](int32_t id) { return s.decode_argmax(id); }, on_token);
  return generate_loop(
      s, prompt, opts,
      [&] {
        const auto logits = s.prefill(prompt, false);
        return opts.n_predict > 0 ? sample(logits) : 0;
      },
      [&](int32_t id) { return sample(s.decode(id)); }, on_token);
}

GenerateResult generate(Session& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                        backend::TokenSampler& sampler, const TokenFn& on_token) {
  return generate_loop(
      s, prompt, opts,
      [&] { return opts.n_predict > 0 ? s.prefill_sample(prompt, sampler) : (s.prefill(prompt, false), 0); },
      [&](int32_t id) { return s.decode_sample(id, sampler); }, on_token);
}

}  // namespace memra::engine
