// The split-K decode attention over a split-plane int8 K / V cache (kernels/attn/attn_i8_tile.h),
// 16-key tiles on tensor cores: a probe of the depth form (bench/notes/attn-i8-tile.md).
// Grid (n_splits, n_head_kv, n_tokens), 4 warps; a block serves the G = 4 or 8 query heads of one kv
// head over one split's keys, warp w its 16-key tiles w, w + 4, ...; then the in-block merge and
// partials of the other split kernels (attn_partials.cuh) and their combine kernel.
//
// Per tile, with no dequantization of K and no per-element scaling of V:
//  - S = Q K^T per 32-element block b on mma.sync m16n8k32 (s8 x s8 -> s32): A = the heads' int8
//    query quants (rows = heads, rows >= G zero; quantized per block as the q8 score path does),
//    B = the tile's K quants by ldmatrix (key rows of 16 bytes: exactly B's fragment), two n = 8
//    key tiles. The exact block sums are scaled by d_k * d_q and summed over b in f32.
//  - The C layout of S (lane (g, t): head g, keys 2t, 2t + 1, 8 + 2t, 9 + 2t) is the B layout of
//    P^T in O^T += V^T P^T (as in the f16 tile form, attn_decode_mma.cu): a head's max and sum
//    are two xor-shuffles among its 4 lanes, and P stays in registers.
//  - V's block scale goes on P: per V block b the B fragment is f16(p * d_v(key, b)), so V's
//    quants enter the f16 mma exactly as integers. A = V^T by ldmatrix.trans of the int8 tile read
//    as 16-bit pairs: lane (g, t) gets keys 2t, 2t + 1 of elements 2g, 2g + 1 of a 16-element
//    chunk in one register, turned into two f16 pairs by a xor, two byte permutes with the
//    exponent byte of 1024 and two f16 subtractions (1024 + 128 + q - 1152 = q, exact). So the
//    m-tile's row r holds element 2r (r < 8) or 2 (r - 8) + 1 of its chunk, and C's rows with it.
// Numeric class: q and K as int8 blocks with exact integer sums (the q8 score path's), P * d_v
// rounded to f16, V's quants exact, f32 accumulation. Gate: kernel-check attn_decode_i8tile/*
// against the f64 reference with the naive twin of that class.
#include <cuda.h>  // CUtensorMap and its encoder's types (the encoder through the runtime's entry point)
#include <cuda_fp16.h>

#include <algorithm>

#include "attn/attn_common.cuh"
#include "attn/attn_i8_tile.h"
#include "attn/attn_i8_words.h"
#include "attn/attn_mma_scores.cuh"
#include "attn/attn_partials.cuh"
#include "attn/attn_tile_ptx.cuh"
#include "common/bulk_copy.cuh"
#include "common/launch.cuh"
#include "kv/kv_quant.cuh"
#include "rope/rope_math.cuh"

namespace memra::cuda::attn {

cudaError_t launch_decode_combine(const Args& a, int head_dim, int n_tokens, cudaStream_t s);  // attn_decode.cu

namespace {

constexpr int kD = 128;                   // head dim of this form
constexpr int kTile = 16;                 // keys per warp tile
constexpr int kRow = kD;                  // bytes of one key's int8 head slice
constexpr int kQTile = kTile * kRow;      // 2 KB
constexpr int kSTile = kTile * 8;         // 16 keys' scale rows (4 f16 each: 8 bytes)

struct I8Args {
  Args a;
  const int8_t* kq;
  const uint16_t* kd;
  const int8_t* vq;
  const uint16_t* vd;
  int64_t q_row, d_row;  // bytes between consecutive positions' quant rows, halves between scale rows
  CUtensorMap kmap, vmap;  // tensor copies: the K / V quant planes as 2-D tensors (rows = positions; encode_planes_map)
};

// How a warp's quant tiles reach shared memory (AttnParams::planes_copy as the kernels' CP).
constexpr int kCopyAsync = 0, kCopyTensor = 1;

// Byte offset of 16-byte chunk c of row r of a quant tile (8 chunks per row): the 8 rows an
// ldmatrix phase reads at one chunk column land in distinct bank groups. The tensor copies' 128-byte
// swizzle lands the same pattern where the tile starts at a multiple of 1024 bytes. (A third form, one
// bulk copy per key row into 144-byte rows, measured slower and was removed: bench/notes/attn-i8-tile.md.)
__device__ __forceinline__ int swz(int r, int c) { return r * kRow + ((c ^ (r & 7)) << 4); }
// 8 bytes global -> shared, or zeros where !valid (src-size 0: the source is not read).
__device__ __forceinline__ void cp8(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 8 : 0)
               : "memory");
}
// f16 value of scale b of a key's 8-byte scale row.
__device__ __forceinline__ float scale_at(uint2 s, int b) {
  const uint32_t w = b < 2 ? s.x : s.y;
  return __half2float(__ushort_as_half((unsigned short)(b & 1 ? w >> 16 : w & 0xffffu)));
}
// i8_pair_words (attn_i8_words.h) minus 1152 per half: the f16 pairs (key k, key k + 1) of elements
// e (lo) and e + 1 (hi), exact.
__device__ __forceinline__ void i8_pairs_to_h2(uint32_t r, uint32_t& lo, uint32_t& hi) {
  const I8PairWords w = i8_pair_words(r);
  const __half2 bias = __half2half2(__ushort_as_half(kI8PairBias));
  const __half2 x = __hsub2(*reinterpret_cast<const __half2*>(&w.lo), bias);
  const __half2 y = __hsub2(*reinterpret_cast<const __half2*>(&w.hi), bias);
  lo = *reinterpret_cast<const uint32_t*>(&x);
  hi = *reinterpret_cast<const uint32_t*>(&y);
}

