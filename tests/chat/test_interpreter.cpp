// Unit tests of the Jinja-subset interpreter. Each expected string is what Jinja2 (with
// transformers' settings: trim_blocks, lstrip_blocks, loopcontrols, json.dumps tojson) renders,
// worked out from Jinja2/Python semantics; the AgreesWithJinja2 test re-checks every expectation
// against the Python oracle so a wrong expectation cannot hide a wrong implementation.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/oracle.h"
#include "core/error.h"

namespace memra::chat {
namespace {

using nlohmann::ordered_json;

constexpr std::int64_t kNow = 1722000000;  // 2024-07-26 13:20:00 UTC

struct Case {
  const char* name;
  const char* tmpl;
  const char* ctx;  // JSON object
  const char* expected;
};

const Case kCases[] = {
    // ---- expressions and Python value formatting
    {"precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }}", "{}", "7 9 64"},
    {"int_division", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 4 / 2 }}", "{}",
     "3 -4 1 2 3.5 2.0"},
    {"float_repr", "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1 / 3 }} {{ 0.00001 }} {{ 2.5e-3 }}", "{}",
     "1.0 0.30000000000000004 1e+20 0.3333333333333333 1e-05 0.0025"},
    {"concat_tilde", "{{ 'a' ~ 1 ~ none ~ true ~ 2.0 }}", "{}", "a1NoneTrue2.0"},
    {"list_dict_str", "{{ [1, 'a', none, true, \"it's\"] }} {{ {'k': 'v', 'n': 1} }}", "{}",
     "[1, 'a', None, True, \"it's\"] {'k': 'v', 'n': 1}"},
    {"chained_compare", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 'a' != 'b' }}", "{}",
     "True False True True"},
    {"membership", "{{ 'b' in 'abc' }} {{ 2 not in [1, 3] }} {{ 'k' in {'k': 1} }} {{ 'z' in m }}", "{\"m\": {}}",
     "True True True False"},
    {"bool_ops_return_operand", "{{ none or 'x' }} {{ 0 and 'y' }} {{ '' or [] }} {{ not 0 }}", "{}",
     "x 0 [] True"},
    {"cond_expr", "{{ 'yes' if 0 else 'no' }}[{{ 'yes' if false }}]{{ 'a' if x else 'b' if y else 'c' }}",
     "{\"x\": false, \"y\": 1}", "no[]b"},
    {"unary_minus_binds_before_filter", "{{ -3 | abs }} {{ 'a' + 'b' | upper }}", "{}", "3 aB"},
    {"undefined_prints_empty", "[{{ nothing }}][{{ d.missing }}][{{ d['missing'] }}]", "{\"d\": {}}", "[][][]"},
    {"none_attr_is_undefined", "{{ n.x is defined }}", "{\"n\": null}", "False"},
    // ---- indexing, slicing, str methods (code points, not bytes)
    {"index_slice", "{{ 'abc'[1] }} {{ 'abcdef'[1:4] }} {{ 'abcdef'[::-1] }} {{ [1, 2, 3, 4][-2:] }} {{ s[1] }}",
     "{\"s\": \"h\u00e9llo\"}", "b bcd fedcba [3, 4] \u00e9"},
    {"list_neg_index_and_oob", "{{ m[-1].r }}|{{ m[5] is defined }}", "{\"m\": [{\"r\": \"a\"}, {\"r\": \"b\"}]}",
     "b|False"},
    {"split", "{{ 'a,b,,c'.split(',') }} {{ '  x  y  '.split() }} {{ 'a b c'.split(' ', 1) }}", "{}",
     "['a', 'b', '', 'c'] ['x', 'y'] ['a', 'b c']"},
    {"strip_family", "[{{ ' xx '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ s.lstrip('\\n') }}|{{ s.rstrip() }}]",
     "{\"s\": \"\\n\\nhi \\n\"}", "[xx|hi|hi \n|\n\nhi]"},
    {"python_whitespace_strip", "[{{ s | trim }}]", "{\"s\": \"\u00a0\u3000 hi\u2003\\t\"}", "[hi]"},
    {"starts_ends", "{{ s.startswith('<tool') }} {{ s.endswith(('x', '>')) }} {{ s.startswith('z') }}",
     "{\"s\": \"<tool_response>\"}", "True True False"},
    {"str_methods", "{{ 'ab'.upper() }} {{ 'AB'.lower() }} {{ 'a-a'.replace('a', 'b') }} {{ 'hello world'.title() }}",
     "{}", "AB ab b-b Hello World"},
    {"qwen3_think_split", "{{ c.split('</think>')[-1].lstrip('\\n') }}|{{ c.split('</think>')[0].split('<think>')[-1].strip('\\n') }}",
     "{\"c\": \"<think>\\nwhy\\n</think>\\n\\nanswer\"}", "answer|why"},
    // ---- loops
    {"loop_vars", "{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}",
     "{}", "10TrueFalse33;21FalseFalse32;32FalseTrue31;"},
    {"loop_else", "{% for x in [] %}a{% else %}empty{% endfor %}", "{}", "empty"},
    {"loop_inline_filter", "{% for x in range(10) if x is even %}{{ x }}{{ loop.length }},{% endfor %}", "{}",
     "05,25,45,65,85,"},
    {"loop_scope_does_not_leak", "{% set y = 1 %}{% for x in [1, 2] %}{% set y = x * 10 %}{{ y }},{% endfor %}{{ y }}",
     "{}", "10,20,1"},
    {"if_does_not_scope", "{% if true %}{% set z = 5 %}{% endif %}{{ z }}", "{}", "5"},
    {"namespace_carries_state", "{% set ns = namespace(c=0, f=false) %}{% for x in [1, 2, 3] %}{% set ns.c = ns.c + x %}{% endfor %}{{ ns.c }} {{ ns.f }}",
     "{}", "6 False"},
    {"break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     "{}", "0134"},
    {"dict_iteration", "{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
     "{\"d\": {\"b\": 1, \"a\": 2}}", "b=1,a=2,ba"},
    {"reverse_slice_loop", "{% for m in ms[::-1] %}{{ m }}{{ (ms | length - 1) - loop.index0 }}{% endfor %}",
     "{\"ms\": [\"a\", \"b\", \"c\"]}", "c2b1a0"},
    {"loop_cycle_prev_next", "{% for x in 'abc' %}{{ loop.cycle('o', 'e') }}{{ loop.previtem }}{{ loop.nextitem is defined }}{% endfor %}",
     "{}", "oTrueeaTrueobFalse"},
    {"nested_loops", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}{{ loop.index }}|{% endfor %}",
     "{}", "1x1 1y2 1|2x1 2y2 2|"},
    // ---- set
    {"set_tuple_and_block", "{% set a, b = [1, 2] %}{{ b }}{{ a }}{% set t %}hi {{ 1 }}{% endset %}[{{ t }}]", "{}",
     "21[hi 1]"},
    {"set_overrides_context", "{% set messages = messages[1:] %}{{ messages | length }}", "{\"messages\": [1, 2, 3]}",
     "2"},
    // ---- macros
    {"macro_defaults_kwargs", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bo') }} {{ greet('Al', punct='?') }}",
     "{}", "Hi Bo! Hi Al?"},
    {"macro_recursion", "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}", "{}",
     "321"},
    {"macro_reads_context", "{% macro m() %}{{ who }}{% endmacro %}{{ m() }}", "{\"who\": \"ctx\"}", "ctx"},
    // ---- filters
    {"case_filters", "{{ '  Hi There  ' | trim }}|{{ 'abc' | upper }}|{{ 'ABC' | lower }}|{{ 'hELLO wORLD' | capitalize }}|{{ 'hello world' | title }}",
     "{}", "Hi There|ABC|abc|Hello world|Hello World"},
    {"length", "{{ s | length }} {{ [1, 2] | length }} {{ {'a': 1} | length }} {{ nope | length }} {{ [1] | count }}",
     "{\"s\": \"h\u00e9llo\"}", "5 2 1 0 1"},
    {"tojson_default", "{{ v | tojson }}", "{\"v\": {\"b\": [1, 2.5, null, true], \"a\": \"\u00e9\\\"\\n<&>\"}}",
     "{\"b\": [1, 2.5, null, true], \"a\": \"\u00e9\\\"\\n<&>\"}"},
    {"tojson_indent", "{{ v | tojson(indent=2) }}|{{ [] | tojson(indent=2) }}|{{ e | tojson(indent=2) }}",
     "{\"v\": {\"b\": [1, {\"c\": null}], \"a\": \"x\"}, \"e\": {}}",
     "{\n  \"b\": [\n    1,\n    {\n      \"c\": null\n    }\n  ],\n  \"a\": \"x\"\n}|[]|{}"},
    {"tojson_sort_and_separators", "{{ v | tojson(sort_keys=true) }} {{ v | tojson(separators=(',', ':')) }}",
     "{\"v\": {\"b\": 1, \"a\": [1, 2]}}", "{\"a\": [1, 2], \"b\": 1} {\"b\":1,\"a\":[1,2]}"},
    {"default", "{{ missing | default('d') }} {{ '' | default('e', true) }} [{{ '' | default('f') }}] {{ none | default('g') }}",
     "{}", "d e [] None"},
    {"items_filter", "{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}{% for k, v in nope | items %}x{% endfor %}",
     "{\"d\": {\"z\": 1, \"y\": 2}}", "z1y2"},
    {"join", "{{ [1, 'a', none] | join('-') }} {{ us | join(', ', attribute='name') }} {{ 'abc' | join('.') }}",
     "{\"us\": [{\"name\": \"a\"}, {\"name\": \"b\"}]}", "1-a-None a, b a.b.c"},
    {"first_last", "{{ [3, 4, 5] | first }}{{ [3, 4, 5] | last }}{{ 'xyz' | first }}[{{ [] | first }}]", "{}",
     "35x[]"},
    {"replace_filter", "{{ 'aaa' | replace('a', 'b', 2) }} {{ 'abc' | replace('', '-') }}", "{}", "bba -a-b-c-"},
    {"select_reject", "{{ us | selectattr('admin') | map(attribute='name') | join }} {{ us | rejectattr('admin') | map(attribute='name') | join }} {{ us | selectattr('name', 'equalto', 'b') | list | length }}",
     "{\"us\": [{\"name\": \"a\", \"admin\": true}, {\"name\": \"b\", \"admin\": false}, {\"name\": \"c\"}]}",
     "a bc 1"},
    {"reject_equalto", "{{ ['x', 'y', 'x', 'z'] | reject('equalto', 'x') | join(',') }} {{ [1, 2, 3, 4] | select('odd') | list }}",
     "{}", "y,z [1, 3]"},
    {"dotted_attribute", "{{ calls | map(attribute='function.name') | join(' ') }}",
     "{\"calls\": [{\"function\": {\"name\": \"f\"}}, {\"function\": {\"name\": \"g\"}}]}", "f g"},
    {"misc_filters", "{{ 12 | string + 'a' }} {{ '42' | int + 1 }} {{ 'x' | int }} {{ [1, 2, 2, 3] | unique | list }} {{ [1, 2] | reverse | list }} {{ [1, 2.5] | sum }}",
     "{}", "12a 43 0 [1, 2, 3] [2, 1] 3.5"},
    {"indent_filter", "{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}", "{}", "a\n  b\n\n  c|  a\n  b"},
    // ---- tests
    {"type_tests", "{{ 1 is number }}{{ true is number }}{{ true is integer }}{{ 1.5 is float }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ none is none }}{{ x is undefined }}{{ false is false }}{{ 0 is false }}",
     "{}", "TrueTrueFalseTrueTrueTrueTrueTrueTrueTrueFalse"},
    {"arg_tests", "{{ 6 is divisibleby 3 }} {{ 7 is odd }} {{ 'a' is in ['a'] }} {{ 3 is gt 2 }} {{ 'x' is not equalto 'y' }} {{ 'ab' is lower }} {{ x is sameas none }}",
     "{\"x\": null}", "True True True True True True True"},
    {"not_is_precedence", "{{ not x is defined }} {{ not x is defined and true }}", "{}", "True True"},
    {"content_is_string_or_iterable", "{% for m in ms %}{% if m.content is string %}S{% elif m.content is iterable %}I{% endif %}{% endfor %}",
     "{\"ms\": [{\"content\": \"a\"}, {\"content\": [{\"type\": \"text\"}]}, {}]}", "SII"},
    // ---- whitespace control (the part that silently changes prompts)
    {"dash_strips_both_sides", "a  \n {{- 'b' -}} \n c", "{}", "abc"},
    {"dash_block_and_trim_blocks", "a\n  {%- if true %}\nb{% endif %}", "{}", "ab"},
    {"lstrip_blocks", "x\n    {% if true %}\n    y\n    {% endif %}\nz", "{}", "x\n    y\nz"},
    {"plus_disables_lstrip", "x\n  {%+ if true %}y{% endif %}", "{}", "x\n  y"},
    {"plus_disables_trim", "{% if true +%}\ny{% endif %}", "{}", "\ny"},
    {"var_tags_not_lstripped", "x\n  {{ 'y' }}\nz", "{}", "x\n  y\nz"},
    {"comments", "a{# c #}b\n  {# c2 #}\nc{#- c3 -#}  d", "{}", "ab\ncd"},
    {"trailing_newline_dropped_once", "hi\n\n", "{}", "hi\n"},
    {"raw_block", "{% raw %}{{ x }}{% if %}{% endraw %}", "{}", "{{ x }}{% if %}"},
    {"string_escapes", "{{ 'a\\tb' }}|{{ \"q\\\"q\" }}|{{ '\\u00e9' }}|{{ 'x\\qy' }}|{{ 'a' 'b' }}", "{}",
     "a\tb|q\"q|\u00e9|x\\qy|ab"},
    {"gemma_style_mixed", "{{ bos }}\n{%- for m in ms -%}\n    {{ '<t>' + m + '\\n' }}\n    {%- if loop.last -%}\n        {{ 'END' }}\n    {%- endif -%}\n{%- endfor -%}\n",
     "{\"bos\": \"<b>\", \"ms\": [\"u\", \"v\"]}", "<b><t>u\n<t>v\nEND"},
    // ---- globals
    {"strftime_now", "{{ strftime_now('%Y-%m-%d %H:%M') }}|{{ strftime_now('%d %b %Y') }}", "{}",
     "2024-07-26 13:20|26 Jul 2024"},
    {"range_dict_namespace", "{{ range(3) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1) }} {{ strftime_now is defined }}",
     "{}", "[0, 1, 2] [5, 3, 1] {'a': 1} True"},
};

