// The split-K decode attention over an f16 K and V cache on tensor cores, 16-key tiles
// (AttnParams::f16_mma). Grid (n_splits, n_head_kv, n_tokens), 4 warps; a block serves the G query
// heads of one kv head over one split's keys, each warp 16-key tiles in turn (warp w: tiles w,
// w + 4, ...), then the same in-block merge and partials as the other split kernels
// (attn_partials.cuh).
//
// Per tile, all on mma.sync m16n8k16 (f16 inputs, f32 accumulation), no shuffle per key:
//  - S = Q K^T with the G heads as the m rows (16, rows >= G zero: half the products are padding,
//    the tensor cores are far from the bound here) and the 16 keys as two n = 8 tiles. A = q of head
//    g (lane row g), held in registers as f16 pairs for the whole split; B = K^T comes from the
//    staged K tile by ldmatrix (rows = keys, 16 bytes = 8 elements: exactly B's "col" layout).
//  - The C layout of S (lane (g, t): head g, keys 2t, 2t + 1 and 8 + 2t, 9 + 2t) is the B layout
//    P^T needs for O^T += V^T P^T, so the probabilities go from the softmax straight into the next
//    mma's B registers: no shared memory for P, and a head's max and sum over the tile are two
//    shuffle steps among its 4 lanes.
//  - A = V^T from the staged V tile by ldmatrix.trans; C = the head elements x heads accumulator
//    (8 m-tiles x 4 floats per lane), rescaled per tile by the two heads' corrections of its
//    columns.
// Tiles are 16 rows of 256 bytes (a key's head slice) with 16-byte chunk c of row r stored at
// c ^ (r % 8): the 8 rows an ldmatrix phase reads at one chunk column hit distinct bank groups.
// cp.async groups per thread, oldest first: [K0], [V0], then per tile [next K] after the scores
// and [next V] after P x V. Two deeper forms were built, gated same-bytes and dropped on the H200
// (bench/notes/attn-mma-tiles.md): a second K slot per warp (neutral twice) and a two-slot ring of
// K + V pairs (64 KB per block, 3 blocks per SM: 0.976x at 16384 keys). A warp's first tile is
// requested before the dependency wait when all its keys lie below the launch's first position
// (rows written by earlier steps: the append of this step writes rows pos0 .. pos0 + n - 1 only).
#include "attn/attn_decode_mma.cuh"

#include <cuda_fp16.h>

#include "attn/attn_partials.cuh"
#include "attn/attn_tile_ptx.cuh"
#include "common/launch.cuh"

namespace memra::cuda::attn {
namespace {

constexpr int kD = 128;                   // head dim of this form
constexpr int kTile = 16;                 // keys per warp tile
constexpr int kRow = kD * 2;              // bytes of one key's f16 head slice
constexpr int kTileBytes = kTile * kRow;  // 4 KB
constexpr int kChunks = kRow / 16;        // 16-byte chunks per row

// Byte offset of 16-byte chunk c of row r inside a tile (the swizzle).
__device__ __forceinline__ int swz(int r, int c) { return r * kRow + ((c ^ (r & 7)) << 4); }

// The warp's copies of the head slices (kv head hk) of keys base .. base + nk - 1 into a tile;
// rows nk .. 15 are zero-filled (a key past the split has probability 0, and 0 times a stale
// shared-memory value could be a NaN in the P x V sums). Lanes 0-15 take one row's 16 chunks,
// lanes 16-31 the next row's; not committed.
__device__ __forceinline__ void stage_tile(uint8_t* tile, const uint8_t* cache, int64_t row_bytes, int hk, int base,
                                           int nk) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int x = 0; x < kTile * kChunks / 32; ++x) {
    const int c = lane + 32 * x, r = c / kChunks, ch = c % kChunks;
    const bool valid = r < nk;
    const uint8_t* src = cache + (int64_t)(valid ? base + r : base) * row_bytes + (int64_t)hk * kRow + ch * 16;
    cp16(tile + swz(r, ch), src, valid);
  }
}

__device__ __forceinline__ uint32_t pack_h2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

constexpr int kBlockSmem = kDecodeWarps * 2 * kTileBytes;  // 32 KB

