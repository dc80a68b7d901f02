#pragma once
// What the generating apps (run-gen, run-spec) share between the prompt and the output: the
// prompt's ids (plain, or rendered through the chat template) and the streamed text.
#include <cstdint>
#include <string>
#include <vector>

#include "common/app.h"
#include "common/gen_options.h"
#include "gguf/gguf.h"
#include "sample/stop.h"
#include "tokenizer/tokenizer.h"

namespace memra::gen {

// Prints generated text as it becomes final: the tokenizer's StreamDecoder never splits a UTF-8
// sequence, and text that could be the start of a stop string is held back until the next token
// decides. Special tokens are not rendered (an EOG such as <|im_end|> is not part of the answer).
class Streamer {
 public:
  Streamer(const tok::Tokenizer& tok, StopCriteria stop, bool echo);
  // Returns false when a stop string completed (the text is cut before it).
  bool push(int32_t id) { return add(dec_.push(id), false); }
  void finish();
  const std::string& text() const { return text_; }
  bool stopped() const { return stopped_; }

 private:
  bool add(const std::string& piece, bool final);

  tok::StreamDecoder dec_;
  StopCriteria stop_;
  bool echo_;
  std::string text_;
  size_t printed_ = 0;
  bool stopped_ = false;
};

struct Prompt {
  std::string text;  // what was tokenized (the rendered chat prompt in chat mode)
  std::vector<int32_t> ids;
};

// The prompt's ids: as llama.cpp's examples in plain mode (BOS per the vocabulary, special-token
// text literal), through the GGUF's (or --template-file's) chat template with run.chat. Records
// the template and the rendered prompt in the receipt's results.
Prompt build_prompt(app::Context& ctx, const Options& o, const gguf::File& file, const tok::Tokenizer& tok,
                    const std::string& user);

// The run's outcome in the receipt: results generated_ids / text / stop ("callback", a stop string
// completed, recorded as "stop_string") and metrics n_prompt, prompt_ms, prompt_tok_s, n_generated,
// decode_ms, decode_tok_s (tokens after the first, which the prompt's pass yields).
void record_output(app::Context& ctx, const std::vector<int32_t>& tokens, std::string stop, const Streamer& out,
                   int n_prompt, double prompt_ms, double decode_ms);

}  // namespace memra::gen
