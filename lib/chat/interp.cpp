// Tree-walking evaluator. Scoping follows Jinja2: `for` bodies and macros get their own scope
// (assignments inside do not leak out), `if` does not; namespace() objects are the sanctioned way
// to carry state out of a loop.
#include "chat/interp.h"

#include <cmath>
#include <unordered_map>

#include "chat/builtins.h"
#include "core/error.h"

namespace memra::chat {

namespace {

using K = Node::Kind;

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;

  const Value* lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { Normal, Break, Continue };

// Macro recursion (and runaway templates) must end in an error, not a stack overflow.
constexpr int kMaxDepth = 200;

class Interp {
 public:
  Interp(const std::string& src) : src_(src) {}

  void exec_body(const Node& body, const ScopePtr& scope, std::string& out, Flow& flow) {
    for (const auto& st : body.kids) {
      exec(*st, scope, out, flow);
      if (flow != Flow::Normal) return;
    }
  }

  Value eval(const Node& n, const ScopePtr& s) {
    try {
      return eval_inner(n, s);
    } catch (const EvalError& e) {
      MEMRA_FAIL("chat template: {} at {}", e.what(), describe_pos(src_, n.pos));
    }
  }

 private:
  void exec(const Node& n, const ScopePtr& scope, std::string& out, Flow& flow) {
    switch (n.kind) {
      case K::Text: out += n.name; return;
      case K::Output: out += eval(*n.kids[0], scope).to_str(); return;
      case K::If: {
        const size_t pairs = n.kids.size() / 2;
        for (size_t i = 0; i < pairs; ++i) {
          if (eval(*n.kids[2 * i], scope).truthy()) {
            exec_body(*n.kids[2 * i + 1], scope, out, flow);
            return;
          }
        }
        if (n.kids.size() % 2 == 1) exec_body(*n.kids.back(), scope, out, flow);
        return;
      }
      case K::For: exec_for(n, scope, out, flow); return;
      case K::Set: exec_set(n, scope); return;
      case K::SetBlock: {
        std::string captured;
        Flow f = Flow::Normal;
        exec_body(*n.kids[0], scope, captured, f);
        scope->vars[n.name] = Value(std::move(captured));
        return;
      }
      case K::Macro: define_macro(n, scope); return;
      case K::Break:
      case K::Continue:
        if (loop_depth_ == 0)
          MEMRA_FAIL("chat template: '{}' outside a for loop at {}", n.kind == K::Break ? "break" : "continue",
                     describe_pos(src_, n.pos));
        flow = n.kind == K::Break ? Flow::Break : Flow::Continue;
        return;
      default: MEMRA_FAIL("chat template: internal error: unexpected statement node at {}", describe_pos(src_, n.pos));
    }
  }

  void bind_targets(const Node& n, const std::vector<std::string>& names, const Value& v, Scope& s) {
    if (names.size() == 1) {
      s.vars[names[0]] = v;
      return;
    }
    List parts = (v.is_list() || v.is_string()) ? iterate(v) : List{};
    if (parts.size() != names.size())
      MEMRA_FAIL("chat template: cannot unpack {} into {} names at {}", v.repr(), names.size(),
                 describe_pos(src_, n.pos));
    for (size_t i = 0; i < names.size(); ++i) s.vars[names[i]] = parts[i];
  }

