#pragma once
// RMSNorm family on f32 activation rows (one row per token, row-major with a leading dimension).
// All variants share one reduction (per-thread strided sums of squares, then a fixed warp/block
// tree), so a fused form gives bit-identical values to its unfused chain by construction:
//   add_rms_norm == (residual_out = residual + delta; rms_norm(residual_out))
//   rms_norm_q8_1 == quantize_q8_1(rms_norm(x))       (q8_1 as lib/quant's reference quantizer)
// out = x * (1 / sqrtf(mean(x^2) + eps)) * w, every product IEEE-rounded (no FMA contraction).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace memra::cuda {

struct RmsNormParams {
  const float* x = nullptr;  // [rows, cols], leading dimension ld_x
  int64_t ld_x = 0;
  const float* w = nullptr;  // [cols] or null (= ones)
  float* out = nullptr;      // [rows, cols]; may alias x (split 1 only)
  int64_t ld_out = 0;
  int rows = 0;
  int cols = 0;
  float eps = 1e-6f;
  // Optional: also the q8s planes of out for the mmvs matvec (kernels/matvec/mmvs.h; cols % 32
  // == 0), byte-identical to launch_quantize_q8s(out).
  int8_t* q8s_xq = nullptr;
  void* q8s_xds = nullptr;
  // q8s_xq in the interleaved order (kernels/matvec/q8s_order.h, MmvsParams::act_il; rows = 1,
  // q8s::il_row_bytes(cols) bytes): the same bytes as launch_quantize_q8s with act_il.
  bool q8s_il = false;
  // Optional (not with the q8s planes): out also rounded to f16 (round to nearest even), dense
  // rows x cols: the next GEMM's input, byte-identical to launch_convert_f32(out). Needs the
  // 16-byte path (rms_norm_f16_copy_supported).
  void* out_f16 = nullptr;
  // Blocks per row (1 .. kMaxNormSplit): each computes the row's sum of squares in full (same
  // order, same bits) and writes 1/split of the outputs, so the quantize-and-store half of a
  // one-row decode norm is spread over split SMs. > 1 needs out not to overlap x.
  int split = 1;
  // kernels.norm_bulk_load: each block copies its row into shared memory with one bulk copy
  // (cp.async.bulk) after the dependency wait instead of per-thread loads; the same values, so
  // the same bits. Taken where rms_norm_bulk_applies says so, else the plain loads.
  bool bulk = false;
};
inline constexpr int kMaxNormSplit = 8;
// The bulk row copy applies: p.bulk, rows 16-byte aligned (x, ld_x, out, w as the float4 path),
// cols % 4 == 0 and cols <= 8192 (the row stays in the registers of one block).
bool rms_norm_bulk_applies(const RmsNormParams& p);
cudaError_t launch_rms_norm(const RmsNormParams& p, cudaStream_t stream);

// The deferred decode norm (kernels.norm_defer): for each row x of cols values (cols % 32 == 0), the q8s planes of u = x * w (each product IEEE-rounded; w null =
// ones) and the row's sum of squares as partials, without the scale s = 1 / sqrtf(mean(x^2) + eps).
// RMSNorm's output is s * u, and the q8s quants of s * u are those of u up to rounding with block
// scale s * d, so a matvec over the planes of u multiplied by s afterwards gives the normed
// product (MmvsParams::norm_ss: the consumer sums the partials and applies s to its dot products).
// Nothing here reads the whole row or waits on a block barrier: each of the split blocks loads,
// quantizes and stores only its chunks (the ones rms_norm_kernel's split gives it), and each warp
// writes the sum of its lanes' x^2 (per lane in chunk order, then the xor tree) to
// partials[row * partials per row + slice * warps per block + warp]: a row's values do not depend on
// the row count (decode == verify). No f32 output: the normed row exists only as the
// planes and the partials.
struct RmsNormDeferParams {
  const float* x = nullptr;  // [rows, cols], leading dimension ld_x (0 = cols)
  int64_t ld_x = 0;
  int rows = 1;              // one-token decode rows (1) or a verify batch's (2 .. 8)
  const float* w = nullptr;  // [cols] or null
  int cols = 0;
  int split = 8;             // blocks per row (1 .. kMaxNormSplit)
  int8_t* q8s_xq = nullptr;  // row r's quants at r * cols (the plain order), or one row interleaved
  void* q8s_xds = nullptr;
  bool q8s_il = true;        // the interleaved order (q8s_order.h, rows = 1 only), as RmsNormParams::q8s_il
  float* partials = nullptr;  // rows x rms_norm_defer_partials(cols) floats, row-major
  // Instead of partials (exactly one of the two): one block per row of split x 128 threads does the
  // same work, sums the same partials in the consumer's order (norm_math.cuh defer_lane_sum, the xor tree)
  // and writes the row's scale 1 / sqrt(sum / cols + eps) to scale[r] (norm_scale, the formula a
  // matvec applies to partials: the same bits; MmvsParams::norm_ss_final).
  float* scale = nullptr;
  float eps = 0.0f;
};
// How many partials launch_rms_norm_defer writes per row: one per 32-element block (norm_math.cuh
// defer_block_ss), at most kNormDeferMaxPartials (cols <= 8192; wider rows are refused).
int rms_norm_defer_partials(int cols);
inline constexpr int kNormDeferMaxPartials = 256;
cudaError_t launch_rms_norm_defer(const RmsNormDeferParams& p, cudaStream_t stream);

