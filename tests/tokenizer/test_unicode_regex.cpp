// Unicode class table and the pre-tokenizer regex engine, against facts from the Unicode
// Character Database and ECMAScript matching rules worked out by hand.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

namespace memra::tok {
namespace {

TEST(Unicode, CategoryClasses) {
  EXPECT_EQ(ucat('A'), UCat::Letter);
  EXPECT_EQ(ucat('z'), UCat::Letter);
  EXPECT_EQ(ucat('7'), UCat::Number);
  EXPECT_EQ(ucat('!'), UCat::Punct);
  EXPECT_EQ(ucat('$'), UCat::Symbol);   // Sc
  EXPECT_EQ(ucat('~'), UCat::Symbol);   // Sm
  EXPECT_EQ(ucat(' '), UCat::Separator);
  EXPECT_EQ(ucat('\n'), UCat::Other);   // Cc
  EXPECT_EQ(ucat(0x00E9), UCat::Letter);  // é
  EXPECT_EQ(ucat(0x0301), UCat::Mark);    // combining acute
  EXPECT_EQ(ucat(0x00BD), UCat::Number);  // ½ (No)
  EXPECT_EQ(ucat(0x20AC), UCat::Symbol);  // €
  EXPECT_EQ(ucat(0x4E00), UCat::Letter);  // CJK, inside a First/Last range
  EXPECT_EQ(ucat(0x9FA5), UCat::Letter);
  EXPECT_EQ(ucat(0xAC01), UCat::Letter);  // Hangul syllable range
  EXPECT_EQ(ucat(0x0378), UCat::Unassigned);
  EXPECT_EQ(ucat(0x1F600), UCat::Symbol);  // emoji (So)
  EXPECT_EQ(ucat(0x1F3FB), UCat::Symbol);  // skin tone modifier (Sk)
  EXPECT_EQ(ucat(0x200D), UCat::Other);    // ZWJ (Cf)
  EXPECT_EQ(ucat(0xF0000), UCat::Other);   // private use plane (Co, a First/Last range)
  EXPECT_EQ(ucat(0x10FFFF), UCat::Unassigned);
  EXPECT_EQ(ucat(0x110000), UCat::Unassigned);
  EXPECT_EQ(ucat(0x20000), UCat::Letter);  // CJK extension B
  EXPECT_STREQ(unicode_version(), "15.0.0");
}

TEST(Unicode, WhiteSpace) {
  for (uint32_t c : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au,
                     0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u})
    EXPECT_TRUE(is_white_space(c)) << std::hex << c;
  for (uint32_t c : {0x08u, 0x1Cu, 0x200Bu, 0x180Eu, 0x61u, 0xFEFFu}) EXPECT_FALSE(is_white_space(c)) << std::hex << c;
}

TEST(Unicode, Utf8DecodeLikeLlamaCpp) {
  EXPECT_EQ(utf8_to_cpts("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), (std::vector<uint32_t>{'a', 0xE9, 0x20AC, 0x1F600}));
  // truncated sequence and stray continuation byte: one U+FFFD per byte consumed
  EXPECT_EQ(utf8_to_cpts("\xE2\x82"), (std::vector<uint32_t>{0xFFFD, 0xFFFD}));
  EXPECT_EQ(utf8_to_cpts("\x80z"), (std::vector<uint32_t>{0xFFFD, 'z'}));
  std::string s;
  for (uint32_t c : {0x24u, 0xA2u, 0x939u, 0x20ACu, 0xD55Cu, 0x10348u}) append_utf8(s, c);
  EXPECT_EQ(s, "$\xC2\xA2\xE0\xA4\xB9\xE2\x82\xAC\xED\x95\x9C\xF0\x90\x8D\x88");
}

TEST(Unicode, Gpt2ByteMap) {
  EXPECT_EQ(byte_to_unicode('A'), "A");
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(byte_to_unicode(0xAD), "\xC5\x83");  // U+0143: the 68th remapped byte (256 + 67)
  for (int b = 0; b < 256; ++b) EXPECT_EQ(unicode_to_byte(byte_to_unicode(static_cast<uint8_t>(b))), b);
  EXPECT_EQ(unicode_to_byte("\xE2\x82\xAC"), -1);
}

std::vector<size_t> split(const char* pattern, const std::u32string& text) {
  const Regex re(pattern, pattern_uses_categories(pattern));
  std::vector<uint32_t> t;
  for (char32_t c : text) t.push_back(re.category_mode() ? collapse_cpt(c) : static_cast<uint32_t>(c));
  std::vector<size_t> out;
  re.split(t.data(), 0, t.size(), out);
  return out;
}

using V = std::vector<size_t>;

TEST(PreRegex, OrderedAlternationAndGaps) {
  EXPECT_EQ(split("a|ab", U"ab"), (V{1, 1}));         // first alternative wins; "b" is a gap
  EXPECT_EQ(split("ab|a", U"ab"), (V{2}));
  EXPECT_EQ(split("x", U"aaxbb"), (V{2, 1, 2}));
  EXPECT_EQ(split("x", U"aaa"), (V{3}));
}

TEST(PreRegex, GreedyBacktrackingAndLookahead) {
  // \s+(?!\S): leaves the last space before a non-space for the next piece
  EXPECT_EQ(split(R"(\s+(?!\S))", U"a   b"), (V{1, 2, 2}));
  EXPECT_EQ(split(R"(\s+(?!\S)|\s+)", U"a   b"), (V{1, 2, 1, 1}));
  EXPECT_EQ(split(R"(\s+(?!\S))", U"a   "), (V{1, 3}));  // lookahead at the segment end succeeds
  EXPECT_EQ(split(R"(\p{N}{1,3})", U"1234567"), (V{3, 3, 1}));
  EXPECT_EQ(split("a+?", U"aaa"), (V{1, 1, 1}));
  EXPECT_EQ(split("(?:ab)+", U"ababa"), (V{4, 1}));
  EXPECT_EQ(split(R"(\s+$)", U"a  "), (V{1, 2}));
  EXPECT_EQ(split(R"(\s+$)", U"  a"), (V{3}));
  EXPECT_EQ(split("a{2}", U"aaaaa"), (V{2, 2, 1}));
}

TEST(PreRegex, CategoriesCollapsedLikeLlamaCpp) {
  const char* word = R"(((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)";
  EXPECT_EQ(split(word, U"HelloWorld"), (V{5, 5}));
  EXPECT_EQ(split(word, U"\u00C4\u00D6\u00DCber"), (V{6}));  // non-ASCII letters are both cases
  // marks are not letters; '~' is in no category (llama.cpp's ASCII category lists)
  EXPECT_EQ(split(R"(\p{L}+)", U"e\u0301t"), (V{1, 1, 1}));
  EXPECT_EQ(split(R"([\p{P}\p{S}]+)", U"a~b"), (V{3}));  // no match at all: one gap
  EXPECT_EQ(split(R"([\p{P}\p{S}]+)", U"a+-b"), (V{1, 2, 1}));
  // non-ASCII white space is \s (collapsed to \v), ideographic space included
  EXPECT_EQ(split(R"(\s+|\p{L}+)", U"\u3000\u00A0x"), (V{2, 1}));
  EXPECT_EQ(split(R"(\p{N}+)", U"\u0661\u0662x\u00BD"), (V{2, 1, 1}));
}

TEST(PreRegex, LookaheadGroupsFusedOrNot) {
  // fusable "(?=X)Y" groups and an equivalent form that stays a general group
  EXPECT_EQ(split(R"(((?=[a-z])([^x]))+)", U"abxcd"), (V{2, 1, 2}));
  EXPECT_EQ(split(R"(((?=[a-z])([^x])(?:))+)", U"abxcd"), (V{2, 1, 2}));
  EXPECT_EQ(split(R"((?:(?![0-9]).)+)", U"ab1cd"), (V{2, 1, 2}));
}

TEST(PreTokenizerSpecs, LongRunsDoNotRecurseDeeply) {
  // a 300k-letter "word" (e.g. base64 without padding) through every pre-tokenizer
  const std::string run(300000, 'a');
  for (const char* pre : {"gpt-4o", "tekken", "llama3", "qwen2", "default", "deepseek-llm"}) {
    const PreTokenizer p(pre_tokenizer_spec(pre).patterns);
    const auto words = p.split(run + " " + run);
    size_t total = 0;
    for (const auto& w : words) total += w.size();
    EXPECT_EQ(total, run.size() * 2 + 1) << pre;
  }
}

TEST(PreRegex, CodePointClasses) {
  EXPECT_EQ(split(R"([\u{4E00}-\u{9FA5}]+)", U"ab\u4E2D\u6587c"), (V{2, 2, 1}));
  EXPECT_EQ(split(R"([^\s]+)", U"\U0001F600\U0001F601 x"), (V{2, 1, 1}));
}

TEST(PreRegex, RejectsWhatItCannotDo) {
  EXPECT_THROW(Regex("(?i:a)", false), memra::Error);
  EXPECT_THROW(Regex(R"(\p{Greek})", true), memra::Error);
  EXPECT_THROW(Regex(R"(\bword)", false), memra::Error);
  EXPECT_THROW(Regex("[abc", false), memra::Error);
  EXPECT_THROW(Regex("a)", false), memra::Error);
  EXPECT_THROW(Regex("*a", false), memra::Error);
  EXPECT_THROW(pre_tokenizer_spec("no-such-pre"), memra::Error);
}

TEST(PreTokenizerSpecs, AllCompile) {
  for (const auto& name : known_pre_tokenizers()) {
    const auto spec = pre_tokenizer_spec(name);
    EXPECT_NO_THROW(PreTokenizer p(spec.patterns)) << name;
  }
  EXPECT_TRUE(pre_tokenizer_spec("llama-bpe").add_bos);
  EXPECT_TRUE(pre_tokenizer_spec("llama-bpe").ignore_merges);
  EXPECT_FALSE(pre_tokenizer_spec("qwen2").clean_spaces);
  EXPECT_EQ(pre_tokenizer_spec("").name, "default");
}

TEST(PreTokenizerSpecs, Gpt2Splits) {
  const PreTokenizer p(pre_tokenizer_spec("gpt-2").patterns);
  EXPECT_EQ(p.split("Hello world's  42!!\n"),
            (std::vector<std::string>{"Hello", " world", "'s", " ", " 42", "!!", "\n"}));
  const PreTokenizer l3(pre_tokenizer_spec("llama3").patterns);
  EXPECT_EQ(l3.split("I'M 12345 ok\n\n  x"),
            (std::vector<std::string>{"I", "'M", " ", "123", "45", " ok", "\n\n", " ", " x"}));
}

}  // namespace
}  // namespace memra::tok
