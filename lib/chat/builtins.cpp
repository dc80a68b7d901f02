// Attribute/item access, Python methods on str and dict, tests and global functions.
#include "chat/builtins.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <unordered_map>
#include <unordered_set>

#include "chat/text.h"
#include "core/error.h"

namespace memra::chat {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw EvalError(msg); }

std::string undefined_name(const Value& v) { return v.str().empty() ? "value" : v.str(); }

int64_t int_arg(const Value* v, int64_t fallback, const char* what) {
  if (!v || v->is_none()) return fallback;
  if (!(v->is_int() || v->is_bool())) fail(fmt::format("{} expects an integer, got '{}'", what, v->type_name()));
  return v->as_int();
}

std::optional<std::string> opt_str_arg(const Value* v, const char* what) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) fail(fmt::format("{} expects a string, got '{}'", what, v->type_name()));
  return v->str();
}

const std::string& str_arg(const Value* v, const char* what) {
  if (!v || !v->is_string()) fail(fmt::format("{} expects a string argument", what));
  return v->str();
}

// Python's slice.indices(): clamps start/stop for a sequence of length n.
void slice_indices(int64_t n, const Value& a, const Value& b, const Value& c, int64_t& start, int64_t& stop,
                   int64_t& step) {
  step = c.is_undefined() || c.is_none() ? 1 : int_arg(&c, 1, "slice step");
  if (step == 0) fail("slice step cannot be zero");
  auto norm = [&](const Value& v, int64_t dflt) {
    if (v.is_undefined() || v.is_none()) return dflt;
    int64_t x = int_arg(&v, 0, "slice index");
    if (x < 0) x += n;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  start = norm(a, step > 0 ? 0 : n - 1);
  stop = norm(b, step > 0 ? n : -1);
}

Value str_method(const std::string& self, const std::string& name, const CallArgs& a) {
  if (name == "startswith" || name == "endswith") {
    const Value* p = a.get(0, "prefix");
    if (!p) fail(fmt::format("str.{} needs an argument", name));
    List cands = p->is_list() ? p->items() : List{*p};
    for (const Value& c : cands) {
      if (!c.is_string()) fail(fmt::format("str.{} expects str or tuple of str", name));
      const std::string& x = c.str();
      const bool hit = name == "startswith"
                           ? self.compare(0, x.size(), x) == 0 && self.size() >= x.size()
                           : self.size() >= x.size() && self.compare(self.size() - x.size(), x.size(), x) == 0;
      if (hit) return Value(true);
    }
    return Value(false);
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const auto chars = opt_str_arg(a.get(0, "chars"), "str.strip");
    return Value(text::strip(self, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split") {
    const auto sep = opt_str_arg(a.get(0, "sep"), "str.split");
    if (sep && sep->empty()) fail("str.split: empty separator");
    List out;
    for (auto& part : text::split(self, sep, int_arg(a.get(1, "maxsplit"), -1, "str.split maxsplit")))
      out.emplace_back(std::move(part));
    return Value::list(std::move(out));
  }
  if (name == "upper") return Value(text::upper(self));
  if (name == "lower") return Value(text::lower(self));
  if (name == "title") return Value(text::title(self));
  if (name == "capitalize") return Value(text::capitalize(self));
  if (name == "replace") {
    return Value(text::replace(self, str_arg(a.get(0, "old"), "str.replace"), str_arg(a.get(1, "new"), "str.replace"),
                               int_arg(a.get(2, "count"), -1, "str.replace count")));
  }
  if (name == "find" || name == "count") {
    const std::string& sub = str_arg(a.get(0, "sub"), fmt::format("str.{}", name).c_str());
    if (a.pos.size() > 1) fail(fmt::format("str.{}: start/end arguments are not supported", name));
    if (name == "find") {
      const size_t at = self.find(sub);
      return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(text::length(self.substr(0, at))));
    }
    if (sub.empty()) return Value(static_cast<int64_t>(text::length(self) + 1));
    int64_t n = 0;
    for (size_t p = self.find(sub); p != std::string::npos; p = self.find(sub, p + sub.size())) ++n;
    return Value(n);
  }
  if (name == "join") {
    const Value* it = a.get(0, "iterable");
    if (!it) fail("str.join needs an argument");
    std::string out;
    bool first = true;
    for (const Value& v : iterate(*it)) {
      if (!v.is_string()) fail("str.join: sequence item is not a string");
      if (!first) out += self;
      out += v.str();
      first = false;
    }
    return Value(std::move(out));
  }
  fail(fmt::format("unsupported str method '{}'", name));
}

const std::unordered_set<std::string>& python_str_methods() {
  static const std::unordered_set<std::string> m = {
      "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format",
      "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower",
      "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip",
      "maketrans", "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust",
      "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title",
      "translate", "upper", "zfill"};
  return m;
}

const std::vector<std::string>& str_methods() {
  static const std::vector<std::string> m = {"startswith", "endswith", "strip", "lstrip", "rstrip", "split",
                                             "upper", "lower", "title", "capitalize", "replace", "find",
                                             "count", "join"};
  return m;
}

Value dict_method(const Value& self, const std::string& name, const CallArgs& a) {
  const Dict& d = self.entries();
  if (name == "items") {
    List out;
    for (const auto& [k, v] : d.items) out.push_back(Value::tuple({Value(k), v}));
    return Value::list(std::move(out));
  }
  if (name == "keys") {
    List out;
    for (const auto& kv : d.items) out.emplace_back(kv.first);
    return Value::list(std::move(out));
  }
  if (name == "values") {
    List out;
    for (const auto& kv : d.items) out.push_back(kv.second);
    return Value::list(std::move(out));
  }
  if (name == "get") {
    const Value* k = a.get(0, "key");
    if (!k) fail("dict.get needs a key");
    if (k->is_string())
      if (const Value* v = d.find(k->str())) return *v;
    const Value* dflt = a.get(1, "default");
    return dflt ? *dflt : Value::none();
  }
  fail(fmt::format("unsupported dict method '{}'", name));
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::Undefined:
      fail(fmt::format("'{}' is undefined (reading attribute '{}')", undefined_name(obj), name));
    case Value::Kind::Dict: {
      static const std::vector<std::string> methods = {"items", "keys", "values", "get"};
      if (std::find(methods.begin(), methods.end(), name) != methods.end()) {
        Value self = obj;
        return Value::function("dict." + name, [self, name](const CallArgs& a) { return dict_method(self, name, a); });
      }
      static const std::vector<std::string> unsafe = {"update", "pop", "popitem", "setdefault", "clear", "copy"};
      if (std::find(unsafe.begin(), unsafe.end(), name) != unsafe.end())
        fail(fmt::format("unsupported dict method '{}'", name));
      if (const Value* v = obj.entries().find(name)) return *v;
      return Value::undefined(name);
    }
    case Value::Kind::Namespace: {
      if (const Value* v = obj.entries().find(name)) return *v;
      return Value::undefined(name);
    }
    case Value::Kind::String: {
      const auto& m = str_methods();
      if (std::find(m.begin(), m.end(), name) == m.end()) {
        // A real Python str method we lack must not degrade to Undefined (that would render a
        // different prompt); any other name is Undefined in Jinja2 too.
        if (python_str_methods().count(name)) fail(fmt::format("unsupported method 'str.{}'", name));
        return Value::undefined(name);
      }
      std::string self = obj.str();
      return Value::function("str." + name, [self, name](const CallArgs& a) { return str_method(self, name, a); });
    }
    case Value::Kind::List: {
      static const std::unordered_set<std::string> list_methods = {
          "append", "extend", "insert", "remove", "pop", "clear", "index", "count", "sort", "reverse", "copy"};
      if (list_methods.count(name)) fail(fmt::format("unsupported method 'list.{}'", name));
      return Value::undefined(name);
    }
    case Value::Kind::Function: fail(fmt::format("unsupported attribute '{}' of a function", name));
    default: return Value::undefined(name);  // None/bool/int/float: Jinja2 yields Undefined
  }
}

Value get_item(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::Undefined:
      fail(fmt::format("'{}' is undefined (reading item {})", undefined_name(obj), key.repr()));
    case Value::Kind::Dict:
    case Value::Kind::Namespace: {
      if (key.is_string()) {
        if (const Value* v = obj.entries().find(key.str())) return *v;
        return Value::undefined(key.str());
      }
      return Value::undefined(key.to_str());
    }
    case Value::Kind::List:
    case Value::Kind::String: {
      if (key.is_string()) return get_attr(obj, key.str());
      if (!(key.is_int() || key.is_bool())) fail(fmt::format("indices must be integers, not '{}'", key.type_name()));
      int64_t i = key.as_int();
      if (obj.is_list()) {
        const auto n = static_cast<int64_t>(obj.items().size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined();
        return obj.items()[static_cast<size_t>(i)];
      }
      const auto cps = text::decode(obj.str());
      const auto n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined();
      std::string out;
      text::append_utf8(out, cps[static_cast<size_t>(i)]);
      return Value(std::move(out));
    }
    default: return Value::undefined();
  }
}

Value get_slice(const Value& obj, const Value& a, const Value& b, const Value& c) {
  if (obj.is_undefined()) fail(fmt::format("'{}' is undefined (slicing)", undefined_name(obj)));
  // Jinja2 compiles slices to a plain Python subscript, so slicing None/int/dict is a TypeError.
  if (!obj.is_list() && !obj.is_string()) fail(fmt::format("'{}' object is not subscriptable", obj.type_name()));
  std::vector<char32_t> cps;
  if (obj.is_string()) cps = text::decode(obj.str());
  const auto n = static_cast<int64_t>(obj.is_list() ? obj.items().size() : cps.size());
  int64_t start, stop, step;
  slice_indices(n, a, b, c, start, stop, step);
  List out;
  std::vector<char32_t> sout;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (obj.is_list()) out.push_back(obj.items()[static_cast<size_t>(i)]);
    else sout.push_back(cps[static_cast<size_t>(i)]);
  }
  if (obj.is_list()) return obj.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  return Value(text::encode(sout));
}