  void exec_for(const Node& n, const ScopePtr& scope, std::string& out, Flow& flow) {
    const Value seq = eval(*n.kids[0], scope);
    List items;
    try {
      items = iterate(seq);
    } catch (const EvalError& e) {
      MEMRA_FAIL("chat template: {} at {}", e.what(), describe_pos(src_, n.kids[0]->pos));
    }
    if (n.kids[1]) {  // {% for x in xs if cond %}: filtering happens before loop.* is computed
      List kept;
      for (const Value& item : items) {
        auto s = std::make_shared<Scope>();
        s->parent = scope;
        bind_targets(n, n.ops, item, *s);
        if (eval(*n.kids[1], s).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (n.kids[3]) exec_body(*n.kids[3], scope, out, flow);
      return;
    }
    ++loop_depth_;
    const auto len = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < len; ++i) {
      auto s = std::make_shared<Scope>();
      s->parent = scope;
      Dict loop;
      loop.set("index", Value(i + 1));
      loop.set("index0", Value(i));
      loop.set("revindex", Value(len - i));
      loop.set("revindex0", Value(len - i - 1));
      loop.set("first", Value(i == 0));
      loop.set("last", Value(i == len - 1));
      loop.set("length", Value(len));
      loop.set("depth", Value(int64_t{1}));
      loop.set("depth0", Value(int64_t{0}));
      loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("previtem"));
      loop.set("nextitem", i + 1 < len ? items[static_cast<size_t>(i + 1)] : Value::undefined("nextitem"));
      loop.set("cycle", Value::function("loop.cycle", [i](const CallArgs& a) {
                 if (a.pos.empty()) throw EvalError("loop.cycle needs at least one argument");
                 return a.pos[static_cast<size_t>(i) % a.pos.size()];
               }));
      s->vars["loop"] = Value::dict(std::move(loop));
      bind_targets(n, n.ops, items[static_cast<size_t>(i)], *s);
      Flow f = Flow::Normal;
      exec_body(*n.kids[2], s, out, f);
      if (f == Flow::Break) break;
    }
    --loop_depth_;
    (void)flow;
  }

  void exec_set(const Node& n, const ScopePtr& scope) {
    Value v = eval(*n.kids[0], scope);
    if (n.set_attr) {
      const Value* target = scope->lookup(n.name);
      if (!target || !target->is_namespace())
        MEMRA_FAIL("chat template: cannot assign attribute '{}' of '{}': it is not a namespace() at {}", n.ops[0],
                   n.name, describe_pos(src_, n.pos));
      Value ns = *target;  // shares the Dict
      ns.entries().set(n.ops[0], std::move(v));
      return;
    }
    if (n.ops.empty()) {
      scope->vars[n.name] = std::move(v);
      return;
    }
    bind_targets(n, n.ops, v, *scope);
  }

  void define_macro(const Node& n, const ScopePtr& scope) {
    const Node* mnode = &n;
    std::weak_ptr<Scope> weak = scope;  // the defining scope owns the macro; avoid a reference cycle
    scope->vars[n.name] = Value::function(n.name, [this, mnode, weak](const CallArgs& a) {
      ScopePtr def = weak.lock();
      if (!def) throw EvalError("macro called after its scope ended");
      return call_macro(*mnode, def, a);
    });
  }

  Value call_macro(const Node& m, const ScopePtr& def, const CallArgs& a) {
    const size_t nparams = m.ops.size();
    if (a.pos.size() > nparams)
      throw EvalError(fmt::format("macro '{}' takes {} arguments, {} given", m.name, nparams, a.pos.size()));
    if (++depth_ > kMaxDepth) {
      depth_ = 0;
      throw EvalError(fmt::format("macro '{}' recursion deeper than {}", m.name, kMaxDepth));
    }
    auto s = std::make_shared<Scope>();
    s->parent = def;
    for (size_t i = 0; i < nparams; ++i) {
      const Value* given = i < a.pos.size() ? &a.pos[i] : a.kwarg(m.ops[i]);
      if (given) s->vars[m.ops[i]] = *given;
      else if (m.kids[i]) s->vars[m.ops[i]] = eval(*m.kids[i], s);
      else s->vars[m.ops[i]] = Value::undefined(m.ops[i]);
    }
    for (const auto& [k, v] : a.kw) {
      bool known = false;
      for (const auto& p : m.ops) known = known || p == k;
      if (!known) throw EvalError(fmt::format("macro '{}' has no parameter '{}'", m.name, k));
    }
    std::string out;
    Flow f = Flow::Normal;
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    exec_body(*m.kids.back(), s, out, f);
    loop_depth_ = saved_loops;
    --depth_;
    return Value(std::move(out));
  }

  CallArgs eval_args(const Node& n, size_t first, const ScopePtr& s) {
    CallArgs a;
    const size_t nkw = n.kw.size();
    const size_t npos_end = n.kids.size() - nkw;
    for (size_t i = first; i < npos_end; ++i) a.pos.push_back(eval(*n.kids[i], s));
    for (size_t i = 0; i < nkw; ++i) a.kw.emplace_back(n.kw[i], eval(*n.kids[npos_end + i], s));
    return a;
  }

