#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "core/error.h"
#include "core/log.h"
#include "gguf/gguf.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace memra::tok {

namespace {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type)
uint32_t attr_from_type(int64_t t) {
  switch (t) {
    case 1: return kAttrNormal;
    case 2: return kAttrUnknown;
    case 3: return kAttrControl;
    case 4: return kAttrUserDefined;
    case 5: return kAttrUnused;
    case 6: return kAttrByte;
    default: return kAttrUndefined;
  }
}

bool is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

// Token texts llama.cpp treats as end-of-generation (and as control tokens) whatever their
// declared type.
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~["};
// Candidates for the EOT id when tokenizer.ggml.eot_token_id is absent.
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<end_of_utterance>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};

template <size_t N>
bool in_list(const std::string_view (&list)[N], std::string_view s) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

}  // namespace

void Tokenizer::Impl::check_id(int32_t id) const {
  MEMRA_CHECK(id >= 0 && id < info.n_vocab, "token id {} out of range (vocabulary has {} tokens)", id,
              info.n_vocab);
}

void Tokenizer::Impl::build_special_trie() {
  special_trie.assign(1, TrieNode{});
  for (int32_t id : special_order) {
    int32_t node = 0;
    for (char ch : text[id]) {
      const auto b = static_cast<uint8_t>(ch);
      auto& nx = special_trie[node].next;
      auto it = std::lower_bound(nx.begin(), nx.end(), b, [](const auto& e, uint8_t x) { return e.first < x; });
      if (it != nx.end() && it->first == b) {
        node = it->second;
      } else {
        const auto child = static_cast<int32_t>(special_trie.size());
        nx.insert(it, {b, child});
        special_trie.emplace_back();
        node = child;
      }
    }
    special_trie[node].token = id;
  }
}

void Tokenizer::Impl::specials_in(std::string_view s, std::vector<uint8_t>& present) const {
  const auto& root = special_trie[0].next;
  if (root.empty()) return;
  std::array<int32_t, 256> first{};
  first.fill(-1);
  for (const auto& [b, child] : root) first[b] = child;
  for (size_t i = 0; i < s.size(); ++i) {
    int32_t node = first[static_cast<uint8_t>(s[i])];
    for (size_t j = i + 1; node >= 0; ++j) {
      if (special_trie[node].token != kNoToken) present[special_trie[node].token] = 1;
      if (j >= s.size()) break;
      const auto b = static_cast<uint8_t>(s[j]);
      const auto& nx = special_trie[node].next;
      const auto it = std::lower_bound(nx.begin(), nx.end(), b, [](const auto& e, uint8_t x) { return e.first < x; });
      node = (it != nx.end() && it->first == b) ? it->second : -1;
    }
  }
}

std::string Tokenizer::Impl::make_piece(int32_t id) const {
  const uint32_t a = attr[id];
  const std::string& t = text[id];
  if (a & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return t;
  if (a & kAttrByte) {
    // "<0xNN>": the byte itself
    auto hex = [](char c) {
      return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    };
    if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && hex(t[3]) >= 0 && hex(t[4]) >= 0)
      return std::string(1, static_cast<char>(hex(t[3]) * 16 + hex(t[4])));
    return t;
  }
  if (!(a & kAttrNormal)) return {};
  if (info.type == VocabType::SPM) {
    std::string s = t;
    replace_all(s, "\xe2\x96\x81", " ");
    return s;
  }
  std::string out;
  for (uint32_t cp : utf8_to_cpts(t)) {
    std::string u;
    append_utf8(u, cp);
    const int b = unicode_to_byte(u);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {  // llama.cpp's rendering of a code point outside the byte map
      out += "[UNK_BYTE_0x";
      for (char c : u) out += fmt::format("{:02x}", static_cast<uint8_t>(c));
      out += t + "]";
    }
  }
  return out;
}

