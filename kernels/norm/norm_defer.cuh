#pragma once
// The deferred norm's per-thread work (kernels.norm_defer), one definition for the two places that
// do it: rms_norm_defer_kernel (norm.cu) and the mmvs launches that build their activation
// themselves (MmvsParams::norm_x, kernels.norm_in_qkv). Thread t of a 128-thread slice takes the
// float4 chunks t + 128 j, j = slice, slice + S, ...: u = x * w is emitted as q8s (8 lanes per
// 32-element block, emit_q8s_block8) and the sum of the squares of x is returned; the warp's xor
// tree of it is the partial (slice, warp). Same operations in the same order wherever it runs:
// the same planes and partials.
#include <cuda_fp16.h>

#include <cstdint>

#include "norm/q8_1_emit.cuh"

namespace memra::cuda {

// Chunk c (floats 4c .. 4c + 3) of a row of `cols` floats; vec: 16-byte loads (aligned rows).
__device__ __forceinline__ float4 load4(const float* row, int c, int cols, bool vec) {
  const int e = 4 * c;
  if (vec && e + 4 <= cols) return reinterpret_cast<const float4*>(row)[c];
  float4 f = make_float4(0.f, 0.f, 0.f, 0.f);
  if (e < cols) f.x = row[e];
  if (e + 1 < cols) f.y = row[e + 1];
  if (e + 2 < cols) f.z = row[e + 2];
  if (e + 3 < cols) f.w = row[e + 3];
  return f;
}

namespace norm_defer {

inline constexpr int kThreads = 128;  // threads of a slice (4 warps: 4 partials per slice)

// The weights of thread t's first chunk in `slice` (requested before a dependency wait: weights are
// never written during a step); ones without weights or past the row.
__device__ __forceinline__ float4 first_w(const float* w, int cols, bool vec, int t, int slice) {
  const int n_j = (cols / 4 + kThreads - 1) / kThreads;
  return w != nullptr && slice < n_j ? load4(w, t + kThreads * slice, cols, vec) : make_float4(1.f, 1.f, 1.f, 1.f);
}

// Thread t's share of slice `slice` of S: the q8s planes of x * w (xq: the row's quants, xds: its
// (d, sum) pairs; il the interleaved order) and its sum of x's squares. w0 = first_w(...). Every lane
// of the warp must call it (the emit's shuffles).
__device__ __forceinline__ float slice_ss(const float* x, const float* w, float4 w0, int cols, bool vec, int t,
                                          int slice, int S, int8_t* xq, float2* xds, bool il) {
  const int lane = t & 31, n_chunks = cols / 4, n_j = (n_chunks + kThreads - 1) / kThreads;
  const bool has_w = w != nullptr;
  const float4 ones = make_float4(1.f, 1.f, 1.f, 1.f);
  float ss = 0.0f;
  for (int j = slice; j < n_j; j += S) {  // warp-uniform: the emit's shuffles see every lane
    const int c = t + kThreads * j;
    const bool valid = c < n_chunks;
    const float4 u = valid ? load4(x, c, cols, vec) : make_float4(0.f, 0.f, 0.f, 0.f);
    const float4 wb = j == slice ? w0 : has_w ? load4(w, c, cols, vec) : ones;
    ss += __fmul_rn(u.x, u.x);
    ss += __fmul_rn(u.y, u.y);
    ss += __fmul_rn(u.z, u.z);
    ss += __fmul_rn(u.w, u.w);
    const float y[4] = {has_w ? __fmul_rn(u.x, wb.x) : u.x, has_w ? __fmul_rn(u.y, wb.y) : u.y,
                        has_w ? __fmul_rn(u.z, wb.z) : u.z, has_w ? __fmul_rn(u.w, wb.w) : u.w};
    emit_q8s_block8(y, lane, valid, xq, 4 * (int64_t)c, il, xds + c / 8);
  }
  return ss;
}

}  // namespace norm_defer
}  // namespace memra::cuda
