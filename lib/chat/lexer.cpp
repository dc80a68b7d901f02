// Template lexer: splits the source into text and tag tokens and applies Jinja2's whitespace control
// ("-" markers, trim_blocks, lstrip_blocks, the dropped trailing newline) exactly where Jinja2's lexer
// does, because a single stray newline changes the prompt the model sees.
#include <algorithm>
#include <cstring>

#include "chat/ast.h"
#include "chat/text.h"
#include "core/error.h"

namespace memra::chat {

std::string describe_pos(const std::string& src, size_t pos) {
  pos = std::min(pos, src.size());
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos; ++i) {
    if (src[i] == '\n') {
      ++line;
      col = 1;
    } else if ((static_cast<unsigned char>(src[i]) & 0xC0) != 0x80) {
      ++col;
    }
  }
  return fmt::format("line {}, column {}", line, col);
}

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string rstrip_ws(std::string s) {
  while (!s.empty() && is_ws(s.back())) s.pop_back();
  return s;
}

std::string lstrip_ws(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && is_ws(s[i])) ++i;
  return s.substr(i);
}

class Lexer {
 public:
  Lexer(const std::string& src, const LexOptions& opt) : s_(src), opt_(opt) {}

  std::vector<Token> run() {
    size_t i = 0;
    bool strip_ws = false, trim_nl = false;
    while (true) {
      const size_t j = next_tag(i);
      std::string text = s_.substr(i, j == std::string::npos ? std::string::npos : j - i);
      bool line_start = i == 0 || s_[i - 1] == '\n';
      if (strip_ws) {
        text = lstrip_ws(text);
      } else if (trim_nl && !text.empty() && text[0] == '\n') {
        text.erase(0, 1);
        line_start = true;
      }
      if (j == std::string::npos) {
        emit_text(text, i);
        break;
      }
      const char kind = s_[j + 1];
      const char mod = j + 2 < s_.size() ? s_[j + 2] : '\0';
      if (mod == '-') {
        text = rstrip_ws(text);
      } else if (mod != '+' && opt_.lstrip_blocks && (kind == '%' || kind == '#')) {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if (l_pos > 0 || line_start) {
          bool only_ws = true;
          for (size_t k = l_pos; k < text.size(); ++k) only_ws = only_ws && is_ws(text[k]);
          if (only_ws) text.erase(l_pos);
        }
      }
      emit_text(text, i);
      if (kind == '#') {
        const size_t end = s_.find("#}", j + 2);
        MEMRA_CHECK(end != std::string::npos, "chat template: unclosed comment '{{#' at {}", describe_pos(s_, j));
        const char last = end > j + 2 ? s_[end - 1] : '\0';
        strip_ws = last == '-';
        trim_nl = opt_.trim_blocks && last != '+';
        i = end + 2;
        continue;
      }
      i = lex_tag(j, kind == '{', strip_ws, trim_nl);
    }
    out_.push_back(Token{Token::Type::End, {}, s_.size()});
    return std::move(out_);
  }

 private:
  size_t next_tag(size_t from) const {
    size_t p = from;
    while ((p = s_.find('{', p)) != std::string::npos) {
      if (p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')) return p;
      ++p;
    }
    return std::string::npos;
  }

  void emit_text(const std::string& text, size_t pos) {
    if (!text.empty()) out_.push_back(Token{Token::Type::Text, text, pos});
  }

  // Lexes one {{ ... }} or {% ... %} starting at `j`; returns the offset after its end.
  size_t lex_tag(size_t j, bool is_var, bool& strip_ws, bool& trim_nl) {
    const size_t first_tok = out_.size();
    out_.push_back(Token{is_var ? Token::Type::VarBegin : Token::Type::BlockBegin, {}, j});
    size_t p = j + 2;
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
    const char close = is_var ? '}' : '%';
    int depth = 0;
    while (true) {
      while (p < s_.size() && is_ws(s_[p])) ++p;
      MEMRA_CHECK(p < s_.size(), "chat template: unclosed tag '{}' opened at {}", is_var ? "{{" : "{%",
                  describe_pos(s_, j));
      if (depth == 0) {
        char mark = '\0';
        size_t q = p;
        if ((s_[q] == '-' || s_[q] == '+') && q + 2 < s_.size() + 0 && s_[q + 1] == close && s_[q + 2] == '}') {
          mark = s_[q];
          ++q;
        }
        if (q + 1 < s_.size() && s_[q] == close && s_[q + 1] == '}') {
          MEMRA_CHECK(!(is_var && mark == '+'), "chat template: '+}}}}' is not valid at {}", describe_pos(s_, p));
          out_.push_back(Token{is_var ? Token::Type::VarEnd : Token::Type::BlockEnd, {}, p});
          strip_ws = mark == '-';
          trim_nl = !is_var && opt_.trim_blocks && mark != '+';
          const size_t after = q + 2;
          if (!is_var && out_.size() - first_tok == 3 && out_[first_tok + 1].type == Token::Type::Name &&
              out_[first_tok + 1].text == "raw")
            return lex_raw(first_tok, after, strip_ws, trim_nl);
          return after;
        }
      }
      p = lex_token(p, depth);
    }
  }

  // {% raw %}...{% endraw %}: the body is text, tags inside are not interpreted.
  size_t lex_raw(size_t first_tok, size_t body, bool& strip_ws, bool& trim_nl) {
    out_.resize(first_tok);
    size_t p = body;
    while (true) {
      const size_t t = s_.find("{%", p);
      MEMRA_CHECK(t != std::string::npos, "chat template: '{{% raw %}}' at {} has no '{{% endraw %}}'",
                  describe_pos(s_, body));
      size_t q = t + 2;
      const char mod = q < s_.size() ? s_[q] : '\0';
      if (mod == '-' || mod == '+') ++q;
      while (q < s_.size() && is_ws(s_[q])) ++q;
      if (s_.compare(q, 6, "endraw") != 0) {
        p = t + 2;
        continue;
      }
      q += 6;
      while (q < s_.size() && is_ws(s_[q])) ++q;
      char mark = '\0';
      if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) mark = s_[q++];
      MEMRA_CHECK(s_.compare(q, 2, "%}") == 0, "chat template: malformed endraw at {}", describe_pos(s_, t));
      std::string text = s_.substr(body, t - body);
      if (strip_ws) text = lstrip_ws(text);
      else if (trim_nl && !text.empty() && text[0] == '\n') text.erase(0, 1);
      if (mod == '-') text = rstrip_ws(text);
      emit_text(text, body);
      strip_ws = mark == '-';
      trim_nl = opt_.trim_blocks && mark != '+';
      return q + 2;
    }
  }

