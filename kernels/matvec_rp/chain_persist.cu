// The persistent decode-chain probe's kernels (see chain_persist.h): the weight pages' fill and
// the chain itself, one resident grid for every matrix of every layer.
#include <cuda_runtime.h>

#include <algorithm>

#include "common/bulk_copy.cuh"
#include "matvec_rp/chain_persist.h"
#include "norm/q8_1_emit.cuh"  // warp_sum_f32, warp_max_f32

namespace memra::cuda::chain {
namespace {

using namespace memra::chain;

__global__ void fill_chain_kernel(Dims d, int wtype, uint64_t seed, int layer, int wm, int64_t rows,
                                  int64_t units_per_row, uint8_t* __restrict__ w) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * units_per_row) return;
  const int64_t row = i / units_per_row, u = i % units_per_row;
  const uint64_t h = block_hash(seed, layer, wm, row, u);
  if (wtype == kQ4_K) {  // one 144-byte super-block: its header and 8 quant units, 16-byte stores
    uint8_t* page = w + superblock_page_offset(d, layer, wm, row, u);
    const int r = (int)(row % kTaskRows), sb = (int)(u % (kPageCols / 256));
    for (int v = 0; v < kQ4KBytes / 16; ++v)
      *reinterpret_cast<uint4*>(page + (v == 0 ? q4k_header_page_offset(r, sb) : q4k_unit_page_offset(r, sb, v - 1))) =
          make_uint4(superblock_word(h, 4 * v), superblock_word(h, 4 * v + 1), superblock_word(h, 4 * v + 2),
                     superblock_word(h, 4 * v + 3));
    return;
  }
  const int64_t cols = units_per_row * 32;
  *reinterpret_cast<uint4*>(w + block_qs_offset(d, layer, wm, row, u)) =
      make_uint4(block_word(h, 0), block_word(h, 1), block_word(h, 2), block_word(h, 3));
  *reinterpret_cast<uint16_t*>(w + block_d_offset(d, layer, wm, row, u)) = block_scale_bits(h, cols);
}

__device__ __forceinline__ uint32_t ld_acquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// One thread: spin until *c reaches `need` (acquire); past spin_limit cycles, or once another CTA
// gave up, stop waiting and flag the error (the outputs are then wrong and the host says so).
__device__ __forceinline__ void wait_count(const ChainParams& p, const uint32_t* c, uint32_t need) {
  const long long t0 = clock64();
  while (ld_acquire(c) < need) {
    if (*reinterpret_cast<volatile uint32_t*>(p.error) != 0) break;
    if (clock64() - t0 > p.spin_limit) {
      atomicExch(p.error, 1u);
      break;
    }
  }
}

// Named barrier 1 over the consumer warps (the producer never joins). Not .aligned: thread 0 may
// arrive from its dependency spin while the rest of warp 0 is already waiting.
__device__ __forceinline__ void consumers_sync(int n_threads) {
  asm volatile("barrier.sync 1, %0;" ::"r"(n_threads) : "memory");
}

__device__ __forceinline__ void init_bar(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bulk::smem_addr(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bulk::smem_addr(bar)) : "memory");
}

// The weights were written before the launch (a kernel boundary orders them for the copy engine):
// no proxy fence per page.
__device__ __forceinline__ void copy_page(void* dst, const void* src, uint64_t* bar) {
  bulk::expect_bytes(bar, kPageBytes);
  bulk::copy_async(dst, src, kPageBytes, bar);
}

// Position in the page ring: slot and the parity of its current round (no divisions per page).
struct Cursor {
  int slot = 0;
  uint32_t parity = 0;
  bool wrapped = false;  // a round completed: the producer must wait for the slot to be emptied
  __device__ void next(int stages) {
    if (++slot == stages) {
      slot = 0;
      parity ^= 1u;
      wrapped = true;
    }
  }
};

struct Smem {
  uint8_t* ring;
  uint64_t* full;
  uint64_t* empty;
  int8_t* xq;
  float* xd;
  int32_t* xs;
  uint64_t* sums;  // split: the row-sum buffers' mbarriers: full[0], full[1], empty[0], empty[1]
  float* ys;       // row sums [gate / only matrix: 32][up: 32]; split: buffer e at ys + e * kSumsFloats
  float* yp;       // the tensor-core consumers' row partials: [gate / up][column group][32 rows]
};

