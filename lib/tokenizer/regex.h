#pragma once
// A small backtracking regular-expression engine over code points, with the ECMAScript
// semantics of std::regex (ordered alternation, greedy quantifiers with backtracking,
// lookahead), built for the BPE pre-tokenizer patterns.
//
// Why not std::regex: it cannot express Unicode categories and depends on the locale. llama.cpp
// (our reference) works around that by running std::regex over a "collapsed" text in which
// every non-ASCII code point is replaced by one byte standing for its category (and non-ASCII
// white space by \v), with \p{L}, \p{N}, \p{P}, \p{S}, \p{M} rewritten to those bytes plus the
// ASCII members of the category. We implement exactly that matching model natively, so the
// pre-tokenizer splits agree with llama.cpp's, including its quirks (e.g. '~' belongs to no
// category, marks are not letters).
//
// Supported syntax: literals, '.', [...] classes with ranges and negation, \s \S \d \D \w \W,
// \r \n \t \f \v \xHH \uHHHH, \p{L|N|P|S|M|Lu|Ll|Lt|Lm|Lo} (category mode only), groups
// (...) and (?:...), lookahead (?=...) (?!...), anchors ^ $, quantifiers * + ? {n} {n,} {n,m}
// and their lazy forms. Anything else is rejected with a memra::Error naming the construct.
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memra::tok {

// Collapsed representation of a code point (see above): ASCII stays, others become one value.
enum : uint32_t {
  kCollapsedOther = 0xD0, kCollapsedNumber = 0xD1, kCollapsedLetter = 0xD2,
  kCollapsedPunct = 0xD3, kCollapsedMark = 0xD4, kCollapsedSymbol = 0xD5,
};
uint32_t collapse_cpt(uint32_t cp);
// True when the pattern names a Unicode category and so must run on collapsed text.
bool pattern_uses_categories(std::string_view pattern);

class Regex {
 public:
  Regex(std::string_view pattern, bool category_mode);

  const std::string& pattern() const { return pattern_; }
  bool category_mode() const { return category_mode_; }

  // Splits text[begin, end) into consecutive pieces: every leftmost match, and the unmatched
  // text between matches as pieces of their own. Appends the piece lengths to `out`.
  void split(const uint32_t* text, size_t begin, size_t end, std::vector<size_t>& out) const;

 private:
  struct CharClass {
    bool negated = false;
    bool any_high = false;  // every code point >= 256 is a member (from \S, \D, \W)
    std::bitset<256> low;
    std::vector<std::pair<uint32_t, uint32_t>> high;  // ranges of members >= 256
    bool contains(uint32_t cp) const;
  };
  struct Node {
    enum Kind : uint8_t { Char, Class, Any, Both, Group, LookAhead, NegLookAhead, Bol, Eol } kind;
    bool greedy = true;
    uint32_t ch = 0;
    int index = 0;  // class (Class), pair (Both) or disjunction (Group, look-aheads) index
    int min = 1, max = 1;
  };
  using Seq = std::vector<Node>;
  using Disj = std::vector<Seq>;
  struct Cont;
  struct Ctx;

  // parser
  int parse_disj(const std::vector<uint32_t>& p, size_t& i);
  Node parse_atom(const std::vector<uint32_t>& p, size_t& i);
  void fuse_lookahead_group(Node& n);
  int parse_class(const std::vector<uint32_t>& p, size_t& i);
  void add_escape_to_class(CharClass& c, const std::vector<uint32_t>& p, size_t& i, uint32_t& single, bool& is_single);
  void add_category(CharClass& c, std::string_view name);
  [[noreturn]] void fail(const std::string& what, size_t at) const;

  // matcher
  bool single_matches(const Node& n, uint32_t cp) const;
  bool match_disj(const Ctx& c, int disj, size_t pos, const Cont* k) const;
  bool match_seq(const Ctx& c, const Seq& s, size_t idx, size_t pos, const Cont* k) const;
  bool match_rep(const Ctx& c, const Node& n, int count, size_t pos, const Cont* k) const;
  bool cont(const Ctx& c, const Cont* k, size_t pos) const;

  std::string pattern_;
  bool category_mode_;
  std::vector<Disj> disjs_;
  std::vector<CharClass> classes_;
  std::vector<std::pair<Node, Node>> both_;  // Both: a character matching two atoms
  int root_ = 0;
};

}  // namespace memra::tok
