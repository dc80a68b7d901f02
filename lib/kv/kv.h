#pragma once
// Host KV cache: one row per (layer, position) holding all kv heads of that position
// ([n_head_kv * head_dim] elements, head-major), stored in type_k / type_v. Quantized types are
// quantized on append and dequantized on read, with the same row quantizer the GPU cache must
// reproduce byte for byte (lib/quant). Rows span all heads so that a 32-element block fits even
// when head_dim is small (stories260K: head_dim 8, 4 kv heads).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "quant/types.h"

namespace memra::kv {

struct KvOptions {
  int n_ctx = 4096;
  QType type_k = QType::F16;
  QType type_v = QType::F16;
  // kv.planes: a GPU backend stores q8_0 K and V rows as split planes (the CPU cache ignores it:
  // the same values in GGUF blocks).
  bool planes = false;
  // kv.planes = auto: a GPU backend sets planes itself where its split-plane form takes every
  // attention layer of the shape and the types (planes must be false then); with type_v_auto
  // (kv.type_v = auto) V is q8_0 where it does. The store's options() are the resolved ones.
  bool planes_auto = false;
  bool type_v_auto = false;
};

struct KvLayerShape {
  int n_head_kv = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  // A recurrent layer (qwen35's Gated DeltaNet): no K/V rows (n_head_kv 0) and this many f32 of
  // state carried from token to token (zeros at the start).
  int64_t state_floats = 0;
  // Sparse-attention indexer keys (MiniMax-M3): idx_dim floats per position kept beside the K/V
  // rows, always in f32 whatever type_k is (llama.cpp's indexer-key cache is f32 too); 0: none.
  int idx_dim = 0;
  // The query heads reading this layer's rows (0: not given) and whether its scores add attention
  // sinks (gpt-oss): what a backend's choice of cache layout may depend on (KvOptions::planes_auto).
  int n_head = 0;
  bool sinks = false;

  bool recurrent() const { return state_floats > 0; }
  int64_t k_row() const { return (int64_t)n_head_kv * head_dim_k; }
  int64_t v_row() const { return (int64_t)n_head_kv * head_dim_v; }
};

struct KvShape {
  std::vector<KvLayerShape> layers;
};

// Types a cache may be stored in: f32, f16, and the row-quantized q8_0 / q5_1 / q4_0 family.
bool is_supported_kv_type(QType t);
// Parses a config spelling ("f32", "f16", "q8_0", "q5_1"); throws naming the accepted values.
QType parse_kv_type(const std::string& name);
// A kv.type_k / kv.type_v setting resolved for a backend: "auto" is K q8_0 / V q5_1 on a GPU
// backend and f16 on the CPU (llama.cpp's default class there); anything else parse_kv_type.
QType resolve_kv_type(const std::string& name, bool is_value, bool gpu);

class KvCache {
 public:
  // Validates the types and that every row length is a multiple of the type's block size.
  KvCache(KvShape shape, KvOptions opts);

  int n_ctx() const { return opts_.n_ctx; }
  int n_layer() const { return (int)shape_.layers.size(); }
  const KvShape& shape() const { return shape_; }
  const KvOptions& options() const { return opts_; }
  size_t bytes() const;

  // Writes n positions [pos0, pos0+n) of one layer. k/v rows are contiguous with strides
  // ld_k / ld_v (floats). Throws when the positions do not fit in n_ctx.
  void write(int layer, int pos0, int n, const float* k, int64_t ld_k, const float* v, int64_t ld_v);
  // Dequantizes positions [pos0, pos0+n) into out (row-major, k_row()/v_row() floats per row).
  void read_k(int layer, int pos0, int n, float* out) const;
  void read_v(int layer, int pos0, int n, float* out) const;
  // Direct f32 rows when the type is F32 (no copy needed), else nullptr.
  const float* k_f32(int layer) const;
  const float* v_f32(int layer) const;
  // Forget everything at positions >= n (speculative rollback; n = 0 clears). A cache with
  // recurrent layers can only be cleared (n = 0) or kept (n >= n_written()): their state has no
  // history to roll back to, and asking for it is an error.
  void truncate(int n);
  // The recurrent layers' states and the length, copied aside / put back (KvStore::save_checkpoint).
  void save_checkpoint();
  void rollback_to_checkpoint();
  // Indexer keys (KvLayerShape::idx_dim) of n positions [pos0, pos0+n), rows ld floats apart.
  void write_index(int layer, int pos0, int n, const float* src, int64_t ld);
  // The layer's indexer-key rows (idx_dim floats per position from position 0), and how many
  // leading positions hold written keys.
  const float* index_keys(int layer) const;
  int index_written(int layer) const;
  // A recurrent layer's state (KvLayerShape::state_floats floats) and the number of tokens it has
  // consumed; the layer's op updates it and then calls advance(layer, pos0 + n).
  float* state(int layer);
  int state_pos(int layer) const;
  void advance(int layer, int n_end);
  bool has_state() const;
  int n_written() const { return n_written_; }

 private:
  KvShape shape_;
  KvOptions opts_;
  std::vector<std::vector<uint8_t>> k_, v_;  // per layer: n_ctx rows
  std::vector<std::vector<float>> state_;    // per layer: state_floats (recurrent layers)
  std::vector<int> state_pos_;               // per layer: tokens the state has consumed
  std::vector<std::vector<float>> idx_;      // per layer: n_ctx rows of idx_dim f32 (indexer keys)
  std::vector<int> idx_written_;             // per layer: leading positions with indexer keys
  std::vector<uint64_t> k_row_bytes_, v_row_bytes_;
  int n_written_ = 0;
  // save_checkpoint's copies (ckpt_n_ < 0: none).
  std::vector<std::vector<float>> ckpt_state_;
  std::vector<int> ckpt_state_pos_;
  int ckpt_n_ = -1;
};

}  // namespace memra::kv
