#pragma once
// Model loading for the generating apps (run-gen, run-spec): backend from the config, the weights'
// pages faulted in with a progress line on stderr (the slow part of a first run on a large file),
// then the Session.
#include <memory>
#include <string>

#include "backend/backend.h"
#include "common/app.h"
#include "engine/session.h"
#include "gguf/gguf.h"

namespace memra::app {

struct Loaded {
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<engine::Session> session;
  std::string backend_name;
  double load_ms = 0.0;
};

// Records backend, load time, n_ctx and KV types in the receipt's metrics, each key prefixed by
// metrics_prefix (a second model of the run: "draft_"). Waits for the receipt's model hash.
Loaded load_session(Context& ctx, std::shared_ptr<const gguf::File> file, const std::string& metrics_prefix = "");

}  // namespace memra::app
