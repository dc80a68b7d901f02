#pragma once
// "mmvs": the decode matvec on split-plane weights (kernels/matvec/split_layout.h) and split q8
// activations, y[j][r] = sum_k W[r][k] * x[j][k] for m = 1..8 activation rows.
//
// Why: the GGUF blocks of Q4_0 (18 B), Q8_0 (34 B) and Q6_K (210 B) are only 2-byte aligned, so a
// kernel reading them in place issues 2-byte loads (v1 "mmvq": 9 LDG.U16 per Q4_0 chunk) and the
// load path, not DRAM, sets its speed (0.24-0.46 of 4.8 TB/s measured, bench/notes/matvec-v2.md).
// Here every weight load is an aligned 16-byte LDG (L1::no_allocate, so L1 keeps the
// activations), and a thread's unit of work ("task") is 64 weights:
//   Q4_K: one quarter superblock (2 qs granules + the 16-byte header shared by 4 lanes);
//   Q6_K: one quarter superblock (ql 2x16 B, qh 16 B, 8 scale bytes; d from the d plane);
//   Q8_0: two blocks (4 granules; 2 halves of d); Q4_0: two blocks (2 granules; 2 halves of d);
//   Q5_K: one quarter superblock (2 qs granules + a 48-byte aux entry shared by 4 lanes: the header
//   and the four tasks' 8-byte words of fifth bits); IQ4_XS: one quarter superblock (2 granules of
//   codebook indices in element order + the 8-byte header shared by 4 lanes).
// In the interleaved copy (the default) the granules of tasks 32g .. 32g + 31 lie side by side,
// so each load instruction of a warp reads one contiguous 512-byte run (split_layout.h).
// Lane l of a row's warp takes tasks l, l+32, ... in increasing order, two tasks' loads in flight
// at once; one warp per row, 4 rows per CTA, except rows longer than 64 tasks (Q4_K/Q6_K/Q8_0,
// split_k): 2 or 4 warps per row, sub-warp s taking the task groups s, s + wpr, ... and the
// partials summed in sub-warp order. The per-row arithmetic (exact int dp4a sums per 16 or 32
// weights, then explicitly rounded f32 scale products and sums, the row's partition a function
// of k) does not depend on m, so a row's result is bit-identical at every m (decode == verify;
// gated in kernel-check "mmvs_id").
//
// Activations ("q8s"): xq int8 [m][k] (row stride k; one row may instead be in the interleaved
// order of q8s_order.h, MmvsParams::act_il), xds float2 [m][k/32] = {d, sum of the 32 quants}
// with d the f16-rounded q8_1 scale: the q8_1 numeric class (same quants and scale as
// launch_quantize_q8_1), the min term of Q4_K from the exact quant sum.
//
// Optional GLU pair: with w2 set, y = act(W x) * (W2 x) (SwiGLU / GEGLU with the gate/up rows of
// one row index in the same warp), bit-identical to two matvecs followed by launch_glu.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "matvec/q8s_order.h"
#include "quant/types.h"