Tokenizer Tokenizer::from_gguf(const gguf::File& f) {
  auto impl = std::make_unique<Impl>();
  Impl& v = *impl;
  TokenizerInfo& in = v.info;
  in.model = f.get_string("tokenizer.ggml.model");
  in.pre = f.find_string("tokenizer.ggml.pre").value_or("");
  PreTokenizerSpec spec;
  if (in.model == "llama") {
    in.type = VocabType::SPM;
    in.bos = 1, in.eos = 2, in.unk = 0;
    in.add_space_prefix = true;
    in.add_bos = true;
    in.clean_spaces = false;
  } else if (in.model == "gpt2") {
    in.type = VocabType::BPE;
    in.bos = 11, in.eos = 11, in.unk = kNoToken;
    spec = pre_tokenizer_spec(in.pre);
    if (in.pre.empty())
      spdlog::warn("{}: tokenizer.ggml.pre is missing; using the 'default' pre-tokenizer as llama.cpp does", f.path());
    in.pre_family = spec.name;
    in.add_bos = spec.add_bos;
    in.clean_spaces = spec.clean_spaces;
    v.ignore_merges = spec.ignore_merges;
    if (spec.null_bos) in.bos = kNoToken;
  } else {
    MEMRA_FAIL("{}: tokenizer.ggml.model = '{}' is not supported (only 'llama' (SPM) and 'gpt2' (BPE))",
               f.path(), in.model);
  }
  in.add_space_prefix = f.find_bool("tokenizer.ggml.add_space_prefix").value_or(in.add_space_prefix);

  v.text = f.get_string_array("tokenizer.ggml.tokens");
  const int32_t n = static_cast<int32_t>(v.text.size());
  MEMRA_CHECK(n > 0, "{}: tokenizer.ggml.tokens is empty", f.path());
  in.n_vocab = n;
  v.score.assign(n, 0.0f);
  if (f.find("tokenizer.ggml.scores")) {
    const auto s = f.get_f32_array("tokenizer.ggml.scores");
    MEMRA_CHECK(static_cast<int32_t>(s.size()) >= n, "{}: tokenizer.ggml.scores has {} entries for {} tokens",
                f.path(), s.size(), n);
    std::copy_n(s.begin(), n, v.score.begin());
  }
  v.attr.assign(n, kAttrNormal);
  if (f.find("tokenizer.ggml.token_type")) {
    const auto t = f.get_int_array("tokenizer.ggml.token_type");
    MEMRA_CHECK(static_cast<int32_t>(t.size()) >= n, "{}: tokenizer.ggml.token_type has {} entries for {} tokens",
                f.path(), t.size(), n);
    for (int32_t i = 0; i < n; ++i) v.attr[i] = attr_from_type(t[i]);
  }
  v.to_id.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    if (v.text[i].empty()) v.text[i] = fmt::format("[EMPTY_{}]", i);
    v.to_id.emplace(v.text[i], i);
  }

  if (in.type == VocabType::BPE) {
    MEMRA_CHECK(f.find("tokenizer.ggml.merges") != nullptr, "{}: BPE vocabulary without tokenizer.ggml.merges",
                f.path());
    const auto merges = f.get_string_array("tokenizer.ggml.merges");
    in.n_merges = static_cast<int32_t>(merges.size());
    auto sides = [](const std::string& m) {
      // "left right", split at the first space after the first byte (llama.cpp's rule)
      const size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) return std::pair<std::string_view, std::string_view>();
      return std::pair<std::string_view, std::string_view>(std::string_view(m).substr(0, sp),
                                                           std::string_view(m).substr(sp + 1));
    };
    v.merges_by_id = true;
    for (const std::string& m : merges) {
      const auto [l, r] = sides(m);
      if (v.find(l) == kNoToken || v.find(r) == kNoToken) {
        v.merges_by_id = false;
        break;
      }
    }
    std::string joined;
    for (size_t i = 0; i < merges.size(); ++i) {
      const auto [l, r] = sides(merges[i]);
      const auto rank = static_cast<int32_t>(i);
      if (v.merges_by_id) {
        joined.assign(l).append(r);
        const uint64_t key = (uint64_t(uint32_t(v.find(l))) << 32) | uint32_t(v.find(r));
        v.merge_id.emplace(key, Impl::Merge{rank, v.find(joined)});  // first rank wins
      } else {
        v.merge_rank.emplace(merge_key(l, r), rank);
      }
    }
    v.pre = std::make_unique<PreTokenizer>(spec.patterns);
    for (int b = 0; b < 256; ++b) v.byte_id[b] = v.find(byte_to_unicode(static_cast<uint8_t>(b)));
  }

  // special token ids: defaults first (dropped when outside the vocabulary), then metadata
  // (ignored when outside the vocabulary, as llama.cpp does with e.g. 4294967295)
  int32_t fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken, fim_pad = kNoToken,
          fim_rep = kNoToken, fim_sep = kNoToken;
  const std::pair<const char*, int32_t*> keys[] = {
      {"tokenizer.ggml.bos_token_id", &in.bos}, {"tokenizer.ggml.eos_token_id", &in.eos},
      {"tokenizer.ggml.eot_token_id", &in.eot}, {"tokenizer.ggml.eom_token_id", &in.eom},
      {"tokenizer.ggml.unknown_token_id", &in.unk}, {"tokenizer.ggml.seperator_token_id", &in.sep},
      {"tokenizer.ggml.padding_token_id", &in.pad}, {"tokenizer.ggml.fim_pre_token_id", &fim_pre},
      {"tokenizer.ggml.fim_suf_token_id", &fim_suf}, {"tokenizer.ggml.fim_mid_token_id", &fim_mid},
      {"tokenizer.ggml.fim_pad_token_id", &fim_pad}, {"tokenizer.ggml.fim_rep_token_id", &fim_rep},
      {"tokenizer.ggml.fim_sep_token_id", &fim_sep}, {"tokenizer.ggml.prefix_token_id", &fim_pre},
      {"tokenizer.ggml.suffix_token_id", &fim_suf}, {"tokenizer.ggml.middle_token_id", &fim_mid},
  };
  for (const auto& [key, id] : keys) {
    if (*id >= n) *id = kNoToken;
    const auto val = f.find_int(key);
    if (!val) continue;
    if (*val >= 0 && *val < n) *id = static_cast<int32_t>(*val);
    else spdlog::warn("{}: bad special token {} = {}, keeping {}", f.path(), key, *val, *id);
  }
  in.add_bos = f.find_bool("tokenizer.ggml.add_bos_token").value_or(in.add_bos);
  in.add_eos = f.find_bool("tokenizer.ggml.add_eos_token").value_or(in.add_eos);
  MEMRA_CHECK(!in.add_bos || in.bos != kNoToken, "{}: add_bos_token is true but there is no BOS token", f.path());
  MEMRA_CHECK(!in.add_eos || in.eos != kNoToken, "{}: add_eos_token is true but there is no EOS token", f.path());

  // end-of-generation set by token text (llama.cpp's auto-detection); ids ascending so the
  // choice among several EOT candidates is deterministic
  auto mark_control = [&](int32_t id) { v.attr[id] |= kAttrControl; };
  for (int32_t id = 0; id < n; ++id) {
    const std::string& t = v.text[id];
    if (in.eot == kNoToken && in_list(kEotTexts, t)) in.eot = id, mark_control(id);
    if (in.eom == kNoToken && t == "<|eom_id|>") in.eom = id, mark_control(id);
    if (fim_pad == kNoToken && in_list(kFimPadTexts, t)) fim_pad = id, mark_control(id);
    if (fim_rep == kNoToken && in_list(kFimRepTexts, t)) fim_rep = id, mark_control(id);
    if (fim_sep == kNoToken && in_list(kFimSepTexts, t)) fim_sep = id, mark_control(id);
  }
  for (int32_t id : {fim_pad, fim_rep, fim_sep})
    if (id != kNoToken) v.eog.insert(id);
  for (int32_t id = 0; id < n; ++id) {
    if (in_list(kEogTexts, v.text[id])) {
      v.eog.insert(id);
      mark_control(id);
    }
  }
  // gpt-oss (harmony) structural tokens are always rendered and split like user-defined text
  for (std::string_view t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
    if (const int32_t id = v.find(t); id != kNoToken) v.attr[id] = kAttrUserDefined;
  for (int32_t id : {in.eos, in.eot, in.eom})
    if (id != kNoToken) v.eog.insert(id);
  {
    // harmony: with <|return|> and <|call|> present, <|end|> only ends a message, not generation
    auto has = [&](std::string_view t) {
      const int32_t id = v.find(t);
      return id != kNoToken && v.eog.count(id) ? id : kNoToken;
    };
    const int32_t end = has("<|end|>");
    if (end != kNoToken && ((has("<|return|>") != kNoToken && has("<|call|>") != kNoToken) ||
                            (has("<|calls|>") != kNoToken && has("<|flush|>") != kNoToken))) {
      v.eog.erase(end);
      v.attr[end] = kAttrUserDefined;
    }
    const int32_t s_end = has("</s>");
    if (s_end != kNoToken && has("<|tool_response>") != kNoToken) {
      v.eog.erase(s_end);
      v.attr[s_end] = kAttrNormal;
    }
  }
  in.eog.assign(v.eog.begin(), v.eog.end());

  for (int32_t id = 0; id < n; ++id)
    if (v.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) v.special_order.push_back(id);
  std::stable_sort(v.special_order.begin(), v.special_order.end(),
                   [&](int32_t a, int32_t b) { return v.text[a].size() > v.text[b].size(); });
  if (in.type == VocabType::SPM) {
    v.spm_chunkable = true;
    for (const std::string& t : v.text) {
      size_t k = 0;
      while (t.compare(k, 3, "\xe2\x96\x81") == 0) k += 3;
      if (t.find("\xe2\x96\x81", k) != std::string::npos) {
        v.spm_chunkable = false;
        break;
      }
    }
  }
  v.piece.resize(n);
  for (int32_t id = 0; id < n; ++id) v.piece[id] = v.make_piece(id);
  v.build_special_trie();

  // Phi-3 strips white space to the right of its special tokens (llama.cpp keys this on the
  // model name because the GGUF carries no per-token strip flags).
  std::string name = f.find_string("general.name").value_or("");
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t id : v.special_order) v.attr[id] |= kAttrRStrip;
    if (const int32_t id = v.find("</s>"); id != kNoToken) v.attr[id] |= kAttrRStrip;
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"})
      if (const int32_t id = v.find(t); id != kNoToken) v.attr[id] &= ~kAttrRStrip;
  }

  Tokenizer tok(std::move(impl));
  // newline token: the byte token for '\n' (SPM) or what "\n" tokenizes to (BPE)
  if (in.type == VocabType::SPM) {
    tok.impl_->info.nl = tok.impl_->spm_byte_token('\n');
  } else {
    const auto ids = tok.tokenize("\n", false, false);
    tok.impl_->info.nl = ids.empty() ? tok.impl_->info.pad : ids[0];
  }
  return tok;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  const Impl& v = *impl_;
  struct Frag {
    int32_t token;  // kNoToken for raw text
    size_t off, len;
  };
  std::vector<Frag> frags, next;
  if (!text.empty()) frags.push_back({kNoToken, 0, text.size()});

  // Split the raw fragments on each special token in turn, longest token text first (the
  // order matters when special texts overlap). Tokens absent from the text are skipped up
  // front: fragments are substrings of it.
  thread_local std::vector<uint8_t> present;
  present.assign(v.text.size(), 0);
  if (!frags.empty()) v.specials_in(text, present);
  for (int32_t sid : v.special_order) {
    if (!present[sid]) continue;
    const uint32_t a = v.attr[sid];
    if (!parse_special && (a & (kAttrControl | kAttrUnknown))) continue;
    const std::string& st = v.text[sid];
    next.clear();
    for (const Frag& fr : frags) {
      if (fr.token != kNoToken) {
        next.push_back(fr);
        continue;
      }
      size_t off = fr.off, len = fr.len;
      while (len > 0) {
        const size_t hit = text.substr(0, off + len).find(st, off);
        if (hit == std::string_view::npos) break;
        size_t left_len = hit - off;
        if (a & kAttrLStrip)
          while (left_len > 0 && is_c_space(text[off + left_len - 1])) --left_len;
        if (left_len > 0) next.push_back({kNoToken, off, left_len});
        next.push_back({sid, 0, 0});
        size_t roff = hit + st.size();
        size_t rlen = off + len - roff;
        if (a & kAttrRStrip)
          while (rlen > 0 && is_c_space(text[roff])) ++roff, --rlen;
        off = roff;
        len = rlen;
      }
      if (len > 0) next.push_back({kNoToken, off, len});
    }
    frags.swap(next);
  }

  std::vector<int32_t> out;
  const TokenizerInfo& in = v.info;
  if (add_special && in.add_bos) out.push_back(in.bos);
  if (in.type == VocabType::SPM) {
    bool prev_special = true;  // the text start counts as "after a special token"
    std::string buf;
    for (const Frag& fr : frags) {
      if (fr.token != kNoToken) {
        out.push_back(fr.token);
        prev_special = true;
        continue;
      }
      buf.clear();
      if (in.add_space_prefix && prev_special) buf = " ";
      buf.append(text.substr(fr.off, fr.len));
      replace_all(buf, " ", "\xe2\x96\x81");
      spm_tokenize(v, buf, out);
      prev_special = false;
    }
  } else {
    for (const Frag& fr : frags) {
      if (fr.token != kNoToken) out.push_back(fr.token);
      else bpe_tokenize(v, text.substr(fr.off, fr.len), out);
    }
  }
  if (add_special && in.add_eos) out.push_back(in.eos);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  impl_->check_id(id);
  if (!render_special && (impl_->attr[id] & (kAttrUnknown | kAttrControl))) return {};
  return impl_->piece[id];
}

