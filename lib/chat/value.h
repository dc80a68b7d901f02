#pragma once
// The dynamic value of the chat-template interpreter. It models the Python objects a Jinja2 template
// sees (None, bool, int, float, str, list, dict, namespace, callables) plus Jinja's Undefined, because
// every observable difference (str() of a float, truthiness, 1 == 1.0) changes the rendered prompt.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace memra::chat {

class Value;
using List = std::vector<Value>;

// Insertion-ordered like a Python dict; templates hold a handful of keys, so a linear scan is fine.
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  Value* find(const std::string& key);
  void set(const std::string& key, Value v);
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  const Value* kwarg(const std::string& name) const;
  // Positional index i or keyword `name`, whichever is given (Python's calling convention).
  const Value* get(size_t i, const std::string& name) const;
};

using Function = std::function<Value(const CallArgs&)>;

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Function };

  Value() = default;  // Undefined
  static Value undefined(std::string name = {});
  static Value none();
  Value(bool b);
  Value(int v) : Value(static_cast<std::int64_t>(v)) {}
  Value(std::int64_t v);
  Value(double v);
  Value(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  static Value list(List items = {});
  // A Python tuple: behaves as a list except that it prints as (a, b) and never equals a list.
  static Value tuple(List items = {});
  static Value dict(Dict d = {});
  static Value ns(Dict d = {});
  static Value function(std::string name, Function f);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tuple() const { return kind_ == Kind::List && tuple_; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_namespace() const { return kind_ == Kind::Namespace; }
  bool is_mapping() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }
  bool is_function() const { return kind_ == Kind::Function; }

  bool as_bool() const { return b_; }
  std::int64_t as_int() const;  // bool/int (Python bool is an int)
  double as_double() const;     // bool/int/float
  const std::string& str() const { return s_; }  // String only; also the Undefined's name
  const List& items() const { return *list_; }
  List& items() { return *list_; }
  const Dict& entries() const { return *dict_; }
  Dict& entries() { return *dict_; }
  const Function& fn() const { return *fn_; }
  const std::string& fn_name() const { return s_; }

  bool truthy() const;
  std::string to_str() const;   // Python str()
  std::string repr() const;     // Python repr()
  const char* type_name() const;

 private:
  Kind kind_ = Kind::Undefined;
  bool b_ = false;
  bool tuple_ = false;
  std::int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> fn_;
};

// A failure while evaluating an expression; the interpreter rethrows it as memra::Error with the
// line and column of the expression it came from.
class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

bool values_equal(const Value& a, const Value& b);
// Python ordering (<): numbers with numbers, str with str, list with list; anything else throws.
int values_compare(const Value& a, const Value& b);

struct JsonStyle {
  std::optional<int> indent;  // json.dumps(indent=...)
  bool sort_keys = false;
  std::string item_sep;       // empty: Python's default for the indent setting
  std::string key_sep;
  bool has_separators = false;
};
// json.dumps(v, ensure_ascii=False, ...) as transformers' chat-template `tojson` renders it.
std::string to_json(const Value& v, const JsonStyle& style = {});

std::string python_float_repr(double v);
// Python's float divmod (x % y takes the sign of y; x // y is the matching floor). y != 0.
void python_float_divmod(double x, double y, double& floordiv, double& mod);

}  // namespace memra::chat
