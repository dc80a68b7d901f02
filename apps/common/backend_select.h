#pragma once
// Config -> backend. run.backend: cpu | cuda | auto (cuda when this build has CUDA and a device
// is visible). Asking for cuda where there is none is an error, never a silent CPU fallback that
// would make a benchmark measure the wrong thing.
#include <memory>
#include <string>

#include "backend/backend.h"
#include "config/config.h"
#include "kv/kv.h"

namespace memra::app {

std::unique_ptr<backend::Backend> make_backend(const Config& cfg, std::string* chosen = nullptr);

// KV cache options for a backend ("cpu" | "cuda"), resolving kv.type_k/type_v = auto.
kv::KvOptions kv_options(const Config& cfg, const std::string& backend_name, int n_ctx);

}  // namespace memra::app
