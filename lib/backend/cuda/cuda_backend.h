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
#include "kv/kv.h"

namespace memra::backend {

std::unique_ptr<Backend> make_cuda_backend(const Config& cfg);

// The options a CUDA KV cache of this shape takes for o (create_kv applies it; the store's
// options() are its result). kv.planes = auto (o.planes_auto): the split-plane layout where the
// int8 tile decode form takes every attention layer: K q8_0 and V q8_0 (an auto V, o.type_v_auto,
// becomes q8_0 with it), head dim 128 for K and V, 4 or 8 query heads per kv head, no attention
// sinks, no indexer keys, and every layer's rows within the 4 GiB the form addresses; otherwise
// the options as they were (an auto V keeps its GPU default). planes_auto is false in the result.
kv::KvOptions cuda_kv_options(const kv::KvShape& shape, const kv::KvOptions& o);

}  // namespace memra::backend
