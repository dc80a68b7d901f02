#include "tokenizer/regex.h"

#include <climits>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace memra::tok {

uint32_t collapse_cpt(uint32_t cp) {
  if (cp < 0x80) return cp;
  // std::regex's \s only knows ASCII white space; llama.cpp maps the others to \v.
  if (is_white_space(cp)) return 0x0B;
  switch (ucat(cp)) {
    case UCat::Letter: return kCollapsedLetter;
    case UCat::Number: return kCollapsedNumber;
    case UCat::Punct: return kCollapsedPunct;
    case UCat::Mark: return kCollapsedMark;
    case UCat::Symbol: return kCollapsedSymbol;
    default: return kCollapsedOther;
  }
}

bool pattern_uses_categories(std::string_view pattern) {
  return pattern.find("\\p{") != std::string_view::npos;
}

// ---------------------------------------------------------------------------------------------
// continuation-passing matcher state

struct Regex::Ctx {
  const uint32_t* text;
  size_t begin, end;
  size_t* match_end;
};

struct Regex::Cont {
  enum Kind : uint8_t { InSeq, AfterIter, Accept, LookAccept } kind;
  const Seq* seq = nullptr;
  size_t idx = 0;
  const Node* node = nullptr;
  int count = 0;
  size_t iter_start = 0;
  const Cont* next = nullptr;
};

bool Regex::CharClass::contains(uint32_t cp) const {
  bool in;
  if (cp < 256) {
    in = low[cp];
  } else {
    in = any_high;
    for (size_t i = 0; !in && i < high.size(); ++i) in = cp >= high[i].first && cp <= high[i].second;
  }
  return in != negated;
}

