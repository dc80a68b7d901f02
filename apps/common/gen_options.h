#pragma once
// The command line the generating apps share (run-gen, run-spec): the model, the prompt source,
// the chat rendering, the sampler, and the spellings of config keys (-n -> run.n_predict, -c -> run.n_ctx ...),
// which apply_cli writes into the Config after files and --set, so the command line wins.
// llama.cpp's spellings sit beside ours (-m, -c/--ctx-size, -f/--file, -s), so its users' command
// lines run as they are.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "config/config.h"
#include "sample/sampler.h"

namespace memra::gen {

struct Options {
  std::string model;
  std::string model_flag;  // -m/--model: llama.cpp's spelling of the positional (one of the two)

  // Prompt: --prompt TEXT or --prompt-file FILE (raw bytes).
  std::string prompt;
  std::string prompt_file;
  std::string template_file;  // --chat: overrides tokenizer.chat_template
  bool add_special = true;
  bool parse_special = true;

  // Config-key spellings; applied only when given (CLI::Option::count()).
  int n_predict = 0, n_ctx = 0, threads = 0;
  int64_t seed = 0;
  bool chat = false;
  std::string system, backend;

  // Sampling spellings of config keys (add_sampling_options).
  int top_k = 0;
  double temp = 0, top_p = 0, min_p = 0, repeat_penalty = 0;

  // Which of the above were given on the command line.
  CLI::Option *o_top_k = nullptr, *o_temp = nullptr, *o_top_p = nullptr, *o_min_p = nullptr,
              *o_repeat_penalty = nullptr;
  CLI::Option *o_prompt = nullptr, *o_add_special = nullptr, *o_parse_special = nullptr,
              *o_n_predict = nullptr, *o_n_ctx = nullptr, *o_threads = nullptr, *o_seed = nullptr,
              *o_chat = nullptr, *o_system = nullptr, *o_backend = nullptr;

  bool has_prompt() const;
  // The prompt bytes: --prompt, else the whole of --prompt-file. Throws when neither is given.
  std::string read_prompt() const;
};

// The model and prompt options (before an app's own).
void add_model_prompt_options(CLI::App& cli, Options& o);
// The run options: -n, -c, -s, --chat, --system, --template-file, --backend, -t, --add-special,
// --parse-special.
void add_run_options(CLI::App& cli, Options& o);
// --temp, --top-k, --top-p, --min-p, --repeat-penalty (sample.*).
void add_sampling_options(CLI::App& cli, Options& o);
// Writes the config-key options that were given into c and checks their ranges.
void apply_cli(const Options& o, Config& c);

// The sampler the config describes (sample.*, run.seed); validated.
SamplerOptions sampler_options(const Config& c);
// Whether that sampler picks the plain argmax of the logits (temperature 0, no penalty): then the
// backend can pick it (Backend::argmax_rows), the same id bit for bit.
bool argmax_sampling(const Config& c);

}  // namespace memra::gen