  static void require_defined(const Value& v) {
    if (v.is_undefined())
      throw EvalError(fmt::format("'{}' is undefined", v.str().empty() ? "value" : v.str()));
  }

  Value arith(const std::string& op, const Value& a, const Value& b) {
    if (op == "~") return Value(a.to_str() + b.to_str());
    require_defined(a);
    require_defined(b);
    if (op == "+") {
      if (a.is_string() && b.is_string()) return Value(a.str() + b.str());
      if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        List l = a.items();
        l.insert(l.end(), b.items().begin(), b.items().end());
        return a.is_tuple() ? Value::tuple(std::move(l)) : Value::list(std::move(l));
      }
    }
    if (op == "*") {  // sequence repetition, either operand order as in Python
      const bool seq_a = a.is_string() || a.is_list(), seq_b = b.is_string() || b.is_list();
      const bool cnt_a = a.is_int() || a.is_bool(), cnt_b = b.is_int() || b.is_bool();
      if ((seq_a && cnt_b) || (seq_b && cnt_a)) {
        const Value& seq = seq_a ? a : b;
        const int64_t k = std::max<int64_t>(0, (seq_a ? b : a).as_int());
        if (k > 1000000) throw EvalError("sequence repetition too large");
        if (seq.is_string()) {
          std::string out;
          for (int64_t i = 0; i < k; ++i) out += seq.str();
          return Value(std::move(out));
        }
        List l;
        for (int64_t i = 0; i < k; ++i) l.insert(l.end(), seq.items().begin(), seq.items().end());
        return seq.is_tuple() ? Value::tuple(std::move(l)) : Value::list(std::move(l));
      }
    }
    if (op == "%" && a.is_string())
      throw EvalError("unsupported: printf-style string formatting ('str' % ...)");
    if (!a.is_number() || !b.is_number())
      throw EvalError(fmt::format("unsupported operand types for {}: '{}' and '{}'", op, a.type_name(), b.type_name()));
    const bool fl = a.is_float() || b.is_float();
    if (op == "/") {
      if (b.as_double() == 0) throw EvalError("division by zero");
      return Value(a.as_double() / b.as_double());
    }
    if (op == "//" || op == "%") {
      if (b.as_double() == 0) throw EvalError(op == "%" ? "modulo by zero" : "division by zero");
      if (fl) {
        double q, m;
        python_float_divmod(a.as_double(), b.as_double(), q, m);
        return op == "//" ? Value(q) : Value(m);
      }
      const int64_t x = a.as_int(), y = b.as_int();
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;  // Python floors
      return op == "//" ? Value(q) : Value(x - q * y);
    }
    if (op == "**") {
      if (!fl && b.as_int() >= 0) {
        int64_t r = 1;
        for (int64_t i = 0; i < b.as_int(); ++i)
          if (__builtin_mul_overflow(r, a.as_int(), &r)) throw EvalError("integer overflow in ** (beyond int64)");
        return Value(r);
      }
      return Value(std::pow(a.as_double(), b.as_double()));
    }
    if (fl) {
      const double x = a.as_double(), y = b.as_double();
      return Value(op == "+" ? x + y : op == "-" ? x - y : x * y);
    }
    // Python integers are unbounded; ours are int64, so overflow is an error, never a wrapped value.
    const int64_t x = a.as_int(), y = b.as_int();
    int64_t r = 0;
    const bool ovf = op == "+" ? __builtin_add_overflow(x, y, &r)
                     : op == "-" ? __builtin_sub_overflow(x, y, &r)
                                 : __builtin_mul_overflow(x, y, &r);
    if (ovf) throw EvalError(fmt::format("integer overflow in {} (beyond int64)", op));
    return Value(r);
  }

  bool compare(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return values_equal(a, b);
    if (op == "!=") return !values_equal(a, b);
    if (op == "in") return contains(b, a);
    if (op == "notin") return !contains(b, a);
    require_defined(a);
    require_defined(b);
    const int c = values_compare(a, b);
    if (op == "<") return c < 0;
    if (op == ">") return c > 0;
    if (op == "<=") return c <= 0;
    return c >= 0;
  }