  size_t lex_token(size_t p, int& depth) {
    const char c = s_[p];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = p;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
      out_.push_back(Token{Token::Type::Name, s_.substr(p, e - p), p});
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* const two[] = {"==", "!=", "<=", ">=", "//", "**"};
    for (const char* op : two) {
      if (s_.compare(p, 2, op) == 0) {
        out_.push_back(Token{Token::Type::Op, op, p});
        return p + 2;
      }
    }
    if (std::strchr("+-*/%~<>()[]{},.:|=", c) != nullptr) {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        MEMRA_CHECK(depth > 0, "chat template: unbalanced '{}' at {}", c, describe_pos(s_, p));
        --depth;
      }
      out_.push_back(Token{Token::Type::Op, std::string(1, c), p});
      return p + 1;
    }
    MEMRA_FAIL("chat template: unexpected character '{}' at {}", c, describe_pos(s_, p));
  }

  size_t lex_number(size_t p) {
    size_t e = p;
    bool is_float = false;
    auto digits = [&] {
      while (e < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
    };
    digits();
    if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
      is_float = true;
      ++e;
      digits();
    }
    if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t q = e + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && std::isdigit(static_cast<unsigned char>(s_[q]))) {
        is_float = true;
        e = q;
        digits();
      }
    }
    std::string spelled;
    for (size_t k = p; k < e; ++k)
      if (s_[k] != '_') spelled += s_[k];
    out_.push_back(Token{is_float ? Token::Type::Float : Token::Type::Int, spelled, p});
    return e;
  }

  static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Jinja2 decodes string literals with Python's unicode-escape rules; unknown escapes keep the backslash.
  size_t lex_string(size_t p) {
    const char q = s_[p];
    std::string val;
    size_t e = p + 1;
    while (true) {
      MEMRA_CHECK(e < s_.size(), "chat template: unterminated string literal at {}", describe_pos(s_, p));
      const char c = s_[e];
      if (c == q) break;
      if (c != '\\') {
        val += c;
        ++e;
        continue;
      }
      MEMRA_CHECK(e + 1 < s_.size(), "chat template: unterminated string literal at {}", describe_pos(s_, p));
      const char n = s_[e + 1];
      e += 2;
      switch (n) {
        case 'n': val += '\n'; break;
        case 't': val += '\t'; break;
        case 'r': val += '\r'; break;
        case '\\': val += '\\'; break;
        case '\'': val += '\''; break;
        case '"': val += '"'; break;
        case 'a': val += '\a'; break;
        case 'b': val += '\b'; break;
        case 'f': val += '\f'; break;
        case 'v': val += '\v'; break;
        case '\n': break;  // line continuation
        case 'x': case 'u': case 'U': {
          const int width = n == 'x' ? 2 : (n == 'u' ? 4 : 8);
          char32_t cp = 0;
          for (int k = 0; k < width; ++k) {
            const int h = e + k < s_.size() ? hexval(s_[e + k]) : -1;
            MEMRA_CHECK(h >= 0, "chat template: bad \\{} escape in string literal at {}", n, describe_pos(s_, e));
            cp = cp * 16 + static_cast<char32_t>(h);
          }
          e += static_cast<size_t>(width);
          text::append_utf8(val, cp);
          break;
        }
        default:
          if (n >= '0' && n <= '7') {
            char32_t cp = static_cast<char32_t>(n - '0');
            for (int k = 0; k < 2 && e < s_.size() && s_[e] >= '0' && s_[e] <= '7'; ++k, ++e)
              cp = cp * 8 + static_cast<char32_t>(s_[e] - '0');
            text::append_utf8(val, cp);
          } else {
            val += '\\';
            val += n;
          }
      }
    }
    out_.push_back(Token{Token::Type::String, val, p});
    return e + 1;
  }

  const std::string& s_;
  LexOptions opt_;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> lex_template(const std::string& src, const LexOptions& opt) {
  return Lexer(src, opt).run();
}

}  // namespace memra::chat
