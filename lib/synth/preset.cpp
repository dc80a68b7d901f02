#include "synth/preset.h"

#include <charconv>
#include <cmath>
#include <functional>

#include "core/error.h"

namespace memra::synth {
namespace {

Dims qwen3_dense(std::string name, uint64_t embd, uint64_t layers, uint64_t heads, uint64_t kv,
                 uint64_t ff) {
  Dims d;
  d.arch = "qwen3";
  d.name = std::move(name);
  d.n_vocab = 151936;
  d.n_regular_tokens = 151643;  // then 22 specials, then [PAD] up to the embedding size
  d.n_embd = embd;
  d.n_layer = layers;
  d.n_head = heads;
  d.n_head_kv = kv;
  d.head_dim = 128;
  d.n_ff = ff;
  d.context_length = 40960;
  d.rope_freq_base = 1e6;
  d.rms_eps = 1e-6;
  d.qk_norm = true;
  d.vocab = VocabStyle::Qwen;
  return d;
}

// The tiny twins keep what decides tensor names, types and the Q4_K_M layer pattern (arch, GQA
// ratio, q/k norm, experts, 8 layers so use_more_bits picks a first, a middle and a last layer)
// and keep every matmul input width a multiple of 256 so K-quants need no fallback.
Dims tiny(Dims d, uint64_t heads, uint64_t kv, uint64_t ff) {
  d.name += "-tiny";
  d.n_embd = 256;
  d.n_layer = 8;
  d.n_head = heads;
  d.n_head_kv = kv;
  d.head_dim = 32;
  d.n_ff = ff;
  d.context_length = 4096;
  d.n_vocab = 1024;
  d.n_regular_tokens = d.vocab == VocabStyle::Qwen ? 992 : 768;
  if (d.is_moe()) {
    d.n_expert = 16;  // not 8: llama.cpp special-cases exactly 8 experts in its type choice
    d.n_expert_used = 4;
    d.n_ff_exp = 256;
  }
  return d;
}

std::vector<Preset> build_presets() {
  Dims q8 = qwen3_dense("synthetic-random-qwen3-8b", 4096, 36, 32, 8, 12288);

  Dims l8;
  l8.arch = "llama";
  l8.name = "synthetic-random-llama3-8b";
  l8.n_vocab = 128256;
  l8.n_regular_tokens = 128000;
  l8.n_embd = 4096;
  l8.n_layer = 32;
  l8.n_head = 32;
  l8.n_head_kv = 8;
  l8.head_dim = 128;
  l8.n_ff = 14336;
  l8.context_length = 8192;
  l8.rope_freq_base = 5e5;
  l8.rms_eps = 1e-5;
  l8.vocab = VocabStyle::Llama3;

  Dims moe = qwen3_dense("synthetic-random-qwen3-30b-a3b", 2048, 48, 32, 4, 6144);
  moe.arch = "qwen3moe";
  moe.n_expert = 128;
  moe.n_expert_used = 8;
  moe.n_ff_exp = 768;

  Dims q32 = qwen3_dense("synthetic-random-qwen3-32b", 5120, 64, 64, 8, 25600);

  return {
      {"qwen3-8b", "Qwen3-8B: 36 layers, 4096 wide, 32/8 heads, ff 12288", q8},
      {"llama3-8b", "Llama-3-8B: 32 layers, 4096 wide, 32/8 heads, ff 14336", l8},
      {"qwen3-30b-a3b", "Qwen3-30B-A3B: 48 layers, 2048 wide, 32/4 heads, 128 experts (8 used) of ff 768", moe},
      {"qwen3-32b", "Qwen3-32B: 64 layers, 5120 wide, 64/8 heads, ff 25600", q32},
      {"qwen3-8b-tiny", "qwen3-8b structure: 8 layers, 256 wide, 8/2 heads, ff 768, vocab 1024", tiny(q8, 8, 2, 768)},
      {"llama3-8b-tiny", "llama3-8b structure: 8 layers, 256 wide, 8/2 heads, ff 1024, vocab 1024", tiny(l8, 8, 2, 1024)},
      {"qwen3-30b-a3b-tiny", "qwen3-30b-a3b structure: 8 layers, 256 wide, 8/1 heads, 16 experts (4 used) of ff 256, vocab 1024", tiny(moe, 8, 1, 768)},
      {"qwen3-32b-tiny", "qwen3-32b structure: 8 layers, 256 wide, 16/2 heads, ff 1280, vocab 1024", tiny(q32, 16, 2, 1280)},
  };
}

uint64_t parse_u64(std::string_view key, std::string_view v) {
  uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  MEMRA_CHECK(ec == std::errc() && p == v.data() + v.size(),
              "synth: '{}' needs a non-negative integer, got '{}'", key, v);
  return x;
}

double parse_f64(std::string_view key, std::string_view v) {
  std::string s(v);
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(s, &used);
  } catch (...) {
    used = 0;
  }
  MEMRA_CHECK(used == s.size() && !s.empty() && std::isfinite(x),
              "synth: '{}' needs a number, got '{}'", key, v);
  return x;
}

bool parse_bool(std::string_view key, std::string_view v) {
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  MEMRA_FAIL("synth: '{}' needs true or false, got '{}'", key, v);
}

struct Field {
  std::string_view key;
  std::function<void(Dims&, std::string_view, std::string_view)> set;
};

#define U64_FIELD(f) {#f, [](Dims& d, std::string_view k, std::string_view v) { d.f = parse_u64(k, v); }}
#define F64_FIELD(f) {#f, [](Dims& d, std::string_view k, std::string_view v) { d.f = parse_f64(k, v); }}
#define BOOL_FIELD(f) {#f, [](Dims& d, std::string_view k, std::string_view v) { d.f = parse_bool(k, v); }}

const std::vector<Field>& fields() {
  static const std::vector<Field> f = {
      {"arch", [](Dims& d, std::string_view, std::string_view v) {
         MEMRA_CHECK(v == "qwen3" || v == "llama" || v == "qwen3moe",
                     "synth: arch must be qwen3, llama or qwen3moe, got '{}'", v);
         d.arch = std::string(v);
       }},
      {"name", [](Dims& d, std::string_view, std::string_view v) { d.name = std::string(v); }},
      U64_FIELD(n_vocab), U64_FIELD(n_embd), U64_FIELD(n_layer), U64_FIELD(n_head),
      U64_FIELD(n_head_kv), U64_FIELD(head_dim), U64_FIELD(n_ff), U64_FIELD(n_expert),
      U64_FIELD(n_expert_used), U64_FIELD(n_ff_exp), U64_FIELD(context_length),
      F64_FIELD(rope_freq_base), F64_FIELD(rms_eps), BOOL_FIELD(qk_norm), BOOL_FIELD(tied_output),
      {"vocab", [](Dims& d, std::string_view, std::string_view v) {
         if (v == "qwen") d.vocab = VocabStyle::Qwen;
         else if (v == "llama3") d.vocab = VocabStyle::Llama3;
         else MEMRA_FAIL("synth: vocab must be qwen or llama3, got '{}'", v);
       }},
      U64_FIELD(n_regular_tokens),
  };
  return f;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = build_presets();
  return p;
}

const Preset& find_preset(std::string_view name) {
  std::string known;
  for (const auto& p : presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  MEMRA_FAIL("synth: unknown preset '{}' (known: {})", name, known);
}

const std::vector<std::string_view>& dim_keys() {
  static const std::vector<std::string_view> k = [] {
    std::vector<std::string_view> v;
    for (const auto& f : fields()) v.push_back(f.key);
    return v;
  }();
  return k;
}

void set_dim(Dims& d, std::string_view key, std::string_view value) {
  for (const auto& f : fields()) {
    if (f.key == key) {
      f.set(d, key, value);
      return;
    }
  }
  std::string known;
  for (auto k : dim_keys()) known += (known.empty() ? "" : ", ") + std::string(k);
  MEMRA_FAIL("synth: unknown dimension '{}' (known: {})", key, known);
}

const std::vector<std::string_view>& special_tokens(VocabStyle s) {
  static const std::vector<std::string_view> qwen = {
      "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
      "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
      "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
      "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
      "<|repo_name|>", "<|file_sep|>"};
  static const std::vector<std::string> llama_owned = [] {
    // Llama 3: 256 specials; the named ones sit at fixed offsets, the rest are reserved slots.
    std::vector<std::string> v = {"<|begin_of_text|>", "<|end_of_text|>"};
    for (int i = 0; i < 4; ++i) v.push_back(fmt::format("<|reserved_special_token_{}|>", i));
    v.push_back("<|start_header_id|>");
    v.push_back("<|end_header_id|>");
    v.push_back("<|reserved_special_token_4|>");
    v.push_back("<|eot_id|>");
    for (int i = 5; v.size() < 256; ++i) v.push_back(fmt::format("<|reserved_special_token_{}|>", i));
    return v;
  }();
  static const std::vector<std::string_view> llama(llama_owned.begin(), llama_owned.end());
  return s == VocabStyle::Qwen ? qwen : llama;
}

std::string_view vocab_pre(VocabStyle s) { return s == VocabStyle::Qwen ? "qwen2" : "llama-bpe"; }

void validate(const Dims& d) {
  MEMRA_CHECK(d.arch == "qwen3" || d.arch == "llama" || d.arch == "qwen3moe",
              "synth: unsupported arch '{}'", d.arch);
  MEMRA_CHECK(d.n_embd > 0 && d.n_layer > 0 && d.n_head > 0 && d.n_head_kv > 0 && d.head_dim > 0,
              "synth: n_embd, n_layer, n_head, n_head_kv and head_dim must all be > 0");
  MEMRA_CHECK(d.n_head % d.n_head_kv == 0, "synth: n_head {} is not a multiple of n_head_kv {}",
              d.n_head, d.n_head_kv);
  MEMRA_CHECK(d.n_layer < (1u << 20), "synth: n_layer {} is unreasonably large", d.n_layer);
  MEMRA_CHECK(d.context_length > 0, "synth: context_length must be > 0");
  MEMRA_CHECK(d.rms_eps > 0 && d.rope_freq_base > 0, "synth: rms_eps and rope_freq_base must be > 0");
  if (d.arch == "qwen3moe") {
    MEMRA_CHECK(d.n_expert > 0 && d.n_ff_exp > 0, "synth: qwen3moe needs n_expert and n_ff_exp > 0");
    MEMRA_CHECK(d.n_expert_used > 0 && d.n_expert_used <= d.n_expert,
                "synth: n_expert_used {} must be in [1, n_expert={}]", d.n_expert_used, d.n_expert);
  } else {
    MEMRA_CHECK(d.n_expert == 0, "synth: arch '{}' is dense; n_expert must be 0 (use qwen3moe)", d.arch);
    MEMRA_CHECK(d.n_ff > 0, "synth: n_ff must be > 0");
  }
  const uint64_t n_special = special_tokens(d.vocab).size();
  MEMRA_CHECK(d.n_regular_tokens >= 256, "synth: n_regular_tokens {} must hold the 256 byte tokens",
              d.n_regular_tokens);
  MEMRA_CHECK(d.n_regular_tokens + n_special <= d.n_vocab,
              "synth: n_vocab {} is smaller than n_regular_tokens {} + {} special tokens", d.n_vocab,
              d.n_regular_tokens, n_special);
  MEMRA_CHECK(d.n_vocab < (1ull << 31), "synth: n_vocab {} does not fit token ids", d.n_vocab);
}

}  // namespace memra::synth
