#include <cstdio>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "core/error.h"
#include "loading.h"
#include "modes.h"
#include "sample/sampler.h"
#include "sample/stop.h"
#include "tokenizer/tokenizer.h"

namespace memra::rungen {

namespace {

// Prints generated text as it becomes final: the tokenizer's StreamDecoder never splits a UTF-8
// sequence, and text that could be the start of a stop string is held back until the next token
// decides. Special tokens are not rendered (an EOG such as <|im_end|> is not part of the answer).
class Streamer {
 public:
  Streamer(const tok::Tokenizer& tok, StopCriteria stop, bool echo)
      : dec_(tok, /*render_special=*/false), stop_(std::move(stop)), echo_(echo) {
    // The decoder drops the first piece's leading space (add_space_prefix), which is right for a
    // whole text but wrong for a continuation: "Lily wanted" + " to". A control token renders
    // empty here and uses up that first-piece rule.
    for (int32_t id : {tok.bos(), tok.eos()})
      if (id != tok::kNoToken && tok.is_control(id)) {
        dec_.push(id);
        break;
      }
  }

  // Returns false when a stop string completed (the text is cut before it).
  bool push(int32_t id) { return add(dec_.push(id), false); }
  void finish() {
    if (!stopped_) add(dec_.flush(), true);
    if (echo_) {
      std::fputc('\n', stdout);
      std::fflush(stdout);
    }
  }
  const std::string& text() const { return text_; }
  bool stopped() const { return stopped_; }

 private:
  bool add(const std::string& piece, bool final) {
    text_ += piece;
    size_t printable = text_.size();
    if (auto at = stop_.find_stop(text_)) {
      text_.resize(*at);
      printable = *at;
      stopped_ = true;
    } else if (!final) {
      printable -= stop_.holdback(text_);
    }
    if (echo_ && printable > printed_) {
      std::fwrite(text_.data() + printed_, 1, printable - printed_, stdout);
      std::fflush(stdout);
    }
    printed_ = std::max(printed_, printable);
    return !stopped_;
  }