// The warp's copies of the scale rows of keys base .. base + nk - 1 (d[doff]: this lane's, key base + lane,
// lanes 0-15) into st, rows nk .. 15 zero, row skip left alone (SKIP). Not committed.
template <bool SKIP>
__device__ __forceinline__ void stage_scales(uint8_t* st, const uint16_t* d, uint32_t doff, uint32_t d_row, int nk, int skip) {
  const int lane = threadIdx.x & 31;
  if (lane < kTile && (!SKIP || lane != skip))
    cp8(st + lane * 8, d + (lane < nk ? doff : doff - (uint32_t)lane * d_row), lane < nk);
}
// The warp's copies of one cache's rows of keys base .. base + nk - 1 (kv head hk) into its tiles:
// q[qoff] is this lane's first quant chunk (key base + r0, r0 = lane / 8; chunk lane % 8), d[doff]
// this lane's scale row (key base + lane, lanes 0-15), q_row / d_row the rows' strides (32-bit offsets:
// the launcher checks that every position's rows fit); rows nk .. 15 zero-filled (their scores
// are masked, their V scales 0, so P' = 0 meets quants 0); SKIP: row skip left alone (the step's new
// key, written by patch_row; a separate instance so that the other tiles' copies carry no test). Not committed.
template <bool SKIP = false>
__device__ __forceinline__ void stage_tile(uint8_t* qt, uint8_t* st, const int8_t* q, const uint16_t* d, uint32_t qoff,
                                           uint32_t doff, uint32_t q_row, uint32_t d_row, int nk, int skip = -1) {
  const int lane = threadIdx.x & 31, r0 = lane >> 3, ch = lane & 7;
  const uint32_t qbase = qoff - (uint32_t)r0 * q_row;  // the key base's chunk: the source of invalid rows, not read
#pragma unroll
  for (int x = 0; x < kTile / 4; ++x) {
    const int r = r0 + 4 * x;
    const bool valid = r < nk;
    if (!SKIP || r != skip) cp16(qt + swz(r, ch), q + (valid ? qoff + (uint32_t)(4 * x) * q_row : qbase), valid);
  }
  stage_scales<SKIP>(st, d, doff, d_row, nk, skip);
}
// The same with one tensor copy of the quants: lane 0 expects the box's 2048 bytes
// and requests rows y .. y + 15 of the plane's bytes x .. x + 127 (map: AttnArgs::kmap / vmap; rows past the
// cache's end zero). Every row lands, row skip too (the step's new key, maybe not yet written: the caller
// patches it after the wait). Quant rows nk .. 15 are whatever the cache holds there (finite int8; rows past its
// end zero): their scores masked and their V scales 0 (stage_scales), each meets P' = 0 and adds nothing
// (kernel-check: the bytes of stage_tile's zero rows).
template <bool SKIP = false>
__device__ __forceinline__ void stage_tile_tensor(uint8_t* qt, uint8_t* st, uint64_t* bar, const CUtensorMap* map, int x,
                                                  int y, const uint16_t* d, uint32_t doff, uint32_t d_row, int nk,
                                                  int skip = -1) {
  if ((threadIdx.x & 31) == 0) {
    bulk::expect_bytes(bar, (uint32_t)kQTile);
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::
            "r"(smem_u32(qt)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_u32(bar))
        : "memory");
  }
  stage_scales<SKIP>(st, d, doff, d_row, nk, skip);
}
// The step's new key (RF): its K and V quant rows (128 bytes each) and scale rows (8 bytes each) as the
// fold block quantized them, side by side in shared memory.
struct NewRow {
  int8_t kq[kRow], vq[kRow];
  uint16_t kd[4], vd[4];
};
// Row r of a K tile (qk, sk) and its V tile (qv, sv) from n: lanes 0-7 / 8-15 a 16-byte chunk of the K /
// V quants each, lanes 16 / 17 the scale rows. Plain shared stores: the warp's __syncwarp before the
// tile is read orders them.
// PARTS: 1 the K row, 2 the V row, 3 both.
template <int PARTS = 3>
__device__ __forceinline__ void patch_row(uint8_t* qk, uint8_t* sk, uint8_t* qv, uint8_t* sv, const NewRow& n, int r) {
  const int lane = threadIdx.x & 31;
  if (!(PARTS & 1) && (lane < 8 || lane == 16)) return;
  if (!(PARTS & 2) && ((lane >= 8 && lane < 16) || lane == 17)) return;
  if (lane < 16) {
    const int8_t* src = lane < 8 ? n.kq : n.vq;
    *reinterpret_cast<uint4*>((lane < 8 ? qk : qv) + swz(r, lane & 7)) = *reinterpret_cast<const uint4*>(src + 16 * (lane & 7));
  } else if (lane < 18) {
    *reinterpret_cast<uint2*>((lane == 16 ? sk : sv) + r * 8) = *reinterpret_cast<const uint2*>(lane == 16 ? n.kd : n.vd);
  }
}

// RF: the fold of the q / k norm + RoPE + K / V append (AttnParams::rope, one token, split-plane cache
// rows; RF_NEOX / RF_NORMAL its pair layout): every block normalizes and rotates its query heads
// itself; the block whose keys end at pos (one per kv head) also normalizes and rotates the new K
// head and quantizes it and the V head into the cache rows at pos (q8_0 split planes, the
// arithmetic of qk_norm_rope_kernel's append) and into a NewRow in shared memory. Its tiles skip row
// pos in their copies (so every tile of the step may be requested before the dependency wait) and
// take that row from the NewRow (patch_row): the bytes the copy would bring, one round trip shorter.
enum { RF_NONE = 0, RF_NEOX = 1, RF_NORMAL = 2 };

