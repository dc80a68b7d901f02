#pragma once
// Text <-> token ids from a GGUF's tokenizer.ggml.* metadata, matching llama.cpp (the
// reference; see shared/reference/README.md) id for id.
//
//   SPM  (tokenizer.ggml.model = "llama"): score-driven bigram merges, <0xNN> byte fallback,
//        U+2581 for spaces, add_space_prefix (default true) before the text and after every
//        special token.
//   BPE  (model = "gpt2"): byte-level BPE with merge ranks after a pre-tokenizer chosen by
//        tokenizer.ggml.pre (pretokenize.h).
// Special tokens (CONTROL / USER_DEFINED / UNKNOWN token types) are split out of the text first
// when parse_special is on (USER_DEFINED ones always, as llama.cpp and HF tokenizers do).
// WPM/BERT, UGM/T5 and RWKV vocabularies are rejected with an error naming the model.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memra::gguf {
class File;
}

namespace memra::tok {

inline constexpr int32_t kNoToken = -1;

enum class VocabType { SPM, BPE };

// Token attributes (llama.cpp's token_type values mapped to flags).
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLStrip = 1u << 7,
  kAttrRStrip = 1u << 8,
};

// What the metadata resolved to (for logs, receipts and `run-gen --info`).
struct TokenizerInfo {
  VocabType type = VocabType::SPM;
  std::string model;  // tokenizer.ggml.model
  std::string pre;    // tokenizer.ggml.pre as written ("" when absent)
  std::string pre_family;
  int32_t n_vocab = 0, n_merges = 0;
  int32_t bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken,
          pad = kNoToken, sep = kNoToken, nl = kNoToken;
  bool add_bos = false, add_eos = false, add_space_prefix = false, clean_spaces = false;
  std::vector<int32_t> eog;  // sorted
};

class Tokenizer {
 public:
  // Throws memra::Error naming the file and key when the metadata is missing or malformed.
  static Tokenizer from_gguf(const gguf::File& f);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // add_special: prepend BOS / append EOS where the metadata asks for them (llama.cpp's
  // add_special). parse_special: recognise control-token text such as "<|im_end|>".
  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;

  // Concatenated pieces, as llama_detokenize(remove_special=false, unparse_special=
  // render_special): the first piece loses one leading space when add_space_prefix is set,
  // and BPE vocabularies with clean_spaces tidy " ." " 's" etc. Bytes need not be valid UTF-8.
  std::string detokenize(std::span<const int32_t> ids, bool render_special = true) const;

  // The bytes one token stands for (byte tokens -> that byte, U+2581 -> ' ', BPE byte-unicode
  // mapped back). Control/unknown tokens give their text when render_special, else "".
  std::string token_to_piece(int32_t id, bool render_special = true) const;

  const TokenizerInfo& info() const;
  int32_t n_vocab() const;
  VocabType type() const;
  int32_t bos() const;
  int32_t eos() const;
  int32_t eot() const;
  int32_t eom() const;
  int32_t unk() const;
  int32_t nl() const;
  bool add_bos() const;
  bool add_eos() const;
  bool is_eog(int32_t id) const;  // end of generation: EOS, EOT, EOM and llama.cpp's text list
  const std::string& token_text(int32_t id) const;  // the raw vocabulary string
  uint32_t token_attr(int32_t id) const;
  float token_score(int32_t id) const;
  bool is_control(int32_t id) const;
  int32_t find_token(std::string_view text) const;  // kNoToken when absent

  // Internal, for StreamDecoder: the clean-up pass applied to a detokenized string.
  std::string clean_spaces(std::string text) const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Incremental detokenization for streaming generation: push() returns the text that has become
// final. It never returns part of a UTF-8 sequence that later bytes may complete, and holds
// back the few characters that later tokens could still change (clean_spaces).
//   Mode::Detokenize: push()* + flush() == detokenize(ids, render_special).
//   Mode::Pieces:     push()* + flush() == concatenated token_to_piece(id, render_special), i.e.
//                     what llama.cpp prints while generating after a prompt (no first-space
//                     strip, no clean-up; generate.jsonl's generated_text).
class StreamDecoder {
 public:
  enum class Mode { Detokenize, Pieces };
  explicit StreamDecoder(const Tokenizer& tok, bool render_special = true, Mode mode = Mode::Detokenize);
  std::string push(int32_t id);
  std::string flush();  // everything still held (a truncated UTF-8 tail is emitted as is)
  void reset();

 private:
  std::string take(bool final);

  const Tokenizer* tok_;
  bool render_special_;
  Mode mode_;
  bool first_ = true;
  std::string raw_;      // raw pieces not yet committed
  size_t emitted_ = 0;   // bytes of clean(raw_) already returned
};

}  // namespace memra::tok
