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
// Key split (split_tiles > 0): each block takes at most split_tiles key tiles (64 keys; 32 at
// head_dim 256) of one 64-row query tile, so the short causal tiles and the long ones cost
// alike and short prompts or continuation chunks fill the GPU; tiles cut into several chunks
// leave per-row partials (max, sum, unnormalized output) that a second kernel merges in chunk
// order (deterministic). Same precision class; not the bits of the unsplit launch.
// The split for ~4 equal blocks per SM (0: none would help), from the host position pos0.
int attn_prefill_split_tiles(const AttnParams& p, int pos0, int sm_count);
// Scratch for a call at host position pos0: the staged rows (K then V) and, with a split, the
// partials; 256-byte aligned.
size_t attn_prefill_stage_bytes(const AttnParams& p, int pos0, int split_tiles = 0);
// pos0 must equal *p.pos0 (the staged row range is computed on the host from it: not for a
// captured graph whose position changes between replays). stage: attn_prefill_stage_bytes bytes.
cudaError_t launch_attn_prefill_staged(const AttnParams& p, int pos0, void* stage, size_t stage_bytes,
                                       cudaStream_t stream, int split_tiles = 0);

}  // namespace memra::cuda
