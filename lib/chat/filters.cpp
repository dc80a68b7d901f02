// Jinja2 filters used by real chat templates. `tojson` follows transformers' override
// (json.dumps with ensure_ascii=False, keys unsorted), which is what models were trained against,
// not Jinja2's HTML-safe default.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/text.h"
#include "core/error.h"

namespace memra::chat {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw EvalError(msg); }

using FilterFn = Value (*)(const Value&, const CallArgs&);

bool bool_arg(const CallArgs& a, size_t i, const char* name, bool dflt) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : dflt;
}

std::string str_of(const Value& v) { return v.to_str(); }

// Dotted attribute path as Jinja2's make_attrgetter resolves it ("function.name", "0").
Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    if (cur.is_undefined()) return cur;
    cur = numeric ? get_item(cur, Value(static_cast<int64_t>(std::stoll(part)))) : get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

// select/reject/selectattr/rejectattr share this: keep items whose test result equals `keep`.
Value select_impl(const Value& seq, const CallArgs& a, bool keep, bool by_attr) {
  size_t i = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty() || !a.pos[0].is_string()) fail("selectattr/rejectattr need an attribute name");
    attr = a.pos[0].str();
    i = 1;
  }
  std::string test;
  CallArgs targs;
  if (i < a.pos.size()) {
    if (!a.pos[i].is_string()) fail("select/reject test name must be a string");
    test = a.pos[i].str();
    targs.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(i + 1), a.pos.end());
  }
  List out;
  if (!seq.truthy()) return Value::list();  // Jinja2 skips iteration of a falsy input entirely
  for (const Value& item : iterate(seq)) {
    const Value subject = by_attr ? attr_path(item, attr) : item;
    const bool r = test.empty() ? subject.truthy() : apply_test(test, subject, targs);
    if (r == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_tojson(const Value& v, const CallArgs& a) {
  JsonStyle st;
  if (const Value* ind = a.get(0, "indent"); ind && !ind->is_none()) {
    if (!ind->is_int()) fail("tojson indent must be an integer");
    st.indent = static_cast<int>(ind->as_int());
  }
  if (const Value* s = a.kwarg("separators"); s && !s->is_none()) {
    if (!s->is_list() || s->items().size() != 2 || !s->items()[0].is_string() || !s->items()[1].is_string())
      fail("tojson separators must be a pair of strings");
    st.has_separators = true;
    st.item_sep = s->items()[0].str();
    st.key_sep = s->items()[1].str();
  }
  if (const Value* s = a.kwarg("sort_keys")) st.sort_keys = s->truthy();
  if (const Value* s = a.kwarg("ensure_ascii"); s && s->truthy()) fail("tojson(ensure_ascii=true) is not supported");
  return Value(to_json(v, st));
}

Value f_default(const Value& v, const CallArgs& a) {
  const Value* d = a.get(0, "default_value");
  const bool boolean = bool_arg(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value(std::string());
  return v;
}

Value f_length(const Value& v, const CallArgs&) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return Value(int64_t{0});
    case Value::Kind::String: return Value(static_cast<int64_t>(text::length(v.str())));
    case Value::Kind::List: return Value(static_cast<int64_t>(v.items().size()));
    case Value::Kind::Dict:
    case Value::Kind::Namespace: return Value(static_cast<int64_t>(v.entries().items.size()));
    default: fail(fmt::format("object of type '{}' has no len()", v.type_name()));
  }
}

Value f_join(const Value& v, const CallArgs& a) {
  const Value* sep = a.get(0, "d");
  const Value* attr = a.get(1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep ? str_of(*sep) : "";
    out += str_of(attr && !attr->is_none() ? attr_path(item, attr->to_str()) : item);
    first = false;
  }
  return Value(std::move(out));
}

Value f_items(const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_mapping()) fail(fmt::format("items filter expects a mapping, got '{}'", v.type_name()));
  List out;
  for (const auto& [k, x] : v.entries().items) out.push_back(Value::tuple({Value(k), x}));
  return Value::list(std::move(out));
}

Value f_first(const Value& v, const CallArgs&) {
  List l = iterate(v);
  return l.empty() ? Value::undefined("first") : l.front();
}