bool contains(const Value& hay, const Value& needle) {
  switch (hay.kind()) {
    case Value::Kind::String:
      if (!needle.is_string()) fail(fmt::format("'in <string>' requires string as left operand, not '{}'", needle.type_name()));
      return hay.str().find(needle.str()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : hay.items())
        if (values_equal(v, needle)) return true;
      return false;
    case Value::Kind::Dict:
    case Value::Kind::Namespace:
      if ((needle.is_list() && !needle.is_tuple()) || needle.is_mapping())
        fail(fmt::format("unhashable type: '{}'", needle.type_name()));
      return needle.is_string() && hay.entries().find(needle.str()) != nullptr;
    case Value::Kind::Undefined: return false;
    default: fail(fmt::format("argument of type '{}' is not iterable", hay.type_name()));
  }
}

List iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.items();
    case Value::Kind::Dict: {
      List out;
      for (const auto& kv : v.entries().items) out.emplace_back(kv.first);
      return out;
    }
    case Value::Kind::String: {
      List out;
      for (char32_t cp : text::decode(v.str())) {
        std::string s;
        text::append_utf8(s, cp);
        out.emplace_back(std::move(s));
      }
      return out;
    }
    default: fail(fmt::format("'{}' value is not iterable", v.type_name()));
  }
}