  tok::StreamDecoder dec_;
  StopCriteria stop_;
  bool echo_;
  std::string text_;
  size_t printed_ = 0;
  bool stopped_ = false;
};

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  MEMRA_CHECK(in.good(), "cannot open {} '{}'", what, path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Prompt {
  std::string text;  // what was tokenized (the rendered chat prompt in chat mode)
  std::vector<int32_t> ids;
};

Prompt build_prompt(app::Context& ctx, const Options& o, const gguf::File& file, const tok::Tokenizer& tok,
                    const std::string& user) {
  const auto& cfg = ctx.cfg;
  auto& r = ctx.receipt.results();
  auto explicit_or = [](const CLI::Option* opt, bool v, bool dflt) { return opt && opt->count() ? v : dflt; };
  Prompt p;
  if (!cfg.run.chat) {
    // As llama.cpp's examples: BOS per the vocabulary, special-token text taken literally.
    p.text = user;
    p.ids = tok.tokenize(user, explicit_or(o.o_add_special, o.add_special, true),
                         explicit_or(o.o_parse_special, o.parse_special, false));
  } else {
    std::string tmpl;
    if (!o.template_file.empty()) {
      tmpl = read_text_file(o.template_file, "--template-file");
      r["template"] = "file:" + o.template_file;
    } else {
      auto t = file.find_string("tokenizer.chat_template");
      MEMRA_CHECK(t.has_value(), "--chat: '{}' has no tokenizer.chat_template; pass --template-file FILE",
                  file.path());
      tmpl = *t;
      r["template"] = "gguf";
    }
    std::vector<chat::ChatMessage> msgs;
    if (!cfg.run.system.empty()) msgs.push_back({"system", cfg.run.system, {}});
    msgs.push_back({"user", user, {}});
    chat::ChatOptions co;
    co.add_generation_prompt = true;
    if (tok.bos() != tok::kNoToken) co.bos_token = tok.token_text(tok.bos());
    if (tok.eos() != tok::kNoToken) co.eos_token = tok.token_text(tok.eos());
    p.text = chat::render_chat(tmpl, msgs, co);
    const bool add_special = explicit_or(o.o_add_special, o.add_special, true);
    // Templates that write {{ bos_token }} themselves would get a second BOS from the tokenizer
    // (llama.cpp strips it the same way).
    if (add_special && tok.add_bos() && !co.bos_token.empty() && p.text.rfind(co.bos_token, 0) == 0)
      p.text.erase(0, co.bos_token.size());
    p.ids = tok.tokenize(p.text, add_special, explicit_or(o.o_parse_special, o.parse_special, true));
    r["rendered_prompt"] = p.text;
  }
  MEMRA_CHECK(!p.ids.empty(), "the prompt is empty after tokenization (and the vocabulary adds no BOS)");
  return p;
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

}  // namespace

int run_generate(app::Context& ctx, const Options& o, std::shared_ptr<const gguf::File> file) {
  const auto& cfg = ctx.cfg;
  const std::string user = o.read_prompt();
  const auto tok = tok::Tokenizer::from_gguf(*file);
  auto& r = ctx.receipt.results();
  r["mode"] = cfg.run.chat ? "chat" : "generate";
  r["prompt"] = user;
  const Prompt prompt = build_prompt(ctx, o, *file, tok, user);
  r["prompt_ids"] = prompt.ids;
  // Before the load: a prompt that cannot fit fails in milliseconds, not after reading weights.
  MEMRA_CHECK((int64_t)prompt.ids.size() <= cfg.run.n_ctx, "prompt of {} tokens is longer than the context n_ctx={} (raise --ctx)",
              prompt.ids.size(), cfg.run.n_ctx);
  MEMRA_CHECK((int64_t)prompt.ids.size() + cfg.run.n_predict <= cfg.run.n_ctx,
              "prompt of {} tokens + {} to generate exceeds context n_ctx={} (raise --ctx or lower -n)",
              prompt.ids.size(), cfg.run.n_predict, cfg.run.n_ctx);

  Loaded l = load_session(ctx, file);
  MEMRA_CHECK(l.session->n_vocab() >= tok.n_vocab(),
              "the model's output has {} logits but its vocabulary has {} tokens", l.session->n_vocab(),
              tok.n_vocab());
  Sampler sampler(sampler_options(cfg));
  for (int32_t id : prompt.ids) sampler.accept(id);

  StopCriteria stop{tok.info().eog, cfg.sample.stop};
  const bool echo_prompt = !cfg.run.chat;
  if (echo_prompt) {
    std::fwrite(user.data(), 1, user.size(), stdout);
    std::fflush(stdout);
  }
  Streamer out(tok, stop, /*echo=*/true);
  engine::GenerateOptions go;
  go.n_predict = cfg.run.n_predict;
  go.eog_ids = tok.info().eog;
  auto res = engine::generate(
      *l.session, prompt.ids, go, [&](std::span<const float> logits) { return sampler.sample(logits); },
      [&](int32_t id) {
        sampler.accept(id);
        if (tok.is_eog(id)) return true;  // generate() stops after it; nothing to print
        return out.push(id);
      });
  out.finish();
  if (res.stop == "callback") res.stop = "stop_string";

  r["generated_ids"] = res.tokens;
  r["text"] = out.text();
  r["stop"] = res.stop;
  auto& m = ctx.receipt.metrics();
  m["n_prompt"] = res.n_prompt;
  m["prompt_ms"] = res.prefill_ms;
  m["prompt_tok_s"] = res.prefill_tok_s();
  m["n_generated"] = res.tokens.size();
  m["decode_ms"] = res.decode_ms;
  m["decode_tok_s"] = res.decode_tok_s();
  std::fprintf(stderr,
               "run-gen: %s | load %.0f ms | prompt %d tok, %.1f ms, %.1f tok/s | decode %zu tok, %.1f ms, "
               "%.2f tok/s | stop: %s\n",
               l.backend_name.c_str(), l.load_ms, res.n_prompt, res.prefill_ms, res.prefill_tok_s(),
               res.tokens.size(), res.decode_ms, res.decode_tok_s(), res.stop.c_str());
  return 0;
}

}  // namespace memra::rungen
