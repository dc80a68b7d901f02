#pragma once
// The one list of tensor/quant types. Every table in the project (enum, block traits, CPU
// dequantize/quantize, kernel instances, dispatch, tests) is derived from MEMRA_QTYPES.
//
// Columns: X(Name, ggml/GGUF type id, block elements, block bytes, is_quantized)
// Ids are the GGUF tensor type ids (ggml's enum ggml_type). Ids 4, 5, 31-33 and 36-38 were
// removed from ggml and are rejected as unknown. FP8_E4M3 has no ggml id: it is a project type
// (id 4096) documented in lib/quant/README.md; files that use it are memra's alone.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#define MEMRA_QTYPES(X)            \
  X(F32, 0, 1, 4, false)           \
  X(F16, 1, 1, 2, false)           \
  X(Q4_0, 2, 32, 18, true)         \
  X(Q4_1, 3, 32, 20, true)         \
  X(Q5_0, 6, 32, 22, true)         \
  X(Q5_1, 7, 32, 24, true)         \
  X(Q8_0, 8, 32, 34, true)         \
  X(Q8_1, 9, 32, 36, true)         \
  X(Q2_K, 10, 256, 84, true)       \
  X(Q3_K, 11, 256, 110, true)      \
  X(Q4_K, 12, 256, 144, true)      \
  X(Q5_K, 13, 256, 176, true)      \
  X(Q6_K, 14, 256, 210, true)      \
  X(Q8_K, 15, 256, 292, true)      \
  X(IQ2_XXS, 16, 256, 66, true)    \
  X(IQ2_XS, 17, 256, 74, true)     \
  X(IQ3_XXS, 18, 256, 98, true)    \
  X(IQ1_S, 19, 256, 50, true)      \
  X(IQ4_NL, 20, 32, 18, true)      \
  X(IQ3_S, 21, 256, 110, true)     \
  X(IQ2_S, 22, 256, 82, true)      \
  X(IQ4_XS, 23, 256, 136, true)    \
  X(I8, 24, 1, 1, false)           \
  X(I16, 25, 1, 2, false)          \
  X(I32, 26, 1, 4, false)          \
  X(I64, 27, 1, 8, false)          \
  X(F64, 28, 1, 8, false)          \
  X(IQ1_M, 29, 256, 56, true)      \
  X(BF16, 30, 1, 2, false)         \
  X(TQ1_0, 34, 256, 54, true)      \
  X(TQ2_0, 35, 256, 66, true)      \
  X(MXFP4, 39, 32, 17, true)       \
  X(NVFP4, 40, 64, 36, true)       \
  X(Q1_0, 41, 128, 18, true)       \
  X(Q2_0, 42, 64, 18, true)        \
  X(FP8_E4M3, 4096, 1, 1, true)

namespace memra {

enum class QType : uint32_t {
#define MEMRA_X(name, id, blk, bytes, q) name = id,
  MEMRA_QTYPES(MEMRA_X)
#undef MEMRA_X
};

struct QTypeTraits {
  QType type;
  std::string_view name;  // upper case, as in the reference files ("Q4_K")
  uint32_t id;
  uint32_t block_elems;
  uint32_t block_bytes;
  bool quantized;
};

inline constexpr QTypeTraits kQTypeTable[] = {
#define MEMRA_X(name, id, blk, bytes, q) {QType::name, #name, id, blk, bytes, q},
    MEMRA_QTYPES(MEMRA_X)
#undef MEMRA_X
};

// Traits by GGUF type id; nullptr for an id no ggml version defines (or one that was removed).
inline const QTypeTraits* qtype_by_id(uint32_t id) {
  for (const auto& t : kQTypeTable)
    if (t.id == id) return &t;
  return nullptr;
}
inline const QTypeTraits& qtype_traits(QType t) { return *qtype_by_id((uint32_t)t); }
inline std::string_view qtype_name(QType t) { return qtype_traits(t).name; }
// Case-insensitive name lookup ("q4_k", "Q4_K").
std::optional<QType> qtype_from_name(std::string_view name);

// Bytes of a row of n elements; nullopt when n is not a multiple of the block size.
inline std::optional<uint64_t> qtype_row_bytes(QType t, uint64_t n) {
  const auto& tr = qtype_traits(t);
  if (n % tr.block_elems) return std::nullopt;
  return n / tr.block_elems * tr.block_bytes;
}

}  // namespace memra