// Tile `kv` (0 = K, 1 = V) of warp `warp` in the block's shared memory.
__device__ __forceinline__ uint8_t* tile_at(uint8_t* smem, int warp, int kv) {
  return smem + (warp * 2 + kv) * kTileBytes;
}

template <int G>
__global__ void __launch_bounds__(kDecodeWarps * 32, 4) attn_decode_f16_mma_kernel(Args a) {
  static_assert(G >= 1 && G <= 8, "the heads are the m rows of one mma tile (8 used at most)");
  static_assert(G * kD * 4 <= kTileBytes, "a warp's merge values overlay its K tile");
  // Per warp a K tile and a V tile. After the loop a warp's K tile holds its G x 128 f32 outputs for
  // the block merge and its V tile the G maxima and sums.
  __shared__ __align__(128) uint8_t smem[kBlockSmem];
  const int s = blockIdx.x, hk = blockIdx.y, i = blockIdx.z, h0 = hk * G;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // The positions are staged by the step's copy before its first kernel and no kernel writes them
  // (AttnParams::pos0): read before the dependency wait.
  const int pos_first = *a.pos0;
  const int pos = pos_first + i;
  int b, e, used;
  if (!split_keys(a, pos, s, b, e, used)) return;  // block-uniform: the combine reads only the used splits
  // ldmatrix .x4 addresses: lanes 8j .. 8j + 7 give matrix j's rows; matrices 0 / 1 are keys 0-7 at
  // chunk 2x / 2x + 1, matrices 2 / 3 keys 8-15. For K (no transpose) that is b0, b1 of the keys
  // 0-7 n-tile and b0, b1 of keys 8-15 at k-step x; for V (transposed) a0 .. a3 of m-tile x.
  const int mi = lane >> 3, lrow = (mi >> 1) * 8 + (lane & 7), lch = mi & 1;
  constexpr int kStride = kDecodeWarps * kTile;  // keys between a warp's tiles
  const int base0 = b + warp * kTile;
  const bool any = base0 < e;  // warp-uniform
  uint8_t* const kt = tile_at(smem, warp, 0);
  uint8_t* const vt = tile_at(smem, warp, 1);
  // The warp's first tile before the wait where all its keys lie below the launch's first
  // position. Groups [K0], [V0].
  const bool early = any && min(e, base0 + kTile) <= pos_first;
  const auto stage_first = [&] {
    const int n0 = min(kTile, e - base0);
    stage_tile(kt, a.k, a.k_row_bytes, hk, base0, n0);
    commit_group();
    stage_tile(vt, a.v, a.v_row_bytes, hk, base0, n0);
    commit_group();
  };
  if (early) stage_first();
  pdl_wait();
  if (any && !early) stage_first();
  // A fragments of q (rows >= G zero): head g, elements 16 x + 2t, + 1 and 16 x + 8 + 2t, + 1.
  uint32_t qa[kD / 16][2];
  {
    const float* qh = a.q + (int64_t)i * a.ld_q + (int64_t)(h0 + (g < G ? g : 0)) * kD + 2 * t;
#pragma unroll
    for (int x = 0; x < kD / 16; ++x) {
      const float2 u = *reinterpret_cast<const float2*>(qh + 16 * x);
      const float2 w = *reinterpret_cast<const float2*>(qh + 16 * x + 8);
      qa[x][0] = g < G ? pack_h2(u.x, u.y) : 0u;
      qa[x][1] = g < G ? pack_h2(w.x, w.y) : 0u;
    }
  }
  float m = -INFINITY, l = 0.0f;  // head g's online softmax state (the same in its 4 lanes)
  float c[kD / 16][4];            // O^T: lane (g, t) holds elements 16 mt + g (+ 8) of heads 2t, 2t + 1
#pragma unroll
  for (int mt = 0; mt < kD / 16; ++mt)
#pragma unroll
    for (int x = 0; x < 4; ++x) c[mt][x] = 0.0f;
  for (int base = base0; base < e; base += kStride) {
    const int nk = min(kTile, e - base);
    const int nb = base + kStride;  // the warp's next tile
    // This tile's K; pending after it: its V.
    wait_group<1>();
    __syncwarp();
    float s0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, s1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int x = 0; x < kD / 16; ++x) {
      uint32_t kb[4];
      ldsm_x4(kb, kt + swz(lrow, 2 * x + lch));
      mma16816(s0, qa[x][0], 0u, qa[x][1], 0u, kb[0], kb[1]);
      mma16816(s1, qa[x][0], 0u, qa[x][1], 0u, kb[2], kb[3]);
    }
    __syncwarp();  // every lane has read the K tile: the next one may land in it
    if (nb < e) stage_tile(kt, a.k, a.k_row_bytes, hk, nb, min(kTile, e - nb));
    commit_group();
    // Head g's keys in this lane: 2t, 2t + 1, 8 + 2t, 9 + 2t.
    const float raw[4] = {s0[0], s0[1], s1[0], s1[1]};
    float sc[4], p[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int key = 2 * t + (u & 1) + 8 * (u >> 1);
      sc[u] = key < nk ? finish_score(raw[u], a.scale, a.softcap) : -INFINITY;
    }
    tile_softmax(sc, m, l, p, c, [](float x) { return expf(x); });
    // B fragments of P^T: keys 2t, 2t + 1 and 8 + 2t, 9 + 2t of head g.
    const uint32_t pb0 = pack_h2(p[0], p[1]), pb1 = pack_h2(p[2], p[3]);
    // This tile's V; pending after it: the K tile just requested.
    wait_group<1>();
    __syncwarp();
#pragma unroll
    for (int mt = 0; mt < kD / 16; ++mt) {
      uint32_t va[4];
      ldsm_x4_trans(va, vt + swz(lrow, 2 * mt + lch));
      mma16816(c[mt], va[0], va[1], va[2], va[3], pb0, pb1);
    }
    __syncwarp();  // every lane has read the V tile
    if (nb < e) stage_tile(vt, a.v, a.v_row_bytes, hk, nb, min(kTile, e - nb));
    commit_group();
  }
  wait_group<0>();  // only empty groups can be left; the tiles are free for the merge values
  __syncwarp();
  tile_merge_and_store<kD, G>(
      c, m, l, [](int mt, int r) { return 16 * mt + r; },
      [&](int w) { return reinterpret_cast<float*>(tile_at(smem, w, 0)); },
      [&](int w) { return reinterpret_cast<float*>(tile_at(smem, w, 1)); }, a, i, h0, s,
      a.one_split_direct && used == 1);
}

