#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace memra::tok {

namespace {

// Dense lookup for the Basic Multilingual Plane (64 KiB), binary search above it: nearly all
// text is BMP and the pre-tokenizer asks for the class of every code point.
struct CatTable {
  std::vector<uint8_t> bmp;
  CatTable() : bmp(0x10000) {
    for (size_t i = 0; i < detail::kUnicodeRunCount; ++i) {
      const uint32_t a = detail::kUnicodeRuns[i].first;
      const uint32_t b = i + 1 < detail::kUnicodeRunCount ? detail::kUnicodeRuns[i + 1].first : 0x110000;
      for (uint32_t c = a; c < b && c < 0x10000; ++c) bmp[c] = detail::kUnicodeRuns[i].cat;
    }
  }
};

const CatTable& cat_table() {
  static const CatTable t;
  return t;
}

struct ByteMap {
  std::array<std::string, 256> fwd;
  std::unordered_map<uint32_t, uint8_t> inv;
  ByteMap() {
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = self ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + n++);
      append_utf8(fwd[b], cp);
      inv[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

}  // namespace

UCat ucat(uint32_t cp) {
  if (cp < 0x10000) return static_cast<UCat>(cat_table().bmp[cp]);
  if (cp >= 0x110000) return UCat::Unassigned;
  const auto* begin = detail::kUnicodeRuns;
  const auto* end = detail::kUnicodeRuns + detail::kUnicodeRunCount;
  const auto* it = std::upper_bound(begin, end, cp, [](uint32_t v, const detail::UnicodeRun& r) {
    return v < r.first;
  });
  return static_cast<UCat>((it - 1)->cat);
}

bool is_white_space(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  for (size_t i = 0; i < detail::kWhiteSpaceCount; ++i)
    if (detail::kWhiteSpace[i] == cp) return true;
  return false;
}

const char* unicode_version() { return detail::kUnicodeVersion; }

std::vector<uint32_t> utf8_to_cpts(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  auto cont = [&](size_t k) { return i + k < n && (p[i + k] & 0xC0) == 0x80; };
  while (i < n) {
    const uint8_t c = p[i];
    if (c < 0x80) {
      out.push_back(c);
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && cont(1)) {
      out.push_back((uint32_t(c & 0x1F) << 6) | (p[i + 1] & 0x3F));
      i += 2;
    } else if ((c & 0xF0) == 0xE0 && cont(1) && cont(2)) {
      out.push_back((uint32_t(c & 0x0F) << 12) | (uint32_t(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F));
      i += 3;
    } else if ((c & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
      out.push_back((uint32_t(c & 0x07) << 18) | (uint32_t(p[i + 1] & 0x3F) << 12) |
                    (uint32_t(p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F));
      i += 4;
    } else {
      out.push_back(0xFFFD);
      i += 1;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | ((cp >> 18) & 0x07)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

const std::string& byte_to_unicode(uint8_t b) { return byte_map().fwd[b]; }

int unicode_to_byte(std::string_view utf8) {
  const auto cps = utf8_to_cpts(utf8);
  if (cps.size() != 1) return -1;
  const auto& inv = byte_map().inv;
  const auto it = inv.find(cps[0]);
  return it == inv.end() ? -1 : it->second;
}

}  // namespace memra::tok
