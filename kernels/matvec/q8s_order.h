#pragma once
// The two orders of a q8s activation row's quants (mmvs.h), shared by every producer (the norms,
// launch_quantize_q8s, the attention combine), the mmvs matvec and the host tests.
//   plain: quant e at byte e.
//   interleaved (kernels.mmvs_act_il, one-token rows only): as the weights' interleaved split
//     copy (split_layout.h), granule c (quants 16c' .. 16c' + 15 of a 64-quant task, c = 0..3) of
//     task 32 g + l at byte 2048 g + 512 c + 16 l. The last group of a row keeps the 512-byte
//     stride even when it has fewer than 32 tasks (its unused bytes are never written nor read),
//     so a row takes il_row_bytes(k) bytes and a lane's four granules are one base plus
//     constant offsets. Lane l of an mmvs warp reading granule c of tasks 32 g .. 32 g + 31 then
//     loads one contiguous 512-byte run instead of 32 16-byte pieces at a 64-byte stride.
// The (d, sum) pairs (xds) are the same in both orders.
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define MEMRA_HD __host__ __device__ __forceinline__
#else
#define MEMRA_HD inline
#endif

namespace memra::cuda::q8s {

// Bytes of one row of k quants in the interleaved order (k rounded up to whole 32-task groups).
constexpr int64_t il_row_bytes(int64_t k) { return (k + 2047) / 2048 * 2048; }

// Byte of granule u (quants 16u .. 16u + 15) in the interleaved order (k < 2^30: fits an int).
MEMRA_HD int il_granule(int u) { return 2048 * (u >> 7) + 512 * (u & 3) + 16 * ((u >> 2) & 31); }
// Byte of quant e of the row: il = false the plain order, true the interleaved one.
MEMRA_HD int64_t byte_of(int64_t e, bool il) { return il ? il_granule((int)(e >> 4)) + (e & 15) : e; }

// Host: a plain row of k quants (k % 16 == 0) into the interleaved order (out: il_row_bytes(k)
// bytes; the unused bytes of a short last group are left as they are).
inline void to_interleaved(const int8_t* plain, int64_t k, int8_t* out) {
  for (int64_t u = 0; u < k / 16; ++u) std::memcpy(out + il_granule((int)u), plain + 16 * u, 16);
}
// Host: the inverse (il: il_row_bytes(k) bytes; out: k bytes in the plain order).
inline void from_interleaved(const int8_t* il, int64_t k, int8_t* out) {
  for (int64_t u = 0; u < k / 16; ++u) std::memcpy(out + 16 * u, il + il_granule((int)u), 16);
}

}  // namespace memra::cuda::q8s
