// The split-K decode attention on tensor cores over 16-key tiles (AttnParams::f16_mma: an f16 K
// and V cache; AttnParams::q8_mma: q8_0 K, q5_1 V). Grid (n_splits, n_head_kv, n_tokens), 4 warps;
// a block serves the G query heads of one kv head over one split's keys, each warp 16-key tiles in
// turn (warp w: tiles w, w + 4, ...), then the same in-block merge and partials as the other split
// kernels (attn_partials.cuh).
//
// Per tile, on mma.sync, no shuffle per key:
//  - S = Q K^T with the G heads as the m rows (16, rows >= G zero: half the products are padding,
//    the tensor cores are far from the bound here) and the 16 keys as two n = 8 tiles. A = q of head
//    g (lane row g), held in registers for the whole split. f16: m16n8k16 on q rounded to f16, B = K^T
//    from the staged K tile by ldmatrix (rows = keys, 16 bytes = 8 elements: exactly B's "col"
//    layout). q8_0: m16n8k32 on int8, q quantized per 32 elements as AttnParams::q8_scores does, one
//    mma per K block giving its exact int32 sums, each scaled by d_k * d_q and summed over the blocks
//    in order in f32: the same expression as the q8_scores path's scores, bit for bit.
//  - The C layout of S (lane (g, t): head g, keys 2t, 2t + 1 and 8 + 2t, 9 + 2t) is the B layout
//    P^T needs for O^T += V^T P^T, so the probabilities go from the softmax straight into the next
//    mma's B registers: no shared memory for P, and a head's max and sum over the tile are two
//    shuffle steps among its 4 lanes.
//  - A = V^T: f16 from the staged V tile by ldmatrix.trans; q5_1 dequantized to f16 pairs from the
//    staged tile (attn_pv_mma.cuh, as AttnParams::pv_mma). C = the head elements x heads
//    accumulator (8 m-tiles x 4 floats per lane), rescaled per tile by its two heads' corrections.
// f16 tiles are 16 rows of 256 bytes with 16-byte chunk c of row r stored at c ^ (r % 8): the 8 rows
// an ldmatrix phase reads at one chunk column hit distinct bank groups. q8_0 K rows are 136 bytes
// in 144-byte slots (a lane's words of 8 keys in distinct banks), q5_1 V rows 96 bytes.
// cp.async groups per thread, oldest first: [K0], [V0], then per tile [next K] after the scores
// and [next V] after P x V (each warp's K and V tiles are single buffers). A warp's first tile is
// requested before the dependency wait when all its keys lie below the launch's first position
// (rows written by earlier steps: the append of this step writes rows pos0 .. pos0 + n - 1 only).
#include "attn/attn_decode_mma.cuh"

#include <cuda_fp16.h>

#include "attn/attn_partials.cuh"
#include "attn/attn_pv_mma.cuh"
#include "common/launch.cuh"

