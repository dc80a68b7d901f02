#pragma once
// Model loading for run-gen: backend from the config, the weights' pages faulted in with a
// progress line on stderr (the slow part of a first run on a large file), then the Session.
#include <memory>
#include <string>

#include "backend/backend.h"
#include "common/app.h"
#include "engine/session.h"
#include "gguf/gguf.h"

namespace memra::rungen {

struct Loaded {
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<engine::Session> session;
  std::string backend_name;
  double load_ms = 0.0;
};

// Records backend, load time, n_ctx and KV types in the receipt's metrics.
Loaded load_session(app::Context& ctx, std::shared_ptr<const gguf::File> file);

}  // namespace memra::rungen
