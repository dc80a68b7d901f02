#pragma once
// Decode matvec v2 (variant "mmvq_v2_r<R>"): y[r] = sum_k W[r][k] * x[k] for m = 1, quantized W
// in GGUF block layout, x as q8_1 blocks (launch_quantize_q8_1), same integer dot products and
// per-lane chunk order as v1 (matvec_q.cuh), different memory path:
//   - every weight byte comes in through a 16-byte-aligned 16-byte load (uint4); a warp loads a
//     16-byte-aligned window covering one "pass" of its row (4096 weights = 16 Q4_K/Q6_K
//     superblocks or 128 Q8_0/Q4_0 blocks; a multiple of 16 bytes for all four types) into its
//     shared-memory slot and the lanes decode their chunks from there, so block sizes that are not
//     multiples of 16 (Q6_K 210 B, Q8_0 34 B, Q4_0 18 B) and unaligned row starts cost nothing;
//   - the next pass's loads are issued before the current pass is decoded (register double
//     buffer), 5-9 loads of 16 B per lane in flight;
//   - the q8_1 activations are copied once per CTA into shared memory (global when they do not fit).
// Types: Q4_K, Q6_K, Q8_0, Q4_0 (the qwen3-8b mixes); only Q4_K under MEMRA_REDUCED_INSTANCES.
// Others (and m != 1) return cudaErrorNotSupported; bad parameters cudaErrorInvalidValue.
// Design and predicted gain: bench/notes/matvec-v2.md (unmeasured; not chosen by "auto").
#include <cuda_runtime_api.h>

#include "matvec/matvec.h"

namespace memra::cuda {

// Uses the fields of MatvecParams that a quantized m = 1 matvec needs: w_type, w, w_row_bytes,
// n_rows, n_cols, x_q8_1, y, rows_per_block (1, 2, 4 or 8 warps = rows per CTA). m must be 1;
// ldy is irrelevant for one output row, except in the routed form: with ids set (the MoE decode
// path, kernels.moe_routed_v2) the launch runs n_slots products as launch_matvec's routed form
// does (slot s: expert ids[s]'s matrix, activation row s / x_slot_div, output row s at y + s * ldy;
// an id out of range writes NaN rows), each the bits of the v1 routed product (the same per-lane
// chunk order and shuffle tree).
cudaError_t launch_matvec_v2(const MatvecParams& p, cudaStream_t stream);

// Whether this build has a v2 kernel for the type (host-side, for kernel-check and callers).
bool matvec_v2_built(QType t);

}  // namespace memra::cuda
