// GGUF parsing and validation. Every count and length read from the file is checked against
// the bytes that remain before anything is allocated for it.
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf/internal.h"

namespace memra::gguf {
namespace {

using detail::kMaxArrayDepth;

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& name)
      : p_(data), size_(size), name_(name) {}

  size_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  void need(uint64_t n, std::string_view what) const {
    if (n > left())
      MEMRA_FAIL("gguf '{}': truncated: {} at offset {} needs {} bytes, only {} remain", name_,
                 what, pos_, n, left());
  }
  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T x;
    std::memcpy(&x, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return x;
  }
  std::string read_string(std::string_view what) {
    const uint64_t n = read<uint64_t>(what);
    if (n > left())
      MEMRA_FAIL("gguf '{}': {}: string length {} at offset {} exceeds the {} bytes left in the file",
                 name_, what, n, pos_ - 8, left());
    std::string s(reinterpret_cast<const char*>(p_ + pos_), (size_t)n);
    pos_ += n;
    return s;
  }
  // A count of items whose encodings take at least `min_size` bytes each.
  uint64_t read_count(std::string_view what, uint64_t min_size) {
    const uint64_t n = read<uint64_t>(what);
    if (min_size > 0 && n > left() / min_size)
      MEMRA_FAIL("gguf '{}': {} {} at offset {} cannot fit in the {} bytes left in the file "
                 "(each needs at least {} bytes)", name_, what, n, pos_ - 8, left(), min_size);
    return n;
  }

 private:
  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& name_;
};

class Parser {
 public:
  Parser(File::Impl& f) : f_(f), c_(f.data, f.size, f.path) {}

  void run() {
    header();
    for (uint64_t i = 0; i < n_kv_; ++i) key_value(i);
    alignment();
    for (uint64_t i = 0; i < n_tensors_; ++i) tensor_info(i);
    data_section();
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> fs, Args&&... args) {
    MEMRA_FAIL("gguf '{}': {}", f_.path, fmt::format(fs, std::forward<Args>(args)...));
  }

  void header() {
    if (f_.size < 4) fail("truncated: file is {} bytes, too short for the GGUF magic", f_.size);
    const uint32_t magic = c_.read<uint32_t>("magic");
    if (magic != detail::kMagic) {
      std::string shown;
      for (int i = 0; i < 4; ++i) {
        const char ch = (char)(magic >> (8 * i));
        shown += (ch >= 32 && ch < 127) ? ch : '.';
      }
      fail("not a GGUF file: magic is '{}' (0x{:08x}), expected 'GGUF'", shown, magic);
    }
    const uint32_t v = c_.read<uint32_t>("version");
    if (v == 1)
      fail("GGUF version 1 is not supported (it uses 32-bit counts; re-convert the file with a "
           "current converter to get v3)");
    if (v == 0x02000000u || v == 0x03000000u)
      fail("big-endian GGUF (version field 0x{:08x}) is not supported", v);
    if (v != 2 && v != 3) fail("unsupported GGUF version {} (supported: 2 and 3)", v);
    f_.version = v;
    // Bounds by the smallest possible encodings: a tensor info is at least name length (8) +
    // n_dims (4) + type (4) + offset (8); a key/value at least key length (8) + type (4) + 1.
    n_tensors_ = c_.read_count("tensor count", 24);
    n_kv_ = c_.read_count("metadata key/value count", 13);
  }

  Value value(ValueType t, int depth, const std::string& ctx) {
    using VT = ValueType;
    switch (t) {
      case VT::UINT8: return Value::u8(c_.read<uint8_t>(ctx));
      case VT::INT8: return Value::i8(c_.read<int8_t>(ctx));
      case VT::UINT16: return Value::u16(c_.read<uint16_t>(ctx));
      case VT::INT16: return Value::i16(c_.read<int16_t>(ctx));
      case VT::UINT32: return Value::u32(c_.read<uint32_t>(ctx));
      case VT::INT32: return Value::i32(c_.read<int32_t>(ctx));
      case VT::UINT64: return Value::u64(c_.read<uint64_t>(ctx));
      case VT::INT64: return Value::i64(c_.read<int64_t>(ctx));
      case VT::FLOAT32: return Value::f32(c_.read<float>(ctx));
      case VT::FLOAT64: return Value::f64(c_.read<double>(ctx));
      case VT::BOOL: {
        const size_t at = c_.pos();
        const uint8_t b = c_.read<uint8_t>(ctx);
        if (b > 1) fail("{}: BOOL byte at offset {} is {} (must be 0 or 1)", ctx, at, b);
        return Value::boolean(b != 0);
      }
      case VT::STRING: return Value::str(c_.read_string(ctx));
      case VT::ARRAY: {
        if (depth >= kMaxArrayDepth)
          fail("{}: arrays nested deeper than {} levels", ctx, kMaxArrayDepth);
        const size_t at = c_.pos();
        const uint32_t et = c_.read<uint32_t>(ctx + " array element type");
        if (!detail::valid_value_type(et))
          fail("{}: unknown array element type {} at offset {}", ctx, et, at);
        const auto elem = (ValueType)et;
        const uint64_t n = c_.read_count(ctx + " array count", detail::min_encoded_size(elem));
        auto arr = std::make_shared<Array>();
        arr->elem_type = elem;
        arr->items.reserve((size_t)n);
        for (uint64_t i = 0; i < n; ++i) arr->items.push_back(value(elem, depth + 1, ctx));
        Value out;
        out.type = VT::ARRAY;
        out.v = std::move(arr);
        return out;
      }
    }
    fail("{}: unknown value type {}", ctx, (uint32_t)t);
  }