namespace memra::cuda::attn {
namespace {

constexpr int kD = 128;    // head dim of this form
constexpr int kTile = 16;  // keys per warp tile
enum Form : int { kF16 = 0, kQ8Q5 = 1 };
// Bytes of a K / V row slot in a tile and of a whole per-warp region (K tile, V tile; after the
// loop the warp's G x 128 f32 outputs for the block merge, from offset 0).
template <int F>
constexpr int kKRow = F == kF16 ? kD * 2 : 144;  // q8_0: 136 bytes used
template <int F>
constexpr int kVRow = F == kF16 ? kD * 2 : kVsSlice;
template <int F, int G>
constexpr int kRegion = (kTile * (kKRow<F> + kVRow<F>) > G * kD * 4 ? kTile * (kKRow<F> + kVRow<F>) : G * kD * 4);
constexpr int kQ8Bytes = kD / 32 * 34;   // a q8_0 head slice

// Byte offset of 16-byte chunk c of row r inside an f16 tile (the swizzle).
__device__ __forceinline__ int swz(int r, int c) { return r * kD * 2 + ((c ^ (r & 7)) << 4); }

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// 16 / 8 bytes global -> shared, or zeros where !valid (src-size 0: the source is not read).
__device__ __forceinline__ void cp16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp8(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(smem_u32(dst)), "l"(src), "r"(valid ? 8 : 0)
               : "memory");
}
__device__ __forceinline__ void commit_group() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_group() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// The warp's copies of the head slices (kv head hk) of keys base .. base + nk - 1 into a tile of
// ROW-byte slots, CH bytes per copy, SLICE bytes per key; rows nk .. 15 are zero-filled (a key past
// the split has probability 0, and 0 times a stale shared-memory value could be a NaN in the P x V
// sums). Consecutive lanes on consecutive chunks (f16: lanes 0-15 one row, 16-31 the next, each
// chunk at its swizzled place); not committed.
template <int SLICE, int ROW, int CH, bool SWZ>
__device__ __forceinline__ void stage_tile(uint8_t* tile, const uint8_t* cache, int64_t row_bytes, int hk, int base,
                                           int nk) {
  constexpr int kPer = SLICE / CH, kAll = kTile * kPer;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int x = 0; x < (kAll + 31) / 32; ++x) {
    const int c = lane + 32 * x;
    if (kAll % 32 == 0 || c < kAll) {
      const int r = c / kPer, ch = c % kPer;
      const bool valid = r < nk;
      const uint8_t* src = cache + (int64_t)(valid ? base + r : base) * row_bytes + (int64_t)hk * SLICE + ch * CH;
      uint8_t* dst = tile + (SWZ ? swz(r, ch) : r * ROW + ch * CH);
      if constexpr (CH == 16)
        cp16(dst, src, valid);
      else
        cp8(dst, src, valid);
    }
  }
}
template <int F>
__device__ __forceinline__ void stage_k(uint8_t* kt, const Args& a, int hk, int base, int nk) {
  if constexpr (F == kF16)
    stage_tile<kD * 2, kD * 2, 16, true>(kt, a.k, a.k_row_bytes, hk, base, nk);
  else
    stage_tile<kQ8Bytes, kKRow<F>, 8, false>(kt, a.k, a.k_row_bytes, hk, base, nk);
}
template <int F>
__device__ __forceinline__ void stage_v(uint8_t* vt, const Args& a, int hk, int base, int nk) {
  if constexpr (F == kF16)
    stage_tile<kD * 2, kD * 2, 16, true>(vt, a.v, a.v_row_bytes, hk, base, nk);
  else
    stage_tile<kVsSlice, kVsSlice, 16, false>(vt, a.v, a.v_row_bytes, hk, base, nk);
}

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const uint8_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const uint8_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
// D = A B + D on tensor cores, m16n8k32, int8 inputs, int32 accumulators (exact). Fragments
// (lane = 4 g + t): A a0 = (row g, cols 4t .. 4t + 3), a1 = row g + 8, a2 / a3 = the same rows at
// cols + 16; B b0 = (rows 4t .. 4t + 3, col g), b1 = rows + 16; C as m16n8k16's.
__device__ __forceinline__ void mma_s8(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                       uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_h2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}
// 4 bytes of shared memory at p, 2-byte aligned (a2; a constant once the callers' loops unroll)
// or 4-byte aligned.
__device__ __forceinline__ uint32_t lds_u32(const uint8_t* p, bool a2) {
  if (a2)
    return (uint32_t)*reinterpret_cast<const uint16_t*>(p) | ((uint32_t)*reinterpret_cast<const uint16_t*>(p + 2) << 16);
  return *reinterpret_cast<const uint32_t*>(p);
}