std::string Tokenizer::detokenize(std::span<const int32_t> ids, bool render_special) const {
  std::string out;
  bool strip_space = impl_->info.add_space_prefix;
  for (int32_t id : ids) {
    impl_->check_id(id);
    if (!render_special && (impl_->attr[id] & (kAttrUnknown | kAttrControl))) {
      strip_space = false;
      continue;
    }
    const std::string& p = impl_->piece[id];
    out.append(p, strip_space && !p.empty() && p[0] == ' ' ? 1 : 0, std::string::npos);
    strip_space = false;
  }
  return impl_->info.clean_spaces ? clean_spaces(std::move(out)) : out;
}

// clean_up_tokenization_spaces, in llama.cpp's three passes: drop the space before ? ! . ,;
// turn " ' " into "'"; drop the space before 's 'm 're 've.
std::string Tokenizer::clean_spaces(std::string t) const {
  if (t.empty()) return t;
  std::string a;
  a.push_back(t[0]);
  for (size_t i = 1; i < t.size(); ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
    a.push_back(x);
  }
  std::string b;
  b.push_back(a[0]);
  for (size_t i = 1; i < a.size(); ++i) {
    const char x = a[i];
    if (x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
      // " ' " -> "'": drop both spaces. llama.cpp blanks the second one in place (so it is
      // not seen as a space by the next character's check either); we do the same.
      b.pop_back();
      a[++i] = '\0';
      b.push_back(x);
      continue;
    }
    b.push_back(x);
  }
  std::string c;
  c.push_back(b[0]);
  for (size_t i = 1; i < b.size(); ++i) {
    const char x = b[i];
    if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      if (x1 == 's' || x1 == 'm') c.pop_back();
      else if (i + 2 < b.size() && ((x1 == 'r' && b[i + 2] == 'e') || (x1 == 'v' && b[i + 2] == 'e'))) c.pop_back();
    }
    c.push_back(x);
  }
  return c;
}

