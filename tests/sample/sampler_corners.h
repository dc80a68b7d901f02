#pragma once
// Option sets that reach every stage of the sampler chain (lib/sample/chain.h), shared by the tests
// that check a sampler against memra::Sampler (tests/engine/test_token_sampler.cpp on the CPU
// backend, tests/backend_cuda/gpu_models_spec.cpp on the device).
#include <utility>
#include <vector>

#include "sample/sampler.h"

namespace memra::testsample {

// name, options: the defaults (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05), penalties over a
// short window, greedy after penalties, a wide top_k at a high temperature, top_k 1.
inline std::vector<std::pair<const char*, SamplerOptions>> sampler_corners(uint64_t seed) {
  std::vector<std::pair<const char*, SamplerOptions>> c;
  SamplerOptions o;
  o.seed = seed;
  c.emplace_back("defaults", o);
  o.repeat_penalty = 1.3f;
  o.frequency_penalty = 0.2f;
  o.presence_penalty = 0.4f;
  o.penalty_last_n = 8;
  c.emplace_back("penalties, window 8", o);
  o.temperature = 0.0f;
  c.emplace_back("greedy after penalties", o);
  SamplerOptions w;
  w.seed = seed + 1;
  w.temperature = 1.7f;
  w.top_k = 512;  // the widest the CUDA backend draws on the device (kDeviceSamplerTopK)
  w.top_p = 1.0f;
  w.min_p = 0.0f;
  c.emplace_back("top_k 512, temperature 1.7", w);
  w.top_k = 1;
  c.emplace_back("top_k 1", w);
  return c;
}

}  // namespace memra::testsample