template <int G, int F>
__global__ void __launch_bounds__(kDecodeWarps * 32, 4) attn_decode_mma_kernel(Args a) {
  static_assert(G >= 1 && G <= 8, "the heads are the m rows of one mma tile (8 used at most)");
  constexpr int kKt = kTile * kKRow<F>;  // bytes of the K tile; the V tile follows it
  __shared__ __align__(128) uint8_t tiles[kDecodeWarps][kRegion<F, G>];
  __shared__ float sm_m[kDecodeWarps][G], sm_l[kDecodeWarps][G];
  const int s = blockIdx.x, hk = blockIdx.y, i = blockIdx.z, h0 = hk * G;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // The positions are staged by the step's copy before its first kernel and no kernel writes them
  // (AttnParams::pos0): read before the dependency wait.
  const int pos_first = *a.pos0;
  const int pos = pos_first + i;
  int lo, hi;
  key_range(pos, a.window, lo, hi);
  const int len = max(0, hi - lo);
  const int used = splits_used(len, a.n_splits);
  if (s >= used) return;  // block-uniform: the combine reads only the used splits
  const int chunk = (len + used - 1) / used;
  const int b = lo + s * chunk, e = min(hi, b + chunk);
  uint8_t* const kt = tiles[warp];
  uint8_t* const vt = tiles[warp] + kKt;
  // f16 ldmatrix .x4 addresses: lanes 8j .. 8j + 7 give matrix j's rows; matrices 0 / 1 are keys
  // 0-7 at chunk 2x / 2x + 1, matrices 2 / 3 keys 8-15. For K (no transpose) that is b0, b1 of the
  // keys 0-7 n-tile and b0, b1 of keys 8-15 at k-step x; for V (transposed) a0 .. a3 of m-tile x.
  const int mi = lane >> 3, lrow = (mi >> 1) * 8 + (lane & 7), lch = mi & 1;
  const int base0 = b + warp * kTile;
  const bool any = base0 < e;  // warp-uniform
  const bool early = any && min(e, base0 + kTile) <= pos_first;
  if (early) {
    stage_k<F>(kt, a, hk, base0, min(kTile, e - base0));
    commit_group();
    stage_v<F>(vt, a, hk, base0, min(kTile, e - base0));
    commit_group();
  }
  pdl_wait();
  if (any && !early) {
    stage_k<F>(kt, a, hk, base0, min(kTile, e - base0));
    commit_group();
    stage_v<F>(vt, a, hk, base0, min(kTile, e - base0));
    commit_group();
  }
  // A fragments of q (rows >= G zero). f16: head g, elements 16 x + 2t, + 1 and 16 x + 8 + 2t, + 1.
  // q8_0: block x of head g quantized (d = amax / 127, rn(v * (1 / d)): the q8_scores expressions),
  // elements 32 x + 4t .. + 3 and 32 x + 16 + 4t .. + 3; the block's amax over its 4 lanes.
  uint32_t qa[F == kF16 ? kD / 16 : kD / 32][2];
  [[maybe_unused]] float dq[F == kF16 ? 1 : kD / 32];
  {
    const float* qh = a.q + (int64_t)i * a.ld_q + (int64_t)(h0 + (g < G ? g : 0)) * kD;
    if constexpr (F == kF16) {
#pragma unroll
      for (int x = 0; x < kD / 16; ++x) {
        const float2 u = *reinterpret_cast<const float2*>(qh + 16 * x + 2 * t);
        const float2 w = *reinterpret_cast<const float2*>(qh + 16 * x + 8 + 2 * t);
        qa[x][0] = g < G ? pack_h2(u.x, u.y) : 0u;
        qa[x][1] = g < G ? pack_h2(w.x, w.y) : 0u;
      }
    } else {
      float4 v[kD / 32][2];
#pragma unroll
      for (int x = 0; x < kD / 32; ++x) {
        v[x][0] = *reinterpret_cast<const float4*>(qh + 32 * x + 4 * t);
        v[x][1] = *reinterpret_cast<const float4*>(qh + 32 * x + 16 + 4 * t);
      }
#pragma unroll
      for (int x = 0; x < kD / 32; ++x) {
        const float e8[8] = {v[x][0].x, v[x][0].y, v[x][0].z, v[x][0].w, v[x][1].x, v[x][1].y, v[x][1].z, v[x][1].w};
        float amax = 0.0f;
#pragma unroll
        for (int u = 0; u < 8; ++u) amax = fmaxf(amax, fabsf(e8[u]));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
        const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
        uint32_t w[2] = {0u, 0u};
#pragma unroll
        for (int u = 0; u < 8; ++u) w[u >> 2] |= (uint32_t)(uint8_t)(int8_t)__float2int_rn(e8[u] * id) << (8 * (u & 3));
        qa[x][0] = g < G ? w[0] : 0u;
        qa[x][1] = g < G ? w[1] : 0u;
        dq[x] = d;
      }
    }
  }
  float m = -INFINITY, l = 0.0f;  // head g's online softmax state (the same in its 4 lanes)
  float c[kD / 16][4];            // O^T: lane (g, t) holds elements 16 mt + g (+ 8) of heads 2t, 2t + 1
#pragma unroll
  for (int mt = 0; mt < kD / 16; ++mt)
#pragma unroll
    for (int x = 0; x < 4; ++x) c[mt][x] = 0.0f;
  for (int base = base0; base < e; base += kDecodeWarps * kTile) {
    const int nk = min(kTile, e - base);
    wait_group<1>();  // this tile's K (its V may still be in flight)
    __syncwarp();
    float s0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, s1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if constexpr (F == kF16) {
#pragma unroll
      for (int x = 0; x < kD / 16; ++x) {
        uint32_t kb[4];
        ldsm_x4(kb, kt + swz(lrow, 2 * x + lch));
        mma16816(s0, qa[x][0], 0u, qa[x][1], 0u, kb[0], kb[1]);
        mma16816(s1, qa[x][0], 0u, qa[x][1], 0u, kb[2], kb[3]);
      }
    } else {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const uint8_t* kb = kt + (8 * nt + g) * kKRow<F>;      // B column g: key 8 nt + g
        const uint8_t* kd = kt + (8 * nt + 2 * t) * kKRow<F>;  // C columns: keys 8 nt + 2t, + 1
        float dot0 = 0.0f, dot1 = 0.0f;
#pragma unroll
        for (int x = 0; x < kD / 32; ++x) {
          const uint8_t* qs = kb + 34 * x + 2 + 4 * t;  // the block's quants 4t .. 4t + 3 and 16 + 4t ..
          int ci[4] = {0, 0, 0, 0};
          const bool a2 = (34 * x + 2) % 4 != 0;  // even blocks
          mma_s8(ci, qa[x][0], 0u, qa[x][1], 0u, lds_u32(qs, a2), lds_u32(qs + 16, a2));
          const float dk0 = __half2float(*reinterpret_cast<const __half*>(kd + 34 * x));
          const float dk1 = __half2float(*reinterpret_cast<const __half*>(kd + kKRow<F> + 34 * x));
          dot0 = __fadd_rn(dot0, __fmul_rn((float)ci[0], __fmul_rn(dk0, dq[x])));
          dot1 = __fadd_rn(dot1, __fmul_rn((float)ci[1], __fmul_rn(dk1, dq[x])));
        }
        if (nt == 0) {
          s0[0] = dot0;
          s0[1] = dot1;
        } else {
          s1[0] = dot0;
          s1[1] = dot1;
        }
      }
    }
    __syncwarp();  // every lane has read the K tile: the next tile's K may land in it
    const int nb = base + kDecodeWarps * kTile;
    if (nb < e) stage_k<F>(kt, a, hk, nb, min(kTile, e - nb));
    commit_group();
    // Head g's keys in this lane: 2t, 2t + 1, 8 + 2t, 9 + 2t.
    const float raw[4] = {s0[0], s0[1], s1[0], s1[1]};
    float sc[4], p[4], mx = -INFINITY;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int key = 2 * t + (u & 1) + 8 * (u >> 1);
      sc[u] = key < nk ? finish_score(raw[u], a.scale, a.softcap) : -INFINITY;
      mx = fmaxf(mx, sc[u]);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m, mx);  // finite: the tile's key 0 is valid
    const float corr = expf(m - m_new);
    float ps = 0.0f;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      p[u] = sc[u] == -INFINITY ? 0.0f : expf(sc[u] - m_new);
      ps += p[u];
    }
    ps += __shfl_xor_sync(0xffffffffu, ps, 1);
    ps += __shfl_xor_sync(0xffffffffu, ps, 2);
    l = l * corr + ps;
    m = m_new;
    // B fragments of P^T: keys 2t, 2t + 1 and 8 + 2t, 9 + 2t of head g.
    const uint32_t pb0 = pack_h2(p[0], p[1]), pb1 = pack_h2(p[2], p[3]);
    // This lane's C columns are heads 2t and 2t + 1, whose corrections sit in lanes 8t and 8t + 4.
    const float c0 = __shfl_sync(0xffffffffu, corr, 8 * t), c1 = __shfl_sync(0xffffffffu, corr, 8 * t + 4);
