#pragma once
// Synthetic byte-level BPE vocabulary (tokenizer.ggml.model = "gpt2") of a real model's size.
// Layout: the 256 byte tokens (GPT-2 byte-to-unicode form, in byte order), then one token per
// merge (merge k creates token 256 + k, so merge rank equals token order), then the specials
// (control tokens), then "[PAD<i>]" (unused) up to n_vocab. Deterministic in the seed.
#include <cstdint>
#include <string>
#include <vector>

#include "synth/preset.h"

namespace memra::synth {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum TokenType : int32_t { kTokNormal = 1, kTokControl = 3, kTokUserDefined = 4, kTokUnused = 5 };

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;  // "left right", both tokens of the vocabulary
  uint32_t bos = 0, eos = 0, pad = 0;
  bool add_bos = false;
};

Vocab make_vocab(const Dims& d, uint64_t seed);

// GPT-2's byte-to-unicode mapping as UTF-8 (printable Latin-1 bytes map to themselves, the
// others to U+0100 + k in byte order), exposed for tests.
std::string byte_token(uint8_t b);

}  // namespace memra::synth
