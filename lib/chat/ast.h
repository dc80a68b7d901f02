#pragma once
// Tokens and syntax tree of the Jinja subset. Every token and node keeps its byte offset in the
// template source so that errors can name the line and column of the offending construct.
#include <memory>
#include <string>
#include <vector>

#include "chat/value.h"

namespace memra::chat {

struct Token {
  enum class Type { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };
  Type type = Type::End;
  std::string text;  // Text payload, name, decoded string literal, number spelling, operator
  size_t pos = 0;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  enum class Kind {
    // expressions
    Literal, Name, GetAttr, GetItem, Slice, Call, Filter, Test, Unary, Binary, And, Or, Not, Compare,
    CondExpr, ListLit, TupleLit, DictLit,
    // statements
    Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, Body,
  };
  Kind kind;
  size_t pos = 0;
  std::string name;               // identifier, attribute, filter/test name, operator, macro name
  Value literal;                  // Literal; Text payload lives in `name`
  std::vector<NodePtr> kids;      // operands / arguments / statements (meaning depends on kind)
  std::vector<std::string> kw;    // keyword names for the trailing kids of Call/Filter/Test
  std::vector<std::string> ops;   // Compare: operator per link; For/Set: target names
  bool negated = false;           // Test: `is not`
  bool set_attr = false;          // Set: `set ns.attr = ...` (attribute name in ops[0])
  // If: kids = cond0, body0, cond1, body1, ..., [else body] (odd count => else present).
  // For: kids = iter, filter-or-null, body, else-or-null; ops = loop variable names.
  // Set: kids = value; name = variable, ops[0] = attribute when `set ns.attr = ...`, or
  //      ops = several names for tuple unpacking.
  // Macro: name; ops = parameter names; kids = defaults (null for none) ..., body last.

  Node(Kind k, size_t p) : kind(k), pos(p) {}
};

// Whitespace handling options, named after jinja2.Environment's. transformers renders chat templates
// with trim_blocks=True and lstrip_blocks=True, so that is the default here.
struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

std::vector<Token> lex_template(const std::string& src, const LexOptions& opt);
NodePtr parse_template(const std::vector<Token>& tokens, const std::string& src);

// "line L, column C" of a byte offset (1-based), for error messages.
std::string describe_pos(const std::string& src, size_t pos);

}  // namespace memra::chat
