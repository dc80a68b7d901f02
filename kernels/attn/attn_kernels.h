#pragma once
// Attention over the device KV cache (kernels/kv layout: per layer [n_ctx] rows of
// n_head_kv * head_dim elements, head-major, in the cache type). Query row i sits at position
// (*pos0) + i and sees cache positions [lo, pos] with lo = max(0, pos - window + 1) when
// window > 0, else 0 (causal; the rows' own keys must already be appended). GQA: query head h
// reads kv head h / (n_head / n_head_kv). Scores: s = (q . k) * scale, then
// s = softcap * tanh(s / softcap) when softcap > 0; softmax in f32 with an online max.
// Head dims 32, 64, 128, 256 (128 only under MEMRA_REDUCED_INSTANCES); K and V share head_dim.
// Cache types: F32, F16, Q8_0, Q5_1, Q5_0, Q4_0, Q4_1 (K and V independently).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "quant/types.h"
#include "rope/rope_kernels.h"

namespace memra::cuda {

// How the int8 tile form (kv.planes' decode, attn_i8_tile.h) copies its 16-key quant tiles into shared memory
// (kernels.attn_planes_copy): cp.async through L1 (16 bytes per lane and request) or one tensor copy per tile
// (the copy engine, from a 2-D tensor map of the cache's quant plane, 128-byte swizzle). The same bytes in
// shared memory: the same outputs.
enum class PlanesCopy : uint8_t { Async, TensorTiles };

struct AttnParams {
  const float* q = nullptr;  // [n_tokens, n_head * head_dim]
  int64_t ld_q = 0;
  const void* k_cache = nullptr;
  QType type_k = QType::F16;
  int64_t k_row_bytes = 0;
  const void* v_cache = nullptr;
  QType type_v = QType::F16;
  int64_t v_row_bytes = 0;
  float* out = nullptr;  // [n_tokens, n_head * head_dim]
  int64_t ld_out = 0;
  int n_tokens = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  const int32_t* pos0 = nullptr;  // device; no kernel of the step may write it (read before the PDL wait)
  float scale = 1.0f;
  int window = 0;
  float softcap = 0.0f;
  // The q8_0 split-plane cache rows (kv.planes; kernels/kv/kv_kernels.h, KvAppendParams::scale_plane):
  // 0, or the row's element count (n_head_kv * head_dim), where its f16 scales start. Both or
  // neither. Decode (launch_attn_decode) then takes the int8 tile form (attn_i8_tile.h) whatever
  // the other decode switches say (rope: its own fold); every prefill kernel reads the planes (the
  // staged one through launch_kv_read's f16 output).
  int k_scale_plane = 0;
  int v_scale_plane = 0;
  // The int8 tile form (the planes' decode, attn_i8_tile.h): each warp's 16-key tiles in flight, 1 or 2
  // (kernels.attn_planes_stages); the same bytes.
  int planes_stages = 1;
  // How its quant tiles reach shared memory (kernels.attn_planes_copy; TensorTiles with planes_stages 1
  // only and kv_rows known; the same bytes).
  PlanesCopy planes_copy = PlanesCopy::Async;
  // The cache rows (positions) k_cache and v_cache hold: the bound of the tensor copies' 16-row boxes
  // (0: unknown).
  int64_t kv_rows = 0;
  // Split-K decode only: the key range of each row is cut into n_splits chunks whose partial
  // softmax states land in `workspace` (attn_decode_workspace_floats) and are merged after.
  // A row's result depends on (its q, its key range, n_splits) only, not on n_tokens, so a
  // verify batch reproduces plain decode bit for bit when both use the same n_splits: pick
  // n_splits from the cache capacity (attn_decode_splits), never from the batch.
  int n_splits = 1;
  // Split-K decode only: the fewest keys a split of a row longer than kAttnMinSplitKeys gets
  // (attn::splits_used; rows of up to kAttnMinSplitKeys keys always use one split). Below
  // kAttnMinSplitKeys (16 at least) only where the f16 tile form is taken (attn_decode_f16_mma:
  // 16-key tiles, so 64 keys give each of its 4 warps one tile); launch_attn_decode refuses it
  // elsewhere. Part of the partition, so of a long row's bits (the same for decode and verify).
  int min_split_keys = 128;
  // Split-K decode only, optional: the split extent of the launch's grid (0: n_splits). It must be
  // at least every row's used split count (attn::splits_used; attn_decode_grid_splits gives such an
  // extent for rows of at most len keys): a block past its row's used splits exits before its
  // dependency wait, so a smaller grid leaves out only blocks that do nothing (the same bytes). Why:
  // n_splits is fixed by the cache capacity (66 on an H200 with 8 kv heads), so at 4096 keys half
  // of the blocks and at <= 128 keys 65 of every 66 were empty (kernels.attn_grid_round).
  int grid_splits = 0;
  float* workspace = nullptr;
  // Split-K decode only, optional: also the q8s planes of out for the next mmvs matvec
  // (kernels/matvec/mmvs.h; rows n_tokens x n_head*head_dim, dense), byte-identical to
  // launch_quantize_q8s(out).
  int8_t* q8s_xq = nullptr;
  void* q8s_xds = nullptr;
  // q8s_xq in the interleaved order (kernels/matvec/q8s_order.h, MmvsParams::act_il; n_tokens =
  // 1): the same bytes as launch_quantize_q8s with act_il.
  bool q8s_il = false;
  // Split-K decode (GQA form) only: read the cache byte by byte even where it is aligned for
  // word loads. Same bytes out; kernel-check's reference for the word-load path.
  bool byte_loads = false;
  // Split-K decode (GQA form, K q8_0 with word loads) only: q quantized per 32-element block
  // (d = amax / 127, q = round-to-nearest-even(x / d) as x * (1 / d), int8) and the scores taken
  // as exact int8 dot products per K block, scaled by d_k * d_q in f32 (the numeric class of
  // llama.cpp's quantized-K decode attention). Not bit-identical to the f32 scores: gated by
  // tolerance against its naive twin (kernel-check attn_decode_q8s/*).
  bool q8_scores = false;
  // Split-K decode (GQA form, head_dim 128, q5_1 V, 16-byte aligned rows) only: each warp copies
  // its 32-key tile's V slices into shared memory with cp.async before the scores, so the V
  // latency overlaps the K loads and the score arithmetic; same values, same order (bit-identical
  // to the direct loads: kernel-check attn_decode/v_stage_vs_direct).
  bool v_stage = false;
  // Split-K decode: the combine kernel's old form (every thread loads every split's max and sum
  // in dependent rounds) instead of the default (maxima and sums loaded once per block through
  // shared memory). Same bits (kernel-check attn_decode/combine_smem_vs_direct); for A/B runs.
  bool combine_direct = false;
  // Split-K decode, the shared-memory combine: each thread's values of the first 96 splits
  // requested together with the splits' maxima and sums (one dependent round trip instead of one
  // per 16 splits). Same values, same order: same bytes (kernel-check
  // attn_decode/combine_preload_vs_direct).
  bool combine_preload = false;
  // Split-K decode: a row that uses one split (at most 128 keys, attn::splits_used) is written by
  // the split kernel itself (its merged o / l and q8s blocks, the combine kernel's expressions on
  // the one partial: the same bytes) and the combine kernel's blocks of that row only wait for it
  // and return (kernel-check attn_decode*/... one_split_direct rows).
  bool one_split_direct = false;
  // With one_split_direct: the caller's guarantee that every row of the launch uses one split (at
  // most kAttnMinSplitKeys keys, or n_splits == 1), so no combine kernel is launched at all (the
  // split kernel writes every row; the next kernel depends on it directly). A row of more keys
  // would be left unwritten: the backend sets it from the host's positions only.
  bool rows_one_split = false;
  // A diagnostic for A/B runs (kernels.probe_attn_delay_cycles): every block of the split-plane (int8 tile)
  // decode attention spins this many SM clock cycles after its stores before it exits, so that the
  // launch ends that much later with the same bytes: whether the step waits for the attention's end.
  int probe_delay_cycles = 0;
  // Split-K decode, where attn_decode_pv_mma(p) (int8 scores with V staged: q8_0 K, q5_1 V,
  // head_dim 128; GQA group of 4 or 8): each warp's 32-key tile of P x V on tensor cores
  // (mma.sync m16n8k16, f16 inputs, f32 accumulation): the probabilities and the dequantized V
  // values rounded to f16 (V as one f16 fma of its q5_1 quant, scale and minimum), the G heads
  // as the n = 8 columns. A different numeric class from the f32 FFMA sweep (llama.cpp's
  // tensor-core decode attention's class): gated by tolerance against its naive twin
  // (kernel-check attn_decode_pv16/*); decode == verify still bit for bit (the same code per row).
  bool pv_mma = false;
  // Split-K decode on an f16 K and V cache, head_dim 128, 1 to 8 query heads per kv head (4 only
  // in reduced builds), 16-byte aligned rows (attn_decode_f16_mma): scores and P x V on tensor
  // cores (mma.sync m16n8k16, f32 accumulation). Each warp stages 16-key tiles of K and V head
  // slices in shared memory (cp.async, swizzled 16-byte chunks) and reads them as fragments with
  // ldmatrix (V transposed); q and the probabilities are rounded to f16 (the cache is f16 already).
  // The numeric class of llama.cpp's f16 tensor-core decode attention: gated by tolerance against
  // its naive twin (kernel-check attn_decode_f16mma/*); decode == verify bit for bit.
  bool f16_mma = false;
  // Split-K decode of one token (n_tokens == 1) where attn_decode_rope_fold_applies(p): the work
  // of launch_qk_norm_rope with its K/V append done by this kernel. q is the q projection before
  // its per-head RMSNorm and rotation; every block normalizes and rotates its query heads itself,
  // and the block of the row's last split (the one whose keys end at pos) also normalizes and
  // rotates the new K head (k_src) and quantizes it and the V head (v_src) into the caches at pos,
  // taking that key's score and values from those bytes. Same bytes out (attention, q8s planes,
  // cache rows) as launch_qk_norm_rope with the append followed by this kernel without the fold
  // (kernel-check fused attn_decode_rope/*).
  struct RopeFold {
    bool on = false;
    const float* k_src = nullptr;  // [1, n_head_kv * head_dim]: the K projection before norm and RoPE
    const float* v_src = nullptr;  // [1, n_head_kv * head_dim]
    const float* q_norm = nullptr;  // [head_dim] or null (no head norm)
    const float* k_norm = nullptr;
    float eps = 1e-6f;
    bool neox = true;
    RopeAngles ang;  // full rotation (n_rot == head_dim)
    // With pv_mma and G = 4: each warp's first 32-key tile (its V slices and its keys' q8_0 head slices,
    // by cp.async into shared memory) requested before the dependency wait (rows below pos were
    // written by earlier steps; row pos comes from the kernel's own copies). Same values, same
    // order: same bytes.
    bool prefetch = false;
    // With prefetch taken: every later tile's q8_0 K head slices staged in shared memory as well
    // (coalesced cp.async, each tile's requested while the tile before it is finished) and scored
    // from there instead of one key row per lane from global memory. Same words: same bytes.
    bool stage_k = false;
    // With stage_k taken and NeoX pairs: each tile's online softmax steps the G heads' shuffle
    // trees side by side (the maxima, then the sums) instead of head after head; the same bits
    // (kernel-check fused attn_decode_rope/*_si).
    bool softmax_interleave = false;
    // With softmax_interleave taken by a group of 4 query heads (the group block, not the head
    // split): each tile's int8 scores on the tensor cores (mma m16n8k32, 16 keys x the block's heads
    // per 32-element block) and its softmax in their lane layout; the same bits
    // (kernels/attn/attn_mma_scores.cuh; kernel-check fused attn_decode_rope/*_tcs).
    bool mma_scores = false;
    // With prefetch and stage_k taken (4 or 8 query heads per kv head), head_split 1 or 2: blocks
    // of that many query heads instead of one block per kv head (grid n_splits x n_head /
    // head_split), each block computing its heads' share of the group's work: their q prologue,
    // scores, softmax and P x V (the tensor-core columns of the other heads are zeros), and the
    // group's first block writing the new K/V rows. Every head's values come from the same
    // expressions in the same order as in the group's block: the same bytes (kernel-check fused
    // attn_decode_rope/*_hs, *_hs2). For short rows (few splits), where the group's block is a
    // chain of G heads' work on 8 SMs at depth 0; at depth it reads each K/V tile G / head_split
    // times (the backend's rule: kernels.attn_head_split_keys, kernels.attn_head_pair_keys).
    // 0: the group's block.
    int head_split = 0;
    // The int8 tile form's fold (kv.planes): every query head, new K and V value a block reads after
    // the dependency wait requested before any is normalized (one round trip instead of one per query
    // head of a warp plus one for the new K / V heads). The same values: the same bytes (kernel-check
    // fused attn_decode_rope/*_lf).
    bool loads_first = false;
  } rope;
};

// Head dims this build has kernels for.
bool attn_head_dim_supported(int head_dim);

// Split-K decode attention (small n_tokens: decode, speculative verify).
size_t attn_decode_workspace_floats(int n_tokens, int n_head, int head_dim, int n_splits);
// The fewest keys a split of a decode row gets (attn::splits_used): rows of up to this many keys
// use one split.
constexpr int kAttnMinSplitKeys = 128;
// Splits so that ~blocks_per_sm blocks per SM run at full context (the backend passes
// kernels.attn_blocks_per_sm, default 4), no more than n_ctx / min_split_keys (the launch's
// AttnParams::min_split_keys), at most max_splits (clamped to 1 .. 1024; kernels.attn_max_splits);
// a pure function of its arguments. The count fixes how a row's keys are partitioned
// (attn::splits_used), so the bits of a long row depend on it.
int attn_decode_splits(int n_ctx, int n_head, int n_head_kv, int sm_count, int max_splits,
                       int min_split_keys = kAttnMinSplitKeys, int blocks_per_sm = 4);
// The step-graph key of the trimmed grid below: 0 when round <= 0, -1 for len <= kAttnMinSplitKeys,
// else ceil(len / (kAttnMinSplitKeys * round)).
inline int64_t attn_decode_grid_key(int64_t len, int round) {
  if (round <= 0) return 0;
  if (len <= kAttnMinSplitKeys) return -1;
  const int64_t per = (int64_t)kAttnMinSplitKeys * round;
  return (len + per - 1) / per;
}
// The trimmed grid (AttnParams::grid_splits) of a decode launch whose rows have at most len keys,
// the split partition at min_split_keys = kAttnMinSplitKeys (kernels.attn_grid_round = round): 0
// (n_splits, the untrimmed grid) when round <= 0; 1 for len <= kAttnMinSplitKeys (one split); else
// the used split count rounded up to a multiple of round, at most n_splits, which is
// min(n_splits, round * attn_decode_grid_key(len, round)). A pure function of its arguments: equal
// keys give equal grids for any n_splits, so the key names a captured step graph's launches.
inline int attn_decode_grid_splits(int64_t len, int n_splits, int round) {
  const int64_t key = attn_decode_grid_key(len, round);
  if (key == 0) return 0;
  if (key < 0) return 1;
  const int64_t g = (int64_t)round * key;
  return (int)(g < n_splits ? g : n_splits);
}
// Whether launch_attn_decode(p) reads K or V with aligned word loads (GQA split-K form; K q8_0
// (head_dim >= 64) / f16, V q5_1 (head_dim >= 128) / q8_0 / f16; aligned cache), i.e. whether
// p.byte_loads changes the path.
bool attn_decode_word_loads(const AttnParams& p);
// Whether launch_attn_decode(p) can take p.rope (the fold of q/k norm + RoPE + K/V append): one
// token, the int8-score path with V staged (q8_0 K, q5_1 V, head_dim 128), GQA group of 4 or 8.
bool attn_decode_rope_fold_applies(const AttnParams& p);
// Whether launch_attn_decode(p) takes p.rope.head_split (1 or 2, below the group; the fold with
// prefetch and stage_k, 4 or 8 query heads per kv head; G = 8 only in full builds).
bool attn_decode_head_split(const AttnParams& p);
// Whether launch_attn_decode(p) takes p.rope.softmax_interleave (the fold's staged form with NeoX
// pairs).
bool attn_decode_softmax_interleave(const AttnParams& p);
// Whether launch_attn_decode(p) takes p.rope.mma_scores (the interleaved form's group of 4 heads).
bool attn_decode_mma_scores(const AttnParams& p);
// Whether launch_attn_decode(p) takes the int8 score path (p.q8_scores on a cache it applies to).
bool attn_decode_q8_scores(const AttnParams& p);
// Whether launch_attn_decode(p) stages V through shared memory (p.v_stage where it applies).
bool attn_decode_v_stage(const AttnParams& p);
// Whether launch_attn_decode(p) takes P x V on tensor cores (p.pv_mma where it applies).
bool attn_decode_pv_mma(const AttnParams& p);
// Whether launch_attn_decode(p) takes the f16-cache tensor-core form (p.f16_mma where it applies).
bool attn_decode_f16_mma(const AttnParams& p);
cudaError_t launch_attn_decode(const AttnParams& p, cudaStream_t stream);

// Prefill attention (many query rows). Ignores n_splits/workspace. Two kernels:
//  - tiled: CUDA cores, f32 throughout (8 query rows share f32 K/V tiles); every head dim;
//  - mma: tensor cores, FlashAttention-2 style; Q, K, V and P rounded to f16, f32 accumulation;
//    head dims 64/128/256 (attn_prefill_mma_supported).
// launch_attn_prefill picks mma where supported (attn_prefill_choose), else tiled.
enum class AttnPrefillKernel : int { Tiled = 0, Mma = 1 };
bool attn_prefill_mma_supported(int head_dim);
AttnPrefillKernel attn_prefill_choose(int head_dim);
cudaError_t launch_attn_prefill_tiled(const AttnParams& p, cudaStream_t stream);
cudaError_t launch_attn_prefill_mma(const AttnParams& p, cudaStream_t stream);
cudaError_t launch_attn_prefill(const AttnParams& p, cudaStream_t stream);

}  // namespace memra::cuda