class Interpreter : public ::testing::TestWithParam<Case> {};

TEST_P(Interpreter, RendersLikeJinja2) {
  const Case& c = GetParam();
  std::string out;
  ASSERT_NO_THROW(out = ChatTemplate(c.tmpl).render(ordered_json::parse(c.ctx), kNow)) << c.tmpl;
  EXPECT_EQ(out, c.expected) << "template: " << c.tmpl;
}

INSTANTIATE_TEST_SUITE_P(Cases, Interpreter, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// The expectations above are themselves checked against Python's Jinja2.
TEST(InterpreterExpectations, AgreeWithJinja2) {
  std::vector<std::pair<std::string, ordered_json>> batch;
  for (const Case& c : kCases) batch.emplace_back(c.tmpl, ordered_json::parse(c.ctx));
  std::vector<testing::OracleResult> res;
  std::string why;
  if (!testing::run_oracle_batch(batch, kNow, res, why)) GTEST_SKIP() << "Jinja2 oracle unavailable: " << why;
  ASSERT_EQ(res.size(), std::size(kCases));
  for (size_t i = 0; i < res.size(); ++i) {
    EXPECT_EQ(res[i].status, testing::OracleResult::Status::Ok) << kCases[i].name << ": " << res[i].text;
    EXPECT_EQ(res[i].text, kCases[i].expected) << kCases[i].name;
  }
}

TEST(ChatTemplate, RenderChatBuildsTheContext) {
  ChatOptions o;
  o.bos_token = "<s>";
  o.add_generation_prompt = false;
  o.variables["flag"] = "on";
  std::vector<ChatMessage> m = {{"user", "hi", {}}};
  m[0].extra["name"] = "bob";
  const char* t = "{{ bos_token }}{% for x in messages %}{{ x.role }}:{{ x.content }}:{{ x.name }}{% endfor %}"
                  "{{ add_generation_prompt }}{{ flag }}[{{ eos_token }}]";
  EXPECT_EQ(render_chat(t, m, o), "<s>user:hi:bobFalseon[]");
}

TEST(ChatTemplate, CrLfSourceIsNormalized) {
  EXPECT_EQ(ChatTemplate("a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n").render(ordered_json::object()), "a\nb\n");
}

}  // namespace
}  // namespace memra::chat