// G: the query heads of a block, the group's (4 or 8: one block per kv head) or, in the fold's head split
// (AttnParams::RopeFold::head_split = 1 or 2), one or two: a.group / G blocks per kv head, block y serving heads
// G y .. G y + G - 1 of kv head y / (a.group / G). A head's rows and columns of the mmas, its softmax and
// its merge do not meet the other heads' values: the same bytes per head in either form. In the head split
// every block of the step's last split takes the new key from its own NewRow; the group's first writes it
// to the cache rows.
// PD: a warp's tiles in flight (AttnParams::planes_stages). PD = 1: one buffer; tile t + 1's K is
// requested once t's scores are read, its V once t's P x V is done (groups ... [V t] [K t+1] [V t+1]).
// PD = 2: two buffers; tile t + 2 is requested into t's buffer the same way, so the copies of two
// tiles are pending while one is consumed. The same arithmetic in the same order: the same bytes.
// CP (AttnParams::planes_copy): kCopyAsync as above; kCopyTensor (PD = 1): each quant tile by one tensor copy
// (stage_tile_tensor), each warp's K and V tiles completing on its two mbarriers (phase j % 2 for its tile j),
// the scale rows on cp.async groups as before: the same bytes in the same fragments. (Its tiles take every
// row: the new key's row is patched after the tile's wait instead of beside its copies.)
template <int G, int RF, int PD, int CP>
__global__ void __launch_bounds__(kDecodeWarps * 32, 4) attn_decode_i8_tile_kernel(const __grid_constant__ I8Args p) {
  constexpr bool kNeox = RF == RF_NEOX;
  constexpr int N = kD / 32;
  static_assert(RF == RF_NONE || N == kDecodeWarps, "the fold: warp w quantizes block w of the new K and V heads");
  static_assert(G >= 1 && G <= 8, "the heads are the m rows of one mma tile (8 used at most)");
  constexpr bool kTensor = CP == kCopyTensor;  // the quants complete on mbarriers
  // A buffer's K quants, V quants, then (but for the tensor copies, whose tiles are 1024-byte aligned: after
  // every warp's tiles) its K scales, V scales.
  constexpr int kBufSmem = 2 * kQTile + (kTensor ? 0 : 2 * kSTile);
  static_assert(G * kD * 4 <= 2 * kQTile && 2 * G * 4 <= 2 * kSTile, "a warp's merge values overlay its tiles");
  static_assert(PD == 1 || PD == 2, "one or two tiles in flight per warp");
  static_assert(!kTensor || PD == 1, "tensor copies: one tile in flight per warp");
  static_assert(!kTensor || kBufSmem % 1024 == 0, "tensor copies: every tile 1024-byte aligned (the swizzle's pattern)");
  constexpr int kBuf = PD * kBufSmem;  // a warp's buffers
  constexpr int kScales = kTensor ? kDecodeWarps * kBuf : 0;  // Tensor: the warps' scale rows after their tiles
  const Args& a = p.a;
  __shared__ __align__(1024) uint8_t smem[kDecodeWarps * kBuf + (kTensor ? kDecodeWarps * 2 * kSTile : 0)];
  __shared__ __align__(16) int8_t qi[G][kD];
  __shared__ float qd[G][kD / 32];
  __shared__ float qf[RF ? G : 1][RF ? kD : 1];  // RF: the heads' queries after their norm and rotation
  __shared__ __align__(16) NewRow nrow;          // RF: the new key's rows
  __shared__ uint64_t bars[kTensor ? 2 * kDecodeWarps : 1];  // Tensor: warp w's K tile's barrier 2 w, its V tile's 2 w + 1
  const int bpk = a.group / G;  // blocks per kv head
  const int s = blockIdx.x, hk = blockIdx.y / bpk, i = blockIdx.z, h0 = blockIdx.y * G;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int pos_first = *a.pos0;  // staged before the step's first kernel (AttnParams::pos0)
  const int pos = pos_first + i;
  int b, e, used;
  if (!split_keys(a, pos, s, b, e, used)) return;  // block-uniform: the combine reads only the used splits
  uint64_t* const kbar = &bars[kTensor ? 2 * (threadIdx.x >> 5) : 0];
  uint64_t* const vbar = kbar + (kTensor ? 1 : 0);
  if constexpr (kTensor) {
    if ((threadIdx.x & 31) == 0) {
      bulk::init_barrier(kbar);
      bulk::init_barrier(vbar);
    }
    __syncwarp();
    // The cache rows were written by earlier kernels through the generic proxy; the copy engine reads them.
    asm volatile("fence.proxy.async.global;" ::: "memory");
  }
  // RF, before the wait (nothing a kernel writes): the head norms' weights and the cos / sin of this
  // lane's pairs at pos (the same helpers and values as qk_norm_rope_kernel).
  [[maybe_unused]] float wq[N], wk[N], cs[N], sn[N];
  if constexpr (RF != RF_NONE) {
    head_norm_weights<N>(a.rf.q_norm, lane, wq);
    head_norm_weights<N>(a.rf.k_norm, lane, wk);
    head_rope_cs<kNeox, N>(a.rf.ang, lane, (float)pos, cs, sn);
  }
  // ldmatrix .x4 rows of this lane (attn_i8_words.h: which matrix each register comes from).
  const int krow = i8_k_ldsm_row(lane), vrow = i8_v_ldsm_row(lane);
  constexpr int kStride = kDecodeWarps * kTile;
  const int base0 = b + warp * kTile;
  const bool any = base0 < e;  // warp-uniform
  uint8_t* const wsm0 = smem + warp * kBuf;
  // RF: this block writes row pos (its keys end there; pos_first == pos, one token), and tile rows skip it.
  const bool last_new = RF != RF_NONE && e == pos + 1;  // block-uniform
  // The warp's tile j_new (keys base0 + j_new * kStride ..) holds pos at row r_new (-1, -1: none); warp-uniform.
  const int d_new = pos - base0;
  const bool has_new = last_new && d_new >= 0 && d_new % kStride < kTile;
  const int j_new = has_new ? d_new / kStride : -1, r_new = has_new ? d_new % kStride : -1;
  // The warp's first tile (PD = 2: first two) before the wait where all its keys but a skipped row lie
  // below the launch's first position (rows written by earlier steps). Groups [K0], [V0] (, [K1], [V1]).
  const int e_old = last_new ? e - 1 : e;
  const bool early = any && min(e_old, base0 + kTile) <= pos_first;
  const bool early1 = PD == 2 && early && min(e_old, base0 + kStride + kTile) <= pos_first;
  // This lane's source pointers for the warp's current tile (key base0 + lane / 8, chunk lane % 8; scale row of
  // key base0 + lane % 16), stepped by kStride keys per tile.
  // 32-bit offsets (the launcher checks that every position's rows fit), pointers formed at each copy.
  uint32_t koff = (uint32_t)((base0 + (lane >> 3)) * p.q_row + hk * kRow + (lane & 7) * 16);
  uint32_t soff = (uint32_t)((base0 + (lane & 15)) * p.d_row + hk * 4);
  const uint32_t qstep = (uint32_t)(kStride * p.q_row), sstep = (uint32_t)(kStride * p.d_row);
  const uint32_t q_row = (uint32_t)p.q_row, d_row = (uint32_t)p.d_row;
  // Buffer x's K quants, V quants, K scales, V scales.
  const auto kq_buf = [&](int x) { return wsm0 + x * kBufSmem; };
  const auto vq_buf = [&](int x) { return wsm0 + x * kBufSmem + kQTile; };
  const auto ks_buf = [&](int x) {
    return kTensor ? smem + kScales + warp * 2 * kSTile : wsm0 + x * kBufSmem + 2 * kQTile;
  };
  const auto vs_buf = [&](int x) { return ks_buf(x) + kSTile; };
  // Tile j of the warp (keys base0 + j * kStride ..) into buffer j % PD; empty groups past e.
  const auto stage_ahead = [&](int j) {
    const int bj = base0 + j * kStride, nj = min(kTile, e - bj), sk = j == j_new ? r_new : -1;
    const uint32_t ko = koff + (uint32_t)j * qstep, so = soff + (uint32_t)j * sstep;
    if constexpr (kTensor) {
      if (nj > 0) stage_tile_tensor<RF != RF_NONE>(kq_buf(0), ks_buf(0), kbar, &p.kmap, hk * kRow, bj, p.kd, so, d_row, nj, sk);
      commit_group();
      if (nj > 0) stage_tile_tensor<RF != RF_NONE>(vq_buf(0), vs_buf(0), vbar, &p.vmap, hk * kRow, bj, p.vd, so, d_row, nj, sk);
      commit_group();
    } else {
      if (nj > 0) stage_tile<RF != RF_NONE>(kq_buf(j % PD), ks_buf(j % PD), p.kq, p.kd, ko, so, q_row, d_row, nj, sk);
      commit_group();
      if (nj > 0) stage_tile<RF != RF_NONE>(vq_buf(j % PD), vs_buf(j % PD), p.vq, p.vd, ko, so, q_row, d_row, nj, sk);
      commit_group();
    }
  };
  // The new key's row into buffer x's tiles (tile j_new's, after the fold's barrier).
  const auto patch = [&](int x) { patch_row(kq_buf(x), ks_buf(x), vq_buf(x), vs_buf(x), nrow, r_new); };
  if (early) stage_ahead(0);
  if (early1) stage_ahead(1);
  pdl_wait();
  if constexpr (RF != RF_NONE) {
    // Warp w prepares query heads w, w + 4, ... (lane owns elements lane + 32 t, as the RoPE kernel);
    // in the block whose keys end at pos, warp w also quantizes block w of the new K head (every
    // warp normalizes and rotates the whole head: the same values) and of the V head into row pos.
    // RopeFold::loads_first: every value the block reads after the wait is requested before any is used
    // (one round trip, where the loads would otherwise each follow the shared-memory stores of the heads
    // before them: one round trip per query head of the warp and one more for the new K / V heads). The
    // same values: the same bytes.
    constexpr int GW = (G + kDecodeWarps - 1) / kDecodeWarps;  // query heads per warp, at most
    const bool new_row = e == pos + 1;                          // block-uniform
    const bool lf = a.rf.loads_first;                           // uniform
    float qraw[GW][N], kraw[N], vraw = 0.0f;
    const auto load_q = [&](int x) {
      const int g = warp + x * kDecodeWarps;
#pragma unroll
      for (int t = 0; t < N; ++t)
        qraw[x][t] = g < G ? a.q[(int64_t)i * a.ld_q + (int64_t)(h0 + g) * kD + lane + 32 * t] : 0.0f;
    };
    const auto load_kv = [&] {
#pragma unroll
      for (int t = 0; t < N; ++t) kraw[t] = a.rf.k_src[(int64_t)hk * kD + lane + 32 * t];
      vraw = a.rf.v_src[(int64_t)hk * kD + lane + 32 * warp];
    };
    if (lf) {
#pragma unroll
      for (int x = 0; x < GW; ++x) load_q(x);
      if (new_row) load_kv();
    }
#pragma unroll
    for (int x = 0; x < GW; ++x) {
      const int g = warp + x * kDecodeWarps;
      if (g >= G) break;  // warp-uniform
      if (!lf) load_q(x);
      float o[N];
      norm_rope_head<kNeox, N>(qraw[x], a.rf.q_norm != nullptr, wq, kD, a.rf.eps, cs, sn, lane, o);
#pragma unroll
      for (int t = 0; t < N; ++t) qf[g][lane + 32 * t] = o[t];
    }
    if (new_row) {
      if (!lf) load_kv();
      const float mine = norm_rope_head_at<kNeox, N>(kraw, a.rf.k_norm != nullptr, wk, kD, a.rf.eps, cs, sn, lane, warp);
      // Block w of both heads: q8_0's arithmetic and places (kvq::quantize_block_row's planes form), to the
      // cache rows at pos and to nrow.
      const int blk = hk * (kD / 32) + warp;
      uint16_t dk, dv;
      const int8_t qk = kvq::q8_0_quant(mine, dk), qv = kvq::q8_0_quant(vraw, dv);
      uint8_t* const kdst = const_cast<uint8_t*>(a.k) + (int64_t)pos * a.k_row_bytes;
      uint8_t* const vdst = const_cast<uint8_t*>(a.v) + (int64_t)pos * a.v_row_bytes;
      if (blockIdx.y % bpk == 0) {  // the group's first block
        kvq::put_q8_0_planes(kdst, a.k_plane, blk, lane, qk, dk);
        kvq::put_q8_0_planes(vdst, a.v_plane, blk, lane, qv, dv);
      }
      nrow.kq[32 * warp + lane] = qk;
      nrow.vq[32 * warp + lane] = qv;
      if (lane == 0) {
        nrow.kd[warp] = dk;
        nrow.vd[warp] = dv;
      }
    }
    __syncthreads();  // nrow and qf complete
  }
  if (kTensor && any && !early) asm volatile("fence.proxy.async.global;" ::: "memory");  // as before the early copies
  if (any && !early) stage_ahead(0);
  if (PD == 2 && any && !early1) stage_ahead(1);
  // A first tile's skipped row (staged before or after the wait); Tensor: after its copies land, in the loop.
  if (RF != RF_NONE && !kTensor && j_new >= 0 && j_new < PD) patch(j_new);
  // The heads' query quantized per 32-element block (d = amax / 127, q = rn(x / d): the q8 score
  // path's rule), one block per warp at a time.
  for (int blk = warp; blk < G * (kD / 32); blk += kDecodeWarps) {
    const int hh = blk / (kD / 32), bb = blk % (kD / 32);
    const float x = RF != RF_NONE ? qf[RF ? hh : 0][RF ? bb * 32 + lane : 0]
                                  : a.q[(int64_t)i * a.ld_q + (int64_t)(h0 + hh) * kD + bb * 32 + lane];
    float d;
    qi[hh][bb * 32 + lane] = (int8_t)q8_query_quant(x, d);
    if (lane == 0) qd[hh][bb] = d;
  }
  __syncthreads();
  // A fragments of the query per block (head g, elements 4t .. 4t + 3 and 16 + 4t ..; rows >= G and
  // the rows g + 8 zero) and the head's block scales.
  uint32_t qa[kD / 32][2];
  float dq[kD / 32];
#pragma unroll
  for (int bb = 0; bb < kD / 32; ++bb) {
    qa[bb][0] = g < G ? *reinterpret_cast<const uint32_t*>(&qi[g][32 * bb + 4 * t]) : 0u;
    qa[bb][1] = g < G ? *reinterpret_cast<const uint32_t*>(&qi[g][32 * bb + 16 + 4 * t]) : 0u;
    dq[bb] = g < G ? qd[g][bb] : 0.0f;
  }
  float m = -INFINITY, l = 0.0f;  // head g's online softmax state (the same in its 4 lanes)
  float c[kD / 16][4];            // O^T: m-tile mt, rows 16 mt + 2g (+ 1), heads 2t, 2t + 1
#pragma unroll
  for (int mt = 0; mt < kD / 16; ++mt)
#pragma unroll
    for (int x = 0; x < 4; ++x) c[mt][x] = 0.0f;
  // This lane's keys in a tile (the C / B layout): 2t, 2t + 1, 8 + 2t, 9 + 2t.
  const int key_of[4] = {2 * t, 2 * t + 1, 8 + 2 * t, 9 + 2 * t};
  const float scale2 = a.scale * 1.4426950408889634f;
  for (int base = base0, buf = 0, j = 0; base < e; base += kStride, buf = PD == 2 ? buf ^ 1 : 0, ++j) {
    const int nk = min(kTile, e - base);
    const int nb = base + PD * kStride;  // the tile this buffer takes next (the warp's tile j + PD)
    const bool nb_new = RF != RF_NONE && j + PD == j_new;  // it holds the new key: its copies skip row r_new
    uint8_t* const wsm = kq_buf(buf);
    uint8_t* const kst = ks_buf(buf);
    uint8_t* const vst = vs_buf(buf);
    wait_group<2 * PD - 1>();  // this tile's K; pending after it: its V (and the next tile's K, V)
    if constexpr (kTensor) bulk::wait_barrier(kbar, j & 1);  // its quants
    if (kTensor && RF != RF_NONE && j == j_new)  // the new key's K row over the one the tile's copy brought
      patch_row<1>(wsm, kst, vq_buf(buf), vst, nrow, r_new);
    __syncwarp();
    uint2 dk[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) dk[u] = *reinterpret_cast<const uint2*>(kst + key_of[u] * 8);
    float raw[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int bb = 0; bb < kD / 32; ++bb) {
      uint32_t kb[4];
      ldsm_x4(kb, wsm + swz(krow, i8_k_ldsm_chunk(lane, bb)));
      int s0[4] = {0, 0, 0, 0}, s1[4] = {0, 0, 0, 0};
      const uint32_t af[4] = {qa[bb][0], 0u, qa[bb][1], 0u};
      mma_s8_16x8x32(s0, af, kb[0], kb[1]);
      mma_s8_16x8x32(s1, af, kb[2], kb[3]);
      const int is[4] = {s0[0], s0[1], s1[0], s1[1]};
#pragma unroll
      for (int u = 0; u < 4; ++u) raw[u] += (float)is[u] * (scale_at(dk[u], bb) * dq[bb]);
    }
    // Tensor: the copy engine's writes after this tile's patch (generic stores) to the same rows.
    if (kTensor && RF != RF_NONE && j == j_new) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncwarp();  // every lane has read the K tile and its scales: the next ones may land there
    if (nb < e) {
      const uint32_t ko = koff + PD * qstep, so = soff + PD * sstep;
      if constexpr (kTensor) {
        if (nb_new)
          stage_tile_tensor<true>(wsm, kst, kbar, &p.kmap, hk * kRow, nb, p.kd, so, d_row, min(kTile, e - nb), r_new);
        else
          stage_tile_tensor(wsm, kst, kbar, &p.kmap, hk * kRow, nb, p.kd, so, d_row, min(kTile, e - nb));
      } else if (nb_new) {
        stage_tile<true>(wsm, kst, p.kq, p.kd, ko, so, q_row, d_row, min(kTile, e - nb), r_new);
      } else {
        stage_tile(wsm, kst, p.kq, p.kd, ko, so, q_row, d_row, min(kTile, e - nb));
      }
    }
    commit_group();
    // Scores in log2 units (scale * log2 e folded in: one ex2 per exponential); no softcap (applies).
    float sc[4], pr[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) sc[u] = key_of[u] < nk ? raw[u] * scale2 : -INFINITY;
    tile_softmax(sc, m, l, pr, c, [](float x) { return exp2f(x); });
    wait_group<2 * PD - 1>();  // this tile's V; pending after it: the K just requested (and the next tile's)
    if constexpr (kTensor) bulk::wait_barrier(vbar, j & 1);
    if (kTensor && RF != RF_NONE && j == j_new) patch_row<2>(wsm, kst, vq_buf(buf), vst, nrow, r_new);
    __syncwarp();
    // B fragments of P'^T per V block: f16(p * d_v(key, block)) of head g, keys 2t, 2t + 1 / 8 + 2t, 9 + 2t.
    uint2 dv[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) dv[u] = *reinterpret_cast<const uint2*>(vst + key_of[u] * 8);
    uint32_t pb[kD / 32][2];
    {
      const __half2 p01 = __floats2half2_rn(pr[0], pr[1]), p23 = __floats2half2_rn(pr[2], pr[3]);
#pragma unroll
      for (int bb = 0; bb < kD / 32; ++bb) {  // the two keys' scales of block bb side by side
        const uint32_t d01 = i8_scale_pair(dv[0].x, dv[0].y, dv[1].x, dv[1].y, bb);
        const uint32_t d23 = i8_scale_pair(dv[2].x, dv[2].y, dv[3].x, dv[3].y, bb);
        const __half2 x = __hmul2(p01, *reinterpret_cast<const __half2*>(&d01));
        const __half2 y = __hmul2(p23, *reinterpret_cast<const __half2*>(&d23));
        pb[bb][0] = *reinterpret_cast<const uint32_t*>(&x);
        pb[bb][1] = *reinterpret_cast<const uint32_t*>(&y);
      }
    }
#pragma unroll
    for (int mt = 0; mt < kD / 16; mt += 2) {
      uint32_t vr[4];
      ldsm_x4_trans(vr, vq_buf(buf) + swz(vrow, i8_v_ldsm_chunk(lane, mt)));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint32_t a0, a1, a2, a3;  // rows g (element 2g), g + 8 (element 2g + 1); keys 2t.. / 8 + 2t..
        i8_pairs_to_h2(vr[2 * h], a0, a1);
        i8_pairs_to_h2(vr[2 * h + 1], a2, a3);
        const int bb = (mt + h) / 2;
        mma16816(c[mt + h], a0, a1, a2, a3, pb[bb][0], pb[bb][1]);
      }
    }
    if (kTensor && RF != RF_NONE && j == j_new) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncwarp();  // every lane has read the V tile and its scales
    if (nb < e) {
      const uint32_t ko = koff + PD * qstep, so = soff + PD * sstep;
      if constexpr (kTensor) {
        if (nb_new)
          stage_tile_tensor<true>(vq_buf(buf), vst, vbar, &p.vmap, hk * kRow, nb, p.vd, so, d_row, min(kTile, e - nb), r_new);
        else
          stage_tile_tensor(vq_buf(buf), vst, vbar, &p.vmap, hk * kRow, nb, p.vd, so, d_row, min(kTile, e - nb));
      } else if (nb_new) {
        stage_tile<true>(vq_buf(buf), vst, p.vq, p.vd, ko, so, q_row, d_row, min(kTile, e - nb), r_new);
        patch(buf);  // both of buf's tiles are free: the K tile's copies skipped the row as well
      } else {
        stage_tile(vq_buf(buf), vst, p.vq, p.vd, ko, so, q_row, d_row, min(kTile, e - nb));
      }
    }
    commit_group();
    koff += qstep;
    soff += sstep;
  }
  wait_group<0>();  // only empty groups can be left; the tiles are free for the merge values
  __syncwarp();
  tile_merge_and_store<kD, G>(
      c, m * 0.6931471805599453f, l,  // the maximum back to natural-log units, as the merge and the combine take it
      [](int mt, int r) { return i8_v_row_element(mt, r); },
      [&](int w) { return reinterpret_cast<float*>(smem + w * kBuf); },
      [&](int w) { return reinterpret_cast<float*>(kTensor ? smem + kScales + w * 2 * kSTile : smem + w * kBuf + 2 * kQTile); },
      a, i, h0, s,
      a.one_split_direct && used == 1);
  if (a.probe_delay_cycles > 0) {  // AttnParams::probe_delay_cycles (a diagnostic): the block's exit held back
    const long long t0 = clock64();
    while (clock64() - t0 < a.probe_delay_cycles) {
    }
  }
}

