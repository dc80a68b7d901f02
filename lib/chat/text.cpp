#include "chat/text.h"

#include <algorithm>

namespace memra::chat::text {

std::vector<char32_t> decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = 0;
    char32_t cp = 0;
    if (c < 0x80) {
      cp = c;
      n = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      n = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      n = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      n = 4;
    } else {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    bool ok = i + n <= s.size();
    for (int k = 1; ok && k < n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

bool is_space(char32_t cp) {
  // Python's str.isspace(): bidirectional class WS/B/S or category Zs.
  if (cp >= 0x09 && cp <= 0x0D) return true;
  if (cp >= 0x1C && cp <= 0x20) return true;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const auto cps = decode(s);
  std::vector<char32_t> set;
  if (chars) set = decode(*chars);
  auto drop = [&](char32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_space(cp);
  };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && drop(cps[b])) ++b;
  if (right)
    while (e > b && drop(cps[e - 1])) --e;
  return encode(std::vector<char32_t>(cps.begin() + static_cast<std::ptrdiff_t>(b),
                                      cps.begin() + static_cast<std::ptrdiff_t>(e)));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t at = s.find(*sep, start);
      if (at == std::string_view::npos) break;
      out.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    out.emplace_back(s.substr(start));
    return out;
  }
  const auto cps = decode(s);
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_space(cps[i])) ++i;
    if (i == cps.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      // Python keeps the remainder verbatim, trailing whitespace stripped.
      size_t e = cps.size();
      while (e > i && is_space(cps[e - 1])) --e;
      out.push_back(encode(std::vector<char32_t>(cps.begin() + static_cast<std::ptrdiff_t>(i),
                                                 cps.begin() + static_cast<std::ptrdiff_t>(e))));
      break;
    }
    size_t j = i;
    while (j < cps.size() && !is_space(cps[j])) ++j;
    out.push_back(encode(std::vector<char32_t>(cps.begin() + static_cast<std::ptrdiff_t>(i),
                                               cps.begin() + static_cast<std::ptrdiff_t>(j))));
    i = j;
  }
  return out;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` before every code point and at the end.
    const auto cps = decode(s);
    int64_t done = 0;
    for (char32_t cp : cps) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      append_utf8(out, cp);
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(from, start);
    if (at == std::string_view::npos) break;
    out += s.substr(start, at - start);
    out += to;
    start = at + from.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out = lower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

std::string title(std::string_view s) {
  // Python str.title(): a letter after a non-letter starts a word.
  std::string out(s);
  bool prev_letter = false;
  for (char& c : out) {
    const bool is_up = c >= 'A' && c <= 'Z', is_lo = c >= 'a' && c <= 'z';
    const bool letter = is_up || is_lo || (static_cast<unsigned char>(c) >= 0x80);
    if (is_lo && !prev_letter) c = static_cast<char>(c - 'a' + 'A');
    else if (is_up && prev_letter) c = static_cast<char>(c - 'A' + 'a');
    prev_letter = letter;
  }
  return out;
}

}  // namespace memra::chat::text
