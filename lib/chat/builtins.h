#pragma once
// Filters, tests, attribute/item access, Python str/dict methods and global functions of the
// chat-template interpreter. Failures throw EvalError; the interpreter adds the position.
#include <cstdint>
#include <string>

#include "chat/value.h"

namespace memra::chat {

// obj.name with Jinja2's rules: Python attributes/methods first, then dict items; a missing dict key
// is Undefined, attribute access on Undefined fails. Unknown methods fail (no silent Undefined).
Value get_attr(const Value& obj, const std::string& name);
// obj[key]: dict key, list/str index (negative allowed); out of range is Undefined, like Jinja2.
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] with Python semantics (null Values = omitted).
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// `needle in haystack`.
bool contains(const Value& haystack, const Value& needle);
// Elements a for loop or a filter iterates: list items, dict keys, str code points, nothing for Undefined.
List iterate(const Value& v);

bool has_filter(const std::string& name);
bool has_test(const std::string& name);
Value apply_filter(const std::string& name, const Value& input, const CallArgs& args);
bool apply_test(const std::string& name, const Value& input, const CallArgs& args);

// Globals every template sees: range, namespace, dict, raise_exception, strftime_now (UTC clock at
// `now_unix`).
Dict make_globals(std::int64_t now_unix);

}  // namespace memra::chat