Value f_last(const Value& v, const CallArgs&) {
  List l = iterate(v);
  return l.empty() ? Value::undefined("last") : l.back();
}

Value f_map(const Value& v, const CallArgs& a) {
  List out;
  if (!v.truthy()) return Value::list();  // as select: a falsy input maps to nothing
  if (const Value* attr = a.kwarg("attribute")) {
    const Value* dflt = a.kwarg("default");
    for (const Value& item : iterate(v)) {
      Value r = attr_path(item, attr->to_str());
      out.push_back(r.is_undefined() && dflt ? *dflt : r);
    }
    return Value::list(std::move(out));
  }
  if (a.pos.empty() || !a.pos[0].is_string()) fail("map needs a filter name or attribute=");
  const std::string filter = a.pos[0].str();
  CallArgs fargs;
  fargs.pos.assign(a.pos.begin() + 1, a.pos.end());
  fargs.kw = a.kw;
  for (const Value& item : iterate(v)) out.push_back(apply_filter(filter, item, fargs));
  return Value::list(std::move(out));
}

Value f_unique(const Value& v, const CallArgs& a) {
  if (a.get(0, "case_sensitive") || a.get(1, "attribute")) fail("unique: arguments are not supported");
  List out;
  for (const Value& item : iterate(v)) {
    if ((item.is_list() && !item.is_tuple()) || item.is_mapping())
      fail(fmt::format("unique: unhashable type: '{}'", item.type_name()));
    // Jinja2 compares strings case-insensitively by default.
    const bool dup = std::any_of(out.begin(), out.end(), [&](const Value& o) {
      if (o.is_string() && item.is_string()) return text::lower(o.str()) == text::lower(item.str());
      return values_equal(o, item);
    });
    if (!dup) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_indent(const Value& v, const CallArgs& a) {
  std::string pad = "    ";
  if (const Value* w = a.get(0, "width")) pad = w->is_string() ? w->str() : std::string(static_cast<size_t>(w->as_int()), ' ');
  const bool first = bool_arg(a, 1, "first", false), blank = bool_arg(a, 2, "blank", false);
  if (!v.is_string()) fail(fmt::format("indent expects a string, got '{}'", v.type_name()));
  const std::string s = v.str();
  std::string out;
  size_t start = 0;
  bool is_first = true;
  while (start <= s.size()) {
    const size_t nl = s.find('\n', start);
    const std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    const bool add = (is_first ? first : true) && (blank || !line.empty());
    if (!is_first) out += '\n';
    out += (add ? pad : "") + line;
    is_first = false;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return Value(std::move(out));
}

Value f_escape(const Value& v, const CallArgs&) {
  std::string out;
  for (char c : str_of(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(std::move(out));
}

void reject_undefined(const Value& v, const char* filter) {
  // Python's int()/float() on Jinja2's Undefined raise UndefinedError, which the filters let through.
  if (v.is_undefined()) fail(fmt::format("'{}' is undefined (filter '{}')", v.str().empty() ? "value" : v.str(), filter));
}

Value f_int(const Value& v, const CallArgs& a) {
  reject_undefined(v, "int");
  const Value* d = a.get(0, "default");
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return Value(static_cast<int64_t>(v.as_double()));
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string s = text::strip(v.str(), std::nullopt, true, true);
      const int64_t x = std::stoll(s, &used);
      if (used == s.size()) return Value(x);
    } catch (const std::exception&) {
    }
  }
  return d ? *d : Value(int64_t{0});
}

Value f_float(const Value& v, const CallArgs& a) {
  reject_undefined(v, "float");
  const Value* d = a.get(0, "default");
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string s = text::strip(v.str(), std::nullopt, true, true);
      const double x = std::stod(s, &used);
      if (used == s.size()) return Value(x);
    } catch (const std::exception&) {
    }
  }
  return d ? *d : Value(0.0);
}

Value f_list(const Value& v, const CallArgs&) { return Value::list(iterate(v)); }

// Jinja2's title filter is not str.title(): words start after runs of '-', whitespace, '(', '{',
// '[' or '<', and each word gets its first character upper-cased and the rest lower-cased.
Value f_title(const Value& v, const CallArgs&) {
  const std::string s = str_of(v);
  std::string out;
  bool word_start = true;
  for (char c : s) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || c == ' ' || c == '\t' ||
                     c == '\n' || c == '\r' || c == '\v' || c == '\f';
    if (sep) {
      out += c;
      word_start = true;
      continue;
    }
    const std::string one(1, c);
    out += word_start ? text::upper(one) : text::lower(one);
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) word_start = false;
  }
  return Value(std::move(out));
}

