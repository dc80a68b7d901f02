#pragma once
// The physical floor of a decode step and of a prefill batch, counted from the tensor list: the
// figure every benchmark row is divided by. Decode roofline = bytes one step must read / 4.8 TB/s
// (the H200 datasheet; the measured streaming-read ceiling is 4.51 TB/s, DEVICE.md).
//
// Bytes a decode step reads:
//  - every weight tensor except token_embd (one row of it is read: negligible), but token_embd
//    counts in full when there is no output.weight (tied embeddings: it is the output matrix);
//  - for MoE expert tensors (*_exps), n_expert_used / n_expert of the tensor (the experts one
//    token selects);
//  - the KV cache at its configured types: depth positions x layers x (K row + V row).
// Prefill FLOPs: 2 x (matmul weight elements, experts scaled by used/total, output included)
// per token, plus attention 4 x n_head x head_dim x (context seen) per layer.
#include <cstdint>
#include <string>
#include <vector>

#include "quant/types.h"

namespace memra::gguf {
class File;
}

namespace memra::perf {

inline constexpr double kH200BandwidthBytesPerS = 4.8e12;     // datasheet HBM3e
inline constexpr double kH200MeasuredReadBytesPerS = 4.51e12; // DEVICE.md streaming read
inline constexpr double kH200DenseBf16FlopPerS = 989e12;      // datasheet dense bf16
inline constexpr double kH200DenseInt8OpPerS = 1979e12;       // datasheet dense int8

struct TensorDesc {
  std::string name;
  QType type = QType::F32;
  std::vector<uint64_t> ne;
  uint64_t bytes = 0;
  uint64_t elements() const;
};

struct ModelShape {
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int n_expert = 0;       // 0: dense
  int n_expert_used = 0;
};

struct KvTypes {
  QType k = QType::Q8_0;
  QType v = QType::Q5_1;
};

// Bytes of one cache row of `dim` elements stored as `t` (block-rounded).
double kv_row_bytes(QType t, int dim);

struct DecodeBytes {
  double weights = 0;  // per token
  double kv = 0;       // per token at the given depth
  double total() const { return weights + kv; }
};

DecodeBytes decode_bytes(const std::vector<TensorDesc>& tensors, const ModelShape& s, const KvTypes& kv,
                         int64_t depth);
// FLOPs of a prefill of n tokens starting at depth (causal: token i sees depth + i + 1 keys).
double prefill_flops(const std::vector<TensorDesc>& tensors, const ModelShape& s, int64_t n, int64_t depth);

// From a GGUF file: its tensors and its hparams (<arch>.block_count, attention.head_count(_kv),
// key_length/value_length (default n_embd / n_head), expert_count/expert_used_count).
std::vector<TensorDesc> tensors_of(const gguf::File& f);
ModelShape shape_of(const gguf::File& f);

}  // namespace memra::perf
