#pragma once
// The split-K decode attention's 16-key tensor-core tile forms (AttnParams::f16_mma: f16 K/V;
// AttnParams::q8_mma: q8_0 K, q5_1 V), launched by kernels/attn/attn_decode.cu's run_decode in
// place of the GQA kernel; their partials are merged by the same combine kernel.
#include <cuda_runtime_api.h>

#include "attn/attn_common.cuh"

namespace memra::cuda::attn {

// Whether the form applies to a launch of head dim D: f16_mma asked, f16 K and V, D = 128, a group
// of 1 .. 8 query heads per kv head (4 in reduced builds), cache base and rows 16-byte aligned,
// not byte_loads (whatever the RoPE fold: it has no form here, so its predicate says no).
bool f16_mma_applies(const Args& a, int D);
// The same for q8_mma: q8_0 K (rows 8-byte aligned), q5_1 V (16-byte), q 16-byte aligned.
bool q8_mma_applies(const Args& a, int D);
// The split kernel of the form that applies (grid n_splits x n_head_kv x n_tokens); the caller
// launches the combine.
cudaError_t launch_decode_mma(const Args& a, int n_tokens, cudaStream_t s);

}  // namespace memra::cuda::attn
