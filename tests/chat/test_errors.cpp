// Unsupported constructs and template bugs must fail loudly with the construct's name and position,
// never render a silently different prompt.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "core/error.h"

namespace memra::chat {
namespace {

using nlohmann::ordered_json;

// Renders and returns the error text; fails the test when nothing is thrown.
std::string error_of(const std::string& tmpl, const char* ctx = "{}") {
  try {
    ChatTemplate t(tmpl);
    const std::string out = t.render(ordered_json::parse(ctx), 0);
    ADD_FAILURE() << "no error for template: " << tmpl << " (rendered: " << out << ")";
  } catch (const memra::Error& e) {
    return e.what();
  }
  return {};
}

void expect_error(const std::string& tmpl, std::initializer_list<const char*> needles, const char* ctx = "{}") {
  const std::string msg = error_of(tmpl, ctx);
  for (const char* n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "message '" << msg << "' lacks '" << n << "'";
}

TEST(ChatErrors, UnsupportedFilterNamesItAndPosition) {
  expect_error("ok\n  {{ x | frobnicate }}", {"unsupported filter 'frobnicate'", "line 2, column 8"});
}

TEST(ChatErrors, UnsupportedTest) { expect_error("{{ 3 is prime }}", {"unsupported test 'prime'", "line 1"}); }

TEST(ChatErrors, UnsupportedStatements) {
  expect_error("{% include 'x.jinja' %}", {"unsupported statement", "include", "line 1, column 4"});
  expect_error("{% extends 'base' %}", {"extends"});
  expect_error("{% import 'm' as m %}", {"import"});
  expect_error("{% call m() %}x{% endcall %}", {"call"});
  expect_error("{% filter upper %}x{% endfilter %}", {"filter"});
  expect_error("{% with a = 1 %}{{ a }}{% endwith %}", {"with"});
  expect_error("{% generation %}x{% endgeneration %}", {"generation"});
  expect_error("{% for x in y recursive %}{% endfor %}", {"recursive"});
}

TEST(ChatErrors, UnsupportedMethodsAndSyntax) {
  expect_error("{{ 'a'.zfill(3) }}", {"unsupported method 'str.zfill'"});
  expect_error("{{ [].append(1) }}", {"unsupported method 'list.append'"});
  expect_error("{{ d.update({'a': 1}) }}", {"dict method 'update'"}, "{\"d\": {}}");
  expect_error("{{ f(*args) }}", {"*args"});
  expect_error("{{ a @ b }}", {"unexpected character '@'"});
  expect_error("{{ 'Hi %s' % name }}", {"unsupported: printf-style string formatting"}, "{\"name\": \"x\"}");
}

TEST(ChatErrors, UndefinedMisuse) {
  expect_error("{{ nothere.attr }}", {"'nothere' is undefined", "attr"});
  expect_error("{{ nofunc() }}", {"'nofunc' is undefined"});
  expect_error("{{ missing + 'x' }}", {"'missing' is undefined"});
  expect_error("{{ m.content.x }}", {"'content' is undefined"}, "{\"m\": {}}");
}

TEST(ChatErrors, RaiseExceptionCarriesTheMessage) {
  expect_error("\n{{ raise_exception('roles must alternate') }}", {"roles must alternate", "line 2"});
}

TEST(ChatErrors, TypeErrors) {
  expect_error("{{ 'a' + 1 }}", {"unsupported operand types for +: 'str' and 'int'"});
  expect_error("{{ 'a' < 1 }}", {"cannot compare"});
  expect_error("{% for x in 5 %}{% endfor %}", {"not iterable"});
  expect_error("{{ 1 // 0 }}", {"division by zero"});
  expect_error("{% set x = 1 %}{% set x.a = 2 %}", {"not a namespace"});
  expect_error("{{ 1 in 2 }}", {"not iterable"});
  expect_error("{{ x | tojson }}", {"not JSON serializable"});
  expect_error("{{ 9223372036854775807 + 1 }}", {"integer overflow"});
  expect_error("{{ 10 ** 30 }}", {"integer overflow"});
}

TEST(ChatErrors, SyntaxErrors) {
  expect_error("{% if x %}never closed", {"missing end tag"});
  expect_error("{{ 1 + }}", {"unexpected '}}'"});
  expect_error("{{ x ", {"unclosed tag"});
  expect_error("{% for %}{% endfor %}", {"expected a name"});
  expect_error("{{ 'abc }}", {"unterminated string"});
  expect_error("{% endfor %}", {"unexpected '{% endfor %}' with no open block"});
  expect_error("{# never closed", {"unclosed comment"});
  expect_error("{{ (1 }}", {"unbalanced '}'"});
  expect_error("{{ (1 + 2] }}", {"expected ')' but found ']'"});
  expect_error("{% break %}", {"outside a for loop"});
}

TEST(ChatErrors, RunawayMacroRecursionIsAnError) {
  expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", {"recursion deeper than"});
}

TEST(ChatErrors, MacroArgumentErrors) {
  expect_error("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}", {"takes 1 arguments, 2 given"});
  expect_error("{% macro f(a) %}{% endmacro %}{{ f(b=1) }}", {"no parameter 'b'"});
}

}  // namespace
}  // namespace memra::chat
