#include "gen_text.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "core/error.h"

namespace memra::gen {

namespace {

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  MEMRA_CHECK(in.good(), "cannot open {} '{}'", what, path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Streamer::Streamer(const tok::Tokenizer& tok, StopCriteria stop, bool echo)
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

void Streamer::finish() {
  if (!stopped_) add(dec_.flush(), true);
  if (echo_) {
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
}

bool Streamer::add(const std::string& piece, bool final) {
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

void record_output(app::Context& ctx, const std::vector<int32_t>& tokens, std::string stop, const Streamer& out,
                   int n_prompt, double prompt_ms, double decode_ms) {
  auto& r = ctx.receipt.results();
  r["generated_ids"] = tokens;
  r["text"] = out.text();
  r["stop"] = stop == "callback" ? "stop_string" : stop;
  auto& m = ctx.receipt.metrics();
  m["n_prompt"] = n_prompt;
  m["prompt_ms"] = prompt_ms;
  m["prompt_tok_s"] = prompt_ms > 0 ? n_prompt * 1e3 / prompt_ms : 0.0;
  m["n_generated"] = tokens.size();
  m["decode_ms"] = decode_ms;
  m["decode_tok_s"] = decode_ms > 0 && tokens.size() > 1 ? (double)(tokens.size() - 1) * 1e3 / decode_ms : 0.0;
}

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

}  // namespace memra::gen