#pragma unroll
    for (int mt = 0; mt < kD / 16; ++mt) {
      c[mt][0] *= c0;
      c[mt][1] *= c1;
      c[mt][2] *= c0;
      c[mt][3] *= c1;
    }
    wait_group<1>();  // this tile's V (the next tile's K may still be in flight)
    __syncwarp();
    if constexpr (F == kF16) {
#pragma unroll
      for (int mt = 0; mt < kD / 16; ++mt) {
        uint32_t va[4];
        ldsm_x4_trans(va, vt + swz(lrow, 2 * mt + lch));
        mma16816(c[mt], va[0], va[1], va[2], va[3], pb0, pb1);
      }
    } else {
      pv_k16_q5_1(reinterpret_cast<const uint8_t(*)[kVsSlice]>(vt), nk, pb0, pb1, c);
    }
    __syncwarp();  // every lane has read the V tile
    if (nb < e) stage_v<F>(vt, a, hk, nb, min(kTile, e - nb));
    commit_group();
  }
  wait_group<0>();  // only empty groups can be left; the region is free for the merge values
  __syncwarp();
  float(*acc)[kD] = reinterpret_cast<float(*)[kD]>(kt);
#pragma unroll
  for (int mt = 0; mt < kD / 16; ++mt)
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int hh = 2 * t + (x & 1), d = 16 * mt + g + 8 * (x >> 1);
      if (hh < G) acc[hh][d] = c[mt][x];
    }
  if (t == 0 && g < G) {
    sm_m[warp][g] = m;
    sm_l[warp][g] = l;
  }
  __syncthreads();
  merge_warps_and_store<kD, G>(
      sm_m, sm_l, [&](int w, int hh, int d) { return reinterpret_cast<const float*>(tiles[w])[hh * kD + d]; }, a, i,
      h0, s, a.one_split_direct && used == 1);
}

