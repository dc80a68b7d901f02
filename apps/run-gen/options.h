#pragma once
// run-gen's command line: the generating apps' shared options (common/gen_options.h), the modes
// that only steer this tool, and the sampling spellings of config keys (--temp ->
// sample.temperature ...), which apply_cli writes into the Config after files and --set.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/gen_options.h"
#include "config/config.h"

namespace memra::rungen {

// The options shared with run-spec (gen::Options), then run-gen's own: the modes and sampling.
struct Options : gen::Options {
  bool info = false;

  // Scriptable tokenizer access (vocabulary only, no weights needed).
  bool tokenize = false;
  std::string detokenize;  // "1,2,3"

  // Raw ids in, logits out.
  std::string ids;         // "1,2,3"
  std::string logits_out;  // file for [position][vocab] f32 little-endian

  // Sampling spellings of config keys; applied only when given.
  int top_k = 0;
  double temp = 0, top_p = 0, min_p = 0, repeat_penalty = 0;
  CLI::Option *o_top_k = nullptr, *o_temp = nullptr, *o_top_p = nullptr, *o_min_p = nullptr,
              *o_repeat_penalty = nullptr, *o_detokenize = nullptr, *o_ids = nullptr;
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
