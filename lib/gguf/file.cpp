// File accessors and typed metadata getters.
#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf/internal.h"

namespace memra::gguf {

const std::string& File::path() const { return impl_->path; }
uint32_t File::version() const { return impl_->version; }
uint64_t File::alignment() const { return impl_->alignment; }
uint64_t File::data_offset() const { return impl_->data_offset; }
uint64_t File::file_size() const { return impl_->size; }
const std::vector<KeyValue>& File::metadata() const { return impl_->kv; }

const Value* File::find(std::string_view key) const {
  auto it = impl_->kv_index.find(key);
  return it == impl_->kv_index.end() ? nullptr : &impl_->kv[it->second].value;
}

namespace {

const Value& require(const File& f, std::string_view key) {
  const Value* v = f.find(key);
  MEMRA_CHECK(v, "gguf '{}': missing metadata key '{}'", f.path(), key);
  return *v;
}

// Runs a Value conversion, re-throwing its error with the file and key named.
template <typename Fn>
auto convert(const File& f, std::string_view key, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    MEMRA_FAIL("gguf '{}': metadata key '{}': {}", f.path(), key, e.what());
  }
}

const Array& require_array(const File& f, std::string_view key) {
  const Value& v = require(f, key);
  return convert(f, key, [&]() -> const Array& { return v.as_array(); });
}

}  // namespace

std::string File::get_string(std::string_view key) const {
  const Value& v = require(*this, key);
  return convert(*this, key, [&] { return v.as_string(); });
}
int64_t File::get_int(std::string_view key) const {
  const Value& v = require(*this, key);
  return convert(*this, key, [&] { return v.as_int(); });
}
double File::get_float(std::string_view key) const {
  const Value& v = require(*this, key);
  return convert(*this, key, [&] { return v.as_float(); });
}
bool File::get_bool(std::string_view key) const {
  const Value& v = require(*this, key);
  return convert(*this, key, [&] { return v.as_bool(); });
}

std::optional<std::string> File::find_string(std::string_view key) const {
  if (!find(key)) return std::nullopt;
  return get_string(key);
}
std::optional<int64_t> File::find_int(std::string_view key) const {
  if (!find(key)) return std::nullopt;
  return get_int(key);
}
std::optional<double> File::find_float(std::string_view key) const {
  if (!find(key)) return std::nullopt;
  return get_float(key);
}
std::optional<bool> File::find_bool(std::string_view key) const {
  if (!find(key)) return std::nullopt;
  return get_bool(key);
}

std::vector<std::string> File::get_string_array(std::string_view key) const {
  const Array& a = require_array(*this, key);
  std::vector<std::string> out;
  out.reserve(a.items.size());
  for (const auto& it : a.items) out.push_back(convert(*this, key, [&] { return it.as_string(); }));
  return out;
}
std::vector<float> File::get_f32_array(std::string_view key) const {
  const Array& a = require_array(*this, key);
  std::vector<float> out;
  out.reserve(a.items.size());
  for (const auto& it : a.items)
    out.push_back((float)convert(*this, key, [&] { return it.as_float(); }));
  return out;
}
std::vector<int64_t> File::get_int_array(std::string_view key) const {
  const Array& a = require_array(*this, key);
  std::vector<int64_t> out;
  out.reserve(a.items.size());
  for (const auto& it : a.items) out.push_back(convert(*this, key, [&] { return it.as_int(); }));
  return out;
}

const std::vector<TensorInfo>& File::tensors() const { return impl_->tensors; }

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = impl_->tensor_index.find(name);
  return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

const TensorInfo& File::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  MEMRA_CHECK(t, "gguf '{}': no tensor named '{}'", impl_->path, name);
  return *t;
}

const uint8_t* File::tensor_data(const TensorInfo& t) const {
  // Validation guaranteed every listed tensor lies inside the file; a TensorInfo from elsewhere
  // must not be turned into a pointer past the mapping.
  const TensorInfo* own = find_tensor(t.name);
  MEMRA_CHECK(own && own->offset == t.offset && own->n_bytes == t.n_bytes,
              "gguf '{}': tensor '{}' is not a tensor of this file", impl_->path, t.name);
  return impl_->data + impl_->data_offset + own->offset;
}

std::map<std::string, uint64_t> File::type_histogram() const {
  std::map<std::string, uint64_t> h;
  for (const auto& t : impl_->tensors) ++h[std::string(qtype_name(t.type))];
  return h;
}

uint64_t File::tensor_bytes() const {
  uint64_t n = 0;
  for (const auto& t : impl_->tensors) n += t.n_bytes;  // each fits the file: no overflow
  return n;
}

}  // namespace memra::gguf