template <int F>
cudaError_t launch_form(const Args& a, int n_tokens, cudaStream_t s) {
  const dim3 grid(a.n_splits, a.n_head_kv, n_tokens), block(kDecodeWarps * 32);
  switch (a.group) {
#ifndef MEMRA_REDUCED_INSTANCES
    case 1: return launch_kernel(attn_decode_mma_kernel<1, F>, grid, block, 0, s, a);
    case 2: return launch_kernel(attn_decode_mma_kernel<2, F>, grid, block, 0, s, a);
    case 3: return launch_kernel(attn_decode_mma_kernel<3, F>, grid, block, 0, s, a);
    case 5: return launch_kernel(attn_decode_mma_kernel<5, F>, grid, block, 0, s, a);
    case 6: return launch_kernel(attn_decode_mma_kernel<6, F>, grid, block, 0, s, a);
    case 7: return launch_kernel(attn_decode_mma_kernel<7, F>, grid, block, 0, s, a);
    case 8: return launch_kernel(attn_decode_mma_kernel<8, F>, grid, block, 0, s, a);
#endif
    case 4: return launch_kernel(attn_decode_mma_kernel<4, F>, grid, block, 0, s, a);
    default: return cudaErrorInvalidValue;
  }
}

// The shared conditions: head dim, group, not byte_loads. (A launch with the RoPE fold never gets
// here: attn_decode_rope_fold_applies says no where a form of this file applies.)
bool common_applies(const Args& a, int D) {
  if (a.byte_loads || D != kD) return false;
#ifdef MEMRA_REDUCED_INSTANCES
  return a.group == 4;
#else
  return a.group >= 1 && a.group <= 8;
#endif
}
bool aligned(const void* p, int64_t rb, int n) { return ((uintptr_t)p | (uintptr_t)rb) % (uintptr_t)n == 0; }

}  // namespace

bool f16_mma_applies(const Args& a, int D) {
  return a.f16_mma && common_applies(a, D) && a.type_k == QType::F16 && a.type_v == QType::F16 &&
         aligned(a.k, a.k_row_bytes, 16) && aligned(a.v, a.v_row_bytes, 16) && aligned(a.q, a.ld_q * 4, 8);
}

bool q8_mma_applies(const Args& a, int D) {
  return a.q8_mma && common_applies(a, D) && a.type_k == QType::Q8_0 && a.type_v == QType::Q5_1 &&
         aligned(a.k, a.k_row_bytes, 8) && aligned(a.v, a.v_row_bytes, 16) && aligned(a.q, a.ld_q * 4, 16);
}

cudaError_t launch_decode_mma(const Args& a, int n_tokens, cudaStream_t s) {
  if (a.type_k == QType::F16) return launch_form<kF16>(a, n_tokens, s);
  return launch_form<kQ8Q5>(a, n_tokens, s);
}

}  // namespace memra::cuda::attn
