#pragma once
// A loaded model: weights on a backend plus the forward pass of its architecture. One file per
// architecture (lib/model/<arch>.cpp) composed from the layer pieces in layers.h, and one line
// per architecture in registry.cpp.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf.h"
#include "model/hparams.h"

namespace memra::model {

class Model {
 public:
  virtual ~Model() = default;
  const HParams& hparams() const { return hp_; }
  // Per-layer KV geometry the session's cache must have.
  virtual kv::KvShape kv_shape() const = 0;
  // Runs ids at positions pos0, pos0+1, ... (their K/V are appended to kv). logits receives
  // [ids.size(), n_vocab] rows when all_logits, else one row (the last position).
  virtual void forward(backend::Backend& be, backend::KvStore& kv, std::span<const int32_t> ids,
                       int pos0, bool all_logits, backend::View logits) = 0;
  // Bytes of weights uploaded.
  virtual uint64_t weight_bytes() const = 0;

 protected:
  // The checks every forward starts with: a non-empty batch and a logits view of [n_out, n_vocab]
  // (n_out = n when all_logits, else 1); returns n_out.
  int64_t check_forward(int64_t n, bool all_logits, const backend::View& logits) const;
  HParams hp_;
};

using ModelFactory =
    std::function<std::unique_ptr<Model>(std::shared_ptr<const gguf::File>, backend::Backend&)>;

// Architectures this build can run (general.architecture strings), sorted.
std::vector<std::string> supported_architectures();
// Reads general.architecture and builds the model; an unknown architecture is an error that
// lists the supported ones.
std::unique_ptr<Model> load_model(std::shared_ptr<const gguf::File> file, backend::Backend& be);

}  // namespace memra::model
