#pragma once
// run-gen's modes. Each takes the opened GGUF and fills the receipt's results/metrics; errors are
// memra::Error (the app wrapper turns them into exit 1 + a receipt with status "error").
#include <memory>

#include "common/app.h"
#include "gguf/gguf.h"
#include "options.h"

namespace memra::rungen {

// --tokenize / --detokenize: vocabulary only, no weights are touched.
int run_tokenize(app::Context& ctx, const Options& o, const gguf::File& file);
int run_detokenize(app::Context& ctx, const Options& o, const gguf::File& file);

// --ids [--logits-out FILE]: all-position logits of the given ids + a greedy continuation.
int run_ids(app::Context& ctx, const Options& o, std::shared_ptr<const gguf::File> file);

// --prompt / --prompt-file [--chat]: tokenize, prefill, sample, stream the text.
int run_generate(app::Context& ctx, const Options& o, std::shared_ptr<const gguf::File> file);

}  // namespace memra::rungen
