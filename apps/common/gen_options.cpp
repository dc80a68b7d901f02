#include "gen_options.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace memra::gen {

bool Options::has_prompt() const { return (o_prompt && o_prompt->count() > 0) || !prompt_file.empty(); }

std::string Options::read_prompt() const {
  if (o_prompt && o_prompt->count() > 0) return prompt;
  MEMRA_CHECK(!prompt_file.empty(), "no prompt given: use --prompt TEXT (-p) or --prompt-file FILE");
  std::ifstream in(prompt_file, std::ios::binary);
  MEMRA_CHECK(in.good(), "cannot open --prompt-file '{}'", prompt_file);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void add_model_prompt_options(CLI::App& cli, Options& o) {
  // The positional and -m name the same thing, so both at once is an error.
  auto* pos = cli.add_option("model", o.model, "GGUF model file (or model.path in the config)");
  cli.add_option("-m,--model", o.model_flag, "GGUF model file (the positional's llama.cpp spelling)")
      ->type_name("FILE")
      ->excludes(pos);
  o.o_prompt = cli.add_option("-p,--prompt", o.prompt, "prompt text");
  cli.add_option("-f,--prompt-file,--file", o.prompt_file, "read the prompt from FILE (raw bytes)")->type_name("FILE");
}

void add_run_options(CLI::App& cli, Options& o) {
  o.o_n_predict = cli.add_option("-n,--n-predict", o.n_predict, "tokens to generate (run.n_predict)");
  o.o_n_ctx = cli.add_option("-c,--ctx,--ctx-size", o.n_ctx, "context length in tokens (run.n_ctx)");
  o.o_seed = cli.add_option("-s,--seed", o.seed, "sampling seed (run.seed)");
  o.o_chat = cli.add_flag("--chat", o.chat, "render the chat template around the prompt (run.chat)");
  o.o_system = cli.add_option("--system", o.system, "system message in chat mode (run.system)");
  cli.add_option("--template-file", o.template_file, "chat template (Jinja) overriding the GGUF's tokenizer.chat_template")
      ->type_name("FILE");
  o.o_backend = cli.add_option("--backend", o.backend, "cpu | cuda | auto (run.backend)")
                    ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  o.o_threads = cli.add_option("-t,--threads", o.threads, "CPU threads, 0 = all (threads.n)");
  o.o_add_special = cli.add_option("--add-special", o.add_special, "add the BOS/EOS the vocabulary asks for (default true)")
                        ->type_name("BOOL");
  o.o_parse_special = cli.add_option("--parse-special", o.parse_special, "recognise special-token text such as <|im_end|> (default true; plain -p generation: false, as llama.cpp)")
                          ->type_name("BOOL");
}

void add_sampling_options(CLI::App& cli, Options& o) {
  o.o_temp = cli.add_option("--temp", o.temp, "temperature, 0 = greedy (sample.temperature)");
  o.o_top_k = cli.add_option("--top-k", o.top_k, "top-k, <= 0 off (sample.top_k)");
  o.o_top_p = cli.add_option("--top-p", o.top_p, "top-p, 1 off (sample.top_p)");
  o.o_min_p = cli.add_option("--min-p", o.min_p, "min-p, 0 off (sample.min_p)");
  o.o_repeat_penalty = cli.add_option("--repeat-penalty", o.repeat_penalty, "repetition penalty, 1 off (sample.repeat_penalty)");
}

SamplerOptions sampler_options(const Config& c) {
  SamplerOptions s;
  s.temperature = (float)c.sample.temperature;
  s.top_k = c.sample.top_k;
  s.top_p = (float)c.sample.top_p;
  s.min_p = (float)c.sample.min_p;
  s.typical_p = (float)c.sample.typical_p;
  s.repeat_penalty = (float)c.sample.repeat_penalty;
  s.frequency_penalty = (float)c.sample.frequency_penalty;
  s.presence_penalty = (float)c.sample.presence_penalty;
  s.penalty_last_n = c.sample.repeat_last_n;
  s.seed = (uint64_t)c.run.seed;
  validate(s);
  return s;
}

bool argmax_sampling(const Config& c) {
  const auto& sc = c.sample;
  return sc.temperature == 0 && sc.repeat_penalty == 1 && sc.frequency_penalty == 0 && sc.presence_penalty == 0;
}

void apply_cli(const Options& o, Config& c) {
  auto given = [](const CLI::Option* opt) { return opt && opt->count() > 0; };
  if (given(o.o_temp)) c.sample.temperature = o.temp;
  if (given(o.o_top_k)) c.sample.top_k = o.top_k;
  if (given(o.o_top_p)) c.sample.top_p = o.top_p;
  if (given(o.o_min_p)) c.sample.min_p = o.min_p;
  if (given(o.o_repeat_penalty)) c.sample.repeat_penalty = o.repeat_penalty;
  MEMRA_CHECK(c.sample.temperature >= 0, "--temp must be >= 0, got {}", c.sample.temperature);
  MEMRA_CHECK(c.sample.top_p > 0 && c.sample.top_p <= 1, "--top-p must be in (0, 1], got {}", c.sample.top_p);
  MEMRA_CHECK(c.sample.min_p >= 0 && c.sample.min_p <= 1, "--min-p must be in [0, 1], got {}", c.sample.min_p);
  MEMRA_CHECK(c.sample.repeat_penalty > 0, "--repeat-penalty must be > 0, got {}", c.sample.repeat_penalty);
  if (!o.model.empty()) c.model.path = o.model;
  if (!o.model_flag.empty()) c.model.path = o.model_flag;
  if (given(o.o_n_predict)) c.run.n_predict = o.n_predict;
  if (given(o.o_n_ctx)) c.run.n_ctx = o.n_ctx;
  if (given(o.o_seed)) c.run.seed = o.seed;
  if (given(o.o_backend)) c.run.backend = o.backend;
  if (given(o.o_chat)) c.run.chat = o.chat;
  if (given(o.o_system)) c.run.system = o.system;
  if (given(o.o_threads)) c.threads.n = o.threads;
  // The same ranges the config schema enforces for files, so a flag cannot smuggle in what a
  // file could not.
  MEMRA_CHECK(c.run.n_predict >= 0, "-n/--n-predict must be >= 0, got {}", c.run.n_predict);
  MEMRA_CHECK(c.run.n_ctx > 0, "--ctx must be > 0, got {}", c.run.n_ctx);
  MEMRA_CHECK(c.threads.n >= 0, "--threads must be >= 0, got {}", c.threads.n);
}

}  // namespace memra::gen
