#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "chat/text.h"
#include "core/error.h"

namespace memra::chat {

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

Value* Dict::find(const std::string& key) {
  for (auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  if (Value* slot = find(key)) {
    *slot = std::move(v);
    return;
  }
  items.emplace_back(key, std::move(v));
}

const Value* CallArgs::kwarg(const std::string& name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

const Value* CallArgs::get(size_t i, const std::string& name) const {
  if (i < pos.size()) return &pos[i];
  return kwarg(name);
}

Value Value::undefined(std::string name) {
  Value v;
  v.s_ = std::move(name);
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value::Value(bool b) : kind_(Kind::Bool), b_(b), i_(b ? 1 : 0) {}
Value::Value(std::int64_t v) : kind_(Kind::Int), i_(v) {}
Value::Value(double v) : kind_(Kind::Float), f_(v) {}
Value::Value(std::string s) : kind_(Kind::String), s_(std::move(s)) {}

Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = std::make_shared<List>(std::move(items));
  return v;
}

Value Value::tuple(List items) {
  Value v = list(std::move(items));
  v.tuple_ = true;
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::ns(Dict d) {
  Value v = dict(std::move(d));
  v.kind_ = Kind::Namespace;
  return v;
}

Value Value::function(std::string name, Function f) {
  Value v;
  v.kind_ = Kind::Function;
  v.s_ = std::move(name);
  v.fn_ = std::make_shared<Function>(std::move(f));
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      MEMRA_CHECK(u <= static_cast<std::uint64_t>(INT64_MAX), "chat template: integer {} out of range", u);
      return Value(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& e : j) items.push_back(from_json(e));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.set(it.key(), from_json(it.value()));
      return dict(std::move(d));
    }
    default: MEMRA_FAIL("chat template: unsupported JSON value type in template variables");
  }
}

std::int64_t Value::as_int() const { return kind_ == Kind::Bool ? (b_ ? 1 : 0) : i_; }
double Value::as_double() const {
  return kind_ == Kind::Float ? f_ : static_cast<double>(as_int());
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b_;
    case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0.0;
    case Kind::String: return !s_.empty();
    case Kind::List: return !list_->empty();
    case Kind::Dict: return !dict_->items.empty();
    case Kind::Namespace:
    case Kind::Function: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Function: return "function";
  }
  return "?";
}

std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: fixed for 1e-4 <= |v| < 1e16, else d.dddde+XX.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t epos = sci.find('e');
  std::string mant = sci.substr(0, epos);
  const int exp = std::stoi(sci.substr(epos + 1));
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      if (static_cast<int>(digits.size()) <= exp + 1) {
        out += digits + std::string(static_cast<size_t>(exp + 1) - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, static_cast<size_t>(exp + 1)) + "." + digits.substr(static_cast<size_t>(exp + 1));
      }
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  out += exp < 0 ? "e-" : "e+";
  const std::string e = std::to_string(std::abs(exp));
  out += (e.size() < 2 ? "0" : "") + e;
  return out;
}

void python_float_divmod(double x, double y, double& floordiv, double& mod) {
  // CPython's float_divmod, step for step, so results agree to the last bit.
  mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, x / y);
  }
}

namespace {

std::string repr_string(const std::string& s) {
  // Python prefers single quotes unless the text has ' and no ".
  const bool has_sq = s.find('\'') != std::string::npos, has_dq = s.find('"') != std::string::npos;
  const char q = (has_sq && !has_dq) ? '"' : '\'';
  std::string out(1, q);
  for (char32_t cp : text::decode(s)) {
    switch (cp) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (cp == static_cast<char32_t>(q)) {
          out += '\\';
          out += q;
        } else if (cp < 0x20 || cp == 0x7F) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
        } else {
          text::append_utf8(out, cp);
        }
    }
  }
  out += q;
  return out;
}

}  // namespace

std::string Value::repr() const {
  switch (kind_) {
    case Kind::String: return repr_string(s_);
    case Kind::List: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
      if (tuple_) return out + (list_->size() == 1 ? ",)" : ")");
      return out + "]";
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : dict_->items) {
        out += (first ? "" : ", ") + repr_string(k) + ": " + v.repr();
        first = false;
      }
      return out + "}";
    }
    default: return to_str();
  }
}

std::string Value::to_str() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return b_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: return python_float_repr(f_);
    case Kind::String: return s_;
    case Kind::List:
    case Kind::Dict: return repr();
    case Kind::Namespace: {
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, v] : dict_->items) {
        out += (first ? "" : ", ") + repr_string(k) + ": " + v.repr();
        first = false;
      }
      return out + "}>";
    }
    case Kind::Function: return "<function " + s_ + ">";
  }
  return "";
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) {
    const bool amap = a.is_mapping() && b.is_mapping();
    if (!amap) return false;
  }
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.str() == b.str();
    case Value::Kind::List: {
      if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i)
        if (!values_equal(a.items()[i], b.items()[i])) return false;
      return true;
    }
    case Value::Kind::Dict:
    case Value::Kind::Namespace: {
      if (a.kind() != b.kind()) return false;
      if (a.kind() == Value::Kind::Namespace) return &a.entries() == &b.entries();
      if (a.entries().items.size() != b.entries().items.size()) return false;
      for (const auto& [k, v] : a.entries().items) {
        const Value* o = b.entries().find(k);
        if (!o || !values_equal(v, *o)) return false;
      }
      return true;
    }
    case Value::Kind::Function: return &a.fn() == &b.fn();
    default: return false;
  }
}

int values_compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    const auto x = a.as_int(), y = b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order equals code point order, which is what Python compares.
    const int c = a.str().compare(b.str());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const size_t n = std::min(a.items().size(), b.items().size());
    for (size_t i = 0; i < n; ++i) {
      if (values_equal(a.items()[i], b.items()[i])) continue;
      return values_compare(a.items()[i], b.items()[i]);
    }
    return a.items().size() < b.items().size() ? -1 : (a.items().size() > b.items().size() ? 1 : 0);
  }
  throw EvalError(fmt::format("cannot compare '{}' with '{}' using an ordering operator", a.type_name(),
                              b.type_name()));
}

namespace {

void json_string(std::string& out, const std::string& s) {
  // ensure_ascii=False: only '"', '\\' and control characters are escaped.
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (u < 0x20) out += fmt::format("\\u{:04x}", u);
        else out += c;
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, const JsonStyle& st, int depth) {
  const std::string item_sep = st.has_separators ? st.item_sep : (st.indent ? "," : ", ");
  const std::string key_sep = st.has_separators ? st.key_sep : ": ";
  auto newline = [&](int d) {
    if (st.indent) {
      out += '\n';
      out.append(static_cast<size_t>(std::max(0, *st.indent) * d), ' ');
    }
  };
  switch (v.kind()) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: {
      const double f = v.as_double();
      if (std::isnan(f)) out += "NaN";
      else if (std::isinf(f)) out += f > 0 ? "Infinity" : "-Infinity";
      else out += python_float_repr(f);
      return;
    }
    case Value::Kind::String: json_string(out, v.str()); return;
    case Value::Kind::List: {
      if (v.items().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_value(out, v.items()[i], st, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (v.entries().items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> order;
      for (const auto& kv : v.entries().items) order.push_back(&kv);
      if (st.sort_keys)
        std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t i = 0; i < order.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_string(out, order[i]->first);
        out += key_sep;
        json_value(out, order[i]->second, st, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default:
      throw EvalError(fmt::format("tojson: object of type '{}' is not JSON serializable", v.type_name()));
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  json_value(out, v, style, 0);
  return out;
}

}  // namespace memra::chat
