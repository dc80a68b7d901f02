#include "tokenizer/pretokenize.h"

#include <fmt/ranges.h>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace memra::tok {

namespace {

// --- the pattern texts (raw strings: exactly the regex syntax) ---
const char* const kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
const char* const kLlama3 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const char* const kQwen2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const char* const kQwen35 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const char* const kGpt4o =
    R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const char* const kTekken =
    R"re([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const char* const kSeedCoder =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const char* const kBailing =
    R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re";
// Cased-letter ranges of the DeepSeek LLM tokenizer, written as code points (\u{...}) so that
// no editor or normalizer can fold the compatibility characters (U+1FBE, U+2126, U+212A ...).
const char* const kDeepseekLlmLetters =
    R"re(\s?[A-Za-z\u{B5}\u{C0}-\u{D6}\u{D8}-\u{F6}\u{F8}-\u{1BA}\u{1BC}-\u{1BF}\u{1C4}-\u{293}\u{295}-\u{2AF})re"
    R"re(\u{370}-\u{373}\u{376}\u{377}\u{37B}-\u{37D}\u{37F}\u{386}\u{388}-\u{38A}\u{38C}\u{38E}-\u{3A1})re"
    R"re(\u{3A3}-\u{3F5}\u{3F7}-\u{481}\u{48A}-\u{52F}\u{531}-\u{556}\u{10A0}-\u{10C5}\u{13A0}-\u{13F5})re"
    R"re(\u{13F8}-\u{13FD}\u{1C90}-\u{1CBA}\u{1CBD}-\u{1CBF}\u{1D00}-\u{1D2B}\u{1D6B}-\u{1D77})re"
    R"re(\u{1D79}-\u{1D9A}\u{1E00}-\u{1F15}\u{1F18}-\u{1F1D}\u{1F20}-\u{1F45}\u{1F48}-\u{1F4D})re"
    R"re(\u{1F50}-\u{1F57}\u{1F59}\u{1F5B}\u{1F5D}\u{1F5F}-\u{1F7D}\u{1F80}-\u{1FB4}\u{1FB6}-\u{1FBC})re"
    R"re(\u{1FBE}\u{1FC2}-\u{1FC4}\u{1FC6}-\u{1FCC}\u{1FD0}-\u{1FD3}\u{1FD6}-\u{1FDB}\u{1FE0}-\u{1FEC})re"
    R"re(\u{1FF2}-\u{1FF4}\u{1FF6}-\u{1FFC}\u{2102}\u{2107}\u{210A}-\u{2113}\u{2115}\u{2119}-\u{211D})re"
    R"re(\u{2124}\u{2126}\u{2128}\u{212A}-\u{212D}\u{212F}-\u{2134}\u{2139}\u{213C}-\u{213F})re"
    R"re(\u{2145}-\u{2149}\u{214E}\u{2183}\u{2184}\u{2C00}-\u{2C7B}\u{2C7E}-\u{2CE4}\u{2CEB}-\u{2CEE})re"
    R"re(\u{2CF2}\u{2CF3}\u{A640}-\u{A66D}\u{A680}-\u{A69B}\u{A722}-\u{A76F}\u{A771}-\u{A787})re"
    R"re(\u{A78B}-\u{A78E}\u{AB70}-\u{ABBF}\u{FB00}-\u{FB06}\u{FB13}-\u{FB17}\u{FF21}-\u{FF3A})re"
    R"re(\u{FF41}-\u{FF5A}\u{10400}-\u{1044F}\u{104B0}-\u{104D3}\u{104D8}-\u{104FB}\u{10C80}-\u{10CB2})re"
    R"re(\u{10CC0}-\u{10CF2}\u{118A0}-\u{118DF}\u{1E900}-\u{1E943}]+)re";
const char* const kDeepseekLlmPunct = R"re(\s?[!-/:-~\u{FF01}-\u{FF0F}\u{FF1A}-\u{FF5E}\u{2018}-\u{201F}\u{3000}-\u{3002}]+)re";
const char* const kDeepseekCjk = R"re([\u{4E00}-\u{9FA5}\u{800}-\u{4E00}\u{AC00}-\u{D7FF}]+)re";
const char* const kDeepseekV3Main =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const char* const kPoro = R"re( ?[^(\s|.,!?\u{2026}\u{3002}\u{FF0C}\u{3001}\u{964}\u{6D4}\u{60C})]+)re";

struct Family {
  const char* name;
  std::vector<const char*> aliases;
  std::vector<const char*> patterns;
  bool add_bos, clean_spaces, ignore_merges, null_bos;
};

const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {"default", {"default"},
       {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re(\p{N}+)re", "[0-9][0-9][0-9]"}, false, true, false, false},
      {"llama3", {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
       {kLlama3}, true, true, true, false},
      {"dbrx", {"dbrx", "smaug-bpe"}, {kLlama3}, false, true, false, false},
      {"chatglm4", {"chatglm-bpe", "glm4"}, {kLlama3}, false, true, false, true},
      {"deepseek-llm", {"deepseek-llm"},
       {"[\\r\\n]", kDeepseekLlmLetters, kDeepseekLlmPunct, "\\s+$", kDeepseekCjk, "\\p{N}+"}, false, false, false, false},
      {"deepseek-coder", {"deepseek-coder"},
       {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kDeepseekCjk, "\\p{N}"}, false, false, false, false},
      {"deepseek-v3", {"deepseek-v3"},
       {"\\p{N}{1,3}", "[\\u{4E00}-\\u{9FA5}\\u{3040}-\\u{309F}\\u{30A0}-\\u{30FF}]+", kDeepseekV3Main}, false, false, false, false},
      {"falcon", {"falcon"},
       {R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, "[0-9][0-9][0-9]"}, false, true, false, false},
      {"gpt2", {"gpt-2", "mpt", "olmo", "jais", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
                "jina-v2-de", "a.x-4.0", "mellum", "exaone4", "modern-bert"},
       {kGpt2}, false, true, false, false},
      {"gpt2-noclean", {"trillion", "granite-docling"}, {kGpt2}, false, false, false, false},
      {"starcoder", {"starcoder", "refact", "codeshell", "exaone", "minerva-7b"},
       {"\\p{N}", kGpt2}, false, true, false, false},
      {"starcoder-noclean", {"command-r", "smollm"}, {"\\p{N}", kGpt2}, false, false, false, false},
      {"qwen2", {"qwen2", "deepseek-r1-qwen", "hunyuan", "grok-2"}, {kQwen2}, false, false, false, false},
      {"qwen2-clean", {"stablelm2", "megrez"}, {kQwen2}, false, true, false, false},
      {"qwen35", {"qwen35"}, {kQwen35}, false, false, false, false},
      {"gpt-4o", {"gpt-4o", "llama4", "minimax-m2"}, {kGpt4o}, false, false, false, false},
      {"tekken", {"tekken"}, {kTekken}, true, false, true, false},
      {"seed-coder", {"seed-coder"}, {kSeedCoder}, false, false, false, false},
      {"bailingmoe", {"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailing}, false, false, false, false},
      {"poro", {"poro-chat"}, {kPoro}, false, false, false, false},
      {"bloom", {"bloom", "gpt3-finnish"}, {kPoro}, false, true, false, false},
  };
  return f;
}

}  // namespace

PreTokenizerSpec pre_tokenizer_spec(std::string_view pre) {
  const std::string_view key = pre.empty() ? std::string_view("default") : pre;
  for (const Family& fam : families()) {
    for (const char* a : fam.aliases) {
      if (key != a) continue;
      PreTokenizerSpec s;
      s.name = fam.name;
      for (const char* p : fam.patterns) s.patterns.emplace_back(p);
      s.add_bos = fam.add_bos;
      s.clean_spaces = fam.clean_spaces;
      s.ignore_merges = fam.ignore_merges;
      s.null_bos = fam.null_bos;
      return s;
    }
  }
  MEMRA_FAIL("unknown BPE pre-tokenizer tokenizer.ggml.pre = '{}' (known: {})", pre,
             fmt::join(known_pre_tokenizers(), ", "));
}

std::vector<std::string> known_pre_tokenizers() {
  std::vector<std::string> out;
  for (const Family& fam : families())
    for (const char* a : fam.aliases) out.emplace_back(a);
  return out;
}

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    const bool cat = pattern_uses_categories(p);
    any_category_ = any_category_ || cat;
    regexes_.emplace_back(p, cat);
  }
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  const std::vector<uint32_t> cpts = utf8_to_cpts(text);
  std::vector<uint32_t> collapsed, plain(cpts);
  if (any_category_) {
    collapsed.resize(cpts.size());
    for (size_t i = 0; i < cpts.size(); ++i) collapsed[i] = collapse_cpt(cpts[i]);
  }
  // std::wregex's \s misses non-ASCII white space; llama.cpp substitutes \v for it.
  for (auto& c : plain)
    if (c > 0x7F && is_white_space(c)) c = 0x0B;

  std::vector<size_t> pieces{cpts.size()}, next;
  for (const Regex& re : regexes_) {
    next.clear();
    const uint32_t* t = re.category_mode() ? collapsed.data() : plain.data();
    size_t start = 0;
    for (size_t len : pieces) {
      re.split(t, start, start + len, next);
      start += len;
    }
    pieces.swap(next);
  }
  std::vector<std::string> words;
  words.reserve(pieces.size());
  size_t start = 0;
  for (size_t len : pieces) {
    std::string w;
    for (size_t i = start; i < start + len; ++i) append_utf8(w, cpts[i]);
    words.push_back(std::move(w));
    start += len;
  }
  return words;
}

}  // namespace memra::tok
