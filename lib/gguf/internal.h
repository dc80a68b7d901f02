#pragma once
// Shared between the reader, the writer and describe(); not part of the public API.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "gguf/gguf.h"

namespace memra::gguf::detail {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;
// Nested arrays deeper than this are rejected: real files use none, and an attacker-controlled
// depth would otherwise drive the recursive parser into a stack overflow.
inline constexpr int kMaxArrayDepth = 8;
inline constexpr const char* kAlignmentKey = "general.alignment";

bool valid_value_type(uint32_t t);
// Smallest encoding of one value of type t (a string is its 8-byte length, an array its 4-byte
// element type plus 8-byte count): bounds every count by the bytes left in the file.
uint64_t min_encoded_size(ValueType t);
// Fixed payload size of a scalar type; 0 for STRING and ARRAY.
uint64_t scalar_size(ValueType t);

// Element count and byte size of a tensor, validated (dims non-zero, <= 4 dims, no overflow,
// row length a multiple of the block size). `what` names the tensor in the error.
struct TensorSize {
  uint64_t n_elements;
  uint64_t n_bytes;
};
TensorSize tensor_size(const std::vector<uint64_t>& ne, QType type, const std::string& what);

inline bool align_up(uint64_t x, uint64_t a, uint64_t* out) {
  uint64_t sum;
  if (__builtin_add_overflow(x, a - 1, &sum)) return false;
  *out = sum & ~(a - 1);
  return true;
}
inline bool is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace memra::gguf::detail

namespace memra::gguf {

struct File::Impl {
  std::string path;
  std::optional<MappedFile> map;  // set by open(); parse() borrows the caller's bytes
  const uint8_t* data = nullptr;
  size_t size = 0;
  uint32_t version = 0;
  uint64_t alignment = detail::kDefaultAlignment;
  uint64_t data_offset = 0;
  std::vector<KeyValue> kv;
  std::map<std::string, size_t, std::less<>> kv_index;
  std::vector<TensorInfo> tensors;
  std::map<std::string, size_t, std::less<>> tensor_index;
};

}  // namespace memra::gguf
