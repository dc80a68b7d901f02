// memra's tokenizer against llama.cpp's (libllama, vocab-only load) on generated strings: pieces of
// words, numbers, whitespace runs, contractions, code, special-token texts, scripts from Latin to
// CJK and emoji, combining marks, stray bytes; every (add_special, parse_special) mode, and the
// detokenized text of the ids. Built and run by scripts/llamacpp-diff.sh; not part of CI.
// Usage: tok_diff VOCAB.gguf [strings].
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "llama.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

static const char* kPieces[] = {
  "Hello", "world", " the", "The", "THE", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "'s", "'S", "'re", "'ll", "'LL", "'ve", "n't", "'d", "'m", "'t",
  "123", "4567", "0", "99999999", "3.14159", "1,000", "-42", "+", "=", "==", "!=", "->", "=>", "...", "..", ".", ",", ";", ":", "!", "?", "??", "!!",
  "(", ")", "[", "]", "{", "}", "<", ">", "</", "/>", "\"", "'", "`", "```", "#", "##", "###", "@", "$", "%", "^", "&", "*", "_", "__", "-", "--", "---", "~", "|", "\\",
  "é", "ü", "ß", "ñ", "Ö", "café", "naïve", "Ελληνικά", "русский", "日本語", "中文", "한국어", "漢字かな", "😀", "👍🏽", "🇺🇸", "👨‍👩‍👧", "∑", "√", "→", "€", "£", "©",
  "\xE2\x80\x8B", "\xC2\xA0", "\xE3\x80\x80", "e\xCC\x81", "ﬁ", "Ａ", "١٢٣", "مرحبا", "שלום", "ไทย", "हिन्दी", "\xF0\x9F\x98", "\xFF", "\xC3",
  "<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "[INST]", "<|user|>", "<pad>", "<mask>", "[CLS]", "<|begin_of_text|>",
  "def", " foo", "(x):", "    return", "x+1", "int main()", "{\n", "}", "printf(\"%d\\n\", i);", "http://example.com/a?b=c", "user@mail.org",
  "don't", "I'm", "you're", "ABC", "abc", "aBc", "A", "a", "I", "Z", "z", "x", "xyz", "camelCase", "snake_case", "UPPER", "MiXeD",
  "   leading", "trailing   ", "\t\ttabs", "a  b", "a\tb", "a\nb", "a \n b", "....", "!!!", "???", "-- --", "1 2 3", "12 345 6789",
};

static void put_cp(std::string& s, uint32_t c) {
  if (c < 0x80) s += (char)c;
  else if (c < 0x800) { s += (char)(0xC0 | c >> 6); s += (char)(0x80 | (c & 63)); }
  else if (c < 0x10000) { s += (char)(0xE0 | c >> 12); s += (char)(0x80 | (c >> 6 & 63)); s += (char)(0x80 | (c & 63)); }
  else { s += (char)(0xF0 | c >> 18); s += (char)(0x80 | (c >> 12 & 63)); s += (char)(0x80 | (c >> 6 & 63)); s += (char)(0x80 | (c & 63)); }
}
static std::string gen2(std::mt19937& g) {
  static const uint32_t ranges[][2] = {{0x20, 0x7E}, {0x09, 0x0D}, {0xA0, 0x24F}, {0x300, 0x36F}, {0x370, 0x3FF}, {0x400, 0x4FF}, {0x590, 0x6FF},
    {0x900, 0x97F}, {0xE00, 0xE7F}, {0x1100, 0x11FF}, {0x2000, 0x206F}, {0x20A0, 0x20CF}, {0x2100, 0x22FF}, {0x3000, 0x30FF}, {0x4E00, 0x4FFF},
    {0xAC00, 0xAD00}, {0xFF00, 0xFFEF}, {0x1F300, 0x1F6FF}, {0x1F900, 0x1F9FF}, {0x10000, 0x1007F}, {0xFE00, 0xFE0F}, {0xE000, 0xE0FF}};
  const int n = 1 + g() % 24;
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (g() % 40 == 0) { s += (char)(0x80 + g() % 128); continue; }  // a stray byte
    const auto& r = ranges[g() % (sizeof(ranges) / sizeof(ranges[0]))];
    put_cp(s, r[0] + g() % (r[1] - r[0] + 1));
  }
  return s;
}
static std::string gen(std::mt19937& g) {
  if (g() % 2) return gen2(g);
  const int n = 1 + g() % 12;
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += kPieces[g() % (sizeof(kPieces) / sizeof(kPieces[0]))];
    if (g() % 3 == 0) s += ' ';
  }
  return s;
}

int main(int argc, char** argv) {
  const int reps = argc > 2 ? atoi(argv[2]) : 2000;
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  auto mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) { printf("%s: llama.cpp cannot load\n", argv[1]); return 0; }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  auto file = memra::gguf::File::open(argv[1]);
  auto tok = memra::tok::Tokenizer::from_gguf(file);
  std::mt19937 g(99);
  int bad_tok = 0, bad_detok = 0, n = 0;
  for (int r = 0; r < reps; ++r) {
    const std::string s = gen(g);
    for (int mode = 0; mode < 4; ++mode) {
      const bool add = mode & 1, parse = mode & 2;
      std::vector<llama_token> ref(s.size() * 4 + 16);
      int k = llama_tokenize(vocab, s.data(), (int32_t)s.size(), ref.data(), (int32_t)ref.size(), add, parse);
      if (k < 0) { ref.resize(-k); k = llama_tokenize(vocab, s.data(), (int32_t)s.size(), ref.data(), (int32_t)ref.size(), add, parse); }
      ref.resize(k);
      std::vector<int32_t> ours;
      try { ours = tok.tokenize(s, add, parse); } catch (const std::exception& e) { ours = {-999}; }
      ++n;
      if (std::vector<int32_t>(ref.begin(), ref.end()) != ours) {
        if (bad_tok++ < 3) {
          printf("  TOK add=%d parse=%d text=", add, parse);
          for (unsigned char c : s) { if (c >= 32 && c < 127 && c != '\\') putchar(c); else printf("\\x%02x", c); }
          printf("\n    llama:"); for (int t : ref) printf(" %d", t);
          printf("\n    memra:"); for (int t : ours) printf(" %d", t);
          printf("\n");
        }
        continue;
      }
      std::string dref(s.size() * 8 + 64, '\0');
      int dk = llama_detokenize(vocab, ref.data(), (int32_t)ref.size(), dref.data(), (int32_t)dref.size(), false, true);
      if (dk < 0) { dref.resize(-dk); dk = llama_detokenize(vocab, ref.data(), (int32_t)ref.size(), dref.data(), (int32_t)dref.size(), false, true); }
      dref.resize(dk);
      const std::string dours = tok.detokenize(ours, true);
      if (dref != dours && bad_detok++ < 3) {
        printf("  DETOK text=");
        for (unsigned char c : s) { if (c >= 32 && c < 127) putchar(c); else printf("\\x%02x", c); }
        printf("\n    llama: "); for (unsigned char c : dref) { if (c >= 32 && c < 127) putchar(c); else printf("\\x%02x", c); }
        printf("\n    memra: "); for (unsigned char c : dours) { if (c >= 32 && c < 127) putchar(c); else printf("\\x%02x", c); }
        printf("\n");
      }
    }
  }
  printf("%s: %d cases, tokenize mismatches %d, detokenize mismatches %d\n", argv[1], n, bad_tok, bad_detok);
}