constexpr int kMaxGroups = 8;  // column groups of the tensor-core consumers (16 warps: 8)
// Split (8 consumer warps, 4 column groups): two buffers of [ys: 64][yp: 2 x 4 x 32]; the tasks kernels
// use the region as one [ys: 64][yp: 2 x kMaxGroups x 32] (576 floats).
constexpr int kSumsFloats = 64 + 2 * 4 * kTaskRows;
static_assert(2 * kSumsFloats >= 64 + 2 * kMaxGroups * kTaskRows, "the tasks kernels' row sums fit the region");
__host__ __device__ inline size_t act_smem_bytes(int64_t ffn) {
  return (size_t)ffn + (size_t)ffn / 32 * 8 + 2 * kSumsFloats * 4 + 4 * 8;
}

__device__ Smem carve(uint8_t* base, int stages, int64_t ffn) {
  Smem s;
  s.ring = base;
  s.full = reinterpret_cast<uint64_t*>(base + (size_t)stages * kPageBytes);
  s.empty = s.full + stages;
  s.sums = s.empty + stages;
  s.xq = reinterpret_cast<int8_t*>(s.sums + 4);  // 16-byte aligned: (2 * stages + 4) * 8 bytes
  s.xd = reinterpret_cast<float*>(s.xq + ffn);
  s.xs = reinterpret_cast<int32_t*>(s.xd + ffn / 32);
  s.ys = reinterpret_cast<float*>(s.xs + ffn / 32);
  s.yp = s.ys + 64;
  return s;
}

