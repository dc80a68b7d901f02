#include <fmt/ranges.h>

#include <limits>

#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf/internal.h"

namespace memra::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::UINT8: return "UINT8";
    case ValueType::INT8: return "INT8";
    case ValueType::UINT16: return "UINT16";
    case ValueType::INT16: return "INT16";
    case ValueType::UINT32: return "UINT32";
    case ValueType::INT32: return "INT32";
    case ValueType::FLOAT32: return "FLOAT32";
    case ValueType::BOOL: return "BOOL";
    case ValueType::STRING: return "STRING";
    case ValueType::ARRAY: return "ARRAY";
    case ValueType::UINT64: return "UINT64";
    case ValueType::INT64: return "INT64";
    case ValueType::FLOAT64: return "FLOAT64";
  }
  return "INVALID";
}

namespace detail {

bool valid_value_type(uint32_t t) { return t <= (uint32_t)ValueType::FLOAT64; }

uint64_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: return 1;
    case ValueType::UINT16: case ValueType::INT16: return 2;
    case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: return 4;
    case ValueType::UINT64: case ValueType::INT64: case ValueType::FLOAT64: return 8;
    case ValueType::STRING: case ValueType::ARRAY: return 0;
  }
  return 0;
}

uint64_t min_encoded_size(ValueType t) {
  if (t == ValueType::STRING) return 8;
  if (t == ValueType::ARRAY) return 12;
  return scalar_size(t);
}

TensorSize tensor_size(const std::vector<uint64_t>& ne, QType type, const std::string& what) {
  MEMRA_CHECK(!ne.empty() && ne.size() <= kMaxDims, "{}: {} dimensions (must be 1..{})", what,
              ne.size(), kMaxDims);
  constexpr uint64_t kMax = (uint64_t)std::numeric_limits<int64_t>::max();
  uint64_t n = 1;
  for (size_t i = 0; i < ne.size(); ++i) {
    MEMRA_CHECK(ne[i] != 0, "{}: dimension ne[{}] is zero", what, i);
    MEMRA_CHECK(ne[i] <= kMax, "{}: dimension ne[{}] = {} overflows int64", what, i, ne[i]);
    MEMRA_CHECK(!__builtin_mul_overflow(n, ne[i], &n) && n <= kMax,
                "{}: element count overflows int64 (dims {})", what, fmt::join(ne, " x "));
  }
  const auto& tr = qtype_traits(type);
  MEMRA_CHECK(ne[0] % tr.block_elems == 0,
              "{}: row length ne[0] = {} is not a multiple of the {} block size {}", what, ne[0],
              tr.name, tr.block_elems);
  uint64_t bytes = 0;
  MEMRA_CHECK(!__builtin_mul_overflow(n / tr.block_elems, (uint64_t)tr.block_bytes, &bytes),
              "{}: byte size overflows (dims {}, type {})", what, fmt::join(ne, " x "), tr.name);
  return {n, bytes};
}

}  // namespace detail

bool Value::is_integer() const {
  switch (type) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::UINT16: case ValueType::INT16:
    case ValueType::UINT32: case ValueType::INT32: case ValueType::UINT64: case ValueType::INT64:
      return true;
    default: return false;
  }
}

bool Value::is_float() const { return type == ValueType::FLOAT32 || type == ValueType::FLOAT64; }

int64_t Value::as_int() const {
  if (const auto* u = std::get_if<uint64_t>(&v); u && is_integer()) {
    MEMRA_CHECK(*u <= (uint64_t)std::numeric_limits<int64_t>::max(),
                "{} value {} does not fit int64", value_type_name(type), *u);
    return (int64_t)*u;
  }
  if (const auto* i = std::get_if<int64_t>(&v); i && is_integer()) return *i;
  MEMRA_FAIL("expected an integer value, found {}", value_type_name(type));
}

uint64_t Value::as_uint() const {
  if (const auto* u = std::get_if<uint64_t>(&v); u && is_integer()) return *u;
  if (const auto* i = std::get_if<int64_t>(&v); i && is_integer()) {
    MEMRA_CHECK(*i >= 0, "{} value {} is negative, expected an unsigned integer",
                value_type_name(type), *i);
    return (uint64_t)*i;
  }
  MEMRA_FAIL("expected an unsigned integer value, found {}", value_type_name(type));
}

double Value::as_float() const {
  if (const auto* d = std::get_if<double>(&v); d && is_float()) return *d;
  // Integers widen to float: a hyperparameter written as 10000 instead of 10000.0 is still valid.
  if (is_integer()) {
    if (const auto* u = std::get_if<uint64_t>(&v)) return (double)*u;
    if (const auto* i = std::get_if<int64_t>(&v)) return (double)*i;
  }
  MEMRA_FAIL("expected a float value, found {}", value_type_name(type));
}

bool Value::as_bool() const {
  const auto* b = std::get_if<bool>(&v);
  MEMRA_CHECK(b && type == ValueType::BOOL, "expected a BOOL value, found {}", value_type_name(type));
  return *b;
}

const std::string& Value::as_string() const {
  const auto* s = std::get_if<std::string>(&v);
  MEMRA_CHECK(s && type == ValueType::STRING, "expected a STRING value, found {}",
              value_type_name(type));
  return *s;
}

const Array& Value::as_array() const {
  const auto* a = std::get_if<std::shared_ptr<Array>>(&v);
  MEMRA_CHECK(a && *a && type == ValueType::ARRAY, "expected an ARRAY value, found {}",
              value_type_name(type));
  return **a;
}

namespace {
Value make(ValueType t, decltype(Value::v) v) {
  Value x;
  x.type = t;
  x.v = std::move(v);
  return x;
}
}  // namespace

Value Value::u8(uint8_t x) { return make(ValueType::UINT8, (uint64_t)x); }
Value Value::i8(int8_t x) { return make(ValueType::INT8, (int64_t)x); }
Value Value::u16(uint16_t x) { return make(ValueType::UINT16, (uint64_t)x); }
Value Value::i16(int16_t x) { return make(ValueType::INT16, (int64_t)x); }
Value Value::u32(uint32_t x) { return make(ValueType::UINT32, (uint64_t)x); }
Value Value::i32(int32_t x) { return make(ValueType::INT32, (int64_t)x); }
Value Value::u64(uint64_t x) { return make(ValueType::UINT64, x); }
Value Value::i64(int64_t x) { return make(ValueType::INT64, x); }
Value Value::f32(float x) { return make(ValueType::FLOAT32, (double)x); }
Value Value::f64(double x) { return make(ValueType::FLOAT64, x); }
Value Value::boolean(bool x) { return make(ValueType::BOOL, x); }
Value Value::str(std::string s) { return make(ValueType::STRING, std::move(s)); }

Value Value::array(ValueType elem, std::vector<Value> items) {
  for (size_t i = 0; i < items.size(); ++i)
    MEMRA_CHECK(items[i].type == elem, "array item {} is {}, but the array holds {}", i,
                value_type_name(items[i].type), value_type_name(elem));
  auto a = std::make_shared<Array>();
  a->elem_type = elem;
  a->items = std::move(items);
  return make(ValueType::ARRAY, std::move(a));
}

Value Value::string_array(const std::vector<std::string>& items) {
  std::vector<Value> v;
  v.reserve(items.size());
  for (const auto& s : items) v.push_back(str(s));
  return array(ValueType::STRING, std::move(v));
}

}  // namespace memra::gguf