// The kernel for G query heads per block, p's fold (none, NeoX or normal pairs), tiles in flight and copies
// (G = 1 or 2, the fold's head split: no unfolded instance).
template <int G, int PD, int CP>
auto i8_tile_kernel_pd(const AttnParams& p) {
  decltype(&attn_decode_i8_tile_kernel<G, RF_NEOX, PD, CP>) none = nullptr;
  if constexpr (G > 2) none = attn_decode_i8_tile_kernel<G, RF_NONE, PD, CP>;
  return !p.rope.on    ? none
         : p.rope.neox ? attn_decode_i8_tile_kernel<G, RF_NEOX, PD, CP>
                       : attn_decode_i8_tile_kernel<G, RF_NORMAL, PD, CP>;
}
template <int G>
auto i8_tile_kernel(const AttnParams& p) {
  return p.planes_copy == PlanesCopy::TensorTiles ? i8_tile_kernel_pd<G, 1, kCopyTensor>(p)
         : p.planes_stages == 2                     ? i8_tile_kernel_pd<G, 2, kCopyAsync>(p)
                                                    : i8_tile_kernel_pd<G, 1, kCopyAsync>(p);
}

// cuTensorMapEncodeTiled through the runtime's driver entry point (no link to the driver library); null
// where the driver has none.
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeTiledFn encode_tiled() {
  static const EncodeTiledFn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return EncodeTiledFn{};
    return reinterpret_cast<EncodeTiledFn>(f);
  }();
  return fn;
}
// A quant plane (n_ctx rows of n_head_kv * 128 bytes, row_bytes apart) as a 2-D tensor of bytes for the tile
// form's tensor copies: boxes of 16 rows x 128 bytes (one kv head's slices of 16 keys) with the 128-byte
// swizzle, rows past n_ctx read as zeros.
cudaError_t encode_planes_map(CUtensorMap* map, const int8_t* plane, int n_head_kv, int64_t n_ctx, int64_t row_bytes) {
  const EncodeTiledFn enc = encode_tiled();
  if (!enc) return cudaErrorNotSupported;
  const cuuint64_t dim[2] = {(cuuint64_t)n_head_kv * kRow, (cuuint64_t)n_ctx};
  const cuuint64_t stride[1] = {(cuuint64_t)row_bytes};
  const cuuint32_t box[2] = {(cuuint32_t)kRow, (cuuint32_t)kTile};
  const cuuint32_t estride[2] = {1, 1};
  const CUresult r = enc(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<int8_t*>(plane), dim, stride, box, estride,
                         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

}  // namespace
}  // namespace memra::cuda::attn

