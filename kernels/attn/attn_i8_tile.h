#pragma once
// The decode attention over a split-plane int8 K / V cache on tensor cores (bench/notes/attn-i8-tile.md;
// issue 7): built as a probe of the depth form, the engine's decode over kv.planes cache rows since the
// fifty-ninth session (launch_attn_decode_planes below). Each key's head slice of K and of V is
// q8_0's content (4 blocks of 32 int8 quants with one f16 scale each) laid out as two planes: the
// quants [pos][kv head][128] (128 bytes, 16-byte aligned: ldmatrix reads them straight into mma
// fragments) and the scales [pos][kv head][4] (8 bytes). The question
// it answers on the device: how fast the 16384-key attention can be when a key's K and V reach the
// tensor cores without dequantization on the way (kernel-check attn_decode_i8tile/*: gated against
// the f64 reference, timed beside the default q8_0 / q5_1 kernel at the same shapes).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "attn/attn_kernels.h"

namespace memra::cuda {

struct AttnI8Planes {
  const int8_t* k_quants = nullptr;     // [n_ctx][n_head_kv][128]
  const uint16_t* k_scales = nullptr;   // [n_ctx][n_head_kv][4] f16 bits, block b of the head slice
  const int8_t* v_quants = nullptr;
  const uint16_t* v_scales = nullptr;
  int64_t n_ctx = 0;  // cache rows (positions) of the planes: the kernel's offsets are 32-bit
  // Bytes between consecutive positions' quant rows and halves between their scale rows: 0 for
  // dense planes (n_head_kv * 128 and n_head_kv * 4); the cache's split-plane rows
  // (AttnParams::k_scale_plane) interleave the two planes per position, row_bytes and row_bytes / 2.
  int64_t quant_row = 0, scale_row = 0;
};

// Whether the probe has a kernel for p: head dim 128, 4 or 8 query heads per kv head, q 4-byte aligned,
// quant planes 16-byte and scale planes 8-byte aligned, no softcap, quant planes under 4 GiB.
// p.k_cache / p.v_cache / the cache types are not read (but for p.rope.on, which only cache rows take:
// attn_cache_planes); p.min_split_keys, p.n_splits, p.workspace, p.combine_preload are (as by the
// decode kernels).
bool attn_decode_i8_tile_applies(const AttnParams& p, const AttnI8Planes& planes);
// The split kernel, then the decode attention's combine kernel (unless one_split_direct and
// rows_one_split), as launch_attn_decode does.
cudaError_t launch_attn_decode_i8_tile(const AttnParams& p, const AttnI8Planes& planes, cudaStream_t stream);

// The tile form's group for a layer of n_head query heads over n_head_kv kv heads of head_dim: 4 or 8
// query heads per kv head at head dim 128, else 0 (no kernel). The layer rule kv.planes = auto asks
// of every attention layer (backend::cuda_kv_options) and the launch rules below apply.
int attn_planes_group(int n_head, int n_head_kv, int head_dim);

// The engine's path for a q8_0 split-plane cache (AttnParams::k_scale_plane, kv.planes): the
// planes of p's cache rows (K and V, p.k_row_bytes apart, n_ctx positions) for the kernel above.
AttnI8Planes attn_cache_planes(const AttnParams& p, int64_t n_ctx);
// Whether launch_attn_decode takes p on the planes (split-plane rows the tile form applies to at
// n_ctx positions, the 128-key split partition; p.rope.on: one token, the fold writing row pos of
// the cache rows, as the default kernels' fold does: the same bytes as launch_qk_norm_rope with its
// append followed by the unfolded launch).
bool attn_decode_planes_applies(const AttnParams& p, int64_t n_ctx);
// The fold's part of that (for the backend's choice before the launch's split count and workspace
// exist): split-plane rows of q8_0 K and V, one token, head dim 128, 4 or 8 query heads per kv head, no
// softcap, p.rope's K and V sources set.
bool attn_decode_planes_fold_applies(const AttnParams& p);
// Whether the fold over split-plane rows takes p.rope.head_split (1: one block per query head, 2: blocks
// of 2; the same bytes per head).
bool attn_decode_planes_head_split(const AttnParams& p);
// launch_attn_decode's route for split-plane rows: the tile form over attn_cache_planes(p, n_ctx),
// n_ctx taken as the largest the 32-bit offsets allow (the kernel reads only rows below pos + 1).
cudaError_t launch_attn_decode_planes(const AttnParams& p, cudaStream_t stream);

}  // namespace memra::cuda