namespace {

using TestFn = bool (*)(const Value&, const CallArgs&);

const Value& test_arg(const CallArgs& a, const char* test) {
  if (a.pos.empty()) fail(fmt::format("test '{}' needs an argument", test));
  return a.pos[0];
}

// Python `value % d == 0` for numbers (floats included: 2.5 is not even, 4.0 is).
bool py_mod_is_zero(const Value& v, const Value& d, const char* test) {
  if (!v.is_number() || !d.is_number())
    fail(fmt::format("test '{}' needs numbers, got '{}' and '{}'", test, v.type_name(), d.type_name()));
  if (d.as_double() == 0) fail(fmt::format("test '{}': modulo by zero", test));
  if (v.is_float() || d.is_float()) {
    double q, m;
    python_float_divmod(v.as_double(), d.as_double(), q, m);
    return m == 0;
  }
  return v.as_int() % d.as_int() == 0;
}

bool is_lower_str(const std::string& s, bool want_lower) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') {
      if (!want_lower) return false;
      cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (want_lower) return false;
      cased = true;
    }
  }
  return cased;
}

const std::unordered_map<std::string, TestFn>& tests() {
  static const std::unordered_map<std::string, TestFn> t = {
      {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
      // Jinja2's Undefined defines __iter__ and __len__, so it is iterable and a sequence.
      {"iterable", [](const Value& v, const CallArgs&) {
         return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
       }},
      {"sequence", [](const Value& v, const CallArgs&) {
         return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
       }},
      // Jinja2's Undefined defines __call__ (to raise), so callable() is true for it.
      {"callable", [](const Value& v, const CallArgs&) { return v.is_function() || v.is_undefined(); }},
      {"even", [](const Value& v, const CallArgs&) { return py_mod_is_zero(v, Value(int64_t{2}), "even"); }},
      {"odd", [](const Value& v, const CallArgs&) {  // value % 2 == 1: 2.5 is neither even nor odd
         if (!v.is_number()) fail(fmt::format("test 'odd' needs a number, got '{}'", v.type_name()));
         if (v.is_float()) {
           double q, m;
           python_float_divmod(v.as_double(), 2.0, q, m);
           return m == 1;
         }
         return ((v.as_int() % 2) + 2) % 2 == 1;
       }},
      {"divisibleby", [](const Value& v, const CallArgs& a) {
         return py_mod_is_zero(v, test_arg(a, "divisibleby"), "divisibleby");
       }},
      {"lower", [](const Value& v, const CallArgs&) { return is_lower_str(v.to_str(), true); }},
      {"upper", [](const Value& v, const CallArgs&) { return is_lower_str(v.to_str(), false); }},
      {"eq", [](const Value& v, const CallArgs& a) { return values_equal(v, test_arg(a, "eq")); }},
      {"ne", [](const Value& v, const CallArgs& a) { return !values_equal(v, test_arg(a, "ne")); }},
      {"lt", [](const Value& v, const CallArgs& a) { return values_compare(v, test_arg(a, "lt")) < 0; }},
      {"le", [](const Value& v, const CallArgs& a) { return values_compare(v, test_arg(a, "le")) <= 0; }},
      {"gt", [](const Value& v, const CallArgs& a) { return values_compare(v, test_arg(a, "gt")) > 0; }},
      {"ge", [](const Value& v, const CallArgs& a) { return values_compare(v, test_arg(a, "ge")) >= 0; }},
      {"in", [](const Value& v, const CallArgs& a) { return contains(test_arg(a, "in"), v); }},
      {"sameas", [](const Value& v, const CallArgs& a) {
         const Value& o = test_arg(a, "sameas");
         if (v.kind() != o.kind()) return false;
         if (v.is_list()) return &v.items() == &o.items();
         if (v.is_mapping()) return &v.entries() == &o.entries();
         return values_equal(v, o);
       }},
  };
  return t;
}

const std::unordered_map<std::string, std::string>& test_aliases() {
  static const std::unordered_map<std::string, std::string> a = {
      {"==", "eq"}, {"equalto", "eq"}, {"!=", "ne"}, {"<", "lt"}, {"lessthan", "lt"}, {"<=", "le"},
      {">", "gt"}, {"greaterthan", "gt"}, {">=", "ge"}};
  return a;
}

}  // namespace

