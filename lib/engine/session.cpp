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

std::vector<float> Session::prefill(std::span<const int32_t> ids, bool all_logits) {
  check_prefill(ids);
  const int64_t nv = n_vocab();
  std::vector<float> out((size_t)((all_logits ? (int64_t)ids.size() : 1) * nv));
  for (size_t i = 0; i < ids.size(); i += (size_t)opts_.max_batch) {
    const size_t n = std::min(ids.size() - i, (size_t)opts_.max_batch);
    const bool last_chunk = i + n == ids.size();
    const backend::View lv = run(ids.subspan(i, n), all_logits);
    if (all_logits)
      be_.to_host(lv, out.data() + (int64_t)i * nv);
    else if (last_chunk)
      be_.to_host(lv, out.data());
  }
  return out;
}

std::vector<int32_t> Session::prefill_argmax(std::span<const int32_t> ids, bool all_rows) {
  check_prefill(ids);
  std::vector<int32_t> out(all_rows ? ids.size() : 1);
  for (size_t i = 0; i < ids.size(); i += (size_t)opts_.max_batch) {
    const size_t n = std::min(ids.size() - i, (size_t)opts_.max_batch);
    const backend::View lv = run(ids.subspan(i, n), all_rows);
    if (all_rows)
      be_.argmax_rows(lv, std::span<int32_t>(out).subspan(i, n));
    else if (i + n == ids.size())
      be_.argmax_rows(lv, out);
  }
  return out;
}

std::vector<float> Session::decode(int32_t token) {
  MEMRA_CHECK(n_past_ < n_ctx(), "decode: context full (n_ctx={})", n_ctx());
  std::vector<float> out((size_t)n_vocab());
  be_.to_host(run(std::span<const int32_t>(&token, 1), false), out.data());
  return out;
}

int32_t Session::decode_argmax(int32_t token) {
  MEMRA_CHECK(n_past_ < n_ctx(), "decode: context full (n_ctx={})", n_ctx());
  int32_t id = 0;
  be_.argmax_rows(run(std::span<const int32_t>(&token, 1), false), std::span<int32_t>(&id, 1));
  return id;
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

GenerateResult generate(Session& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                        const SampleFn& sample, const TokenFn& on_token) {
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
  // An empty sample function: greedy, the choice made by the backend (the logits stay there).
  const bool on_backend = !sample;
  auto t0 = clock::now();
  std::vector<float> logits;
  int32_t next = 0;
  if (on_backend)
    next = s.prefill_argmax(prompt, false)[0];
  else
    logits = s.prefill(prompt, false);
  r.prefill_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  auto t1 = clock::now();
  for (int i = 0; i < opts.n_predict; ++i) {
    const int32_t id = on_backend ? next : sample(logits);
    r.tokens.push_back(id);
    if (on_token && !on_token(id)) {
      r.stop = "callback";
      break;
    }
    if (std::find(opts.eog_ids.begin(), opts.eog_ids.end(), id) != opts.eog_ids.end()) {
      r.stop = "eog";
      break;
    }
    if (i + 1 == opts.n_predict) break;
    if (on_backend)
      next = s.decode_argmax(id);
    else
      logits = s.decode(id);
  }
  r.decode_ms = std::chrono::duration<double, std::milli>(clock::now() - t1).count();
  return r;
}

}  // namespace memra::engine
