#pragma once
// The CUDA implementation of the backend interface (lib/backend/backend.h) on one device.
// Weights stay in their GGUF block layout on the device; the KV cache lives on the device in
// kv.type_k / kv.type_v; every op is one or two kernel launches on the compute stream. The decode
// step (a forward of one token) is captured as a CUDA graph on its first run for a given memory
// set (model, scratch, logits, kv store) and replayed afterwards (kernels.cuda_graph = false
// turns it off): ids and pos0 reach the kernels through device memory staged from pinned host
// memory by a copy node of the graph, so a replay needs no new parameters.
#include <memory>

#include "backend/backend.h"
#include "config/config.h"

namespace memra::backend {

std::unique_ptr<Backend> make_cuda_backend(const Config& cfg);

}  // namespace memra::backend
