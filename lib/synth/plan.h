#pragma once
// The tensor plan of a synthetic model: every tensor's name (as llama.cpp's converters write it),
// shape and storage type for a quant mix, in the order llama-quantize writes them. Pure function
// of (Dims, Mix): the byte totals of the full-size presets are checked without writing a file.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "quant/types.h"
#include "synth/preset.h"

namespace memra::synth {

enum class Mix { F16, Q8_0, Q4_0, Q4_K_M, Q6_K, IQ4_XS, NVFP4, FP8, Q5_K_M };

std::string_view mix_name(Mix m);
Mix mix_from_name(std::string_view name);  // throws memra::Error listing the mixes
const std::vector<Mix>& all_mixes();
// general.file_type written for the mix: llama.cpp's llama_ftype value; FP8 has none, so memra
// writes kFileTypeFp8 (files with FP8 tensors are memra's alone).
inline constexpr uint32_t kFileTypeFp8 = 4096;
uint32_t mix_file_type(Mix m);

// How a tensor's values are generated.
enum class Init {
  Weight,      // N(0, 0.02)
  Norm,        // 1 + N(0, 0.02), f32
  Router,      // N(0, 0.02), f32 (ffn_gate_inp stays f32, as llama-quantize leaves it)
  ScaleGrid,   // FP8 companion: f32 per-[128x128] block scale of the tensor just before it
};

struct TensorPlan {
  std::string name;
  std::vector<uint64_t> ne;  // ggml order: ne[0] = row length
  QType type = QType::F32;
  Init init = Init::Weight;
  uint64_t n_elements() const;
  uint64_t rows() const { return ne.empty() ? 0 : n_elements() / ne[0]; }
  uint64_t bytes() const;  // tensor data bytes in `type`
};

struct Plan {
  Dims dims;
  Mix mix = Mix::F16;
  std::vector<TensorPlan> tensors;

  uint64_t tensor_bytes() const;                            // llama-bench's model_size
  uint64_t n_params() const;                                // elements of non-companion tensors
  std::map<std::string, uint64_t> type_histogram() const;   // "Q4_K" -> count
};

// Validates dims, lays out the tensors and assigns types (llama.cpp's per-tensor rules for the
// mix, including its fallback when a row length does not fit the block size); throws
// memra::Error naming the tensor when no storable type exists.
Plan make_plan(const Dims& d, Mix m);

// The one block-side of the FP8 scale grid (DeepSeek-V3/Qwen3-FP8 style 128x128 blocks).
inline constexpr uint64_t kFp8Block = 128;

// Human-readable table: one line per tensor, then the type histogram and byte totals.
std::string format_plan(const Plan& p);

}  // namespace memra::synth