// residual_out = residual + delta, then out = rms_norm(residual_out) * w. residual_out may alias
// residual (the usual in-place residual stream); out may alias delta.
struct AddRmsNormParams {
  const float* residual = nullptr;
  int64_t ld_residual = 0;
  const float* delta = nullptr;
  int64_t ld_delta = 0;
  float* residual_out = nullptr;
  int64_t ld_residual_out = 0;
  const float* w = nullptr;
  float* out = nullptr;
  int64_t ld_out = 0;
  int rows = 0;
  int cols = 0;
  float eps = 1e-6f;
  int8_t* q8s_xq = nullptr;  // optional q8s planes of out, as in RmsNormParams
  void* q8s_xds = nullptr;
  bool q8s_il = false;       // as in RmsNormParams
  void* out_f16 = nullptr;  // optional f16 copy of out, as in RmsNormParams
};
cudaError_t launch_add_rms_norm(const AddRmsNormParams& p, cudaStream_t stream);
// Whether out_f16 can be written for these parameters (cols % 4 == 0, every row 16-byte aligned).
bool rms_norm_f16_copy_supported(const RmsNormParams& p);
bool add_rms_norm_f16_copy_supported(const AddRmsNormParams& p);

// rms_norm (optionally after residual += delta) emitting q8_1 blocks for the next matvec instead
// of f32: block = {fp16 d, fp16 s, int8 qs[32]} (36 bytes, ggml's block_q8_1), d = amax/127,
// q = roundf(v * (1/d)), s = d * sum(q). cols must be a multiple of 32. Row r of the output
// starts at out_q8_1 + r * ld_out_bytes.
struct RmsNormQ81Params {
  const float* x = nullptr;  // ignored when residual is set
  int64_t ld_x = 0;
  const float* residual = nullptr;  // optional: residual_out = residual + delta, normalize that
  int64_t ld_residual = 0;
  const float* delta = nullptr;
  int64_t ld_delta = 0;
  float* residual_out = nullptr;
  int64_t ld_residual_out = 0;
  const float* w = nullptr;
  void* out_q8_1 = nullptr;
  int64_t ld_out_bytes = 0;  // >= cols / 32 * 36
  int rows = 0;
  int cols = 0;
  float eps = 1e-6f;
};
cudaError_t launch_rms_norm_q8_1(const RmsNormQ81Params& p, cudaStream_t stream);

// Per head (qwen3 q/k norm): x viewed as [rows, n_head, head_dim]; w has head_dim entries (or
// null). Same formula as rms_norm over each head_dim slice. out may alias x (in place).
struct HeadRmsNormParams {
  const float* x = nullptr;
  int64_t ld_x = 0;
  float* out = nullptr;
  int64_t ld_out = 0;
  const float* w = nullptr;
  int rows = 0;
  int n_head = 0;
  int head_dim = 0;
  float eps = 1e-6f;
};
cudaError_t launch_head_rms_norm(const HeadRmsNormParams& p, cudaStream_t stream);

}  // namespace memra::cuda
