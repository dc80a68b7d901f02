#pragma once
// run-gen's command line: the generating apps' shared options (common/gen_options.h: the model,
// the prompt, the run and the sampler) and the modes that only steer this tool.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/gen_options.h"
#include "config/config.h"

namespace memra::rungen {

// The options shared with run-spec (gen::Options), then run-gen's own modes.
struct Options : gen::Options {
  bool info = false;

  // Scriptable tokenizer access (vocabulary only, no weights needed).
  bool tokenize = false;
  std::string detokenize;  // "1,2,3"

  // Raw ids in, logits out.
  std::string ids;         // "1,2,3"
  std::string logits_out;  // file for [position][vocab] f32 little-endian

  CLI::Option *o_detokenize = nullptr, *o_ids = nullptr;
};

void add_options(CLI::App& cli, Options& o);
// Writes the config-key options that were given into c (CLI wins over files and --set).
void apply_cli(const Options& o, Config& c);

// "1,2,3" (spaces and one pair of [ ] allowed) -> ids; throws memra::Error naming the flag and
// the bad item. Range checks against the vocabulary are the caller's (it knows n_vocab).
std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag);
// Throws memra::Error naming the flag and the id when one is outside [0, n_vocab).
void check_ids(const std::vector<int32_t>& ids, int64_t n_vocab, const std::string& flag);

}  // namespace memra::rungen