// Row `row`'s term of page `page` for this lane's 32-column block (lane l: block l of the page).
template <int WT>
__device__ __forceinline__ float page_term(const uint8_t* page, int row, int lane, const uint32_t x[8], float dx,
                                           int sx) {
  if constexpr (WT == kQ4_K) {
    const int sb = lane >> 3, j = lane & 7;
    const uint4 q0 = *reinterpret_cast<const uint4*>(page + q4k_unit_page_offset(row, sb, 2 * (j >> 1)));
    const uint4 q1 = *reinterpret_cast<const uint4*>(page + q4k_unit_page_offset(row, sb, 2 * (j >> 1) + 1));
    const uint4 hd = *reinterpret_cast<const uint4*>(page + q4k_header_page_offset(row, sb));
    const uint32_t q[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    const uint32_t sc[3] = {hd.y, hd.z, hd.w};
    return q4_k_term(q, j, hd.x, sc, x, dx, sx);
  } else {
    const uint4 wv = *reinterpret_cast<const uint4*>(page + row * (kPageCols / 2) + q4_0_slot(row, lane) * 16);
    const uint16_t dh = *reinterpret_cast<const uint16_t*>(page + kPageQsBytes + (row * kPageBlocks + lane) * 2);
    const uint32_t w[4] = {wv.x, wv.y, wv.z, wv.w};
    return q4_0_term(w, dh, x, dx, sx);
  }
}

// c += A B (mma.sync m16n8k32, s8 x s8 -> s32; PTX fragment roles: lane = 4 g + t, A rows g and
// g + 8 at k 4t..4t+3 (a0, a1) and 16 + 4t.. (a2, a3), B column g at the same k (b0, b1), C rows g and
// g + 8 at columns 2t, 2t + 1).
__device__ __forceinline__ void mma_s8(int& c0, int& c1, int& c2, int& c3, uint32_t a0, uint32_t a1, uint32_t a2,
                                       uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(c0), "+r"(c1), "+r"(c2), "+r"(c3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// B's words for the lanes of column g < bpw: words t and 4 + t of input block in0 + g (staged quants).
__device__ __forceinline__ void share_x_words(const Smem& sm, int in0, int bpw, int g, int t, uint32_t& xb0,
                                              uint32_t& xb1) {
  if (g < bpw) {
    const uint32_t* xw = reinterpret_cast<const uint32_t*>(sm.xq + (in0 + g) * 32);
    xb0 = xw[t];
    xb1 = xw[4 + t];
  }
}

// The tensor-core consumer's share of one Q4_0 page (ChainParams::mma): rows rg * 16 + g and + 8, the
// BPW blocks qq * BPW .. of the page (input chunk kc). MMA i takes block i of the share as A (the
// nibbles as s8 0..15: k 4t.. the low nibbles of the block's word t, k 16 + 4t.. its high nibbles, as
// GGUF stores weight j and j + 16 in byte j) and the block's activation quants in B column i (every
// other column zero), so C column i accumulates block i's exact integer dots of both rows. Lane (g, t)
// then holds blocks 2t and 2t + 1 of rows g and g + 8 and adds each as q4_0_term scales it.
template <int BPW>
__device__ __forceinline__ void mma_page(const uint8_t* page, const Smem& sm, int kc, int rg, int qq, int lane,
                                         float& acc0, float& acc1) {
  static_assert(BPW == 4 || BPW == 8, "4 or 8 blocks per warp and page (16 or 8 consumer warps)");
  const int g = lane >> 2, t = lane & 3;
  const int r0 = rg * 16 + g, r1 = r0 + 8;
  const int in0 = kc * kPageBlocks + qq * BPW;  // the share's first block as an input block index
  uint32_t xb0 = 0, xb1 = 0;
  share_x_words(sm, in0, BPW, g, t, xb0, xb1);
  int c0 = 0, c1 = 0, c2 = 0, c3 = 0;
#pragma unroll
  for (int i = 0; i < BPW; ++i) {
    const int blk = qq * BPW + i;
    uint32_t a[4], b[2];
    mma_a_words(*reinterpret_cast<const uint32_t*>(page + q4_0_word_offset(r0, blk, t)),
                *reinterpret_cast<const uint32_t*>(page + q4_0_word_offset(r1, blk, t)), a);
    mma_b_words(g, i, xb0, xb1, b);
    mma_s8(c0, c1, c2, c3, a[0], a[1], a[2], a[3], b[0], b[1]);
  }
  if (2 * t < BPW) {
    const int j = qq * BPW + 2 * t;  // page block of c0 and c2; j + 1: c1, c3
    const uint32_t d0 = *reinterpret_cast<const uint32_t*>(page + kPageQsBytes + (r0 * kPageBlocks + j) * 2);
    const uint32_t d1 = *reinterpret_cast<const uint32_t*>(page + kPageQsBytes + (r1 * kPageBlocks + j) * 2);
    const int bi = kc * kPageBlocks + j;
    const float dxa = sm.xd[bi], dxb = sm.xd[bi + 1];
    const int sxa = sm.xs[bi], sxb = sm.xs[bi + 1];
    acc0 += q4_0_scaled(c0, (uint16_t)(d0 & 0xFFFFu), dxa, sxa);
    acc0 += q4_0_scaled(c1, (uint16_t)(d0 >> 16), dxb, sxb);
    acc1 += q4_0_scaled(c2, (uint16_t)(d1 & 0xFFFFu), dxa, sxa);
    acc1 += q4_0_scaled(c3, (uint16_t)(d1 >> 16), dxb, sxb);
  }
}

// The same share of a Q4_K page: block = 32-weight sub-block (the share's blocks qq * BPW .. lie in one
// super-block sb, chunks c: units 2c, 2c + 1). MMAs 2m and 2m + 1 take chunk m's low and high nibbles
// from the same four words per lane (word t of both units, rows g and g + 8); lane (g, t) then scales
// sub-blocks 2t and 2t + 1 of the share (one chunk) with their rows' headers, as q4_k_term does.
template <int BPW>
__device__ __forceinline__ void mma_page_q4k(const uint8_t* page, const Smem& sm, int kc, int rg, int qq, int lane,
                                             float& acc0, float& acc1) {
  static_assert(BPW == 4 || BPW == 8, "4 or 8 sub-blocks per warp and page (16 or 8 consumer warps)");
  const int g = lane >> 2, t = lane & 3;
  const int r0 = rg * 16 + g, r1 = r0 + 8;
  const int blk0 = qq * BPW, sb = blk0 >> 3;  // the share's first sub-block of the page, its super-block
  const int in0 = kc * kPageBlocks + blk0;
  uint32_t xb0 = 0, xb1 = 0;
  share_x_words(sm, in0, BPW, g, t, xb0, xb1);
  const auto word = [&](int r, int unit) {
    return *reinterpret_cast<const uint32_t*>(page + q4k_unit_page_offset(r, sb, unit) + 4 * t);
  };
  int c0 = 0, c1 = 0, c2 = 0, c3 = 0;
#pragma unroll
  for (int m = 0; m < BPW / 2; ++m) {
    const int cu = 2 * ((blk0 & 7) / 2 + m);  // the chunk's first unit in the super-block
    const uint32_t lo0 = word(r0, cu), lo1 = word(r1, cu), hi0 = word(r0, cu + 1), hi1 = word(r1, cu + 1);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t a[4], b[2];
      mma_a_words_q4k(lo0, lo1, hi0, hi1, h, a);
      mma_b_words(g, 2 * m + h, xb0, xb1, b);
      mma_s8(c0, c1, c2, c3, a[0], a[1], a[2], a[3], b[0], b[1]);
    }
  }
  if (2 * t < BPW) {
    const int j = (blk0 & 7) + 2 * t;  // sub-block of c0 and c2 in the super-block; j + 1: c1, c3
    const uint4 h0 = *reinterpret_cast<const uint4*>(page + q4k_header_page_offset(r0, sb));
    const uint4 h1 = *reinterpret_cast<const uint4*>(page + q4k_header_page_offset(r1, sb));
    const uint32_t sc0[3] = {h0.y, h0.z, h0.w}, sc1[3] = {h1.y, h1.z, h1.w};
    const int bi = in0 + 2 * t;
    const float dxa = sm.xd[bi], dxb = sm.xd[bi + 1];
    const int sxa = sm.xs[bi], sxb = sm.xs[bi + 1];
    acc0 += q4_k_scaled(c0, j, h0.x, sc0, dxa, sxa);
    acc0 += q4_k_scaled(c1, j + 1, h0.x, sc0, dxb, sxb);
    acc1 += q4_k_scaled(c2, j, h1.x, sc1, dxa, sxa);
    acc1 += q4_k_scaled(c3, j + 1, h1.x, sc1, dxb, sxb);
  }
}

// One warp, lane = row: item `it`'s 32 row sums (g: gate or the only matrix, u: up) become one q8 block
// of the next matrix's input. A split row block's sums go to p.acc first; the item that completes its
// pages (the arrival counter) reads them back and finishes the block.
__device__ __forceinline__ void finish_item(const ChainParams& p, const Item& it, float g, float u, int lane) {
  const Dims& d = p.dims;
  const Task& k = it.k;
  const int64_t F = d.ffn;
  const bool glu = k.mat == kGlu;
  const int out = out_slot(k.layer, k.mat);
  const int64_t row = (int64_t)out * F + k.row_block * kTaskRows + lane;
  if (it.pg1 - it.pg0 != k.pages) {
    const int64_t up = (int64_t)n_slots(d) * F;  // the up sums' plane
    atomicAdd(p.acc + row, g);
    if (glu) atomicAdd(p.acc + up + row, u);
    __threadfence();
    __syncwarp();
    uint32_t before = 0;
    if (lane == 0) before = atomicAdd(p.counters + arrival_counter(d, it.t), (uint32_t)(it.pg1 - it.pg0));
    before = __shfl_sync(0xffffffffu, before, 0);
    if (before + (uint32_t)(it.pg1 - it.pg0) != (uint32_t)k.pages) return;  // another CTA finishes the block
    __threadfence();
    g = __ldcg(p.acc + row);
    if (glu) u = __ldcg(p.acc + up + row);
  }
  const float y = glu ? g / (1.f + expf(-g)) * u : g;
  p.y[row] = y;
  const float amax = warp_max_f32(fabsf(y));
  const int q = amax > 0.f ? __float2int_rn(y * q8_inv_scale(amax)) : 0;
  int qs = q;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) qs += __shfl_xor_sync(0xffffffffu, qs, o);
  p.act_q[row] = (int8_t)q;
  if (lane == 0) {
    p.act_d[(int64_t)out * (F / 32) + k.row_block] = q8_stored_scale(amax, unit_scale_output(k.mat));
    p.act_s[(int64_t)out * (F / 32) + k.row_block] = qs;
  }
  __threadfence();
  __syncwarp();
  if (lane == 0 && (p.mode == kFull || p.mode == kFullChunk)) {
    atomicAdd(p.counters + 4 * k.layer + k.mat, 1u);
    atomicAdd(p.counters + chunk_counter(d, 4 * k.layer + k.mat, (int)(k.row_block / kTaskRows)), 1u);
  }
}

// Threads of a CTA: NC consumer warps, the producer warp, and (split) two finishing warps.
constexpr int chain_threads(int nc, bool split) { return 32 * (nc + 1 + (split ? 2 : 0)); }

// One CTA: warps 0..NC-1 consume, warp NC produces, over this CTA's items (ItemIter). Tasks: warp 0
// finishes each item after the consumers' barrier. Split: warps NC + 1 and NC + 2 finish the even and
// odd items from the two row-sum buffers, so that the consumers never wait on a finish's round trips
// to memory (its atomics, fences and the arrival counter).
template <int NC, int WT, bool MMA, bool SPLIT>
__global__ void __launch_bounds__(chain_threads(NC, SPLIT), NC <= 8 ? 2 : 1) chain_kernel(const __grid_constant__ ChainParams p, int stages) {
  static_assert(!MMA || NC == 8 || NC == 16, "tensor-core consumers: 8 or 16 warps");
  constexpr int RPW = kTaskRows / NC;  // rows per consumer warp (dp4a)
  constexpr int NG = NC / 2, BPW = kPageBlocks / NG;  // MMA: column groups, blocks per warp and page
  extern __shared__ __align__(128) uint8_t smem_raw[];
  const Dims d = p.dims;
  const Smem sm = carve(smem_raw, stages, d.ffn);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      init_bar(&sm.full[s], 1);
      init_bar(&sm.empty[s], NC);
    }
    if (SPLIT)
      for (int e = 0; e < 2; ++e) {
        init_bar(&sm.sums[e], NC);
        init_bar(&sm.sums[2 + e], 1);
      }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warp == NC) {  // producer: every page of this CTA's items, as soon as a slot is free
    if (lane == 0) {
      Cursor c;
      ItemIter items(blockIdx.x);
      Item it;
      while (items.next(d, SPLIT, blockIdx.x, gridDim.x, it))
        for (int pg = it.pg0; pg < it.pg1; ++pg, c.next(stages)) {
          // Round r of a slot waits for the consumers' release of round r - 1 (parity of r - 1).
          if (c.wrapped) bulk::wait_barrier(&sm.empty[c.slot], c.parity ^ 1u);
          copy_page(sm.ring + (size_t)c.slot * kPageBytes, p.w + it.k.w_off + (uint64_t)pg * kPageBytes,
                    &sm.full[c.slot]);
        }
    }
    return;
  }
  if (SPLIT && warp > NC) {  // finishing warp e: items e, e + 2, ... from row-sum buffer e
    if (p.mode == kStreamOnly || p.mode == kPagesOnly) return;  // (no sums in these modes)
    const int e = warp - NC - 1;
    ItemIter items(blockIdx.x);
    Item it;
    for (int i = 0; items.next(d, true, blockIdx.x, gridDim.x, it); ++i) {
      if ((i & 1) != e) continue;
      bulk::wait_barrier(&sm.sums[e], (uint32_t)(i >> 1) & 1u);
      const float* ys = sm.ys + e * kSumsFloats;
      const bool glu = it.k.mat == kGlu;
      float g = 0.f, u = 0.f;
      if constexpr (MMA) {
        for (int q = 0; q < NC / 2; ++q) {
          g += ys[64 + q * kTaskRows + lane];
          if (glu) u += ys[64 + (NC / 2 + q) * kTaskRows + lane];
        }
      } else {
        g = ys[lane];
        if (glu) u = ys[32 + lane];
      }
      __syncwarp();
      if (lane == 0) arrive(&sm.sums[2 + e]);
      finish_item(p, it, g, u, lane);
    }
    return;
  }

  const int n_cons = NC * 32;
  const int64_t F = d.ffn;
  Cursor c;
  int n_items = 0;  // split: items whose sums went to a buffer
  int cur = -1;  // split: the matrix (4 * layer + mat) whose input is staged
  ItemIter items(blockIdx.x);
  Item it;
  while (items.next(d, SPLIT, blockIdx.x, gridDim.x, it)) {
    const Task k = it.k;
    if (p.mode == kStreamOnly) {
      for (int pg = it.pg0; pg < it.pg1; ++pg, c.next(stages)) {
        bulk::wait_barrier(&sm.full[c.slot], c.parity);
        __syncwarp();
        if (lane == 0) arrive(&sm.empty[c.slot]);
      }
      continue;
    }
    // kFull: wait for the whole previous matrix, then stage its output (this task's input) in shared
    // memory (split: once per matrix). kFullChunk (tasks only): the same per 1024-input chunk, before
    // the first page that reads it.
    const int in = in_slot(k.layer, k.mat);
    const bool by_chunk = p.mode == kFullChunk && k.dep >= 0 && !SPLIT;
    const bool pages_only = p.mode == kPagesOnly;
    const auto stage = [&](int64_t b0, int64_t n) {  // inputs [b0, b0 + n) (multiples of 32)
      const uint4* gq = reinterpret_cast<const uint4*>(p.act_q + (int64_t)in * F + b0);
      for (int64_t i = threadIdx.x; i < n / 16; i += n_cons) reinterpret_cast<uint4*>(sm.xq + b0)[i] = __ldcg(gq + i);
      for (int64_t i = threadIdx.x; i < n / 32; i += n_cons) {
        sm.xd[b0 / 32 + i] = __ldcg(p.act_d + (int64_t)in * (F / 32) + b0 / 32 + i);
        sm.xs[b0 / 32 + i] = __ldcg(p.act_s + (int64_t)in * (F / 32) + b0 / 32 + i);
      }
    };
    if (!by_chunk && !pages_only && (!SPLIT || 4 * k.layer + k.mat != cur)) {
      if (p.mode == kFull && k.dep >= 0 && threadIdx.x == 0) wait_count(p, p.counters + k.dep, k.dep_count);
      consumers_sync(n_cons);
      stage(0, k.cols);
      consumers_sync(n_cons);
      cur = 4 * k.layer + k.mat;
    }
    int staged = -1;  // kFullChunk: the last input chunk staged

    float acc[2][RPW];
#pragma unroll
    for (int r = 0; r < RPW; ++r) acc[0][r] = acc[1][r] = 0.f;
    float mg0 = 0.f, mg1 = 0.f, mu0 = 0.f, mu1 = 0.f;  // MMA: rows g, g + 8 of the gate (or only) matrix, of up
    const bool glu = k.mat == kGlu;
    for (int pg = it.pg0; pg < it.pg1; ++pg, c.next(stages)) {
      const int s = c.slot;
      const int kc = glu ? pg >> 1 : pg;
      const int which = glu ? pg & 1 : 0;
      if (by_chunk && kc != staged) {
        if (threadIdx.x == 0) wait_count(p, p.counters + chunk_counter(d, k.dep, kc), kTaskRows);
        consumers_sync(n_cons);
        stage((int64_t)kc * kPageCols, kPageCols);
        consumers_sync(n_cons);
        staged = kc;
      }
      if constexpr (MMA) {
        bulk::wait_barrier(&sm.full[s], c.parity);
        const uint8_t* page = sm.ring + (size_t)s * kPageBytes;
        float p0 = 0.f, p1 = 0.f;  // this page's share (registers, not an array indexed by `which`)
        if constexpr (WT == kQ4_K)
          mma_page_q4k<BPW>(page, sm, kc, warp & 1, warp >> 1, lane, p0, p1);
        else
          mma_page<BPW>(page, sm, kc, warp & 1, warp >> 1, lane, p0, p1);
        if (which == 0) {
          mg0 += p0;
          mg1 += p1;
        } else {
          mu0 += p0;
          mu1 += p1;
        }
        __syncwarp();
        if (lane == 0) arrive(&sm.empty[s]);
        continue;
      }
      const int b = kc * kPageBlocks + lane;
      const uint4 xa = *reinterpret_cast<const uint4*>(sm.xq + b * 32);
      const uint4 xb = *reinterpret_cast<const uint4*>(sm.xq + b * 32 + 16);
      const uint32_t x[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
      const float dx = sm.xd[b];
      const int sx = sm.xs[b];
      bulk::wait_barrier(&sm.full[s], c.parity);
      const uint8_t* page = sm.ring + (size_t)s * kPageBytes;
      float part[RPW];
#pragma unroll
      for (int r = 0; r < RPW; ++r) part[r] = page_term<WT>(page, warp * RPW + r, lane, x, dx, sx);
      __syncwarp();
      if (lane == 0) arrive(&sm.empty[s]);
#pragma unroll
      for (int r = 0; r < RPW; ++r) {
        if (which == 0)
          acc[0][r] += part[r];
        else
          acc[1][r] += part[r];
      }
    }
    if (pages_only) {  // keep the sums (one shared store per lane, no barrier), nothing else
      float v = mg0 + mg1 + mu0 + mu1;
#pragma unroll
      for (int r = 0; r < RPW; ++r) v += acc[0][r] + acc[1][r];
      sm.yp[warp * 32 + lane] = v;
      continue;
    }
    // This warp's partial row sums: MMA, each row's 4 lanes (t) summed into yp[(gate / up * groups +
    // column group) * 32 + row]; dp4a, lane 0's rows into ys[row] (gate or the only matrix) / ys[32 + row].
    const auto put_partials = [&](float* ys, float* yp, int groups) {
      if constexpr (MMA) {
#pragma unroll
        for (int wh = 0; wh < 2; ++wh)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            float v = wh == 0 ? (h == 0 ? mg0 : mg1) : (h == 0 ? mu0 : mu1);
            v += __shfl_xor_sync(0xffffffffu, v, 1);
            v += __shfl_xor_sync(0xffffffffu, v, 2);
            if ((lane & 3) == 0 && (wh == 0 || glu))
              yp[(wh * groups + (warp >> 1)) * kTaskRows + (warp & 1) * 16 + (lane >> 2) + 8 * h] = v;
          }
      } else {
#pragma unroll
        for (int r = 0; r < RPW; ++r) {
          const float g = warp_sum_f32(acc[0][r]);
          const float u = glu ? warp_sum_f32(acc[1][r]) : 0.f;
          if (lane == 0) {
            ys[warp * RPW + r] = g;
            ys[32 + warp * RPW + r] = u;
          }
        }
      }
    };
    if constexpr (SPLIT) {  // into buffer n_items & 1, for a finishing warp
      const int e = n_items & 1;
      if (n_items >= 2) bulk::wait_barrier(&sm.sums[2 + e], (uint32_t)((n_items >> 1) - 1) & 1u);
      ++n_items;
      float* ys = sm.ys + e * kSumsFloats;
      put_partials(ys, ys + 64, NG);
      __syncwarp();
      if (lane == 0) arrive(&sm.sums[e]);
      continue;
    }
    // The item's row sums (gate / only matrix, up) into sm.ys[0..31] / sm.ys[32..63]: MMA, the column
    // groups' partials summed in group order by warp 0.
    put_partials(sm.ys, sm.yp, kMaxGroups);
    consumers_sync(n_cons);
    if (warp != 0) continue;
    float g = sm.ys[lane], u = sm.ys[32 + lane];
    if constexpr (MMA) {
      g = u = 0.f;
      for (int q = 0; q < NG; ++q) {
        g += sm.yp[q * kTaskRows + lane];
        if (glu) u += sm.yp[(kMaxGroups + q) * kTaskRows + lane];
      }
    }
    finish_item(p, it, g, u, lane);
  }
}

