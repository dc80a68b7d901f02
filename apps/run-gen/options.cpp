#include "options.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace memra::rungen {

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

void add_options(CLI::App& cli, Options& o) {
  // llama.cpp's spellings sit beside ours (-m, -c/--ctx-size, -f/--file, -s), so its users' command
  // lines run as they are; the positional and -m name the same thing, so both at once is an error.
  auto* pos = cli.add_option("model", o.model, "GGUF model file (or model.path in the config)");
  cli.add_option("-m,--model", o.model_flag, "GGUF model file (the positional's llama.cpp spelling)")
      ->type_name("FILE")
      ->excludes(pos);
  cli.add_flag("--info", o.info, "print the file's metadata and tensor table and exit");

  o.o_prompt = cli.add_option("-p,--prompt", o.prompt, "prompt text");
  cli.add_option("-f,--prompt-file,--file", o.prompt_file, "read the prompt from FILE (raw bytes)")->type_name("FILE");
  o.o_n_predict = cli.add_option("-n,--n-predict", o.n_predict, "tokens to generate (run.n_predict)");
  o.o_n_ctx = cli.add_option("-c,--ctx,--ctx-size", o.n_ctx, "context length in tokens (run.n_ctx)");
  o.o_seed = cli.add_option("-s,--seed", o.seed, "sampling seed (run.seed)");
  o.o_temp = cli.add_option("--temp", o.temp, "temperature, 0 = greedy (sample.temperature)");
  o.o_top_k = cli.add_option("--top-k", o.top_k, "top-k, <= 0 off (sample.top_k)");
  o.o_top_p = cli.add_option("--top-p", o.top_p, "top-p, 1 off (sample.top_p)");
  o.o_min_p = cli.add_option("--min-p", o.min_p, "min-p, 0 off (sample.min_p)");
  o.o_repeat_penalty = cli.add_option("--repeat-penalty", o.repeat_penalty, "repetition penalty, 1 off (sample.repeat_penalty)");
  o.o_chat = cli.add_flag("--chat", o.chat, "render the chat template around the prompt (run.chat)");
  o.o_system = cli.add_option("--system", o.system, "system message in chat mode (run.system)");
  cli.add_option("--template-file", o.template_file, "chat template (Jinja) overriding the GGUF's tokenizer.chat_template")
      ->type_name("FILE");
  o.o_backend = cli.add_option("--backend", o.backend, "cpu | cuda | auto (run.backend)")
                    ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  o.o_threads = cli.add_option("-t,--threads", o.threads, "CPU threads, 0 = all (threads.n)");

  cli.add_flag("--tokenize", o.tokenize, "print the prompt's token ids as a JSON array and exit");
  o.o_detokenize = cli.add_option("--detokenize", o.detokenize, "print the text of these ids (special tokens shown) and exit")
                       ->type_name("IDS");
  o.o_add_special = cli.add_option("--add-special", o.add_special, "add the BOS/EOS the vocabulary asks for (default true)")
                        ->type_name("BOOL");
  o.o_parse_special = cli.add_option("--parse-special", o.parse_special, "recognise special-token text such as <|im_end|> (default true; plain -p generation: false, as llama.cpp)")
                          ->type_name("BOOL");
  o.o_ids = cli.add_option("--ids", o.ids, "run these token ids (no BOS added) instead of a prompt")->type_name("IDS");
  cli.add_option("--logits-out", o.logits_out, "with --ids: write every position's logits, raw f32 LE [position][vocab]")
      ->type_name("FILE");
}

void apply_cli(const Options& o, Config& c) {
  auto given = [](const CLI::Option* opt) { return opt && opt->count() > 0; };
  if (!o.model.empty()) c.model.path = o.model;
  if (!o.model_flag.empty()) c.model.path = o.model_flag;
  if (given(o.o_n_predict)) c.run.n_predict = o.n_predict;
  if (given(o.o_n_ctx)) c.run.n_ctx = o.n_ctx;
  if (given(o.o_seed)) c.run.seed = o.seed;
  if (given(o.o_backend)) c.run.backend = o.backend;
  if (given(o.o_chat)) c.run.chat = o.chat;
  if (given(o.o_system)) c.run.system = o.system;
  if (given(o.o_threads)) c.threads.n = o.threads;
  if (given(o.o_temp)) c.sample.temperature = o.temp;
  if (given(o.o_top_k)) c.sample.top_k = o.top_k;
  if (given(o.o_top_p)) c.sample.top_p = o.top_p;
  if (given(o.o_min_p)) c.sample.min_p = o.min_p;
  if (given(o.o_repeat_penalty)) c.sample.repeat_penalty = o.repeat_penalty;
  // The same ranges the config schema enforces for files, so a flag cannot smuggle in what a
  // file could not.
  MEMRA_CHECK(c.run.n_predict >= 0, "-n/--n-predict must be >= 0, got {}", c.run.n_predict);
  MEMRA_CHECK(c.run.n_ctx > 0, "--ctx must be > 0, got {}", c.run.n_ctx);
  MEMRA_CHECK(c.threads.n >= 0, "--threads must be >= 0, got {}", c.threads.n);
  MEMRA_CHECK(c.sample.temperature >= 0, "--temp must be >= 0, got {}", c.sample.temperature);
  MEMRA_CHECK(c.sample.top_p > 0 && c.sample.top_p <= 1, "--top-p must be in (0, 1], got {}", c.sample.top_p);
  MEMRA_CHECK(c.sample.min_p >= 0 && c.sample.min_p <= 1, "--min-p must be in [0, 1], got {}", c.sample.min_p);
  MEMRA_CHECK(c.sample.repeat_penalty > 0, "--repeat-penalty must be > 0, got {}", c.sample.repeat_penalty);
}

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag) {
  std::string s = text;
  const auto first = s.find_first_not_of(" \t\n");
  const auto last = s.find_last_not_of(" \t\n");
  s = first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
  if (!s.empty() && s.front() == '[') {
    MEMRA_CHECK(s.back() == ']', "{}: unbalanced '[' in '{}'", flag, text);
    s = s.substr(1, s.size() - 2);
  }
  std::vector<int32_t> ids;
  if (s.find_first_not_of(" \t\n") == std::string::npos) return ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto b = item.find_first_not_of(" \t\n");
    const auto e = item.find_last_not_of(" \t\n");
    const std::string t = b == std::string::npos ? std::string() : item.substr(b, e - b + 1);
    MEMRA_CHECK(!t.empty(), "{}: empty item in id list '{}'", flag, text);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    MEMRA_CHECK(used == t.size() && v >= INT32_MIN && v <= INT32_MAX, "{}: bad token id '{}' (ids are integers)", flag, t);
    ids.push_back((int32_t)v);
  }
  return ids;
}

void check_ids(const std::vector<int32_t>& ids, int64_t n_vocab, const std::string& flag) {
  for (size_t i = 0; i < ids.size(); ++i)
    MEMRA_CHECK(ids[i] >= 0 && ids[i] < n_vocab,
                "{}: bad token id {} at index {}: the vocabulary has {} tokens (ids 0..{})", flag, ids[i], i,
                n_vocab, n_vocab - 1);
}

}  // namespace memra::rungen
