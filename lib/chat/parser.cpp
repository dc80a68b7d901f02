// Recursive-descent parser for the Jinja subset, following Jinja2's grammar and operator precedence
// (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary < filters/tests < postfix).
// Statements it does not know are rejected with their name and position, never skipped.
#include <unordered_set>

#include "chat/ast.h"
#include "core/error.h"

namespace memra::chat {

namespace {

using T = Token::Type;
using K = Node::Kind;

class Parser {
 public:
  Parser(const std::vector<Token>& toks, const std::string& src) : t_(toks), src_(src) {}

  NodePtr parse_all() {
    auto body = parse_body({});
    MEMRA_CHECK(peek().type == T::End, "chat template: unexpected tag at {}", where(peek().pos));
    return body;
  }

 private:
  const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& next() { return t_[std::min(i_++, t_.size() - 1)]; }
  std::string where(size_t pos) const { return describe_pos(src_, pos); }

  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).type == T::Op && peek(ahead).text == op;
  }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).type == T::Name && peek(ahead).text == name;
  }
  void expect_op(const char* op) {
    const Token& tk = next();
    MEMRA_CHECK(tk.type == T::Op && tk.text == op, "chat template: expected '{}' but found '{}' at {}", op,
                describe(tk), where(tk.pos));
  }
  std::string expect_name() {
    const Token& tk = next();
    MEMRA_CHECK(tk.type == T::Name, "chat template: expected a name but found '{}' at {}", describe(tk),
                where(tk.pos));
    return tk.text;
  }
  void expect_block_end() {
    const Token& tk = next();
    MEMRA_CHECK(tk.type == T::BlockEnd, "chat template: expected '%}}' but found '{}' at {}", describe(tk),
                where(tk.pos));
  }
  static std::string describe(const Token& tk) {
    switch (tk.type) {
      case T::VarEnd: return "}}";
      case T::BlockEnd: return "%}";
      case T::End: return "end of template";
      case T::Text: return "text";
      default: return tk.text;
    }
  }

  // Parses statements until a block tag whose keyword is in `stops` (left unconsumed after '{%').
  NodePtr parse_body(const std::unordered_set<std::string>& stops) {
    auto body = std::make_unique<Node>(K::Body, peek().pos);
    while (true) {
      const Token& tk = peek();
      if (tk.type == T::End) {
        MEMRA_CHECK(stops.empty(), "chat template: missing end tag (one of: {}) at end of template",
                    fmt::join(stops, ", "));
        return body;
      }
      if (tk.type == T::Text) {
        auto n = std::make_unique<Node>(K::Text, tk.pos);
        n->name = tk.text;
        body->kids.push_back(std::move(n));
        ++i_;
      } else if (tk.type == T::VarBegin) {
        ++i_;
        auto n = std::make_unique<Node>(K::Output, tk.pos);
        n->kids.push_back(parse_expr());
        const Token& end = next();
        MEMRA_CHECK(end.type == T::VarEnd, "chat template: expected '}}}}' but found '{}' at {}", describe(end),
                    where(end.pos));
        body->kids.push_back(std::move(n));
      } else if (tk.type == T::BlockBegin) {
        const Token& kw = peek(1);
        if (kw.type == T::Name && stops.count(kw.text)) return body;
        ++i_;
        body->kids.push_back(parse_statement());
      } else {
        MEMRA_FAIL("chat template: unexpected '{}' at {}", describe(tk), where(tk.pos));
      }
    }
  }

  void consume_tag(const char* keyword) {
    next();  // '{%'
    const Token& kw = next();
    MEMRA_CHECK(kw.type == T::Name && kw.text == keyword, "chat template: expected '{}' at {}", keyword,
                where(kw.pos));
  }

  NodePtr parse_statement() {
    const Token& kw = next();
    MEMRA_CHECK(kw.type == T::Name, "chat template: expected a statement keyword at {}", where(kw.pos));
    const std::string& k = kw.text;
    if (k == "if") return parse_if(kw.pos);
    if (k == "for") return parse_for(kw.pos);
    if (k == "set") return parse_set(kw.pos);
    if (k == "macro") return parse_macro(kw.pos);
    if (k == "break" || k == "continue") {
      expect_block_end();
      return std::make_unique<Node>(k == "break" ? K::Break : K::Continue, kw.pos);
    }
    if (k.rfind("end", 0) == 0 || k == "elif" || k == "else")
      MEMRA_FAIL("chat template: unexpected '{{% {} %}}' with no open block at {}", k, where(kw.pos));
    MEMRA_FAIL("chat template: unsupported statement '{{% {} %}}' at {}", k, where(kw.pos));
  }

  NodePtr parse_if(size_t pos) {
    auto n = std::make_unique<Node>(K::If, pos);
    n->kids.push_back(parse_expr());
    expect_block_end();
    n->kids.push_back(parse_body({"elif", "else", "endif"}));
    while (true) {
      next();  // '{%'
      const Token& kw = next();
      if (kw.text == "elif") {
        n->kids.push_back(parse_expr());
        expect_block_end();
        n->kids.push_back(parse_body({"elif", "else", "endif"}));
      } else if (kw.text == "else") {
        expect_block_end();
        n->kids.push_back(parse_body({"endif"}));
        consume_tag("endif");
        expect_block_end();
        return n;
      } else {
        expect_block_end();
        return n;
      }
    }
  }

  NodePtr parse_for(size_t pos) {
    auto n = std::make_unique<Node>(K::For, pos);
    n->ops.push_back(expect_name());
    while (is_op(",")) {
      next();
      n->ops.push_back(expect_name());
    }
    const Token& in = next();
    MEMRA_CHECK(in.type == T::Name && in.text == "in", "chat template: expected 'in' in for loop at {}",
                where(in.pos));
    n->kids.push_back(parse_condexpr(/*allow_if=*/false));
    if (is_name("if")) {
      next();
      n->kids.push_back(parse_expr());
    } else {
      n->kids.push_back(nullptr);
    }
    MEMRA_CHECK(!is_name("recursive"), "chat template: unsupported 'recursive' for loop at {}",
                where(peek().pos));
    expect_block_end();
    n->kids.push_back(parse_body({"else", "endfor"}));
    next();  // '{%'
    if (next().text == "else") {
      expect_block_end();
      n->kids.push_back(parse_body({"endfor"}));
      consume_tag("endfor");
    } else {
      n->kids.push_back(nullptr);
    }
    expect_block_end();
    return n;
  }

  NodePtr parse_set(size_t pos) {
    auto n = std::make_unique<Node>(K::Set, pos);
    n->name = expect_name();
    if (is_op(".")) {
      next();
      n->ops.push_back(expect_name());
      n->set_attr = true;
    } else if (is_op(",")) {
      n->ops.push_back(n->name);
      while (is_op(",")) {
        next();
        n->ops.push_back(expect_name());
      }
    }
    if (peek().type == T::BlockEnd) {
      MEMRA_CHECK(n->ops.empty(), "chat template: block set needs a single name at {}", where(pos));
      next();
      n->kind = K::SetBlock;
      n->kids.push_back(parse_body({"endset"}));
      consume_tag("endset");
      expect_block_end();
      return n;
    }
    expect_op("=");
    n->kids.push_back(parse_tuple_or_expr());
    expect_block_end();
    return n;
  }

  NodePtr parse_macro(size_t pos) {
    auto n = std::make_unique<Node>(K::Macro, pos);
    n->name = expect_name();
    expect_op("(");
    std::vector<NodePtr> defaults;
    while (!is_op(")")) {
      n->ops.push_back(expect_name());
      if (is_op("=")) {
        next();
        defaults.push_back(parse_expr());
      } else {
        defaults.push_back(nullptr);
      }
      if (!is_op(")")) expect_op(",");
    }
    next();
    expect_block_end();
    for (auto& d : defaults) n->kids.push_back(std::move(d));
    n->kids.push_back(parse_body({"endmacro"}));
    consume_tag("endmacro");
    expect_block_end();
    return n;
  }

  // `a, b` without parentheses (only where Jinja allows it: the right side of set).
  NodePtr parse_tuple_or_expr() {
    const size_t pos = peek().pos;
    auto first = parse_expr();
    if (!is_op(",")) return first;
    auto tup = std::make_unique<Node>(K::TupleLit, pos);
    tup->kids.push_back(std::move(first));
    while (is_op(",")) {
      next();
      if (peek().type == T::BlockEnd) break;
      tup->kids.push_back(parse_expr());
    }
    return tup;
  }

  NodePtr parse_expr() { return parse_condexpr(true); }

  NodePtr parse_condexpr(bool allow_if) {
    const size_t pos = peek().pos;
    auto expr = parse_or();
    while (allow_if && is_name("if")) {
      next();
      auto n = std::make_unique<Node>(K::CondExpr, pos);
      auto cond = parse_or();
      NodePtr other;
      if (is_name("else")) {
        next();
        other = parse_condexpr(true);
      }
      n->kids.push_back(std::move(cond));
      n->kids.push_back(std::move(expr));
      n->kids.push_back(std::move(other));
      expr = std::move(n);
    }
    return expr;
  }

  NodePtr binary(K kind, const std::string& op, NodePtr a, NodePtr b, size_t pos) {
    auto n = std::make_unique<Node>(kind, pos);
    n->name = op;
    n->kids.push_back(std::move(a));
    n->kids.push_back(std::move(b));
    return n;
  }

  NodePtr parse_or() {
    auto a = parse_and();
    while (is_name("or")) {
      const size_t pos = next().pos;
      a = binary(K::Or, "or", std::move(a), parse_and(), pos);
    }
    return a;
  }

  NodePtr parse_and() {
    auto a = parse_not();
    while (is_name("and")) {
      const size_t pos = next().pos;
      a = binary(K::And, "and", std::move(a), parse_not(), pos);
    }
    return a;
  }

  NodePtr parse_not() {
    if (is_name("not")) {
      const size_t pos = next().pos;
      auto n = std::make_unique<Node>(K::Not, pos);
      n->kids.push_back(parse_not());
      return n;
    }
    return parse_compare();
  }

  NodePtr parse_compare() {
    const size_t pos = peek().pos;
    auto first = parse_math1();
    NodePtr cmp;
    while (true) {
      std::string op;
      if (peek().type == T::Op && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                   peek().text == ">" || peek().text == "<=" || peek().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = std::make_unique<Node>(K::Compare, pos);
        cmp->kids.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->kids.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  NodePtr parse_math1() {
    auto a = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& op = next();
      a = binary(K::Binary, op.text, std::move(a), parse_concat(), op.pos);
    }
    return a;
  }

  NodePtr parse_concat() {
    auto a = parse_math2();
    while (is_op("~")) {
      const size_t pos = next().pos;
      a = binary(K::Binary, "~", std::move(a), parse_math2(), pos);
    }
    return a;
  }

  NodePtr parse_math2() {
    auto a = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& op = next();
      a = binary(K::Binary, op.text, std::move(a), parse_pow(), op.pos);
    }
    return a;
  }

  NodePtr parse_pow() {
    auto a = parse_unary(true);
    while (is_op("**")) {
      const size_t pos = next().pos;
      a = binary(K::Binary, "**", std::move(a), parse_unary(true), pos);
    }
    return a;
  }

  NodePtr parse_unary(bool with_filter) {
    NodePtr node;
    if (is_op("-") || is_op("+")) {
      const Token& op = next();
      node = std::make_unique<Node>(K::Unary, op.pos);
      node->name = op.text;
      node->kids.push_back(parse_unary(false));
    } else {
      node = parse_postfix(parse_primary());
    }
    if (with_filter) node = parse_filters_and_tests(std::move(node));
    return node;
  }

  NodePtr parse_primary() {
    const Token& tk = next();
    switch (tk.type) {
      case T::Name: {
        if (tk.text == "true" || tk.text == "True") return literal(Value(true), tk.pos);
        if (tk.text == "false" || tk.text == "False") return literal(Value(false), tk.pos);
        if (tk.text == "none" || tk.text == "None") return literal(Value::none(), tk.pos);
        auto n = std::make_unique<Node>(K::Name, tk.pos);
        n->name = tk.text;
        return n;
      }
      case T::String: {
        std::string s = tk.text;
        while (peek().type == T::String) s += next().text;  // adjacent literals concatenate
        return literal(Value(std::move(s)), tk.pos);
      }
      case T::Int: {
        try {
          return literal(Value(static_cast<std::int64_t>(std::stoll(tk.text))), tk.pos);
        } catch (const std::exception&) {
          MEMRA_FAIL("chat template: integer literal '{}' out of range at {}", tk.text, where(tk.pos));
        }
      }
      case T::Float: return literal(Value(std::stod(tk.text)), tk.pos);
      case T::Op: {
        if (tk.text == "(") {
          if (is_op(")")) {
            next();
            return std::make_unique<Node>(K::TupleLit, tk.pos);
          }
          auto e = parse_expr();
          if (!is_op(",")) {
            expect_op(")");
            return e;
          }
          auto tup = std::make_unique<Node>(K::TupleLit, tk.pos);
          tup->kids.push_back(std::move(e));
          while (is_op(",")) {
            next();
            if (is_op(")")) break;
            tup->kids.push_back(parse_expr());
          }
          expect_op(")");
          return tup;
        }
        if (tk.text == "[") {
          auto lst = std::make_unique<Node>(K::ListLit, tk.pos);
          while (!is_op("]")) {
            lst->kids.push_back(parse_expr());
            if (!is_op("]")) expect_op(",");
          }
          next();
          return lst;
        }
        if (tk.text == "{") {
          auto d = std::make_unique<Node>(K::DictLit, tk.pos);
          while (!is_op("}")) {
            d->kids.push_back(parse_expr());
            expect_op(":");
            d->kids.push_back(parse_expr());
            if (!is_op("}")) expect_op(",");
          }
          next();
          return d;
        }
        break;
      }
      default: break;
    }
    MEMRA_FAIL("chat template: unexpected '{}' in expression at {}", describe(tk), where(tk.pos));
  }

  NodePtr literal(Value v, size_t pos) {
    auto n = std::make_unique<Node>(K::Literal, pos);
    n->literal = std::move(v);
    return n;
  }

  // Call arguments after '(' has been consumed: positional first, then name=value.
  void parse_call_args(Node& n) {
    while (!is_op(")")) {
      if (peek().type == T::Name && is_op("=", 1)) {
        n.kw.push_back(next().text);
        next();
        n.kids.push_back(parse_expr());
      } else {
        MEMRA_CHECK(n.kw.empty(), "chat template: positional argument after keyword argument at {}",
                    where(peek().pos));
        MEMRA_CHECK(!is_op("*") && !is_op("**"), "chat template: unsupported '*args' call syntax at {}",
                    where(peek().pos));
        n.kids.push_back(parse_expr());
      }
      if (!is_op(")")) expect_op(",");
    }
    next();
  }

  NodePtr parse_postfix(NodePtr node) {
    while (true) {
      if (is_op(".")) {
        const size_t pos = next().pos;
        const Token& nm = next();
        MEMRA_CHECK(nm.type == T::Name || nm.type == T::Int, "chat template: expected attribute name at {}",
                    where(nm.pos));
        auto n = std::make_unique<Node>(nm.type == T::Name ? K::GetAttr : K::GetItem, pos);
        n->kids.push_back(std::move(node));
        if (nm.type == T::Name) n->name = nm.text;
        else n->kids.push_back(literal(Value(static_cast<std::int64_t>(std::stoll(nm.text))), nm.pos));
        node = std::move(n);
      } else if (is_op("[")) {
        const size_t pos = next().pos;
        node = parse_subscript(std::move(node), pos);
      } else if (is_op("(")) {
        const size_t pos = next().pos;
        auto n = std::make_unique<Node>(K::Call, pos);
        n->kids.push_back(std::move(node));
        parse_call_args(*n);
        node = std::move(n);
      } else {
        return node;
      }
    }
  }

  NodePtr parse_subscript(NodePtr obj, size_t pos) {
    NodePtr parts[3];
    int colons = 0;
    if (!is_op(":")) parts[0] = parse_expr();
    while (is_op(":") && colons < 2) {
      next();
      ++colons;
      if (!is_op(":") && !is_op("]")) parts[colons] = parse_expr();
    }
    expect_op("]");
    if (colons == 0) {
      auto n = std::make_unique<Node>(K::GetItem, pos);
      n->kids.push_back(std::move(obj));
      n->kids.push_back(std::move(parts[0]));
      return n;
    }
    auto n = std::make_unique<Node>(K::Slice, pos);
    n->kids.push_back(std::move(obj));
    for (auto& p : parts) n->kids.push_back(std::move(p));
    return n;
  }

  NodePtr parse_filters_and_tests(NodePtr node) {
    while (true) {
      if (is_op("|")) {
        const size_t pos = next().pos;
        auto n = std::make_unique<Node>(K::Filter, pos);
        n->name = expect_name();
        n->kids.push_back(std::move(node));
        if (is_op("(")) {
          next();
          parse_call_args(*n);
        }
        node = std::move(n);
      } else if (is_name("is")) {
        const size_t pos = next().pos;
        auto n = std::make_unique<Node>(K::Test, pos);
        if (is_name("not")) {
          next();
          n->negated = true;
        }
        n->name = expect_name();
        n->kids.push_back(std::move(node));
        if (is_op("(")) {
          next();
          parse_call_args(*n);
        } else if ((peek().type == T::String || peek().type == T::Int || peek().type == T::Float ||
                    is_op("[") || is_op("{") ||
                    (peek().type == T::Name && !is_name("else") && !is_name("or") && !is_name("and") &&
                     !is_name("if") && !is_name("in") && !is_name("not") && !is_name("is")))) {
          // `x is divisibleby 3`, `x is sameas false`: one argument without parentheses.
          n->kids.push_back(parse_postfix(parse_primary()));
        }
        node = std::move(n);
      } else {
        return node;
      }
    }
  }

  const std::vector<Token>& t_;
  const std::string& src_;
  size_t i_ = 0;
};

}  // namespace

NodePtr parse_template(const std::vector<Token>& tokens, const std::string& src) {
  return Parser(tokens, src).parse_all();
}

}  // namespace memra::chat