using ChainFn = void (*)(const ChainParams, int);

// The kernel instance of a form (nullptr: none). Split schedules: 8 consumer warps only.
ChainFn kernel_for(const ChainParams& p) {
  const bool k = p.wtype == kQ4_K;
  if (p.split) {
    if (p.consumers != 8) return nullptr;
    if (p.mma) return k ? chain_kernel<8, kQ4_K, true, true> : chain_kernel<8, kQ4_0, true, true>;
    return k ? chain_kernel<8, kQ4_K, false, true> : chain_kernel<8, kQ4_0, false, true>;
  }
  if (p.mma) {
    if (p.consumers == 8) return k ? chain_kernel<8, kQ4_K, true, false> : chain_kernel<8, kQ4_0, true, false>;
    if (p.consumers == 16) return k ? chain_kernel<16, kQ4_K, true, false> : chain_kernel<16, kQ4_0, true, false>;
    return nullptr;
  }
  switch (p.consumers) {
    case 4: return k ? chain_kernel<4, kQ4_K, false, false> : chain_kernel<4, kQ4_0, false, false>;
    case 8: return k ? chain_kernel<8, kQ4_K, false, false> : chain_kernel<8, kQ4_0, false, false>;
    case 16: return k ? chain_kernel<16, kQ4_K, false, false> : chain_kernel<16, kQ4_0, false, false>;
    default: return nullptr;
  }
}

