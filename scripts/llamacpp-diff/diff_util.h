#pragma once
// Helpers shared by the llamacpp-diff programs (scripts/llamacpp-diff.sh).
#include <algorithm>
#include <cmath>

#include "llama.h"

namespace llamacpp_diff {

inline int argmax(const float* x, int n) {
  int b = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[b]) b = i;
  return b;
}

// Top-1 minus top-2 logit.
inline double margin(const float* x, int n) {
  const int b = argmax(x, n);
  float s = -INFINITY;
  for (int i = 0; i < n; ++i)
    if (i != b) s = std::max(s, x[i]);
  return x[b] - s;
}

// max|got - ref| / max|ref|
inline double rel_err(const float* ref, const float* got, int n) {
  double mx = 0, d = 0;
  for (int v = 0; v < n; ++v) {
    mx = std::max(mx, (double)std::fabs(ref[v]));
    d = std::max(d, (double)std::fabs(ref[v] - got[v]));
  }
  return d / mx;
}

// The reference records' context: n_ctx 256, the prompt in one ubatch, one sequence, 2 threads;
// defaults = llama.cpp's default cache and attention (F16 KV, flash attention auto), else an F32
// cache with flash attention on (fa) or off.
inline llama_context_params context_params(bool defaults, bool fa = false) {
  auto cp = llama_context_default_params();
  cp.n_ctx = 256;
  cp.n_batch = cp.n_ubatch = 256;
  cp.n_seq_max = 1;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.no_perf = true;
  if (!defaults) {
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = fa ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  }
  return cp;
}

}  // namespace llamacpp_diff
