// Streaming GGUF writer and rewrite().
#include "gguf/writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/sha256.h"
#include "gguf/internal.h"

namespace memra::gguf {
namespace {

class Buf {
 public:
  void raw(const void* p, size_t n) { s_.append(static_cast<const char*>(p), n); }
  template <typename T>
  void put(T x) { raw(&x, sizeof(T)); }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    raw(s.data(), s.size());
  }
  void pad_to(uint64_t a) {
    while (s_.size() % a) s_.push_back('\0');
  }
  const std::string& bytes() const { return s_; }

 private:
  std::string s_;
};

// The variant alternative a Value of each GGUF type must hold (what the factories store).
template <typename T>
T held(const Value& v, const std::string& ctx) {
  const T* p = std::get_if<T>(&v.v);
  MEMRA_CHECK(p, "gguf writer: {}: value of type {} holds the wrong C++ type", ctx,
              value_type_name(v.type));
  return *p;
}

void payload(Buf& b, const Value& v, const std::string& ctx, int depth) {
  using VT = ValueType;
  switch (v.type) {
    case VT::UINT8: b.put<uint8_t>((uint8_t)held<uint64_t>(v, ctx)); return;
    case VT::INT8: b.put<int8_t>((int8_t)held<int64_t>(v, ctx)); return;
    case VT::UINT16: b.put<uint16_t>((uint16_t)held<uint64_t>(v, ctx)); return;
    case VT::INT16: b.put<int16_t>((int16_t)held<int64_t>(v, ctx)); return;
    case VT::UINT32: b.put<uint32_t>((uint32_t)held<uint64_t>(v, ctx)); return;
    case VT::INT32: b.put<int32_t>((int32_t)held<int64_t>(v, ctx)); return;
    case VT::UINT64: b.put<uint64_t>(held<uint64_t>(v, ctx)); return;
    case VT::INT64: b.put<int64_t>(held<int64_t>(v, ctx)); return;
    case VT::FLOAT32: b.put<float>((float)held<double>(v, ctx)); return;
    case VT::FLOAT64: b.put<double>(held<double>(v, ctx)); return;
    case VT::BOOL: b.put<uint8_t>(held<bool>(v, ctx) ? 1 : 0); return;
    case VT::STRING: b.str(held<std::string>(v, ctx)); return;
    case VT::ARRAY: {
      MEMRA_CHECK(depth < detail::kMaxArrayDepth, "gguf writer: {}: arrays nested deeper than {}",
                  ctx, detail::kMaxArrayDepth);
      const auto a = held<std::shared_ptr<Array>>(v, ctx);
      MEMRA_CHECK(a, "gguf writer: {}: null array", ctx);
      b.put<uint32_t>((uint32_t)a->elem_type);
      b.put<uint64_t>(a->items.size());
      for (size_t i = 0; i < a->items.size(); ++i) {
        MEMRA_CHECK(a->items[i].type == a->elem_type,
                    "gguf writer: {}: array item {} is {}, but the array holds {}", ctx, i,
                    value_type_name(a->items[i].type), value_type_name(a->elem_type));
        payload(b, a->items[i], ctx, depth + 1);
      }
      return;
    }
  }
  MEMRA_FAIL("gguf writer: {}: invalid value type {}", ctx, (uint32_t)v.type);
}

}  // namespace

struct Writer::Impl {
  std::string path;
  FILE* f = nullptr;
  std::vector<TensorDecl> decls;
  std::vector<uint64_t> bytes;
  uint64_t alignment = detail::kDefaultAlignment;
  size_t cur = 0;            // tensor receiving data
  uint64_t cur_written = 0;  // bytes of it received so far
  bool finished = false;
  std::optional<Sha256> hash;  // of every byte written, when asked for
  std::string digest;          // hash's hex digest once finished

  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f) != n)
      MEMRA_FAIL("gguf writer: writing '{}' failed: {}", path, std::strerror(errno));
    if (hash) hash->update(p, n);
  }
  void pad(uint64_t n_bytes) {
    static const char zeros[256] = {};
    uint64_t rem = (alignment - n_bytes % alignment) % alignment;
    while (rem) {
      const size_t k = (size_t)std::min<uint64_t>(rem, sizeof(zeros));
      write(zeros, k);
      rem -= k;
    }
  }
};

