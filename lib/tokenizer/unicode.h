#pragma once
// Unicode helpers for the tokenizers: locale-free UTF-8 decoding, category classes from the
// generated table (unicode_tables.cpp, Unicode 15.0 via scripts/gen_unicode_tables.py) and the
// GPT-2 byte <-> code point mapping used by byte-level BPE vocabularies.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memra::tok {

// General-category class (first letter of the category; Cn = unassigned on its own).
enum class UCat : uint8_t { Unassigned = 0, Letter = 1, Mark = 2, Number = 3, Punct = 4,
                            Symbol = 5, Separator = 6, Other = 7 };

UCat ucat(uint32_t cp);
bool is_white_space(uint32_t cp);  // the Unicode White_Space property
const char* unicode_version();

// Decodes UTF-8 the way llama.cpp does, so pre-tokenizer offsets agree with it: a malformed or
// truncated sequence consumes one byte and yields U+FFFD. Overlong forms are not rejected.
std::vector<uint32_t> utf8_to_cpts(std::string_view s);
void append_utf8(std::string& out, uint32_t cp);
// Length of the UTF-8 sequence announced by a lead byte (1 for continuation/invalid bytes).
inline size_t utf8_len(uint8_t lead) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

// GPT-2 byte-level mapping: every byte gets a printable code point (its own for '!'..'~',
// 0xA1..0xAC, 0xAE..0xFF; 256+n for the rest in byte order).
const std::string& byte_to_unicode(uint8_t b);
// Inverse; returns -1 when `utf8` (one code point) is not the image of a byte.
int unicode_to_byte(std::string_view utf8);

namespace detail {
struct UnicodeRun {
  uint32_t first;
  uint8_t cat;
};
extern const char* const kUnicodeVersion;
extern const UnicodeRun kUnicodeRuns[];
extern const size_t kUnicodeRunCount;
extern const uint32_t kWhiteSpace[];
extern const size_t kWhiteSpaceCount;
}  // namespace detail

}  // namespace memra::tok
