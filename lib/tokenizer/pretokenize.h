#pragma once
// BPE pre-tokenizers, selected by tokenizer.ggml.pre: the regex lists llama.cpp applies in
// sequence (each pattern refines the pieces of the previous one) plus the per-type flags
// llama.cpp attaches to them. The patterns are the public tokenizer.json pre-tokenizer
// regexes in the form llama.cpp runs them (case-insensitive groups spelled out).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace memra::tok {

struct PreTokenizerSpec {
  std::string name;                  // canonical family name (e.g. "llama3" for "llama-bpe")
  std::vector<std::string> patterns;
  bool add_bos = false;              // llama.cpp's default when tokenizer.ggml.add_bos_token is absent
  bool clean_spaces = true;          // clean_up_tokenization_spaces on detokenize
  bool ignore_merges = false;        // a whole piece that is a token is emitted as is
  bool null_bos = false;             // the family has no BOS token (chatglm)
};

// Throws memra::Error naming the value when the pre-tokenizer is unknown. "" means absent
// (llama.cpp then uses "default").
PreTokenizerSpec pre_tokenizer_spec(std::string_view pre);
std::vector<std::string> known_pre_tokenizers();

class PreTokenizer {
 public:
  explicit PreTokenizer(const std::vector<std::string>& patterns);
  // Splits UTF-8 text into pieces (as UTF-8 strings of the original code points; invalid
  // bytes become U+FFFD as in llama.cpp).
  std::vector<std::string> split(std::string_view text) const;

 private:
  std::vector<Regex> regexes_;
  bool any_category_ = false;
};

}  // namespace memra::tok