namespace memra::cuda {

int attn_planes_group(int n_head, int n_head_kv, int head_dim) {
  if (n_head_kv <= 0 || head_dim != 128) return 0;
  return n_head == 4 * n_head_kv ? 4 : n_head == 8 * n_head_kv ? 8 : 0;
}

namespace {
// The tile form's query heads per kv head: 4 or 8, else 0 (no kernel).
int tile_group(const AttnParams& p) { return attn_planes_group(p.n_head, p.n_head_kv, p.head_dim); }
// Its query heads per block (the kernels' G): RopeFold::head_split (1 or 2) in the fold's head split,
// else the group.
int tile_heads(const AttnParams& p) {
  const int hs = p.rope.on ? p.rope.head_split : 0;
  return (hs == 1 || hs == 2) && hs < tile_group(p) ? hs : tile_group(p);
}
}  // namespace

bool attn_decode_i8_tile_applies(const AttnParams& p, const AttnI8Planes& pl) {
  const auto al = [](const void* x, uintptr_t n) { return x && reinterpret_cast<uintptr_t>(x) % n == 0; };
  return p.q && p.out && p.pos0 && p.workspace && p.head_dim == 128 && tile_group(p) > 0 && p.n_tokens >= 1 &&
         p.n_splits >= 1 && p.softcap == 0.0f && (p.planes_stages == 1 || p.planes_stages == 2) &&
         (p.planes_copy == PlanesCopy::Async || p.planes_stages == 1) &&
         pl.n_ctx > 0 && pl.quant_row >= 0 && pl.scale_row >= 0 && pl.quant_row % 16 == 0 && pl.scale_row % 4 == 0 &&
         (pl.quant_row == 0 || pl.quant_row >= (int64_t)p.n_head_kv * 128) &&
         (pl.scale_row == 0 || pl.scale_row >= (int64_t)p.n_head_kv * 4) &&
         pl.n_ctx * (pl.quant_row ? pl.quant_row : (int64_t)p.n_head_kv * 128) < (int64_t{1} << 32) &&
         p.ld_q >= (int64_t)p.n_head * 128 && p.ld_out >= (int64_t)p.n_head * 128 &&
         al(p.q, 4) && al(pl.k_quants, 16) &&
         al(pl.v_quants, 16) && al(pl.k_scales, 8) && al(pl.v_scales, 8) &&
         // the fold writes row pos of the cache rows the planes are (attn_cache_planes)
         (!p.rope.on || (p.n_tokens == 1 && p.rope.k_src && p.rope.v_src && p.k_scale_plane > 0 &&
                         pl.k_quants == p.k_cache && pl.v_quants == p.v_cache));
}

AttnI8Planes attn_cache_planes(const AttnParams& p, int64_t n_ctx) {
  const auto* k = static_cast<const uint8_t*>(p.k_cache);
  const auto* v = static_cast<const uint8_t*>(p.v_cache);
  AttnI8Planes pl;
  pl.k_quants = reinterpret_cast<const int8_t*>(k);
  pl.k_scales = reinterpret_cast<const uint16_t*>(k + p.k_scale_plane);
  pl.v_quants = reinterpret_cast<const int8_t*>(v);
  pl.v_scales = reinterpret_cast<const uint16_t*>(v + p.v_scale_plane);
  pl.n_ctx = n_ctx;
  pl.quant_row = p.k_row_bytes;
  pl.scale_row = p.k_row_bytes / 2;
  return pl;
}

bool attn_decode_planes_applies(const AttnParams& p, int64_t n_ctx) {
  // the tensor copies read whole 16-row boxes: bounded by the cache's rows (AttnParams::kv_rows)
  return attn::valid(p) && attn::planes(p) && p.k_row_bytes == p.v_row_bytes && p.k_row_bytes % 2 == 0 &&
         (p.planes_copy != PlanesCopy::TensorTiles || (p.kv_rows > 0 && p.kv_rows <= n_ctx)) &&
         p.type_k == QType::Q8_0 && p.type_v == QType::Q8_0 &&
         p.min_split_keys == kAttnMinSplitKeys && attn_decode_i8_tile_applies(p, attn_cache_planes(p, n_ctx));
}

bool attn_decode_planes_fold_applies(const AttnParams& p) {
  return attn::valid(p) && attn::planes(p) && p.type_k == QType::Q8_0 && p.type_v == QType::Q8_0 && p.n_tokens == 1 &&
         p.head_dim == 128 && tile_group(p) > 0 && p.softcap == 0.0f && p.rope.k_src && p.rope.v_src;
}

bool attn_decode_planes_head_split(const AttnParams& p) {
  return attn_decode_planes_fold_applies(p) && p.rope.on && tile_heads(p) < tile_group(p);
}

cudaError_t launch_attn_decode_planes(const AttnParams& p, cudaStream_t stream) {
  const int64_t n_max = ((int64_t{1} << 32) - 1) / std::max<int64_t>(1, p.k_row_bytes);
  if (!attn_decode_planes_applies(p, n_max)) return cudaErrorInvalidValue;
  return launch_attn_decode_i8_tile(p, attn_cache_planes(p, p.kv_rows > 0 ? p.kv_rows : n_max), stream);
}

cudaError_t launch_attn_decode_i8_tile(const AttnParams& p, const AttnI8Planes& pl, cudaStream_t stream) {
  if (!attn_decode_i8_tile_applies(p, pl)) return cudaErrorInvalidValue;
  attn::I8Args x{attn::make_args(p), pl.k_quants, pl.k_scales, pl.v_quants, pl.v_scales,
                 pl.quant_row ? pl.quant_row : (int64_t)p.n_head_kv * 128, pl.scale_row ? pl.scale_row : (int64_t)p.n_head_kv * 4,
                 {}, {}};
  if (p.planes_copy == PlanesCopy::TensorTiles) {
    for (auto [map, plane] : {std::pair{&x.kmap, pl.k_quants}, std::pair{&x.vmap, pl.v_quants}})
      if (const cudaError_t e = attn::encode_planes_map(map, plane, p.n_head_kv, pl.n_ctx, x.q_row); e != cudaSuccess) return e;
  }
  const int heads = tile_heads(p);
  const dim3 grid(x.a.grid_splits, p.n_head / heads, p.n_tokens), block(attn::kDecodeWarps * 32);
  const auto kern = heads == 1   ? attn::i8_tile_kernel<1>(p)
                    : heads == 2 ? attn::i8_tile_kernel<2>(p)
                    : heads == 4 ? attn::i8_tile_kernel<4>(p)
                                 : attn::i8_tile_kernel<8>(p);
  cudaError_t e = launch_kernel(kern, grid, block, 0, stream, x);
  if (e != cudaSuccess || (x.a.one_split_direct && x.a.rows_one_split)) return e;
  return attn::launch_decode_combine(x.a, 128, p.n_tokens, stream);
}

}  // namespace memra::cuda