const TokenizerInfo& Tokenizer::info() const { return impl_->info; }
int32_t Tokenizer::n_vocab() const { return impl_->info.n_vocab; }
VocabType Tokenizer::type() const { return impl_->info.type; }
int32_t Tokenizer::bos() const { return impl_->info.bos; }
int32_t Tokenizer::eos() const { return impl_->info.eos; }
int32_t Tokenizer::eot() const { return impl_->info.eot; }
int32_t Tokenizer::eom() const { return impl_->info.eom; }
int32_t Tokenizer::unk() const { return impl_->info.unk; }
int32_t Tokenizer::nl() const { return impl_->info.nl; }
bool Tokenizer::add_bos() const { return impl_->info.add_bos; }
bool Tokenizer::add_eos() const { return impl_->info.add_eos; }
bool Tokenizer::is_eog(int32_t id) const { return id != kNoToken && impl_->eog.count(id) > 0; }
const std::string& Tokenizer::token_text(int32_t id) const {
  impl_->check_id(id);
  return impl_->text[id];
}
uint32_t Tokenizer::token_attr(int32_t id) const {
  impl_->check_id(id);
  return impl_->attr[id];
}
float Tokenizer::token_score(int32_t id) const {
  impl_->check_id(id);
  return impl_->score[id];
}
bool Tokenizer::is_control(int32_t id) const { return (token_attr(id) & kAttrControl) != 0; }
int32_t Tokenizer::find_token(std::string_view text) const { return impl_->find(text); }

}  // namespace memra::tok