namespace memra::cuda {

inline constexpr int kMmvsMaxM = 8;

struct MmvsParams {
  QType w_type = QType::Q4_K;
  bool interleaved = true;    // body order of every matrix of the launch (split_layout.h)
  bool split_k = true;        // rows over 64 tasks served by 2-4 warps, not Q4_0 (mmvs_task.cuh warps_per_row)
  int split_max_warps = 4;    // 2 or 4: the most warps per row (rows over 128 tasks take this many)
  int split_min_tasks = 65;   // >= 65: rows of fewer tasks stay on one warp (kernels.mmvs_split_min_k / 64)
  const void* w = nullptr;    // body plane (blocked Q4_K: the dense GGUF rows), 16-byte aligned
  const void* w_d = nullptr;  // d plane (Q4_0, Q8_0, Q6_K), 4-byte aligned
  const void* w_aux = nullptr;  // aux plane (interleaved Q4_K, Q6_K; Q5_K; IQ4_XS 8-byte), 16-byte aligned
  const void* w2 = nullptr;   // optional GLU partner (same type and shape), or null
  const void* w2_d = nullptr;
  const void* w2_aux = nullptr;
  int glu = 0;                // with w2: 1 = SiLU(W x) * W2 x, 2 = GELU-tanh(W x) * W2 x
  int64_t n_rows = 0;
  int64_t n_cols = 0;         // multiple of 64 (and of 256 for K-quants)
  int m = 1;
  const int8_t* xq = nullptr;  // m x n_cols
  const void* xds = nullptr;   // m x (n_cols/32) float2 {d, sum q}
  float* y = nullptr;          // m rows, stride ldy
  int64_t ldy = 0;             // 0 = n_rows
  // Up to two more matrices of the same type and n_cols on the same input in the same launch
  // (q, k, v projections): segment s has its own weights, rows and output. Not with glu.
  int n_extra = 0;
  struct Segment {
    const void* w = nullptr;
    const void* w_d = nullptr;
    const void* w_aux = nullptr;
    int64_t n_rows = 0;
    float* y = nullptr;
    int64_t ldy = 0;  // 0 = n_rows
    bool type2 = false;  // a matrix of w_type2 (see below), not w_type
  } extra[2];
  // Mixed weight types in one launch (kernels.mmvs_mixed_types; the q/k/v of a layer whose v is
  // Q6_K and q, k Q4_K or Q5_K, or v Q5_K and q, k IQ4_XS): the extra segments flagged type2 hold w_type2 matrices. Each row runs
  // the Task code and warps per row of its own type, the same operations in the same order as a
  // launch of that type alone, so the same bits. Only m = 1 plain launches of the pairs
  // mmvs_pair_ok() accepts; the flagged segments come last and the first of them starts a CTA.
  QType w_type2 = QType::Q6_K;
  // Register cap of the m = 1 launches: the kernel instance compiled for at least this many
  // 4-warp CTAs per SM (0 = the compiler's choice; 6, 8 or 12), for plain / GLU launches. Same
  // operations in the same order: the same bits; only the registers (and spills) differ.
  int min_blocks = 0;
  int min_blocks_glu = 0;
  // Where the weights of a lane's first tasks are requested: before the PDL wait (true) or after
  // it. Timing only: the same bits.
  bool preload = true;
  // The activation (xq) in the interleaved q8s order (q8s_order.h: granule c of task 32 g + l at
  // byte 2048 g + 512 c + 16 l; xq then spans q8s::il_row_bytes(n_cols) bytes), so a warp's
  // activation loads are contiguous 512-byte runs instead of a 64-byte lane stride
  // (kernels.mmvs_act_il). m = 1 only (else NotSupported); the mixed-type pair at min_blocks 0 or
  // 6 as without it. Same values, same operations: the same bits.
  bool act_il = false;
  // With act_il: the activation in the Q6_K variant of the interleaved order (q8s_order.h
  // il_q6k: each granule of a Q6_K task where the interleaved order puts the task's own granules,
  // so the Q6_K warp loads are whole 512-byte runs too; kernels.mmvs_act_il_q6k). Plain launches
  // of Q6_K rows only (no GLU, no extra segments; else NotSupported). Same bits.
  bool act_il_q6k = false;
  // Optional residual epilogue (plain launches only: glu = 0, n_extra = 0): y[j][r] =
  // residual[j][r] + (W x)[j][r], one f32 add (round to nearest) of the same two values that
  // add_rms_norm adds, so the same bits as the matvec followed by that add. y may be residual
  // (the residual stream updated in place: each element is read and written by one lane).
  const float* residual = nullptr;
  int64_t ld_residual = 0;  // 0 = ldy
  // Row pairs (kernels.mmvs_row_pairs): each warp serves rows r and r + n_rows / 2 together, the
  // two rows' tasks of a lane loaded at once and dotted against one activation load (the GLU's
  // two-matrix loop), so twice the weight bytes in flight per lane and half the activation loads
  // per weight. Each row gets the plain launch's operations in its order (and the residual
  // epilogue): the same bits. Plain m = 1 launches with act_il (not act_il_q6k), an even n_rows,
  // min_blocks 0, 5 or 6; else cudaErrorNotSupported. With extra segments of the same type (not
  // w_type2; q/k/v, kernels.mmvs_row_pairs_qkv) each matrix is paired within itself (rows r and
  // r + its n_rows / 2), every segment's n_rows even, min_blocks 0 (the only instances); with
  // w_type2 segments (the mixed q/k/v launch) only Q4_K rows two tasks per row in flight and Q6_K
  // rows one (row_pair_one_task false, row_pair_one_task2 true), the type-2 rows' first half
  // starting a CTA (else cudaErrorInvalidValue). Verify rows (m = 2..8, kernels.mmvs_row_pairs_verify):
  // plain launches of one matrix or of q/k/v segments of one type, the plain activation order (not
  // act_il), min_blocks 0, two tasks per row (not row_pair_one_task), no GLU; each row the m launch's
  // bits (its per-lane task order and trees per activation row).
  bool row_pairs = false;
  // With row_pairs: one task per row in flight per lane instead of two (kernels.mmvs_row_pairs_one_task),
  // the plain launch's registers for two rows: the same bytes in flight per lane as the plain
  // launch, one activation load for both rows' tasks. The lane's tasks in the same order: same bits.
  // A SiLU GLU launch (glu = 1) takes row_pairs with row_pair_one_task only (kernels.mmvs_glu_pairs):
  // rows r and r + n_rows / 2 of both matrices, one task each in flight (the GLU's four loads per
  // lane), one activation load for the four; each output as the GLU writes it, capped by
  // min_blocks_glu (0, 5 or 6). GELU (glu = 2) pairs: cudaErrorNotSupported.
  bool row_pair_one_task = false;
  bool row_pair_one_task2 = false;  // the w_type2 rows' form in a paired mixed launch (see row_pairs)
  // Row quads (kernels.mmvs_qkv_quads): 1 or 2 (tasks per row in flight per lane); 0 off. Each warp
  // serves rows r + c * n / 4 (c = 0..3) of its matrix (n its rows; with extra segments each matrix
  // quartered within itself), the four rows' tasks loaded together and dotted against one
  // activation load: a quarter of the plain launch's CTAs, so a q/k/v launch of qwen3-8b's shapes
  // (6144 rows) is 384 CTAs, one wave, with all (2) or half (1) of its weights requested before
  // the PDL wait (the mixed launch's Q6_K rows hold one task at either value). Instances compiled
  // for at least 3 (two tasks) or 4 (one task) CTAs per SM
  // (min_blocks is not read). Each row gets the plain launch's operations in its order: the same
  // bits. m = 1, act_il (not act_il_q6k), no GLU, residual or row_pairs, every segment's n_rows a
  // multiple of 4; one type of Q4_K, Q4_0 or Q8_0, or the mixed Q4_K + Q6_K launch (the Q6_K
  // quarters starting a CTA); else cudaErrorNotSupported / cudaErrorInvalidValue.
  int row_quads = 0;
  // The deferred norm's input (RmsNormDeferParams, kernels.norm_defer): the activation planes are
  // those of u = x * w_norm, and the product wanted is the one of s * u with s = 1 / sqrtf(sum /
  // n_cols + eps), sum the norm_ss_n partials (norm_math.cuh defer_lane_sum: lane l sums partials
  // l, l + 32, ..., then the xor tree: one order, so every row gets the same s). Each row's dot products are multiplied by s
  // (IEEE) before the epilogue, the GLU's activation and the row pairs included. At m > 1 (verify
  // batches: the plain order, uncapped) activation row j has its own norm_ss_n partials at norm_ss +
  // j * norm_ss_n, loaded at the epilogue, and each row gets the bits of the m = 1 launch (decode ==
  // verify). m = 1 needs act_il (not act_il_q6k) and min_blocks (of the launch's kind) 0, 5 or 6; no
  // residual; 1 <= norm_ss_n <= kNormDeferMaxPartials (256); else cudaErrorInvalidValue / cudaErrorNotSupported. Null: no
  // scale, and the instances without the scale's code.
  const float* norm_ss = nullptr;
  int norm_ss_n = 0;
  float norm_eps = 0.0f;
  // The one-token GLU launches (glu 1 or 2, act_il, m = 1; else no effect) with one task per matrix
  // in flight per lane instead of two (kernels.mmvs_glu_one_task): the registers of the plain launch
  // for the gate and up rows, so the register caps fit where the two-task GLU spills (Q5_K, IQ4_XS,
  // Q8_0); min_blocks_glu 0, 5 or 6. The lane's tasks in the same order: the same bits. glu = 0:
  // cudaErrorInvalidValue.
  bool glu_one_task = false;
  // norm_ss holds each activation row's s itself (RmsNormDeferParams::scale: the deferred norm
  // summed its partials in the order above and took the root; row j's at norm_ss[j]) instead of
  // partials: norm_ss_n must be 1, and the launch only multiplies (the same bits as from partials).
  bool norm_ss_final = false;
};

// The min_blocks values launch_mmvs has instances for (0, 5, 6, 8, 12; with act_il too). 5 (at most
// 96 registers) is the step below 6 for a kernel that spills at 80 (kernels.mmvs_cap_fallback).
inline bool mmvs_min_blocks_valid(int v) { return v == 0 || v == 5 || v == 6 || v == 8 || v == 12; }
// Whether the m = 1 instance compiled for min_blocks (5, 6, 8, 12) CTAs per SM for type t and glu
// (0 none, 1 SiLU, 2 GELU-tanh) uses local memory (register spills): a host query of the kernel's
// attributes (cudaFuncGetAttributes). min_blocks 0 or a build without the instance: *spills = false.
// act_il: the interleaved-activation instance (MmvsParams::act_il); act_il_q6k: its Q6_K variant
// (t = Q6_K and glu = 0 only, else cudaErrorInvalidValue).
cudaError_t mmvs_cap_spills(QType t, int glu, int min_blocks, bool* spills, bool act_il = false, bool act_il_q6k = false);

// True when this build has an mmvs kernel for the type (Q4_K, Q6_K, Q8_0, Q4_0, Q5_K, IQ4_XS) and n_cols fits.
bool mmvs_supported(QType t, int64_t n_cols);
// Whether one launch can serve matrices of type t (the first rows_before rows) followed by
// matrices of type t2 (MmvsParams::w_type2) at m rows of n_cols: a compiled pair (Q4_K then Q6_K,
// Q5_K then Q6_K, IQ4_XS then Q5_K; with row_pairs only the first),
// m = 1, the same warps per row for both types, and the type-t2 rows starting a CTA. split_k,
// max_warps, min_tasks: MmvsParams::split_k, split_max_warps, split_min_tasks.
bool mmvs_pair_ok(QType t, QType t2, int64_t n_cols, int64_t rows_before, int m, bool split_k, int max_warps,
                  int min_tasks);
// As mmvs_cap_spills, for the pair instance (t, t2) capped at min_blocks (0 or 6).
cudaError_t mmvs_pair_cap_spills(QType t, QType t2, int min_blocks, bool* spills, bool act_il = false);
// As mmvs_cap_spills, for the row-pair instance (MmvsParams::row_pairs) of type t at min_blocks
// (0, 5 or 6); one_task: the instance with one task per row in flight (row_pair_one_task); glu: the
// SiLU GLU row-pair instance (one task per row; one_task ignored).
cudaError_t mmvs_row_pairs_cap_spills(QType t, int min_blocks, bool* spills, bool one_task = false, bool glu = false);
// As mmvs_cap_spills, for the one-task GLU instance (MmvsParams::glu_one_task) of type t and glu (1, 2)
// at min_blocks (0, 5 or 6).
cudaError_t mmvs_glu_one_task_cap_spills(QType t, int glu, int min_blocks, bool* spills);
// Whether this build has the row-quad instances (MmvsParams::row_quads) for a one-type q/k/v launch
// of type t (t2 = t) or the mixed launch of t then t2.
bool mmvs_quads_compiled(QType t, QType t2);
cudaError_t launch_mmvs(const MmvsParams& p, cudaStream_t stream);

// The one-token residual launch that also takes the next deferred norm (kernels.mmvs_emit_norm,
// mmvs_emit.cu): y = residual + W x as launch_mmvs computes it with MmvsParams::residual (each
// row the bits of that launch: mmvs::warps_per_row's task partition, the lanes' order, the trees,
// the add), then from the updated rows the outputs of launch_rms_norm_defer on y (norm_kernels.h):
// the q8s planes of y * norm_w and one partial sum of squares per 32 rows, the same bytes. A CTA of
// `warps` warps owns 32 consecutive rows, one q8s block of the output, so the norm needs no other
// CTA and no launch of its own. mv: m = 1, act_il (act_il_q6k for Q6_K rows as launch_mmvs takes
// it), a residual (y itself for the stream updated in place), no GLU, extra segments or norm_ss; the row pairs, caps and
// one-task forms of mv are ignored (they never change a row's bits). n_rows a multiple of 32, at
// most 32 * kNormDeferMaxPartials. The output planes must not overlap the input's (the launch
// reads every input block while its CTAs write). Else cudaErrorInvalidValue / NotSupported.
struct MmvsEmitNormParams {
  MmvsParams mv;
  const float* norm_w = nullptr;  // n_rows weights of the next norm, or null (none)
  int8_t* out_xq = nullptr;       // the next launch's q8s planes: one row of n_rows quants
  void* out_xds = nullptr;        // n_rows / 32 float2, 16-byte aligned
  bool out_il = true;             // out_xq in the interleaved order (q8s_order.h), else plain
  float* partials = nullptr;      // n_rows / 32 floats (norm_math.cuh defer_block_ss)
  int warps = 16;                 // warps per CTA: 8 (four rows each; two CTAs per SM), 16 (two) or 32 (one)
  // With 8 warps and rows of one warp: both task groups of each of a lane's four rows in flight (a row of
  // at most 4096 weights wholly requested before the PDL wait, as at 16 warps) instead of one; not in the
  // reduced build. The same bits. cudaErrorNotSupported (nothing launched) at other warps or row lengths.
  bool both_groups = false;
  // > 0: the launch is one wave or nothing: cudaErrorNotSupported (nothing launched) when its n_rows / 32
  // CTAs exceed this many SMs times the CTAs per SM the instance fits (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
  int one_wave_sms = 0;
};
cudaError_t launch_mmvs_emit_norm(const MmvsEmitNormParams& p, cudaStream_t stream);

// The one-token gate + up + activation launch (glu 1 SiLU or 2 GELU-tanh, w2 the up matrix, the
// deferred norm's scale when norm_ss is set) that also writes the q8s planes of its output in
// out_order, the bytes launch_quantize_q8s writes from that output (kernels.mmvs_glu_emit, the down
// projection's input without a quantize launch): CTAs of 16 warps own 32 consecutive rows, two per
// warp, one task group per row and matrix in flight per lane; each row's bits are launch_mmvs'.
// mv: m = 1, act_il (not act_il_q6k), no residual or extra segments; n_rows a multiple of 32 (of 256
// for the Q6_K order); the caps, row pairs and one-task forms are ignored. The output planes must
// not overlap the input's.
struct MmvsGluEmitParams {
  MmvsParams mv;
  int8_t* out_xq = nullptr;
  void* out_xds = nullptr;  // n_rows / 32 float2, 8-byte aligned
  q8s::Order out_order = q8s::Order::il;
  // Warps per 32-row CTA: 16 (two rows per warp, one CTA per SM) or 8 (four rows per warp, compiled
  // for two CTAs per SM: half an SM's registers, so a CTA fits beside the o projection's 8-warp CTAs).
  // 8 only where a row is one warp's (kernels.mmvs_split_min_k) and not in the reduced build:
  // cudaErrorNotSupported (nothing launched) elsewhere. The same bits at both.
  int warps = 16;
};
cudaError_t launch_mmvs_glu_emit(const MmvsGluEmitParams& p, cudaStream_t stream);

// f32 rows -> q8s (xq, xds as above); quants and scale identical to launch_quantize_q8_1.
struct QuantizeQ8sParams {
  const float* x = nullptr;
  int64_t n = 0;  // multiple of 32
  int64_t rows = 1;
  int64_t ld_x = 0;  // 0 = n
  int8_t* xq = nullptr;
  void* xds = nullptr;
  bool act_il = false;  // xq in the interleaved order (q8s_order.h; rows = 1, il_row_bytes(n) bytes)
  bool act_il_q6k = false;  // with act_il: its Q6_K variant (n a multiple of 256), for a Q6_K-only consumer
  // kernels.quantize_bulk_load: each block copies its 256 values into shared memory with one bulk
  // copy (cp.async.bulk) after the dependency wait instead of one load per thread; the same values,
  // so the same bytes. Taken where quantize_q8s_bulk_applies says so, else the plain loads.
  bool bulk = false;
};
// The bulk copy applies: bulk, one row, n % 256 == 0, x 16-byte aligned.
bool quantize_q8s_bulk_applies(const QuantizeQ8sParams& p);
cudaError_t launch_quantize_q8s(const QuantizeQ8sParams& p, cudaStream_t stream);

}  // namespace memra::cuda
