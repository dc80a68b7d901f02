#pragma once
// The orders of a q8s activation row's quants (mmvs.h), shared by every producer (the norms,
// launch_quantize_q8s, the attention combine), the mmvs matvec and the host tests.
//   plain: quant e at byte e.
//   interleaved (kernels.mmvs_act_il, one-token rows only): as the weights' interleaved split
//     copy (split_layout.h), granule c (quants 16c' .. 16c' + 15 of a 64-quant task, c = 0..3) of
//     task 32 g + l at byte 2048 g + 512 c + 16 l. The last group of a row keeps the 512-byte
//     stride even when it has fewer than 32 tasks (its unused bytes are never written nor read),
//     so a row takes il_row_bytes(k) bytes and a lane's four granules are one base plus
//     constant offsets. Lane l of an mmvs warp reading granule c of tasks 32 g .. 32 g + 31 then
//     loads one contiguous 512-byte run instead of 32 16-byte pieces at a 64-byte stride.
//   interleaved for Q6_K (kernels.mmvs_act_il_q6k, the quantizer before a launch of Q6_K rows only):
//     a Q6_K task t (mmvs_task.cuh) reads granules 16 (t >> 2) + 8 n + lh + 2 qd (n = (t >> 1) & 1,
//     lh = t & 1, qd = 0..3), so in the interleaved order each of its warp loads touches two
//     512-byte runs at half use. This order first permutes the granules inside every 8-granule
//     block (q6k_perm: granule 8 n + lh + 2 qd -> 8 n + 4 lh + qd), then lays them out
//     interleaved: granule qd of Q6_K task t lands where the interleaved order puts granule qd of
//     task t, so each warp load is one contiguous run again.
// The (d, sum) pairs (xds) are the same in every order.
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
// The order of a one-token row.
enum class Order : int { plain = 0, il = 1, il_q6k = 2 };

// Granule u's place in the Q6_K variant before the interleaving (a permutation of each block of
// 8 granules: 8 n + lh + 2 qd -> 8 n + 4 lh + qd). Rows of the Q6_K order are multiples of 256.
MEMRA_HD int q6k_perm(int u) { return (u & ~7) | ((u & 1) << 2) | ((u >> 1) & 3); }
// Byte of granule u in an interleaved order (il or il_q6k).
MEMRA_HD int il_granule(int u, Order o) { return il_granule(o == Order::il_q6k ? q6k_perm(u) : u); }
// Byte of quant e of the row in order o.
MEMRA_HD int64_t byte_of(int64_t e, Order o) { return o == Order::plain ? e : il_granule((int)(e >> 4), o) + (e & 15); }
// il = false the plain order, true the interleaved one.
MEMRA_HD int64_t byte_of(int64_t e, bool il) { return byte_of(e, il ? Order::il : Order::plain); }

// Host: a plain row of k quants (k % 16 == 0) into an interleaved order (out: il_row_bytes(k)
// bytes; the unused bytes of a short last group are left as they are).
inline void to_interleaved(const int8_t* plain, int64_t k, int8_t* out, Order o = Order::il) {
  for (int64_t u = 0; u < k / 16; ++u) std::memcpy(out + il_granule((int)u, o), plain + 16 * u, 16);
}
// Host: the inverse (il: il_row_bytes(k) bytes; out: k bytes in the plain order).
inline void from_interleaved(const int8_t* il, int64_t k, int8_t* out, Order o = Order::il) {
  for (int64_t u = 0; u < k / 16; ++u) std::memcpy(out + 16 * u, il + il_granule((int)u, o), 16);
}

}  // namespace memra::cuda::q8s
