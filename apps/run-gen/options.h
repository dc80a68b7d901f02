#pragma once
// run-gen's command line: the options that only steer this tool (mode, prompt source) and the
// ones that are spellings of config keys (-n -> run.n_predict, --temp -> sample.temperature ...),
// which apply_cli writes into the Config after files and --set, so the command line wins.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"

namespace memra::rungen {

struct Options {
  std::string model;
  std::string model_flag;  // -m/--model: llama.cpp's spelling of the positional (one of the two)
  bool info = false;

  // Prompt: --prompt TEXT or --prompt-file FILE (raw bytes).
  std::string prompt;
  std::string prompt_file;
  std::string template_file;  // --chat: overrides tokenizer.chat_template

  // Scriptable tokenizer access (vocabulary only, no weights needed).
  bool tokenize = false;
  std::string detokenize;  // "1,2,3"
  bool add_special = true;
  bool parse_special = true;

  // Raw ids in, logits out.
  std::string ids;         // "1,2,3"
  std::string logits_out;  // file for [position][vocab] f32 little-endian

  // Config-key spellings; applied only when given (CLI::Option::count()).
  int n_predict = 0, n_ctx = 0, top_k = 0, threads = 0;
  int64_t seed = 0;
  double temp = 0, top_p = 0, min_p = 0, repeat_penalty = 0;
  bool chat = false;
  std::string system, backend;

  // Which of the above were given on the command line.
  CLI::Option *o_prompt = nullptr, *o_add_special = nullptr, *o_parse_special = nullptr,
              *o_n_predict = nullptr, *o_n_ctx = nullptr, *o_top_k = nullptr, *o_threads = nullptr,
              *o_seed = nullptr, *o_temp = nullptr, *o_top_p = nullptr, *o_min_p = nullptr,
              *o_repeat_penalty = nullptr, *o_chat = nullptr, *o_system = nullptr,
              *o_backend = nullptr, *o_detokenize = nullptr, *o_ids = nullptr;

  bool has_prompt() const;
  // The prompt bytes: --prompt, else the whole of --prompt-file. Throws when neither is given.
  std::string read_prompt() const;
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
