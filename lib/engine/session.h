#pragma once
// Session: one sequence on one backend. Loads the model from a GGUF file, owns the KV cache,
// runs prefill batches and single-token decode steps. Backend-agnostic: the CPU and CUDA
// backends run the same code here.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf.h"
#include "kv/kv.h"
#include "model/model.h"

namespace memra::engine {

struct SessionOptions {
  kv::KvOptions kv;      // n_ctx and K/V storage types
  int max_batch = 512;   // prefill runs in chunks of at most this many tokens
};

class Session {
 public:
  // The file is shared: weights may borrow its mapping on host backends. `be` must outlive the
  // session.
  Session(std::shared_ptr<const gguf::File> file, backend::Backend& be, const SessionOptions& opts);
  ~Session();

  const model::HParams& hparams() const { return model_->hparams(); }
  const model::Model& model() const { return *model_; }
  backend::Backend& backend() { return be_; }
  int n_vocab() const { return hparams().n_vocab; }
  int n_ctx() const { return opts_.kv.n_ctx; }
  // The cache's options as the backend made it (a backend may resolve kv.planes = auto).
  const kv::KvOptions& kv_options() const { return kv_->options(); }
  int n_past() const { return n_past_; }

  // Runs ids at positions n_past().. and appends them to the cache. Returns the logits of every
  // position ([ids.size() * n_vocab], row-major) when all_logits, else of the last one.
  std::vector<float> prefill(std::span<const int32_t> ids, bool all_logits = false);
  // One token at position n_past(); returns its next-token logits.
  std::vector<float> decode(int32_t token);
  // The greedy forms of the two: the same runs, each row's argmax picked by the backend
  // (Backend::argmax_rows: on a device only the ids come back, not the logits). prefill_argmax
  // returns every position's choice when all_rows, else the last one's.
  std::vector<int32_t> prefill_argmax(std::span<const int32_t> ids, bool all_rows);
  int32_t decode_argmax(int32_t token);
  // The sampled forms: the last position's token drawn by `sampler` (made by this session's
  // backend: Backend::make_sampler) from logits that stay on the backend.
  int32_t prefill_sample(std::span<const int32_t> ids, backend::TokenSampler& sampler);
  int32_t decode_sample(int32_t token, backend::TokenSampler& sampler);
  // Forget everything (n = 0) or every position >= n. With recurrent layers only n = 0 or
  // n >= n_past() (their state cannot be truncated: see the checkpoint below).
  void reset() { truncate(0); }
  void truncate(int n);
  // Recurrent layers (qwen35): save_checkpoint() copies their state aside at n_past();
  // rollback_to_checkpoint() restores it and n_past() to that position (backend::KvStore).
  bool has_recurrent_state() const;
  void save_checkpoint();
  void rollback_to_checkpoint();

 private:
  // Runs ids at n_past() and returns the logits view (every row when all_logits, else the last).
  backend::View run(std::span<const int32_t> ids, bool all_logits);
  void check_prefill(std::span<const int32_t> ids) const;
  // Runs ids in chunks of max_batch; chunk(i, n, logits) after each (logits of every row of the
  // chunk when all_logits, else of its last).
  void prefill_chunks(std::span<const int32_t> ids, bool all_logits,
                      const std::function<void(size_t, size_t, backend::View)>& chunk);
  void check_decode() const;

  std::shared_ptr<const gguf::File> file_;
  backend::Backend& be_;
  SessionOptions opts_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<backend::KvStore> kv_;
  backend::Buffer logits_buf_;
  int n_past_ = 0;
  int ckpt_n_past_ = -1;
};

// Greedy choice: the largest logit, ties to the smallest id, NaN never wins (memra::argmax: what
// llama.cpp, the sampler and the device do).
int32_t argmax(std::span<const float> logits);

struct GenerateOptions {
  int n_predict = 128;
  std::vector<int32_t> eog_ids;  // generation stops after emitting one of these
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids (an end-of-generation id included)
  std::string stop;             // "eog", "length" or "callback"
  int n_prompt = 0;
  double prefill_ms = 0.0;
  double decode_ms = 0.0;       // all decode steps (the first token comes from the prefill)
  double prefill_tok_s() const { return prefill_ms > 0 ? n_prompt * 1e3 / prefill_ms : 0.0; }
  double decode_tok_s() const {
    return decode_ms > 0 && tokens.size() > 1 ? (double)(tokens.size() - 1) * 1e3 / decode_ms : 0.0;
  }
};

// Picks the next id from the logits of the last position. generate() with an empty SampleFn decodes
// greedily through Session::decode_argmax (the logits stay on the backend).
using SampleFn = std::function<int32_t(std::span<const float> logits)>;
// Called with each generated id as soon as it is chosen; return false to stop.
using TokenFn = std::function<bool(int32_t)>;

// Prefills prompt (on top of whatever the session holds), then samples and decodes up to
// n_predict tokens. Checks first that prompt + n_predict fits the context, with an error saying
// "prompt of N tokens + M to generate exceeds context n_ctx=C".
GenerateResult generate(Session& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                        const SampleFn& sample, const TokenFn& on_token = {});
// The same with each token drawn by a backend sampler (Session::prefill_sample / decode_sample: the
// logits stay on the backend). The caller accepts tokens into the sampler's penalty window (the
// prompt's before, each generated one in on_token), as with memra::Sampler.
GenerateResult generate(Session& s, std::span<const int32_t> prompt, const GenerateOptions& opts,
                        backend::TokenSampler& sampler, const TokenFn& on_token = {});

}  // namespace memra::engine
