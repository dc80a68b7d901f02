#pragma once
// Split-plane ("rp") mirror of a Q4_0 weight and its decode matvec (issue 7 lever).
//
// GGUF Q4_0 rows are 18-byte blocks {f16 d; uint8 qs[16]}, so a lane can only issue 2-byte loads
// (9 per block). The split-plane mirror keeps the same bytes in two planes:
//   qs plane: n_rows x (n_cols/2) bytes, row-major; chunk c of row r (GGUF block c) at byte
//             r*(n_cols/2) + 16*c, its 16 qs bytes unchanged -> one aligned 16-byte load per chunk;
//   d plane:  n_rows x (n_cols/32) f16 bits, row-major (the block scales, unchanged).
// Both planes together hold exactly the GGUF bytes (18 per 32 weights): the matvec moves the same
// bytes, only the access width changes.
//
// matvec_rp_q4_0 performs the integer dot products and the float accumulation of the GGUF-block
// kernel (kernels/matvec, variant mmvq) operation by operation: one warp per row, lane l owns
// chunks l, l+32, l+64, ... in increasing order, wq::chunk_dot_q8_1 per chunk, then the same
// xor-shuffle tree (16, 8, 4, 2, 1). So its output is bit-identical to launch_matvec for Q4_0 with
// the same rows_per_block, for every m (gated by kernel-check and rp-q4-probe). The same holds
// when the activations come as split planes too (x_qs/x_d below): the integers are the same,
// only their loads are wider.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace memra::cuda {

// Plane sizes in bytes for an n_rows x n_cols Q4_0 weight (n_cols a multiple of 32).
inline size_t rp_q4_0_qs_bytes(int64_t n_rows, int64_t n_cols) { return (size_t)n_rows * (size_t)(n_cols / 2); }
inline size_t rp_q4_0_d_bytes(int64_t n_rows, int64_t n_cols) { return (size_t)n_rows * (size_t)(n_cols / 32) * 2; }

// GGUF Q4_0 rows (row stride w_row_bytes, 0 = dense 18*n_cols/32) -> the two planes.
// qs must be 16-byte aligned, d 2-byte aligned, w 2-byte aligned.
struct RepackQ4_0RpParams {
  const void* w = nullptr;
  size_t w_row_bytes = 0;
  int64_t n_rows = 0;
  int64_t n_cols = 0;  // multiple of 32
  void* qs = nullptr;  // rp_q4_0_qs_bytes
  void* d = nullptr;   // rp_q4_0_d_bytes
};
cudaError_t launch_repack_q4_0_rp(const RepackQ4_0RpParams& p, cudaStream_t stream);

// Split-plane mirror of q8_1 activations (m rows): the same bytes as m x (n_cols/32) BlockQ8_1,
//   x_qs: m x n_cols int8, row-major (block c's 32 quants at 32*c: two 16-byte loads per chunk);
//   x_d:  m x (n_cols/32) f16 bits (the blocks' d; their s is not used by Q4_0).
// A 36-byte q8_1 block is 4-byte aligned only, so the dense form costs nine 4-byte loads per chunk
// per activation row, with the lanes 36 bytes apart; this layout makes it two 16-byte loads and one
// 2-byte load. (In a decode step the q8_1 quantizer would emit this layout directly.)
inline size_t rp_q8_1_qs_bytes(int64_t m, int64_t n_cols) { return (size_t)m * (size_t)n_cols; }
inline size_t rp_q8_1_d_bytes(int64_t m, int64_t n_cols) { return (size_t)m * (size_t)(n_cols / 32) * 2; }
struct RepackQ8_1RpParams {
  const void* x = nullptr;  // m x (n_cols/32) BlockQ8_1, dense, 4-byte aligned
  int64_t m = 0;
  int64_t n_cols = 0;  // multiple of 32
  void* qs = nullptr;  // rp_q8_1_qs_bytes, 16-byte aligned
  void* d = nullptr;   // rp_q8_1_d_bytes, 2-byte aligned
};
cudaError_t launch_repack_q8_1_rp(const RepackQ8_1RpParams& p, cudaStream_t stream);

// y[j][r] = sum_k W[r][k] * x[j][k], W given by its planes, x as q8_1 blocks (m rows of
// n_cols/32 BlockQ8_1, dense, 4-byte aligned) or, when x_qs is set, as its split planes.
struct MatvecRpQ4_0Params {
  const void* qs = nullptr;  // 16-byte aligned
  const void* d = nullptr;   // 2-byte aligned
  int64_t n_rows = 0;
  int64_t n_cols = 0;  // multiple of 32
  int m = 1;           // 1..8
  const void* x_q8_1 = nullptr;
  const void* x_qs = nullptr;  // split-plane activations (rp_q8_1_*): used instead of x_q8_1 when set
  const void* x_d = nullptr;
  float* y = nullptr;  // m rows, stride ldy
  int64_t ldy = 0;     // 0 = n_rows
  int rows_per_block = 4;  // warps per CTA: 1, 2, 4 or 8 (bit-identity holds for any value)
  // Chunks each lane loads before it accumulates them (in order): 1 = the GGUF kernel's loop
  // shape, 4 = four 16-byte loads in flight per lane. Same bits either way.
  int prefetch = 1;
};
cudaError_t launch_matvec_rp_q4_0(const MatvecRpQ4_0Params& p, cudaStream_t stream);

}  // namespace memra::cuda