  Value eval_inner(const Node& n, const ScopePtr& s) {
    switch (n.kind) {
      case K::Literal: return n.literal;
      case K::Name: {
        const Value* v = s->lookup(n.name);
        return v ? *v : Value::undefined(n.name);
      }
      case K::GetAttr: return get_attr(eval(*n.kids[0], s), n.name);
      case K::GetItem: {
        const Value obj = eval(*n.kids[0], s);
        return get_item(obj, eval(*n.kids[1], s));
      }
      case K::Slice: {
        const Value obj = eval(*n.kids[0], s);
        Value part[3];
        for (int i = 0; i < 3; ++i)
          if (n.kids[static_cast<size_t>(i) + 1]) part[i] = eval(*n.kids[static_cast<size_t>(i) + 1], s);
        return get_slice(obj, part[0], part[1], part[2]);
      }
      case K::Call: {
        const Value fn = eval(*n.kids[0], s);
        const CallArgs args = eval_args(n, 1, s);
        if (fn.is_undefined())
          throw EvalError(fmt::format("'{}' is undefined (called as a function)", fn.str().empty() ? "value" : fn.str()));
        if (!fn.is_function()) throw EvalError(fmt::format("'{}' object is not callable", fn.type_name()));
        return fn.fn()(args);
      }
      case K::Filter: {
        if (!has_filter(n.name)) throw EvalError(fmt::format("unsupported filter '{}'", n.name));
        const Value input = eval(*n.kids[0], s);
        return apply_filter(n.name, input, eval_args(n, 1, s));
      }
      case K::Test: {
        if (!has_test(n.name)) throw EvalError(fmt::format("unsupported test '{}'", n.name));
        const Value input = eval(*n.kids[0], s);
        return Value(apply_test(n.name, input, eval_args(n, 1, s)) != n.negated);
      }
      case K::Unary: {
        const Value v = eval(*n.kids[0], s);
        require_defined(v);
        if (!v.is_number()) throw EvalError(fmt::format("bad operand type for unary {}: '{}'", n.name, v.type_name()));
        if (n.name == "+") return v.is_float() ? Value(v.as_double()) : Value(v.as_int());
        return v.is_float() ? Value(-v.as_double()) : Value(-v.as_int());
      }
      case K::Binary: {
        const Value a = eval(*n.kids[0], s);
        const Value b = eval(*n.kids[1], s);
        return arith(n.name, a, b);
      }
      case K::And: {  // Python returns the deciding operand, not a bool
        Value a = eval(*n.kids[0], s);
        return a.truthy() ? eval(*n.kids[1], s) : a;
      }
      case K::Or: {
        Value a = eval(*n.kids[0], s);
        return a.truthy() ? a : eval(*n.kids[1], s);
      }
      case K::Not: return Value(!eval(*n.kids[0], s).truthy());
      case K::Compare: {
        Value left = eval(*n.kids[0], s);
        for (size_t i = 0; i < n.ops.size(); ++i) {
          Value right = eval(*n.kids[i + 1], s);
          if (!compare(n.ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case K::CondExpr: {
        if (eval(*n.kids[0], s).truthy()) return eval(*n.kids[1], s);
        return n.kids[2] ? eval(*n.kids[2], s) : Value::undefined();
      }
      case K::ListLit:
      case K::TupleLit: {
        List items;
        for (const auto& k : n.kids) items.push_back(eval(*k, s));
        return n.kind == K::TupleLit ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      }
      case K::DictLit: {
        Dict d;
        for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
          const Value k = eval(*n.kids[i], s);
          if (!k.is_string()) throw EvalError(fmt::format("dict keys must be strings here, got '{}'", k.type_name()));
          d.set(k.str(), eval(*n.kids[i + 1], s));
        }
        return Value::dict(std::move(d));
      }
      default: throw EvalError("internal error: statement node in expression");
    }
  }

  const std::string& src_;
  int loop_depth_ = 0;
  int depth_ = 0;
};

}  // namespace

std::string render_program(const Node& root, const std::string& src, const Dict& context, std::int64_t now_unix) {
  auto globals = std::make_shared<Scope>();
  for (auto& [k, v] : make_globals(now_unix).items) globals->vars[k] = v;
  auto top = std::make_shared<Scope>();
  top->parent = globals;
  for (const auto& [k, v] : context.items) top->vars[k] = v;
  Interp in(src);
  std::string out;
  Flow f = Flow::Normal;
  in.exec_body(root, top, out, f);
  return out;
}

}  // namespace memra::chat