Writer::Writer(const std::string& path, std::vector<KeyValue> kv, std::vector<TensorDecl> tensors,
               uint32_t version, bool hash)
    : impl_(std::make_unique<Impl>()) {
  auto& w = *impl_;
  w.path = path;
  if (hash) w.hash.emplace();
  MEMRA_CHECK(version == 2 || version == 3, "gguf writer '{}': version {} (must be 2 or 3)", path,
              version);
  std::set<std::string_view> keys;
  for (const auto& e : kv) {
    MEMRA_CHECK(!e.key.empty(), "gguf writer '{}': empty metadata key", path);
    MEMRA_CHECK(keys.insert(e.key).second, "gguf writer '{}': duplicate metadata key '{}'", path,
                e.key);
    if (e.key == detail::kAlignmentKey) {
      MEMRA_CHECK(e.value.type == ValueType::UINT32, "gguf writer '{}': {} must be UINT32, got {}",
                  path, e.key, value_type_name(e.value.type));
      w.alignment = e.value.as_uint();
      MEMRA_CHECK(detail::is_pow2(w.alignment),
                  "gguf writer '{}': {} = {} is not a non-zero power of two", path, e.key,
                  w.alignment);
    }
  }
  std::set<std::string_view> names;
  for (const auto& t : tensors) {
    MEMRA_CHECK(names.insert(t.name).second, "gguf writer '{}': duplicate tensor name '{}'", path,
                t.name);
    MEMRA_CHECK(qtype_by_id((uint32_t)t.type), "gguf writer '{}': tensor '{}' has unknown type {}",
                path, t.name, (uint32_t)t.type);
    w.bytes.push_back(
        detail::tensor_size(t.ne, t.type, fmt::format("gguf writer '{}': tensor '{}'", path, t.name))
            .n_bytes);
  }

  Buf b;
  b.put<uint32_t>(detail::kMagic);
  b.put<uint32_t>(version);
  b.put<uint64_t>(tensors.size());
  b.put<uint64_t>(kv.size());
  for (const auto& e : kv) {
    b.str(e.key);
    b.put<uint32_t>((uint32_t)e.value.type);
    payload(b, e.value, fmt::format("metadata key '{}'", e.key), 0);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    b.str(t.name);
    b.put<uint32_t>((uint32_t)t.ne.size());
    for (uint64_t d : t.ne) b.put<uint64_t>(d);
    b.put<uint32_t>((uint32_t)t.type);
    b.put<uint64_t>(offset);
    MEMRA_CHECK(detail::align_up(offset + w.bytes[i], w.alignment, &offset),
                "gguf writer '{}': tensor data size overflows", path);
  }
  // A file without tensors ends right after its metadata (as the vocab-only files do).
  if (!tensors.empty()) b.pad_to(w.alignment);
  w.decls = std::move(tensors);

  w.f = std::fopen(path.c_str(), "wb");
  MEMRA_CHECK(w.f, "gguf writer: cannot create '{}': {}", path, std::strerror(errno));
  w.write(b.bytes().data(), b.bytes().size());
}

Writer::~Writer() {
  if (!impl_->f) return;
  std::fclose(impl_->f);
  // An unfinished file is incomplete and would fail validation later; do not leave it behind.
  if (!impl_->finished) std::remove(impl_->path.c_str());
}

uint64_t Writer::tensor_bytes(size_t i) const {
  MEMRA_CHECK(i < impl_->bytes.size(), "gguf writer '{}': tensor index {} out of range ({})",
              impl_->path, i, impl_->bytes.size());
  return impl_->bytes[i];
}

void Writer::write_tensor_data(const void* data, size_t n) {
  auto& w = *impl_;
  MEMRA_CHECK(w.f && !w.finished, "gguf writer '{}': already finished", w.path);
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    MEMRA_CHECK(w.cur < w.decls.size(),
                "gguf writer '{}': {} more bytes of tensor data than the {} declared tensors hold",
                w.path, n, w.decls.size());
    const uint64_t take = std::min<uint64_t>(n, w.bytes[w.cur] - w.cur_written);
    w.write(p, (size_t)take);
    p += take;
    n -= (size_t)take;
    w.cur_written += take;
    if (w.cur_written == w.bytes[w.cur]) {
      w.pad(w.bytes[w.cur]);
      ++w.cur;
      w.cur_written = 0;
    }
  }
}

void Writer::finish() {
  auto& w = *impl_;
  MEMRA_CHECK(w.f && !w.finished, "gguf writer '{}': already finished", w.path);
  MEMRA_CHECK(w.cur == w.decls.size(), "gguf writer '{}': tensor '{}' received {} of its {} bytes",
              w.path, w.cur < w.decls.size() ? w.decls[w.cur].name : "", w.cur_written,
              w.cur < w.bytes.size() ? w.bytes[w.cur] : 0);
  const bool flush_ok = std::fflush(w.f) == 0;
  const int e1 = errno;
  const bool close_ok = std::fclose(w.f) == 0;
  const int e2 = errno;
  w.f = nullptr;
  if (!flush_ok || !close_ok) {
    std::remove(w.path.c_str());  // a file whose tail may be missing must not look finished
    MEMRA_FAIL("gguf writer: finishing '{}' failed: {}", w.path, std::strerror(flush_ok ? e2 : e1));
  }
  w.finished = true;
  if (w.hash) w.digest = w.hash->finish_hex();
}

std::string Writer::sha256_hex() const {
  MEMRA_CHECK(impl_->hash && impl_->finished, "gguf writer '{}': no digest (constructed without hash, or not finished)",
              impl_->path);
  return impl_->digest;
}

void rewrite(const File& f, const std::string& out_path) {
  std::vector<TensorDecl> decls;
  decls.reserve(f.tensors().size());
  for (const auto& t : f.tensors()) decls.push_back({t.name, t.ne, t.type});
  Writer w(out_path, f.metadata(), std::move(decls), f.version());
  for (const auto& t : f.tensors()) w.write_tensor_data(f.tensor_data(t), (size_t)t.n_bytes);
  w.finish();
}

}  // namespace memra::gguf
