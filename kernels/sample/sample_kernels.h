#pragma once
// Device logits -> token. argmax matches memra::argmax (largest value, ties to the smallest
// index, NaN never wins; all-NaN -> 0) bit for bit. The sampling chain runs the arithmetic of
// lib/sample/chain.h (the same source the CPU sampler runs), so it picks the CPU sampler's token
// for the same logits, window, options and draw counter; the documented exception is the last
// ulp of exp/log in double (chain.h). Device limits: top_k must be in [1, kDeviceMaxTopK] when
// sampling (temperature > 0); the top-k selection is K block-wide passes over the vocabulary.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace memra::cuda {

inline constexpr int kDeviceMaxTopK = 1024;
// The largest top_k the CUDA backend's TokenSampler draws on the device (Backend::make_sampler); past
// it the threshold gather often overflows into one block-wide pass per candidate (35 ms at top_k
// 1000 on an H100) and the host sampler is faster (device phase ds44, bench/notes/device-sampler.md).
inline constexpr int kDeviceSamplerTopK = 512;

// out[r] = argmax of row r, for r in [0, n_rows).
struct ArgmaxParams {
  const float* logits = nullptr;
  int64_t ld = 0;
  int n_rows = 0;
  int n_vocab = 0;
  int32_t* out = nullptr;
};
cudaError_t launch_argmax(const ArgmaxParams& p, cudaStream_t stream);

// One row. Penalties are applied to `logits` in place (the buffer is the step's scratch); the
// window and its length live in device memory so a captured graph replays unchanged; the draw
// counter is read and, when a draw happens (temperature > 0), incremented by the kernel.
struct SampleParams {
  float* logits = nullptr;
  int n_vocab = 0;
  const int32_t* window = nullptr;      // device [window_cap] recent tokens (order irrelevant)
  const int32_t* window_len = nullptr;  // device: valid entries (<= window_cap)
  int window_cap = 0;
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float typical_p = 1.0f;
  float repeat_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  uint64_t seed = 0;
  uint64_t* draw_counter = nullptr;  // device
  int32_t* out = nullptr;            // device: the token
};
cudaError_t launch_sample(const SampleParams& p, cudaStream_t stream);

}  // namespace memra::cuda
