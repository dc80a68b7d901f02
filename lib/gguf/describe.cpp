// describe(): what `run-gen --info` prints.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "gguf/gguf.h"

namespace memra::gguf {
namespace {

// Long strings (chat templates) are cut so the table stays readable.
constexpr size_t kMaxStringChars = 96;

std::string quote(const std::string& s) {
  std::string out = "\"";
  const size_t n = std::min(s.size(), kMaxStringChars);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = (unsigned char)s[i];
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '"' || c == '\\') { out += '\\'; out += (char)c; }
    else if (c < 32 || c == 127) out += fmt::format("\\x{:02x}", c);
    else out += (char)c;  // UTF-8 bytes pass through
  }
  out += '"';
  if (s.size() > n) out += fmt::format("...({} bytes)", s.size());
  return out;
}

std::string scalar(const Value& v) {
  switch (v.type) {
    case ValueType::STRING: return quote(v.as_string());
    case ValueType::BOOL: return v.as_bool() ? "true" : "false";
    case ValueType::FLOAT32: return fmt::format("{}", (float)v.as_float());
    case ValueType::FLOAT64: return fmt::format("{}", v.as_float());
    case ValueType::ARRAY: return "?";
    default:
      return std::holds_alternative<uint64_t>(v.v) ? fmt::format("{}", std::get<uint64_t>(v.v))
                                                   : fmt::format("{}", std::get<int64_t>(v.v));
  }
}

std::string render(const Value& v, size_t max_items) {
  if (v.type != ValueType::ARRAY) return scalar(v);
  const Array& a = v.as_array();
  std::string out = fmt::format("[{} x {}] [", value_type_name(a.elem_type), a.items.size());
  const size_t n = std::min(a.items.size(), max_items);
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    out += render(a.items[i], max_items);
  }
  if (a.items.size() > n) out += fmt::format(", ... +{} more", a.items.size() - n);
  return out + "]";
}

}  // namespace

std::string describe(const File& f, size_t max_array_items) {
  std::string out;
  auto arch = f.find("general.architecture");
  out += fmt::format("{}: GGUF v{}, {} bytes, architecture {}\n", f.path(), f.version(),
                     f.file_size(),
                     arch && arch->type == ValueType::STRING ? arch->as_string() : "(none)");
  std::vector<std::string> mix;
  for (const auto& [name, n] : f.type_histogram()) mix.push_back(fmt::format("{} x{}", name, n));
  out += fmt::format("alignment {}, data offset {}, {} tensors ({} bytes: {}), {} metadata keys\n",
                     f.alignment(), f.data_offset(), f.tensors().size(), f.tensor_bytes(),
                     mix.empty() ? "none" : fmt::format("{}", fmt::join(mix, ", ")),
                     f.metadata().size());

  out += "\nmetadata:\n";
  size_t key_w = 0;
  for (const auto& kv : f.metadata()) key_w = std::max(key_w, kv.key.size());
  for (const auto& kv : f.metadata())
    out += fmt::format("  {:<{}}  {:<7}  {}\n", kv.key, key_w, value_type_name(kv.value.type),
                       render(kv.value, max_array_items));

  if (f.tensors().empty()) return out + "\ntensors: none\n";
  size_t name_w = 4;
  for (const auto& t : f.tensors()) name_w = std::max(name_w, t.name.size());
  out += fmt::format("\ntensors:\n  {:>4}  {:<{}}  {:<8}  {:<22}  {:>12}  {:>12}\n", "#", "name",
                     name_w, "type", "shape (ne0 first)", "offset", "bytes");
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& t = f.tensors()[i];
    out += fmt::format("  {:>4}  {:<{}}  {:<8}  {:<22}  {:>12}  {:>12}\n", i, t.name, name_w,
                       qtype_name(t.type), fmt::format("[{}]", fmt::join(t.ne, ", ")), t.offset,
                       t.n_bytes);
  }
  return out;
}

}  // namespace memra::gguf
