#pragma once
// gguf-synth presets: the shapes of real models (and a tiny twin of each with the same structure)
// from which random-weight GGUF files are generated. Every field can be overridden by name.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memra::synth {

// The tokenizer family decides the pre-tokenizer name and the special-token layout.
enum class VocabStyle { Qwen, Llama3 };

struct Dims {
  std::string arch;   // general.architecture: "qwen3", "llama", "qwen3moe"
  std::string name;   // general.name
  uint64_t n_vocab = 0;
  uint64_t n_embd = 0;
  uint64_t n_layer = 0;
  uint64_t n_head = 0;
  uint64_t n_head_kv = 0;
  uint64_t head_dim = 0;
  uint64_t n_ff = 0;           // dense FFN width (qwen3moe: feed_forward_length metadata only)
  uint64_t n_expert = 0;       // 0: dense model
  uint64_t n_expert_used = 0;
  uint64_t n_ff_exp = 0;       // expert FFN width
  uint64_t context_length = 0;
  double rope_freq_base = 0;
  double rms_eps = 0;
  bool qk_norm = false;        // per-head attn_q_norm / attn_k_norm (qwen3, qwen3moe)
  bool tied_output = false;    // no output.weight: token_embd doubles as the output matrix
  VocabStyle vocab = VocabStyle::Qwen;
  uint64_t n_regular_tokens = 0;  // byte tokens + merge results; the rest are specials and padding

  bool is_moe() const { return n_expert > 0; }
};

struct Preset {
  std::string_view name;
  std::string_view description;
  Dims dims;
};

// All presets: qwen3-8b, llama3-8b, qwen3-30b-a3b, qwen3-32b and NAME-tiny of each.
const std::vector<Preset>& presets();
// Throws memra::Error listing the known presets when `name` is not one of them.
const Preset& find_preset(std::string_view name);

// Sets one field by its name ("n_embd", "rope_freq_base", "qk_norm", ...); throws memra::Error
// naming the key and the value when the key is unknown or the value does not parse.
void set_dim(Dims& d, std::string_view key, std::string_view value);
// The names set_dim accepts, in a stable order (for --help and error messages).
const std::vector<std::string_view>& dim_keys();
// Consistency checks (heads divide, vocab holds the specials, dims > 0 ...); throws memra::Error.
void validate(const Dims& d);

// Special tokens of a vocabulary style, in id order starting at n_regular_tokens.
const std::vector<std::string_view>& special_tokens(VocabStyle s);
std::string_view vocab_pre(VocabStyle s);  // tokenizer.ggml.pre

}  // namespace memra::synth
