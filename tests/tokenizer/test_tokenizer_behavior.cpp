// Tokenizer behaviour beyond the reference files: round trips, streaming detokenization,
// special tokens, end-of-generation sets, errors.
#include <random>

#include "core/error.h"
#include "tokenizer/unicode.h"
#include "fixtures.h"

namespace memra::tok::test {
namespace {

const char* const kAllVocabs[] = {
    "stories260K.gguf", "llama-2-tiny-random.gguf", "vocab/ggml-vocab-baichuan.gguf",
    "vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-phi-3.gguf", "vocab/ggml-vocab-deepseek-coder.gguf",
    "vocab/ggml-vocab-deepseek-llm.gguf", "vocab/ggml-vocab-falcon.gguf", "vocab/ggml-vocab-gpt-2.gguf",
    "vocab/ggml-vocab-gpt-neox.gguf", "vocab/ggml-vocab-mpt.gguf", "vocab/ggml-vocab-refact.gguf",
    "vocab/ggml-vocab-starcoder.gguf", "synth/qwen3-f32.gguf", "synth/gpt-oss-f32.gguf", "synth/llama-f32.gguf"};

// All test strings of the .inp corpora (llama.cpp's tokenizer test inputs).
std::vector<std::string> corpus() {
  std::vector<std::string> out;
  const std::string sep = "\n__ggml_vocab_test__\n";
  for (const char* f : {"ggml-vocab-gpt-2.gguf.inp", "ggml-vocab-llama-spm.gguf.inp", "ggml-vocab-deepseek-llm.gguf.inp"}) {
    const std::string inp = read_file(shared_dir() / "models" / "vocab" / f);
    for (size_t pos = 0;;) {
      const size_t hit = inp.find(sep, pos);
      if (hit == std::string::npos) break;
      out.push_back(inp.substr(pos, hit - pos));
      pos = hit + sep.size();
    }
  }
  out.push_back("Mixed: caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD <s> [CLS] <|im_start|> 3.14159");
  return out;
}

bool complete_utf8(std::string_view s) {
  // true when s does not end inside a multi-byte sequence
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const auto c = static_cast<uint8_t>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;
    const size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need <= back;
  }
  return true;
}

// True when cutting `whole` at `pos` separates the bytes of one complete, valid UTF-8
// character (invalid bytes that can never form a character may be emitted on their own).
bool splits_char(std::string_view whole, size_t pos) {
  for (size_t back = 1; back <= 3 && back <= pos; ++back) {
    const auto c = static_cast<uint8_t>(whole[pos - back]);
    if ((c & 0xC0) == 0x80) continue;
    const size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    if (need <= back) return false;
    const size_t lead = pos - back;
    if (lead + need > whole.size()) return false;
    for (size_t k = lead + 1; k < lead + need; ++k)
      if ((static_cast<uint8_t>(whole[k]) & 0xC0) != 0x80) return false;
    return true;
  }
  return false;
}

std::string hex_tail(std::string_view s) {
  std::string out;
  for (size_t i = s.size() > 6 ? s.size() - 6 : 0; i < s.size(); ++i)
    out += fmt::format("{:02x} ", static_cast<uint8_t>(s[i]));
  return out;
}

TEST(TokenizerBehavior, KnownGpt2Ids) {
  MEMRA_REQUIRE_SHARED();
  const Tokenizer& t = vocab("vocab/ggml-vocab-gpt-2.gguf");
  // GPT-2's published ids: "Hello" 15496, " world" 995, "<|endoftext|>" 50256
  EXPECT_EQ(t.tokenize("Hello world", false, false), (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(t.eos(), 50256);
  EXPECT_TRUE(t.is_eog(50256));
  EXPECT_FALSE(t.is_eog(995));
  EXPECT_EQ(t.tokenize("<|endoftext|>", false, true), (std::vector<int32_t>{50256}));
  EXPECT_NE(t.tokenize("<|endoftext|>", false, false), (std::vector<int32_t>{50256}));
  EXPECT_EQ(t.type(), VocabType::BPE);
  EXPECT_FALSE(t.add_bos());
  EXPECT_EQ(t.tokenize("Hello", true, false), t.tokenize("Hello", false, false));
  EXPECT_EQ(t.token_to_piece(995), " world");
  EXPECT_EQ(t.token_to_piece(50256, true), "<|endoftext|>");
  EXPECT_EQ(t.token_to_piece(50256, false), "");
  EXPECT_THROW(t.token_to_piece(50257), memra::Error);
}

TEST(TokenizerBehavior, SpmSpecialsAndBos) {
  MEMRA_REQUIRE_SHARED();
  const Tokenizer& t = vocab("vocab/ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(t.type(), VocabType::SPM);
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_TRUE(t.add_bos());
  EXPECT_FALSE(t.add_eos());
  EXPECT_EQ(t.nl(), 13);  // <0x0A>
  const auto with = t.tokenize("Hi", true, false);
  const auto without = t.tokenize("Hi", false, false);
  ASSERT_EQ(with.size(), without.size() + 1);
  EXPECT_EQ(with[0], 1);
  EXPECT_TRUE(t.tokenize("", false, false).empty());
  EXPECT_EQ(t.tokenize("", true, false), (std::vector<int32_t>{1}));
  EXPECT_EQ(t.token_to_piece(13), "\n");
  EXPECT_TRUE(t.is_eog(2));
  EXPECT_FALSE(t.is_eog(1));
}

TEST(TokenizerBehavior, EndOfGenerationSets) {
  MEMRA_REQUIRE_SHARED();
  const Tokenizer& phi = vocab("vocab/ggml-vocab-phi-3.gguf");
  const int32_t end = phi.find_token("<|end|>");
  ASSERT_NE(end, kNoToken);
  EXPECT_TRUE(phi.is_eog(end));   // marked by text, as llama.cpp does
  EXPECT_TRUE(phi.is_eog(32000)); // eos_token_id
  EXPECT_TRUE(phi.is_control(end));
  const Tokenizer& q = vocab("synth/qwen3-f32.gguf");
  for (int32_t id : q.info().eog) EXPECT_TRUE(q.is_eog(id));
  EXPECT_TRUE(q.is_eog(q.eos()));
  const Tokenizer& ds = vocab("vocab/ggml-vocab-deepseek-llm.gguf");
  EXPECT_TRUE(ds.is_eog(100001));
  EXPECT_EQ(ds.bos(), 100000);
  EXPECT_TRUE(ds.add_bos());
}

TEST(TokenizerBehavior, RoundTripWhereLossless) {
  MEMRA_REQUIRE_SHARED();
  const auto texts = corpus();
  int checked = 0;
  for (const char* v : kAllVocabs) {
    const Tokenizer& t = vocab(v);
    // an SPM vocabulary without a "▁" piece spells spaces with the byte tokens of U+2581
    if (t.type() == VocabType::SPM && t.find_token("\xE2\x96\x81") == kNoToken) continue;
    for (const std::string& s : texts) {
      // lossless unless clean_spaces rewrites the text, or the vocab lacks a byte for it
      if (t.info().clean_spaces && t.clean_spaces(s) != s) continue;
      const auto ids = t.tokenize(s, false, false);
      if (std::find(ids.begin(), ids.end(), t.unk()) != ids.end() && t.unk() != kNoToken) continue;
      EXPECT_EQ(t.detokenize(ids, true), s) << v << " ids " << ids_str(ids);
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(TokenizerBehavior, StreamingEqualsWholeOnRandomSequences) {
  MEMRA_REQUIRE_SHARED();
  std::mt19937 rng(1234);
  const auto texts = corpus();
  for (const char* v : kAllVocabs) {
    const Tokenizer& t = vocab(v);
    std::vector<std::vector<int32_t>> seqs;
    for (const auto& s : texts) seqs.push_back(t.tokenize(s, true, true));
    // random token sequences: byte tokens and half characters included
    std::uniform_int_distribution<int32_t> any(0, t.n_vocab() - 1);
    for (int k = 0; k < 30; ++k) {
      std::vector<int32_t> ids(1 + rng() % 40);
      for (auto& id : ids) id = any(rng);
      seqs.push_back(ids);
    }
    // random concatenations of corpus sequences, cut at random token positions
    for (int k = 0; k < 30; ++k) {
      std::vector<int32_t> ids;
      for (int j = 0; j < 3; ++j) {
        const auto& s = seqs[rng() % texts.size()];
        const size_t a = s.empty() ? 0 : rng() % s.size();
        ids.insert(ids.end(), s.begin() + a, s.end());
      }
      seqs.push_back(ids);
    }
    for (bool special : {true, false}) {
      for (const auto& ids : seqs) {
        StreamDecoder dec(t, special);
        std::string streamed;
        const std::string whole = t.detokenize(ids, special);
        for (int32_t id : ids) {
          const std::string chunk = dec.push(id);
          streamed += chunk;
          // never half a character, and nothing emitted that the whole text does not have
          EXPECT_FALSE(splits_char(whole, streamed.size())) << v << " tail " << hex_tail(streamed) << " ids " << ids_str(ids);
          EXPECT_EQ(whole.compare(0, streamed.size(), streamed), 0) << v;
        }
        streamed += dec.flush();
        EXPECT_EQ(streamed, whole) << v << " ids " << ids_str(ids);
        // pieces mode: the plain concatenation of pieces, still never splitting a character
        StreamDecoder pieces(t, special, StreamDecoder::Mode::Pieces);
        std::string concat, streamed_pieces;
        for (int32_t id : ids) concat += t.token_to_piece(id, special);
        for (int32_t id : ids) {
          streamed_pieces += pieces.push(id);
          EXPECT_FALSE(splits_char(concat, streamed_pieces.size())) << v;
        }
        streamed_pieces += pieces.flush();
        EXPECT_EQ(streamed_pieces, concat) << v << " ids " << ids_str(ids);
      }
    }
  }
}

TEST(TokenizerBehavior, StreamHoldsPartialCharacters) {
  MEMRA_REQUIRE_SHARED();
  const Tokenizer& t = vocab("stories260K.gguf");
  // stories260K has no CJK pieces: U+65E5 comes out as three byte tokens
  const auto ids = t.tokenize("\xE6\x97\xA5", false, false);
  ASSERT_GE(ids.size(), 3u);
  StreamDecoder dec(t);
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string c = dec.push(ids[i]);
    if (i + 1 < ids.size()) {
      EXPECT_TRUE(complete_utf8(out + c));
    }
    out += c;
  }
  out += dec.flush();
  EXPECT_EQ(out, t.detokenize(ids));
  EXPECT_NE(out.find("\xE6\x97\xA5"), std::string::npos);
}

TEST(TokenizerBehavior, SpmByteFallbackRoundTripsArbitraryBytes) {
  MEMRA_REQUIRE_SHARED();
  const Tokenizer& t = vocab("vocab/ggml-vocab-llama-spm.gguf");
  std::mt19937 rng(7);
  const char pool[] = {'a', 'b', ' ', ' ', '\n', '\xE2', '\x96', '\x81', '\xC3', '\xA9', '\xF0', '\x9F', '\x80', '\xFF'};
  for (int k = 0; k < 300; ++k) {
    std::string s(1 + rng() % 24, ' ');
    for (char& c : s) c = pool[rng() % sizeof(pool)];
    const auto ids = t.tokenize(s, false, false);
    // Lossless for valid UTF-8. With invalid bytes llama.cpp's character walk can glue a stray
    // lead byte to the U+2581 that replaced a space, and the byte fallback then spells U+2581.
    const auto cps = utf8_to_cpts(s);
    if (std::find(cps.begin(), cps.end(), 0xFFFDu) == cps.end()) {
      EXPECT_EQ(t.detokenize(ids), s) << ids_str(ids);
    }
    // BPE: invalid bytes become U+FFFD (as in llama.cpp), but nothing may crash
    EXPECT_NO_THROW(vocab("vocab/ggml-vocab-gpt-2.gguf").tokenize(s, true, true));
  }
}

TEST(TokenizerBehavior, EverySyntheticModelLoads) {
  MEMRA_REQUIRE_SHARED();
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(shared_dir() / "models" / "synth")) {
    if (e.path().extension() != ".gguf") continue;
    const auto f = gguf::File::open(e.path().string());
    const Tokenizer t = Tokenizer::from_gguf(f);
    EXPECT_EQ(t.n_vocab(), 1024) << e.path();
    EXPECT_TRUE(t.is_eog(t.eos())) << e.path();
    EXPECT_EQ(t.detokenize(t.tokenize("Hello world", false, false)), "Hello world") << e.path();
    ++n;
  }
  EXPECT_GE(n, 11);
}

TEST(TokenizerBehavior, RejectsUnsupportedVocab) {
  MEMRA_REQUIRE_SHARED();
  const auto f = gguf::File::open((shared_dir() / "models" / "vocab" / "ggml-vocab-bert-bge.gguf").string());
  try {
    (void)Tokenizer::from_gguf(f);
    FAIL() << "bert vocabulary accepted";
  } catch (const memra::Error& e) {
    EXPECT_NE(std::string(e.what()).find("bert"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace memra::tok::test
