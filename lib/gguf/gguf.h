#pragma once
// GGUF reader (v2 and v3): mmap, validate everything before use, then typed access.
// Layout facts (the GGUF spec): header {magic "GGUF", u32 version, u64 n_tensors, u64 n_kv},
// n_kv key/values, n_tensors tensor infos {string name, u32 n_dims, u64 ne[n_dims], u32 type,
// u64 offset}, padding to general.alignment (default 32), tensor data. Dims are listed
// fastest-varying first (ne[0] = row length).
//
// open()/parse() validate the whole header before returning, so a File in hand is safe to use:
// magic and version (v1 and big-endian files are refused), every count and string length bounded
// by the bytes left in the file (nothing is allocated from an unchecked count), value types, BOOL
// bytes 0/1, array nesting <= 8, no empty or duplicate keys, general.alignment a UINT32 power of
// two, 1..4 non-zero dims whose element count and byte size fit int64/uint64, ne[0] a multiple of
// the type's block size, known type ids (quant/types.h), unique tensor names, offsets aligned,
// every tensor inside the file and no two overlapping. Errors are memra::Error messages that
// start with "gguf '<path>': " and say what is wrong and where (byte offset, key, tensor).
// A file without tensors (vocab-only) may end right after its metadata: then data_offset() can
// be >= file_size().
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "quant/types.h"

namespace memra::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
std::string_view value_type_name(ValueType t);

struct Value;
struct Array {
  ValueType elem_type = ValueType::UINT8;
  std::vector<Value> items;
};

// One metadata value. Scalars keep their exact GGUF type (so a writer round-trips bytes).
struct Value {
  ValueType type = ValueType::UINT8;
  std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<Array>> v;

  bool is_integer() const;
  bool is_float() const;
  // Conversions with checks; throw memra::Error naming the expected type.
  int64_t as_int() const;
  uint64_t as_uint() const;
  double as_float() const;
  bool as_bool() const;
  const std::string& as_string() const;
  const Array& as_array() const;

  static Value u8(uint8_t x); static Value i8(int8_t x);
  static Value u16(uint16_t x); static Value i16(int16_t x);
  static Value u32(uint32_t x); static Value i32(int32_t x);
  static Value u64(uint64_t x); static Value i64(int64_t x);
  static Value f32(float x); static Value f64(double x);
  static Value boolean(bool x);
  static Value str(std::string s);
  static Value array(ValueType elem, std::vector<Value> items);
  static Value string_array(const std::vector<std::string>& items);
};

struct KeyValue {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> ne;  // ne[0] fastest varying (row length)
  QType type = QType::F32;
  uint64_t offset = 0;       // relative to the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  uint64_t rows() const { return ne.empty() ? 0 : n_elements / ne[0]; }
};

class File {
 public:
  // Opens, maps and validates; throws memra::Error with the path and what is wrong.
  static File open(const std::string& path);
  // Parses and validates an in-memory image (no copy: the caller keeps `data` alive).
  static File parse(const uint8_t* data, size_t size, std::string name = "<memory>");

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  const std::string& path() const;
  uint32_t version() const;
  uint64_t alignment() const;
  uint64_t data_offset() const;  // absolute file offset of the data section
  uint64_t file_size() const;

  const std::vector<KeyValue>& metadata() const;
  const Value* find(std::string_view key) const;
  // Typed getters: get_* throw a memra::Error naming the file and key when it is missing or of
  // an incompatible type; find_* return nullopt when the key is absent (and still throw when it
  // is present with an incompatible type). Integer getters accept every integer type (range-
  // checked); float getters also accept integers; array getters check every element.
  std::string get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::optional<std::string> find_string(std::string_view key) const;
  std::optional<int64_t> find_int(std::string_view key) const;
  std::optional<double> find_float(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<float> get_f32_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const;
  const TensorInfo* find_tensor(std::string_view name) const;
  const TensorInfo& tensor(std::string_view name) const;  // throws when missing
  // Pointer into the mapping (or the parse() buffer): t.n_bytes valid bytes. `t` must be one of
  // this file's tensors (checked by name, offset and size).
  const uint8_t* tensor_data(const TensorInfo& t) const;

  // Histogram of tensor types ("Q4_K" -> count) and total tensor-data bytes.
  std::map<std::string, uint64_t> type_histogram() const;
  uint64_t tensor_bytes() const;

  struct Impl;  // opaque; defined in gguf/internal.h for the parser

 private:
  File();
  std::unique_ptr<Impl> impl_;
};

// Human-readable dump of metadata and tensor table (what `run-gen --info` prints). Long arrays
// are abbreviated to their first elements.
std::string describe(const File& f, size_t max_array_items = 8);

}  // namespace memra::gguf
