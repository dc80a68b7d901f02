#pragma once
// Prefill attention on tensor cores over K/V rows staged as f16 for the call ("staged mma"):
// the cache rows a call can see, [lo, pos0 + n_tokens) with lo = 0 or the window's start, are
// first dequantized to f16 into caller scratch (one launch_dequantize each for K and V: the weight
// decoder, byte-identical to the CPU's dequantize_row, then rounded to f16), and the kernel
// streams 16-byte cp.async tiles of them through a two-stage shared-memory pipeline with
// ldmatrix fragments (V transposed by ldmatrix.trans, so no transposing stores), the heaviest
// causal query tiles first. Same precision class as launch_attn_prefill_mma (Q, K, V and P
// rounded to f16, f32 accumulation; gated against the same naive twin in kernel-check).
// Why: attn_prefill_mma dequantizes every K/V tile byte by byte in each of the n_head blocks that
// read it and stores V transposed two bytes at a time, with no overlap of loads and mma: 109 us per
// layer at pp512 and 911 us at pp2048 on qwen3-8b (20-37 TFLOP/s), 19% / 34% of the pass.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "attn/attn_kernels.h"

namespace memra::cuda {

bool attn_prefill_staged_supported(int head_dim);
// Scratch for the staged rows of a call at host position pos0 (K then V, 256-byte aligned).
size_t attn_prefill_stage_bytes(const AttnParams& p, int pos0);
// pos0 must equal *p.pos0 (the staged row range is computed on the host from it: not for a
// captured graph whose position changes between replays). stage: attn_prefill_stage_bytes bytes.
cudaError_t launch_attn_prefill_staged(const AttnParams& p, int pos0, void* stage, size_t stage_bytes,
                                       cudaStream_t stream);

}  // namespace memra::cuda