cudaError_t geometry_for(ChainFn fn, const ChainParams& p, int sm_count, size_t smem_optin, ChainGeometry& g) {
  int dev = 0, smem_sm = 0, reserved = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev);
  if (e != cudaSuccess) return e;
  const size_t fixed = act_smem_bytes(p.dims.ffn);
  const size_t per_stage = kPageBytes + 16;
  const size_t limit = std::min(smem_optin, (size_t)smem_sm / (size_t)p.ctas_per_sm - (size_t)reserved);
  if (limit < fixed + 2 * per_stage) return cudaErrorInvalidValue;
  int stages = p.stages > 0 ? p.stages : (int)((limit - fixed) / per_stage);
  g.threads = chain_threads(p.consumers, p.split);
  for (; stages >= 2; --stages) {
    g.smem = (size_t)stages * per_stage + fixed;
    if (g.smem > limit) continue;
    e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)g.smem);
    if (e != cudaSuccess) return e;
    int nb = 0;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, fn, g.threads, g.smem);
    if (e != cudaSuccess) return e;
    if (nb >= p.ctas_per_sm) break;
    if (p.stages > 0) return cudaErrorInvalidConfiguration;  // the asked ring does not fit
  }
  if (stages < 2) return cudaErrorInvalidConfiguration;
  g.stages = stages;
  g.grid = sm_count * p.ctas_per_sm;
  return cudaSuccess;
}

