#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "modes.h"
#include "tokenizer/tokenizer.h"

namespace memra::rungen {

int run_tokenize(app::Context& ctx, const Options& o, const gguf::File& file) {
  const std::string text = o.read_prompt();
  const auto tok = tok::Tokenizer::from_gguf(file);
  const auto ids = tok.tokenize(text, o.add_special, o.parse_special);
  const nlohmann::json arr = ids;
  std::printf("%s\n", arr.dump().c_str());
  auto& r = ctx.receipt.results();
  r["mode"] = "tokenize";
  r["prompt"] = text;  // the receipt writer replaces invalid UTF-8 from a raw --prompt-file
  r["add_special"] = o.add_special;
  r["parse_special"] = o.parse_special;
  r["ids"] = ids;
  return 0;
}

int run_detokenize(app::Context& ctx, const Options& o, const gguf::File& file) {
  const auto ids = parse_id_list(o.detokenize, "--detokenize");
  const auto tok = tok::Tokenizer::from_gguf(file);
  check_ids(ids, tok.n_vocab(), "--detokenize");
  // Special tokens shown, as the reference's `detokenized` field renders them. Exactly one
  // newline follows the text so a script can strip it unambiguously.
  const std::string text = tok.detokenize(ids, /*render_special=*/true);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  auto& r = ctx.receipt.results();
  r["mode"] = "detokenize";
  r["ids"] = ids;
  r["text"] = text;
  return 0;
}

}  // namespace memra::rungen
