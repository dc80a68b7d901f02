#pragma once
// rp-q4-probe --chain: the persistent decode-chain probe (kernels/matvec_rp/chain_persist.h).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#ifdef MEMRA_HAVE_CUDA
#include "backend/cuda/runtime.h"
#endif

namespace memra::probe {

struct ChainOptions {
  uint64_t seed = 1;
  int layers = 36;
  std::vector<std::string> types = {"q4_0", "q4_k"};  // the pages' weight format, one set of forms each
  std::vector<int> consumers = {8, 16};  // consumer warps per CTA (4, 8, 16)
  std::vector<std::string> forms = {"dp4a"};  // the consumers' form: dp4a, mma (ChainParams::mma)
  std::vector<std::string> schedules = {"tasks"};  // tasks, split (ChainParams::split), one set of forms each
  std::vector<int> ctas_per_sm = {1, 2};
  int stages = 0;  // 0: as many ring pages as fit
  int reps = 10;
  int warmup = 2;
  std::vector<int> check_layers;  // empty: every layer
};

#ifdef MEMRA_HAVE_CUDA
// Every (consumers, ctas_per_sm) form: the full chain checked against the CPU (matrix by matrix
// from the GPU's own inputs) and timed, then the no-dependency and stream-only modes timed. Fills
// `out` (results) and `metrics`; returns true when every check passed.
bool run_chain(cuda::Context& ctx, const ChainOptions& o, nlohmann::json& out, nlohmann::json& metrics);
#endif

}  // namespace memra::probe