template <int G>
cudaError_t launch_g(const Args& a, int n_tokens, cudaStream_t s) {
  const dim3 grid(a.grid_splits, a.n_head_kv, n_tokens), block(kDecodeWarps * 32);
  return launch_kernel(attn_decode_f16_mma_kernel<G>, grid, block, 0, s, a);
}

}  // namespace

bool f16_mma_applies(const Args& a, int D) {
  if (!a.f16_mma || a.byte_loads || D != kD) return false;
  if (a.type_k != QType::F16 || a.type_v != QType::F16) return false;
#ifdef MEMRA_REDUCED_INSTANCES
  if (a.group != 4) return false;
#else
  if (a.group < 1 || a.group > 8) return false;
#endif
  const auto a16 = [](const void* p, int64_t rb) { return ((uintptr_t)p | (uintptr_t)rb) % 16 == 0; };
  return a16(a.k, a.k_row_bytes) && a16(a.v, a.v_row_bytes) && (uintptr_t)a.q % 8 == 0 && a.ld_q % 2 == 0;
}

cudaError_t launch_decode_f16_mma(const Args& a, int n_tokens, cudaStream_t s) {
  switch (a.group) {
#ifndef MEMRA_REDUCED_INSTANCES
    case 1: return launch_g<1>(a, n_tokens, s);
    case 2: return launch_g<2>(a, n_tokens, s);
    case 3: return launch_g<3>(a, n_tokens, s);
    case 5: return launch_g<5>(a, n_tokens, s);
    case 6: return launch_g<6>(a, n_tokens, s);
    case 7: return launch_g<7>(a, n_tokens, s);
    case 8: return launch_g<8>(a, n_tokens, s);
#endif
    case 4: return launch_g<4>(a, n_tokens, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace memra::cuda::attn
