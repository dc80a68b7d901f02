#pragma once
// Python str semantics on UTF-8 bytes: templates index, slice, strip and split by code point, and
// Python's whitespace set is wider than ASCII (str.strip() removes U+00A0, U+3000, ...).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memra::chat::text {

std::vector<char32_t> decode(std::string_view s);  // invalid bytes decode as U+FFFD
std::string encode(const std::vector<char32_t>& cps);
void append_utf8(std::string& out, char32_t cp);
size_t length(std::string_view s);  // code points

bool is_space(char32_t cp);  // Python str.isspace()

// chars == nullopt strips Python whitespace; otherwise any code point found in *chars.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// sep == nullopt: split on runs of whitespace, dropping empty fields (Python str.split()).
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);

// Case mapping is ASCII-only (documented limitation): non-ASCII letters pass through unchanged.
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);
std::string title(std::string_view s);

}  // namespace memra::chat::text