Value f_reverse(const Value& v, const CallArgs&) {
  if (v.is_string()) {
    auto cps = text::decode(v.str());
    std::reverse(cps.begin(), cps.end());
    return Value(text::encode(cps));
  }
  List l = iterate(v);
  std::reverse(l.begin(), l.end());
  return Value::list(std::move(l));
}

Value f_sum(const Value& v, const CallArgs& a) {
  if (a.get(0, "attribute")) fail("sum: attribute= is not supported");
  Value acc = a.get(1, "start") ? *a.get(1, "start") : Value(int64_t{0});
  for (const Value& x : iterate(v)) {
    if (!x.is_number() || !acc.is_number()) fail("sum: items must be numbers");
    acc = (x.is_float() || acc.is_float()) ? Value(acc.as_double() + x.as_double()) : Value(acc.as_int() + x.as_int());
  }
  return acc;
}

const std::unordered_map<std::string, FilterFn>& filters() {
  static const std::unordered_map<std::string, FilterFn> f = {
      {"tojson", f_tojson},
      {"default", f_default},
      {"d", f_default},
      {"length", f_length},
      {"count", f_length},
      {"join", f_join},
      {"items", f_items},
      {"first", f_first},
      {"last", f_last},
      {"map", f_map},
      {"unique", f_unique},
      {"indent", f_indent},
      {"escape", f_escape},
      {"e", f_escape},
      {"int", f_int},
      {"float", f_float},
      {"list", f_list},
      {"reverse", f_reverse},
      {"sum", f_sum},
      {"trim", [](const Value& v, const CallArgs& a) {
         const Value* chars = a.get(0, "chars");
         return Value(text::strip(str_of(v), chars && !chars->is_none() ? std::optional<std::string>(chars->to_str())
                                                                         : std::nullopt,
                                  true, true));
       }},
      {"upper", [](const Value& v, const CallArgs&) { return Value(text::upper(str_of(v))); }},
      {"lower", [](const Value& v, const CallArgs&) { return Value(text::lower(str_of(v))); }},
      {"capitalize", [](const Value& v, const CallArgs&) { return Value(text::capitalize(str_of(v))); }},
      {"title", f_title},
      {"string", [](const Value& v, const CallArgs&) { return Value(str_of(v)); }},
      {"safe", [](const Value& v, const CallArgs&) { return v; }},
      {"abs", [](const Value& v, const CallArgs&) {
         if (v.is_float()) return Value(std::fabs(v.as_double()));
         if (v.is_int() || v.is_bool()) return Value(static_cast<int64_t>(std::llabs(v.as_int())));
         fail(fmt::format("bad operand type for abs(): '{}'", v.type_name()));
       }},
      {"replace", [](const Value& v, const CallArgs& a) {
         const Value* o = a.get(0, "old");
         const Value* n = a.get(1, "new");
         const Value* c = a.get(2, "count");
         if (!o || !n) fail("replace needs old and new");
         return Value(text::replace(str_of(v), str_of(*o), str_of(*n), c && !c->is_none() ? c->as_int() : -1));
       }},
      {"select", [](const Value& v, const CallArgs& a) { return select_impl(v, a, true, false); }},
      {"reject", [](const Value& v, const CallArgs& a) { return select_impl(v, a, false, false); }},
      {"selectattr", [](const Value& v, const CallArgs& a) { return select_impl(v, a, true, true); }},
      {"rejectattr", [](const Value& v, const CallArgs& a) { return select_impl(v, a, false, true); }},
  };
  return f;
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& input, const CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) fail(fmt::format("unsupported filter '{}'", name));
  return it->second(input, args);
}

}  // namespace memra::chat