bool dims_ok(const Dims& d) {
  return d.n_layers >= 1 && d.ffn / kPageCols <= kMaxChunks && d.qkv % kPageCols == 0 && d.hidden >= kPageCols && d.hidden % kPageCols == 0 && d.ffn % kPageCols == 0 &&
         d.ffn >= d.hidden && d.qkv % kTaskRows == 0 && d.qkv >= d.hidden && d.qkv <= d.ffn;
}

}  // namespace

cudaError_t chain_geometry(const ChainParams& p, int sm, size_t optin, ChainGeometry& g) {
  if (!dims_ok(p.dims) || (p.ctas_per_sm != 1 && p.ctas_per_sm != 2) || sm < 1 ||
      (p.wtype != kQ4_0 && p.wtype != kQ4_K))
    return cudaErrorInvalidValue;
  const ChainFn fn = kernel_for(p);
  return fn ? geometry_for(fn, p, sm, optin, g) : cudaErrorNotSupported;
}

cudaError_t launch_chain(const ChainParams& p, const ChainGeometry& g, cudaStream_t stream) {
  if (!dims_ok(p.dims) || g.grid < 1 || g.stages < 2 || !p.w || !p.act_q || !p.act_d || !p.act_s || !p.y ||
      !p.counters || !p.error || (p.split && (!p.acc || p.mode == kFullChunk)) ||
      (p.wtype != kQ4_0 && p.wtype != kQ4_K))
    return cudaErrorInvalidValue;
  const ChainFn fn = kernel_for(p);
  if (!fn) return cudaErrorNotSupported;
  fn<<<g.grid, g.threads, g.smem, stream>>>(p, g.stages);
  return cudaGetLastError();
}