bool has_test(const std::string& name) { return tests().count(name) || test_aliases().count(name); }

bool apply_test(const std::string& name, const Value& input, const CallArgs& args) {
  auto alias = test_aliases().find(name);
  const std::string& key = alias == test_aliases().end() ? name : alias->second;
  auto it = tests().find(key);
  if (it == tests().end()) fail(fmt::format("unsupported test '{}'", name));
  return it->second(input, args);
}

Dict make_globals(std::int64_t now_unix) {
  Dict g;
  g.set("range", Value::function("range", [](const CallArgs& a) {
          if (a.pos.empty() || a.pos.size() > 3) fail("range() takes 1 to 3 arguments");
          int64_t start = 0, stop, step = 1;
          if (a.pos.size() == 1) {
            stop = int_arg(&a.pos[0], 0, "range");
          } else {
            start = int_arg(&a.pos[0], 0, "range");
            stop = int_arg(&a.pos[1], 0, "range");
            if (a.pos.size() == 3) step = int_arg(&a.pos[2], 1, "range");
          }
          if (step == 0) fail("range() step must not be zero");
          List out;
          for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            if (out.size() >= 1000000) fail("range() too large");
            out.emplace_back(i);
          }
          return Value::list(std::move(out));
        }));
  auto kw_dict = [](const CallArgs& a, const char* what) {
    if (!a.pos.empty()) {
      if (a.pos.size() > 1 || !a.pos[0].is_dict()) fail(fmt::format("{}() takes keyword arguments", what));
    }
    Dict d;
    if (!a.pos.empty()) d = a.pos[0].entries();
    for (const auto& [k, v] : a.kw) d.set(k, v);
    return d;
  };
  g.set("namespace", Value::function("namespace", [kw_dict](const CallArgs& a) { return Value::ns(kw_dict(a, "namespace")); }));
  g.set("dict", Value::function("dict", [kw_dict](const CallArgs& a) { return Value::dict(kw_dict(a, "dict")); }));
  g.set("raise_exception", Value::function("raise_exception", [](const CallArgs& a) -> Value {
          fail(fmt::format("template raised an exception: {}", a.pos.empty() ? std::string() : a.pos[0].to_str()));
        }));
  g.set("strftime_now", Value::function("strftime_now", [now_unix](const CallArgs& a) {
          const std::string& f = str_arg(a.get(0, "format"), "strftime_now");
          const std::time_t t = static_cast<std::time_t>(now_unix);
          std::tm tm{};
          gmtime_r(&t, &tm);
          char buf[512];
          const size_t n = std::strftime(buf, sizeof buf, f.c_str(), &tm);
          if (n == 0 && !f.empty()) fail("strftime_now: format produced no output or is too long");
          return Value(std::string(buf, n));
        }));
  return g;
}

}  // namespace memra::chat