  void key_value(uint64_t i) {
    const size_t at = c_.pos();
    std::string key = c_.read_string(fmt::format("metadata key #{}", i));
    if (key.empty()) fail("metadata key #{} at offset {} is empty", i, at);
    const std::string ctx = fmt::format("metadata key '{}'", key);
    const size_t type_at = c_.pos();
    const uint32_t t = c_.read<uint32_t>(ctx + " value type");
    if (!detail::valid_value_type(t))
      fail("{}: unknown value type {} at offset {}", ctx, t, type_at);
    Value v = value((ValueType)t, 0, ctx);
    if (auto it = f_.kv_index.find(key); it != f_.kv_index.end())
      fail("duplicate metadata key '{}' (entries #{} and #{})", key, it->second, i);
    f_.kv_index.emplace(key, f_.kv.size());
    f_.kv.push_back({std::move(key), std::move(v)});
  }

  void alignment() {
    auto it = f_.kv_index.find(detail::kAlignmentKey);
    if (it == f_.kv_index.end()) return;
    const Value& v = f_.kv[it->second].value;
    if (v.type != ValueType::UINT32)
      fail("{} must be UINT32, found {}", detail::kAlignmentKey, value_type_name(v.type));
    const uint64_t a = v.as_uint();
    if (!detail::is_pow2(a))
      fail("{} = {} is not a non-zero power of two", detail::kAlignmentKey, a);
    f_.alignment = a;
  }

  void tensor_info(uint64_t i) {
    const size_t at = c_.pos();
    TensorInfo t;
    t.name = c_.read_string(fmt::format("tensor info #{} name", i));
    const std::string ctx = fmt::format("tensor '{}' (#{} at offset {})", t.name, i, at);
    const uint32_t n_dims = c_.read<uint32_t>(ctx + " n_dims");
    if (n_dims == 0 || n_dims > detail::kMaxDims)
      fail("{}: n_dims = {} (must be 1..{})", ctx, n_dims, detail::kMaxDims);
    t.ne.resize(n_dims);
    for (auto& d : t.ne) d = c_.read<uint64_t>(ctx + " dims");
    const uint32_t type_id = c_.read<uint32_t>(ctx + " type");
    const QTypeTraits* tr = qtype_by_id(type_id);
    if (!tr) fail("{}: unknown tensor type id {}", ctx, type_id);
    t.type = tr->type;
    t.offset = c_.read<uint64_t>(ctx + " data offset");
    const auto sz = detail::tensor_size(t.ne, t.type, fmt::format("gguf '{}': {}", f_.path, ctx));
    t.n_elements = sz.n_elements;
    t.n_bytes = sz.n_bytes;
    if (t.offset % f_.alignment != 0)
      fail("{}: data offset {} is not a multiple of the alignment {}", ctx, t.offset, f_.alignment);
    if (auto it = f_.tensor_index.find(t.name); it != f_.tensor_index.end())
      fail("duplicate tensor name '{}' (tensor infos #{} and #{})", t.name, it->second, i);
    f_.tensor_index.emplace(t.name, f_.tensors.size());
    f_.tensors.push_back(std::move(t));
  }

  void data_section() {
    if (!detail::align_up(c_.pos(), f_.alignment, &f_.data_offset))
      fail("data section offset overflows");
    if (f_.tensors.empty()) return;  // vocab-only files end right after the metadata
    if (f_.data_offset > f_.size)
      fail("truncated: the tensor data section starts at offset {} but the file is {} bytes",
           f_.data_offset, f_.size);
    const uint64_t avail = f_.size - f_.data_offset;
    std::vector<const TensorInfo*> by_offset;
    by_offset.reserve(f_.tensors.size());
    for (const auto& t : f_.tensors) {
      uint64_t end;
      if (__builtin_add_overflow(t.offset, t.n_bytes, &end) || end > avail)
        fail("truncated data: tensor '{}' occupies [{}, {}) of the data section ({} bytes at file "
             "offset {}), which holds only {} bytes", t.name, t.offset, t.offset + t.n_bytes,
             t.n_bytes, f_.data_offset, avail);
      by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const auto* a = by_offset[i - 1];
      const auto* b = by_offset[i];
      if (a->offset + a->n_bytes > b->offset)
        fail("tensors '{}' [{}, {}) and '{}' [{}, {}) overlap in the data section", a->name,
             a->offset, a->offset + a->n_bytes, b->name, b->offset, b->offset + b->n_bytes);
    }
  }

  File::Impl& f_;
  Cursor c_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

}  // namespace

File::File() : impl_(std::make_unique<Impl>()) {}
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::~File() = default;

File File::parse(const uint8_t* data, size_t size, std::string name) {
  File f;
  f.impl_->path = std::move(name);
  f.impl_->data = data;
  f.impl_->size = size;
  Parser(*f.impl_).run();
  return f;
}

File File::open(const std::string& path) {
  File f;
  f.impl_->path = path;
  f.impl_->map.emplace(path);
  f.impl_->data = f.impl_->map->data();
  f.impl_->size = f.impl_->map->size();
  Parser(*f.impl_).run();
  return f;
}

}  // namespace memra::gguf