cudaError_t time_chain(const ChainParams& p, const ChainGeometry& g, cudaStream_t stream, float& ms, uint32_t& error) {
  cudaEvent_t a = nullptr, b = nullptr;
  cudaError_t e = cudaEventCreate(&a);
  if (e == cudaSuccess) e = cudaEventCreate(&b);
  if (e == cudaSuccess)
    e = cudaMemsetAsync(p.counters, 0, sizeof(uint32_t) * (size_t)n_counters(p.dims), stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(p.error, 0, sizeof(uint32_t), stream);
  if (e == cudaSuccess && p.split)
    e = cudaMemsetAsync(p.acc, 0, sizeof(float) * 2 * (size_t)n_slots(p.dims) * (size_t)p.dims.ffn, stream);
  if (e == cudaSuccess) e = cudaEventRecord(a, stream);
  if (e == cudaSuccess) e = launch_chain(p, g, stream);
  if (e == cudaSuccess) e = cudaEventRecord(b, stream);
  if (e == cudaSuccess) e = cudaEventSynchronize(b);
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, a, b);
  if (e == cudaSuccess) e = cudaMemcpy(&error, p.error, sizeof(uint32_t), cudaMemcpyDeviceToHost);
  if (a) cudaEventDestroy(a);
  if (b) cudaEventDestroy(b);
  return e;
}

cudaError_t fill_chain_weights(const Dims& d, int wtype, uint64_t seed, uint8_t* w, cudaStream_t stream) {
  if (!dims_ok(d) || !w || (wtype != kQ4_0 && wtype != kQ4_K)) return cudaErrorInvalidValue;
  for (int layer = 0; layer < d.n_layers; ++layer)
    for (int wm = 0; wm < kWMats; ++wm) {
      const int mat = wm <= kWO ? wm : wm == kWDown ? kDown : kGlu;
      const int64_t rows = mat_rows(d, mat), upr = mat_cols(d, mat) / (wtype == kQ4_K ? 256 : 32);
      const int64_t n = rows * upr;
      fill_chain_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(d, wtype, seed, layer, wm, rows, upr, w);
      const cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) return e;
    }
  return cudaSuccess;
}

}  // namespace memra::cuda::chain
