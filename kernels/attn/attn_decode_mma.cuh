#pragma once
// The split-K decode attention's f16-cache form on tensor cores over 16-key tiles
// (AttnParams::f16_mma), launched by kernels/attn/attn_decode.cu's run_decode in place of the GQA
// kernel; its partials are merged by the same combine kernel.
#include <cuda_runtime_api.h>

#include "attn/attn_common.cuh"

namespace memra::cuda::attn {

// Whether the form applies to a launch of head dim D: f16_mma asked, f16 K and V, D = 128, a group
// of 1 .. 8 query heads per kv head (4 in reduced builds), cache base and rows 16-byte aligned, q
// 8-byte aligned, not byte_loads (whatever the RoPE fold: it has no f16 form, so its predicate
// says no).
bool f16_mma_applies(const Args& a, int D);
// The split kernel (grid n_splits x n_head_kv x n_tokens); the caller launches the combine.
cudaError_t launch_decode_f16_mma(const Args& a, int n_tokens, cudaStream_t s);

}  // namespace memra::cuda::attn
