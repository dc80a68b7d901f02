#include "engine/session.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace memra::engine {

Session::Session(std::shared_ptr<const gguf::File> file, backend::Backend& be, const SessionOptions& opts)
    : file_(std::move(file)), be_(be), opts_(opts) {
  MEMRA_CHECK(opts_.max_batch > 0, "session: max_batch must be positive, got {}", opts_.max_batch);
  model_ = model::load_model(file_, be_);
  kv_ = be_.create_kv(model_->kv_shape(), opts_.kv);
}

Session::~Session() = default;

void Session::run(std::span<const int32_t> ids, bool all_logits, float* out) {
  const int64_t nv = n_vocab();
  const int64_t rows = all_logits ? (int64_t)ids.size() : 1;
  if (logits_buf_.size < rows * nv) logits_buf_ = be_.alloc(rows * nv);
  backend::View lv = logits_buf_.view(rows, nv);
  model_->forward(be_, *kv_, ids, n_past_, all_logits, lv);
  be_.to_host(lv, out);
  n_past_ += (int)ids.size();
}

std::vector<float> Session::prefill(std::span<const int32_t> ids, bool all_logits) {
  MEMRA_CHECK(!ids.empty(), "prefill: no tokens");
  MEMRA_CHECK((int64_t)n_past_ + (int64_t)ids.size() <= n_ctx(),
              "prompt of {} tokens (after {} already in the cache) exceeds context n_ctx={}",
              ids.size(), n_past_, n_ctx());
  const int64_t nv = n_vocab();
  std::vector<float> out((size_t)((all_logits ? (int64_t)ids.size() : 1) * nv));
  for (size_t i = 0; i < ids.size(); i += (size_t)opts_.max_batch) {
    const size_t n = std::min(ids.size() - i, (size_t)opts_.max_batch);
    const bool last_chunk = i + n == ids.size();
    if (all_logits)
      run(ids.subspan(i, n), true, out.data() + (int64_t)i * nv);
    else if (last_chunk)
      run(ids.subspan(i, n), false, out.data());
    else {
      std::vector<float> discard((size_t)nv);
      run(ids.subspan(i, n), false, discard.data());
    }
  }
  return out;
}

std::vector<float> Session::decode(int32_t token) {
  MEMRA_CHECK(n_past_ < n_ctx(), "decode: context full (n_ctx={})", n_ctx());
  std::vector<float> out((size_t)n_vocab());
  run(std::span<const int32_t>(&token, 1), false, out.data());
  return out;
}

void Session::truncate(int n) {
  MEMRA_CHECK(n >= 0 && n <= n_past_, "truncate: {} not in [0, {}]", n, n_past_);
  kv_->truncate(n);
  n_past_ = n;
}

int32_t argmax(std::span<const float> logits) {
  MEMRA_CHECK(!logits.empty(), "argmax of an empty vector");
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;
  return (int32_t)best;
}

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
  auto t0 = clock::now();
  std::vector<float> logits = s.prefill(prompt, false);
  r.prefill_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  auto t1 = clock::now();
  for (int i = 0; i < opts.n_predict; ++i) {
    const int32_t id = sample(logits);
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
    logits = s.decode(id);
  }
  r.decode_ms = std::chrono::duration<double, std::milli>(clock::now() - t1).count();
  return r;
}

}  // namespace memra::engine