namespace {

constexpr int kInf = INT_MAX;

void add_range(std::bitset<256>& low, std::vector<std::pair<uint32_t, uint32_t>>& high, uint32_t a,
               uint32_t b) {
  for (uint32_t c = a; c <= b && c < 256; ++c) low.set(c);
  if (b >= 256) high.emplace_back(a < 256 ? 256 : a, b);
}

bool is_ascii_space(uint32_t c) { return c == ' ' || (c >= 0x09 && c <= 0x0D); }
bool is_ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }
bool is_ascii_word(uint32_t c) {
  return is_ascii_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

uint32_t hex_value(uint32_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 0xFFFFFFFF;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// parser

Regex::Regex(std::string_view pattern, bool category_mode)
    : pattern_(pattern), category_mode_(category_mode) {
  const auto p = utf8_to_cpts(pattern);
  size_t i = 0;
  root_ = parse_disj(p, i);
  if (i != p.size()) fail("unbalanced ')'", i);
}

void Regex::fail(const std::string& what, size_t at) const {
  MEMRA_FAIL("pre-tokenizer regex: {} at code point {} of pattern '{}'", what, at, pattern_);
}

int Regex::parse_disj(const std::vector<uint32_t>& p, size_t& i) {
  const int idx = static_cast<int>(disjs_.size());
  disjs_.emplace_back();
  Disj d;
  Seq cur;
  while (i < p.size() && p[i] != ')') {
    if (p[i] == '|') {
      d.push_back(std::move(cur));
      cur.clear();
      ++i;
      continue;
    }
    Node n = parse_atom(p, i);
    if (i < p.size() && (p[i] == '*' || p[i] == '+' || p[i] == '?' || p[i] == '{')) {
      if (n.kind == Node::Bol || n.kind == Node::Eol) fail("quantifier after an anchor", i);
      const uint32_t q = p[i++];
      if (q == '*') { n.min = 0; n.max = kInf; }
      if (q == '+') { n.min = 1; n.max = kInf; }
      if (q == '?') { n.min = 0; n.max = 1; }
      if (q == '{') {
        auto number = [&](int& out) {
          const size_t s = i;
          long v = 0;
          while (i < p.size() && is_ascii_digit(p[i]) && v < 100000) v = v * 10 + (p[i++] - '0');
          out = static_cast<int>(v);
          return i > s;
        };
        if (!number(n.min)) fail("malformed {n,m} quantifier", i);
        n.max = n.min;
        if (i < p.size() && p[i] == ',') {
          ++i;
          if (!number(n.max)) n.max = kInf;
        }
        if (i >= p.size() || p[i] != '}' || n.max < n.min) fail("malformed {n,m} quantifier", i);
        ++i;
      }
      if (i < p.size() && p[i] == '?') {
        n.greedy = false;
        ++i;
      }
    }
    cur.push_back(n);
  }
  d.push_back(std::move(cur));
  disjs_[idx] = std::move(d);
  return idx;
}

Regex::Node Regex::parse_atom(const std::vector<uint32_t>& p, size_t& i) {
  Node n{};
  const uint32_t c = p[i];
  if (c == '(') {
    ++i;
    n.kind = Node::Group;
    if (i < p.size() && p[i] == '?') {
      if (i + 1 >= p.size()) fail("truncated group", i);
      const uint32_t t = p[i + 1];
      if (t == ':') n.kind = Node::Group;
      else if (t == '=') n.kind = Node::LookAhead;
      else if (t == '!') n.kind = Node::NegLookAhead;
      else fail("unsupported group syntax '(?" + std::string(1, static_cast<char>(t)) + "'", i);
      i += 2;
    }
    n.index = parse_disj(p, i);
    if (i >= p.size() || p[i] != ')') fail("missing ')'", i);
    ++i;
    if (n.kind == Node::Group) fuse_lookahead_group(n);
    return n;
  }
  if (c == '[') {
    ++i;
    n.kind = Node::Class;
    n.index = parse_class(p, i);
    return n;
  }
  if (c == '*' || c == '+' || c == '?') fail("nothing to repeat", i);
  ++i;
  if (c == '.') { n.kind = Node::Any; return n; }
  if (c == '^') { n.kind = Node::Bol; return n; }
  if (c == '$') { n.kind = Node::Eol; return n; }
  if (c != '\\') { n.kind = Node::Char; n.ch = c; return n; }
  // escape outside a class: either one character or a class
  CharClass cls;
  uint32_t single = 0;
  bool is_single = false;
  add_escape_to_class(cls, p, i, single, is_single);
  if (is_single) {
    n.kind = Node::Char;
    n.ch = single;
    return n;
  }
  n.kind = Node::Class;
  n.index = static_cast<int>(classes_.size());
  classes_.push_back(std::move(cls));
  return n;
}

// "(?=X)Y" with X and Y single-character atoms matches one character that both accept. The
// gpt-4o / tekken patterns repeat such groups over whole words; as a group each character
// would cost several recursion levels (a stack overflow risk on long letter runs), fused it is
// one character class on the iterative fast path.
void Regex::fuse_lookahead_group(Node& n) {
  auto single = [](const Node& x) {
    return (x.kind == Node::Char || x.kind == Node::Class || x.kind == Node::Any || x.kind == Node::Both) &&
           x.min == 1 && x.max == 1;
  };
  const Disj& d = disjs_[n.index];
  if (d.size() != 1 || d[0].size() != 2) return;
  const Node& look = d[0][0];
  Node eat = d[0][1];
  if (look.kind != Node::LookAhead || look.min != 1 || look.max != 1) return;
  const Disj& ld = disjs_[look.index];
  if (ld.size() != 1 || ld[0].size() != 1 || !single(ld[0][0])) return;
  if (eat.kind == Node::Group && eat.min == 1 && eat.max == 1 && disjs_[eat.index].size() == 1 &&
      disjs_[eat.index][0].size() == 1)
    eat = disjs_[eat.index][0][0];
  if (!single(eat)) return;
  both_.emplace_back(ld[0][0], eat);
  n.kind = Node::Both;
  n.index = static_cast<int>(both_.size() - 1);
}

// `i` points just after the backslash. Either adds a class escape to `c` or returns a single
// character through `single`.
void Regex::add_escape_to_class(CharClass& c, const std::vector<uint32_t>& p, size_t& i,
                                uint32_t& single, bool& is_single) {
  if (i >= p.size()) fail("trailing backslash", i);
  const uint32_t e = p[i++];
  is_single = false;
  auto complement = [&](auto pred) {
    for (uint32_t x = 0; x < 256; ++x)
      if (!pred(x)) c.low.set(x);
    c.any_high = true;
  };
  auto with = [&](auto pred) {
    for (uint32_t x = 0; x < 256; ++x)
      if (pred(x)) c.low.set(x);
  };
  switch (e) {
    case 's': with(is_ascii_space); return;
    case 'S': complement(is_ascii_space); return;
    case 'd': with(is_ascii_digit); return;
    case 'D': complement(is_ascii_digit); return;
    case 'w': with(is_ascii_word); return;
    case 'W': complement(is_ascii_word); return;
    case 'p': {
      if (i >= p.size() || p[i] != '{') fail("expected '{' after \\p", i);
      std::string name;
      size_t j = i + 1;
      while (j < p.size() && p[j] != '}' && name.size() < 16) name.push_back(static_cast<char>(p[j++]));
      if (j >= p.size() || p[j] != '}') fail("unterminated \\p{...}", i);
      i = j + 1;
      add_category(c, name);
      return;
    }
    default: break;
  }
  is_single = true;
  switch (e) {
    case 'r': single = '\r'; return;
    case 'n': single = '\n'; return;
    case 't': single = '\t'; return;
    case 'f': single = '\f'; return;
    case 'v': single = '\v'; return;
    case '0': single = 0; return;
    case 'u':
      if (i < p.size() && p[i] == '{') {  // \u{H...}: any code point (extension used by our patterns)
        uint32_t v = 0;
        size_t j = i + 1;
        while (j < p.size() && p[j] != '}' && hex_value(p[j]) != 0xFFFFFFFF && j - i <= 6) v = v * 16 + hex_value(p[j++]);
        if (j >= p.size() || p[j] != '}' || j == i + 1 || v > 0x10FFFF) fail("malformed \\u{...} escape", i);
        i = j + 1;
        single = v;
        return;
      }
      [[fallthrough]];
    case 'x': {
      const int digits = e == 'x' ? 2 : 4;
      uint32_t v = 0;
      for (int k = 0; k < digits; ++k) {
        const uint32_t h = i < p.size() ? hex_value(p[i]) : 0xFFFFFFFF;
        if (h == 0xFFFFFFFF) fail("malformed hex escape", i);
        v = v * 16 + h;
        ++i;
      }
      single = v;
      return;
    }
    case 'b':
    case 'B':
      fail("word-boundary assertions are not supported", i - 1);
    default:
      if (is_ascii_word(e) && !(e == '_')) fail("unknown escape '\\" + std::string(1, static_cast<char>(e)) + "'", i - 1);
      single = e;  // identity escape of a punctuation character
      return;
  }
}

void Regex::add_category(CharClass& c, std::string_view name) {
  if (!category_mode_) fail("\\p{" + std::string(name) + "} outside category mode", 0);
  // The ASCII members of each category as llama.cpp spells them in its collapsed patterns;
  // note '~' is in none of them.
  auto ascii = [&](std::string_view ranges) {
    for (size_t k = 0; k < ranges.size(); ++k) {
      if (k + 2 < ranges.size() && ranges[k + 1] == '-') {
        add_range(c.low, c.high, static_cast<uint8_t>(ranges[k]), static_cast<uint8_t>(ranges[k + 2]));
        k += 2;
      } else {
        c.low.set(static_cast<uint8_t>(ranges[k]));
      }
    }
  };
  if (name == "L" || name == "Lu" || name == "Ll" || name == "Lt" || name == "Lm" || name == "Lo") {
    c.low.set(kCollapsedLetter);
    ascii("A-Za-z");
  } else if (name == "N") {
    c.low.set(kCollapsedNumber);
    ascii("0-9");
  } else if (name == "P") {
    c.low.set(kCollapsedPunct);
    ascii("!-#%-*,-/:-;?-@[-]_{}");
  } else if (name == "S") {
    c.low.set(kCollapsedSymbol);
    ascii("$+<->^`|");
  } else if (name == "M") {
    c.low.set(kCollapsedMark);
  } else {
    fail("unsupported Unicode property \\p{" + std::string(name) + "}", 0);
  }
}

int Regex::parse_class(const std::vector<uint32_t>& p, size_t& i) {
  CharClass c;
  if (i < p.size() && p[i] == '^') {
    c.negated = true;
    ++i;
  }
  // reads one class atom: returns true with `ch` set for a single character
  auto atom = [&](uint32_t& ch) -> bool {
    if (p[i] == '\\') {
      ++i;
      bool is_single = false;
      if (i < p.size() && p[i] == 'b') {  // inside a class \b is backspace
        ++i;
        ch = 0x08;
        return true;
      }
      add_escape_to_class(c, p, i, ch, is_single);
      return is_single;
    }
    ch = p[i++];
    return true;
  };
  while (true) {
    if (i >= p.size()) fail("unterminated '['", i);
    if (p[i] == ']') {
      ++i;
      break;
    }
    uint32_t lo = 0;
    if (!atom(lo)) continue;
    if (i + 1 < p.size() && p[i] == '-' && p[i + 1] != ']') {
      ++i;
      uint32_t hi = 0;
      if (!atom(hi)) fail("class escape used as a range end", i);
      if (hi < lo) fail("range out of order", i);
      add_range(c.low, c.high, lo, hi);
    } else {
      add_range(c.low, c.high, lo, lo);
    }
  }
  classes_.push_back(std::move(c));
  return static_cast<int>(classes_.size() - 1);
}

// ---------------------------------------------------------------------------------------------
// matcher

bool Regex::single_matches(const Node& n, uint32_t cp) const {
  switch (n.kind) {
    case Node::Char: return cp == n.ch;
    case Node::Class: return classes_[n.index].contains(cp);
    case Node::Any: return cp != '\n' && cp != '\r' && cp != 0x2028 && cp != 0x2029;
    case Node::Both: return single_matches(both_[n.index].first, cp) && single_matches(both_[n.index].second, cp);
    default: return false;
  }
}

bool Regex::cont(const Ctx& c, const Cont* k, size_t pos) const {
  switch (k->kind) {
    case Cont::Accept: *c.match_end = pos; return true;
    case Cont::LookAccept: return true;
    case Cont::InSeq: return match_seq(c, *k->seq, k->idx, pos, k->next);
    case Cont::AfterIter:
      // ECMAScript: an iteration beyond the minimum that matched the empty string fails.
      if (pos == k->iter_start && k->count - 1 >= k->node->min) return false;
      return match_rep(c, *k->node, k->count, pos, k->next);
  }
  return false;
}

bool Regex::match_disj(const Ctx& c, int disj, size_t pos, const Cont* k) const {
  for (const Seq& s : disjs_[disj])
    if (match_seq(c, s, 0, pos, k)) return true;
  return false;
}

bool Regex::match_rep(const Ctx& c, const Node& n, int count, size_t pos, const Cont* k) const {
  auto iterate = [&] {
    if (count >= n.max) return false;
    Cont r{Cont::AfterIter, nullptr, 0, &n, count + 1, pos, k};
    return match_disj(c, n.index, pos, &r);
  };
  auto leave = [&] { return count >= n.min && cont(c, k, pos); };
  return n.greedy ? (iterate() || leave()) : (leave() || iterate());
}

bool Regex::match_seq(const Ctx& c, const Seq& s, size_t idx, size_t pos, const Cont* k) const {
  while (true) {
    if (idx == s.size()) return cont(c, k, pos);
    const Node& n = s[idx];
    switch (n.kind) {
      case Node::Bol:
        if (pos != c.begin) return false;
        ++idx;
        continue;
      case Node::Eol:
        if (pos != c.end) return false;
        ++idx;
        continue;
      case Node::LookAhead:
      case Node::NegLookAhead: {
        const Cont accept{Cont::LookAccept};
        const bool found = match_disj(c, n.index, pos, &accept);
        if (found != (n.kind == Node::LookAhead)) return false;
        ++idx;
        continue;
      }
      case Node::Group: {
        const Cont next{Cont::InSeq, &s, idx + 1, nullptr, 0, 0, k};
        return match_rep(c, n, 0, pos, &next);
      }
      default: break;
    }
    // single-character atom, possibly repeated: count the run once, then backtrack over it
    if (n.min == 1 && n.max == 1) {
      if (pos >= c.end || !single_matches(n, c.text[pos])) return false;
      ++pos;
      ++idx;
      continue;
    }
    size_t m = 0;
    while (static_cast<int>(m) < n.max && pos + m < c.end && single_matches(n, c.text[pos + m])) ++m;
    if (static_cast<int>(m) < n.min) return false;
    if (n.greedy) {
      for (size_t j = m + 1; j-- > static_cast<size_t>(n.min);)
        if (match_seq(c, s, idx + 1, pos + j, k)) return true;
    } else {
      for (size_t j = n.min; j <= m; ++j)
        if (match_seq(c, s, idx + 1, pos + j, k)) return true;
    }
    return false;
  }
}

void Regex::split(const uint32_t* text, size_t begin, size_t end, std::vector<size_t>& out) const {
  size_t gap_start = begin;
  size_t p = begin;
  const Cont accept{Cont::Accept};
  while (p < end) {
    size_t q = p, e = 0;
    bool found = false;
    for (; q < end; ++q) {
      size_t me = q;
      const Ctx ctx{text, begin, end, &me};
      // an empty match cannot produce a piece; the search moves on as std::regex_iterator does
      if (match_disj(ctx, root_, q, &accept) && me > q) {
        found = true;
        e = me;
        break;
      }
    }
    if (!found) break;
    if (q > gap_start) out.push_back(q - gap_start);
    out.push_back(e - q);
    gap_start = e;
    p = e;
  }
  if (end > gap_start) out.push_back(end - gap_start);
}

}  // namespace memra::tok
