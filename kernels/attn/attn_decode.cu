// Split-K decode attention: the key range of a row is cut into n_splits chunks; within a block
// each of 4 warps keeps an independent online-softmax partial, merged in shared memory into one
// partial per split; a second kernel merges a row's n_splits partials in a fixed order
// (deterministic). Two block forms: GQA-aware
// (a kv head's G query heads together, G <= 8) and per query head (any G).
#include <algorithm>
#include <utility>

#include "attn/attn_common.cuh"
#include "attn/attn_decode_mma.cuh"
#include "attn/attn_i8_tile.h"
#include "attn/attn_mma_scores.cuh"
#include "attn/attn_partials.cuh"
#include "attn/attn_pv_mma.cuh"
#include "common/cp_async.cuh"
#include "common/launch.cuh"
#include "norm/q8_1_emit.cuh"
#include "kv/kv_quant.cuh"
#include "rope/rope_math.cuh"

namespace memra::cuda {
namespace {

constexpr int kWarps = attn::kDecodeWarps;
using attn::CombineSmem;
using attn::combine_element;
using attn::merge_and_store;
using attn::merge_and_store_with;
using attn::MergeSmem;

template <int D>
__global__ void __launch_bounds__(kWarps * 32) attn_decode_kernel(attn::Args a) {
  pdl_wait();
  constexpr int N = D / 32;  // contiguous elements per lane
  const int s = blockIdx.x, h = blockIdx.y, i = blockIdx.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int hk = h / (a.n_head / a.n_head_kv);
  const int pos = *a.pos0 + i;
  int lo, hi;
  attn::key_range(pos, a.window, lo, hi);
  const int len = max(0, hi - lo);
  const int used = attn::splits_used(len, a.n_splits, a.min_split_keys);
  if (s >= used) return;  // block-uniform: the combine reads only the used splits
  const int chunk = (len + used - 1) / used;
  const int b = lo + s * chunk, e = min(hi, b + chunk);

  const int e0 = hk * D + lane * N;  // element offset inside a cache row
  float q[N];
  const float* qp = a.q + (int64_t)i * a.ld_q + (int64_t)h * D + lane * N;
#pragma unroll
  for (int n = 0; n < N; ++n) q[n] = qp[n];

  float m = -INFINITY, l = 0.0f, acc[N];
#pragma unroll
  for (int n = 0; n < N; ++n) acc[n] = 0.0f;
#pragma unroll 2
  for (int j = b + warp; j < e; j += kWarps) {
    float kk[N], vv[N];
    kvq::load<N>(a.type_k, a.k + (int64_t)j * a.k_row_bytes, e0, kk);
    kvq::load<N>(a.type_v, a.v + (int64_t)j * a.v_row_bytes, e0, vv);
    float dot = 0.0f;
#pragma unroll
    for (int n = 0; n < N; ++n) dot += q[n] * kk[n];
    const float sc = attn::finish_score(attn::warp_sum(dot), a.scale, a.softcap);
    const float m_new = fmaxf(m, sc);
    const float corr = expf(m - m_new);
    const float p = expf(sc - m_new);
    l = l * corr + p;
#pragma unroll
    for (int n = 0; n < N; ++n) acc[n] = acc[n] * corr + p * vv[n];
    m = m_new;
  }
  __shared__ MergeSmem<D, 1> sm;
  const float mm[1] = {m}, ll[1] = {l};
  float aa[1][N];
#pragma unroll
  for (int n = 0; n < N; ++n) aa[0][n] = acc[n];
  merge_and_store<D, 1>(sm, mm, ll, aa, a, i, h, s, a.one_split_direct && used == 1);
}

// How the GQA kernel reads a key's head slice for the scores (one lane per key): KP_BYTES the
// generic byte-wise kvq::load; KP_Q8 q8_0 rows as 17 aligned 8-byte words per 128 elements (4-byte
// at head_dim 64), KP_F16 f16 rows as 16-byte vectors. All three give the same float values in the
// same summation order (same bits; kernel-check attn_decode/word_loads_vs_bytes).
// Why: with byte loads every lane of a warp touched its own row per byte, 144 L1 wavefronts of 32
// lines per 32 keys; that, not HBM, bounded the kernel (~0.3 TB/s at 16384 keys, 2026-12-01).
enum KPath : int { KP_BYTES = 0, KP_Q8 = 1, KP_F16 = 2, KP_Q8I = 3 };

// The block's query heads quantized per 32 elements for the int8 scores (KP_Q8I, AttnParams::
// q8_scores): quants packed 4 per word, one f32 scale per block.
template <int D, int G>
struct QInt8 {
  uint32_t q[G][D / 4];
  float d[G][D / 32];
};

// A chunk of CB bytes of a q8_0 key slice (CB/34 blocks) as aligned words: 8-byte loads where
// CB is a multiple of 8 (136 bytes at head_dim >= 128), else 4-byte (68 bytes at 64). SM: src is
// in shared memory (the fold's new key, AttnParams::rope): the same words through plain loads.
template <int CB, bool SM = false>
__device__ __forceinline__ void load_k_words(const uint8_t* src, uint32_t (&w)[CB / 4]) {
  if constexpr (CB % 8 == 0) {
#pragma unroll
    for (int x = 0; x < CB / 8; ++x) {
      const uint2 v = SM ? reinterpret_cast<const uint2*>(src)[x] : __ldg(reinterpret_cast<const uint2*>(src) + x);
      w[2 * x] = v.x;
      w[2 * x + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int x = 0; x < CB / 4; ++x)
      w[x] = SM ? reinterpret_cast<const uint32_t*>(src)[x] : __ldg(reinterpret_cast<const uint32_t*>(src) + x);
  }
}

// KP_Q8I: the q8_0 key slice read as the same aligned words as KP_Q8; per 32-element block the
// int8 dot product of key and query quants is exact (dp4a), then scaled by d_k * d_q and summed
// over the blocks in order in f32. A block's quants start 2 bytes past its f16 scale, so on
// every other block (offset 2 mod 4) a word is assembled from two loaded words (byte_perm).
template <int D, int G, bool SM = false>
__device__ __forceinline__ void score_key_q8i(const uint8_t* krow, int hk, const QInt8<D, G>& qi, float (&dot)[G]) {
  constexpr int CE = D < 128 ? D : 128;
  constexpr int CB = CE / 32 * 34;
  constexpr int NW = CB / 4;
  const uint8_t* head = krow + (int64_t)hk * (D / 32) * 34;
#pragma unroll
  for (int c0 = 0; c0 < D; c0 += CE) {
    const uint8_t* src = head + c0 / 32 * 34;
    uint32_t w[NW];
    load_k_words<CB, SM>(src, w);
#pragma unroll
    for (int bb = 0; bb < CE / 32; ++bb) {
      const int pd = bb * 34;
      const float dk = __half2float(__ushort_as_half((unsigned short)((w[pd >> 2] >> ((pd & 3) * 8)) & 0xffffu)));
      const int blk = c0 / 32 + bb;
      int isum[G];
#pragma unroll
      for (int g = 0; g < G; ++g) isum[g] = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int o = pd + 2 + 4 * j;
        const uint32_t kw = (o & 3) == 0 ? w[o >> 2] : __byte_perm(w[o >> 2], w[(o >> 2) + 1], 0x5432);
#pragma unroll
        for (int g = 0; g < G; ++g) isum[g] = __dp4a((int)kw, (int)qi.q[g][blk * 8 + j], isum[g]);
      }
#pragma unroll
      for (int g = 0; g < G; ++g) dot[g] = __fadd_rn(dot[g], __fmul_rn((float)isum[g], __fmul_rn(dk, qi.d[g][blk])));
    }
  }
}

template <int D, int G, int KP>
__device__ __forceinline__ void score_key(const uint8_t* krow, int hk, QType type_k, const float (&qs)[G][D],
                                          float (&dot)[G]) {
  if constexpr (KP == KP_Q8) {
    constexpr int CE = D < 128 ? D : 128;  // elements per chunk: 68 or 136 bytes, 17 words
    constexpr int CB = CE / 32 * 34;
    constexpr int NW = CB / 4;
    const uint8_t* head = krow + (int64_t)hk * (D / 32) * 34;
#pragma unroll
    for (int c0 = 0; c0 < D; c0 += CE) {
      const uint8_t* src = head + c0 / 32 * 34;
      uint32_t w[NW];
      load_k_words<CB>(src, w);
#pragma unroll
      for (int c = 0; c < CE; c += 8) {
        const int pd = (c / 32) * 34;  // the block's f16 scale (never straddles a word: pd % 4 is 0 or 2)
        const float d = __half2float(__ushort_as_half((unsigned short)((w[pd >> 2] >> ((pd & 3) * 8)) & 0xffffu)));
        float kk[8];
#pragma unroll
        for (int t = 0; t < 8; ++t) {
          const int pq = pd + 2 + c % 32 + t;
          const int8_t q = (int8_t)((w[pq >> 2] >> ((pq & 3) * 8)) & 0xffu);
          kk[t] = __fmul_rn((float)q, d);
        }
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
          for (int t = 0; t < 8; ++t) dot[g] += qs[g][c0 + c + t] * kk[t];
      }
    }
  } else if constexpr (KP == KP_F16) {
    const uint4* head = reinterpret_cast<const uint4*>(krow + (int64_t)hk * D * 2);
#pragma unroll(G > 4 ? 4 : 8)
    for (int c = 0; c < D; c += 8) {
      const uint4 v = __ldg(head + c / 8);
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
      float kk[8];
#pragma unroll
      for (int t = 0; t < 8; ++t)
        kk[t] = __half2float(__ushort_as_half((unsigned short)((w[t / 2] >> (16 * (t % 2))) & 0xffffu)));
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int t = 0; t < 8; ++t) dot[g] += qs[g][c + t] * kk[t];
    }
  } else {
#pragma unroll(G > 4 ? 4 : 8)
    for (int c = 0; c < D; c += 8) {
      float kk[8];
      kvq::load<8>(type_k, krow, hk * D + c, kk);
#pragma unroll
      for (int g = 0; g < G; ++g)
#pragma unroll
        for (int t = 0; t < 8; ++t) dot[g] += qs[g][c + t] * kk[t];
    }
  }
}

// GQA-aware form: grid (n_splits, n_head_kv, n_tokens); a block serves the G = n_head/n_head_kv
// query heads that share a kv head, so each K/V row is read once per group instead of G times.
// A warp takes 32 keys at a time, one key per lane for the scores (no shuffle per key), then
// all lanes sweep the 32 V rows (lane-owned output elements, coalesced rows) with the
// probabilities broadcast by shuffle.
// At head_dim 128 and G <= 4, 4 blocks per SM (<= 128 registers) for every path: uncapped the
// int8 path took 136 (and the f32 path 146 once the staged variant was added beside it), so 3
// blocks per SM fit and the
// 512 blocks of a 64-split row (16384 keys, 8 kv heads) ran in two waves (measured 0.71x of the
// f32 scores at kernel level there; end to end 0.84x at depth 16384 but 1.07x at 4096, where one
// wave holds the 256 blocks; 38c6caf).
// VS: V staged through shared memory per 32-key tile (AttnParams::v_stage; D = 128, q5_1 V:
// 96-byte head slices, 6 cp.async chunks of 16 bytes each).
using attn::kVsSlice;
using attn::pv_tile_mma;
// A warp's copies of the V head slices (kv head hk) of keys base .. base + nk - 1 into its tile
// (6 cp.async chunks of 16 bytes per key, consecutive lanes on consecutive chunks); not committed.
__device__ __forceinline__ void stage_v_tile(uint8_t (&vt)[32][kVsSlice], const attn::Args& a, int base, int nk, int hk) {
  for (int c = threadIdx.x & 31; c < nk * (kVsSlice / 16); c += 32) {
    const int r = c / (kVsSlice / 16), part = c % (kVsSlice / 16);
    cpa::copy16(&vt[r][part * 16], a.v + (int64_t)(base + r) * a.v_row_bytes + hk * kVsSlice + part * 16);
  }
}

// RF: the fold of the q/k norm + RoPE + K/V append (AttnParams::rope; NEOX its pair layout):
// int8 scores with V staged only.
// PF (RF with PV only; AttnParams::RopeFold::prefetch): each warp's first tile requested before
// the dependency wait.
// A warp's copies of the q8_0 K head slices (kv head hk, KS bytes each) of keys base .. base + nk - 1
// into its tile (8-byte cp.async chunks, consecutive lanes on consecutive chunks: a load instruction
// of the warp touches ~3 lines instead of one line per lane); not committed.
template <int KS>
__device__ __forceinline__ void stage_k_tile(uint8_t (&kt)[32][KS], const attn::Args& a, int base, int nk, int hk) {
  for (int c = threadIdx.x & 31; c < nk * (KS / 8); c += 32) {
    const int r = c / (KS / 8), part = c % (KS / 8);
    cpa::copy8(&kt[r][part * 8], a.k + (int64_t)(base + r) * a.k_row_bytes + (int64_t)hk * KS + part * 8);
  }
}
// SI (AttnParams::RopeFold::softmax_interleave, with KS): each tile's online softmax steps the G
// heads' shuffle trees side by side (the G maxima per butterfly step, then the G sums) instead of
// one head's max and sum trees after another. ncu (fac5d51, 16512 keys) had the softmax at ~20% of
// the depth kernel's stall samples, mostly waiting on shuffles, the heads' trees serialized; the
// kernel is bound by each warp's dependent latency (16 warps per SM at 128 registers), not by
// issue: 8% fewer instructions in the tile copies changed nothing (bench/notes/attn-stage16.md).
// The same operations per head in the same order: the same bits.
// MS (RopeFold::mma_scores, with SI at G = 4): the tile's scores on the int8 tensor cores and its
// softmax in their lane layout (attn_mma_scores.cuh); the same bits.
template <int D, int G, int KP, bool VS = false, bool RF = false, bool NEOX = true, bool PV = false, bool PF = false,
          bool KS = false, bool SI = false, bool MS = false>
__global__ void __launch_bounds__(kWarps * 32, D == 128 && G <= 4 ? 4 : 1) attn_decode_gqa_kernel(attn::Args a) {
  static_assert(!PF || (RF && PV), "the first tile before the wait: with the fold and P x V on tensor cores");
  static_assert(!KS || PF, "every tile's K staged: in the prefetch form");
  static_assert(!SI || KS, "the interleaved softmax trees: in the staged form");
  static_assert(!MS || (SI && G == 4 && D == 128), "the tensor-core scores: the staged group of 4 heads");
  static_assert(!VS || D == 128, "V staging: head_dim 128 (q5_1 slices of 96 bytes)");
  static_assert(!PV || (VS && G <= 8), "P x V on tensor cores: V staged, at most 8 heads per group");
  static_assert(!RF || (KP == KP_Q8I && VS && D / 32 == kWarps), "the RoPE fold: int8 scores with V staged, head_dim 128");
  __shared__ __align__(16) uint8_t vt[VS ? kWarps : 1][VS ? 32 : 1][VS ? kVsSlice : 16];
  constexpr int N = D / 32;
  __shared__ float qs[KP == KP_Q8I ? 1 : G][KP == KP_Q8I ? 1 : D];
  __shared__ QInt8<D, KP == KP_Q8I ? G : 1> qi;
  // RF: the new key's q8_0 head slice, the new value's q5_1 slice, and the key's G scores.
  __shared__ __align__(16) uint8_t knew[RF ? D / 32 * 34 : 16];
  __shared__ __align__(16) uint8_t vnew[RF ? kVsSlice : 16];
  __shared__ float dnew[RF ? G : 1];
  // PV: each warp's tile probabilities as f16 (heads x keys; rows past G stay 0), and its C fragments.
  __shared__ __align__(16) __half ph[PV ? kWarps : 1][8][40];
  [[maybe_unused]] float cacc[PV ? 8 : 1][4] = {};
  // h0: the block's first query head; hk: its kv head. One block per kv head (G = the group) or,
  // with RopeFold::head_split, one per G = 1 or 2 query heads (a.group heads per kv head): both
  // h0 = blockIdx.y * G.
  const int s = blockIdx.x, h0 = blockIdx.y * G, hk = h0 / a.group, i = blockIdx.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // The position is staged by the step's copy before its first kernel and no kernel writes it,
  // so it is read before the dependency wait: the splits a row does not use exit while the
  // previous kernel drains, and the others know their key range when the wait returns.
  const int pos = *a.pos0 + i;
  int lo, hi;
  attn::key_range(pos, a.window, lo, hi);
  const int len = max(0, hi - lo);
  const int used = attn::splits_used(len, a.n_splits, a.min_split_keys);
  if (s >= used) return;  // block-uniform: the combine reads only the used splits
  // RF, before the wait (nothing a kernel writes): the head norms' weights and the cos/sin of
  // this lane's pairs at pos (the same helpers and values as qk_norm_rope_kernel).
  [[maybe_unused]] float wq[RF ? N : 1], wk[RF ? N : 1], cs[RF ? N : 1], sn[RF ? N : 1];
  [[maybe_unused]] const bool last = s == used - 1;  // RF: this block's keys end at pos, the new key
  const int chunk = (len + used - 1) / used;
  const int b = lo + s * chunk, e = min(hi, b + chunk);
  // PF: the warp's first tile is requested before the wait too, its V slices and its keys' q8_0
  // head slices (17 eight-byte cp.async chunks per key, consecutive lanes on consecutive chunks)
  // into shared memory: every row of it below pos was written by earlier steps, and row pos (the
  // new key, which no kernel before this one writes in the fold) is taken from this kernel's own
  // copies (knew, vnew), never from these bytes.
  constexpr int kKs = D / 32 * 34;  // bytes of a key's q8_0 head slice
  __shared__ __align__(16) uint8_t kt[PF ? kWarps : 1][PF ? 32 : 1][PF ? kKs : 8];
  [[maybe_unused]] const bool pre = PF && b + warp * 32 < e;  // warp-uniform
  if constexpr (RF) {
    head_norm_weights<N>(a.rf.q_norm, lane, wq);
    head_norm_weights<N>(a.rf.k_norm, lane, wk);
    head_rope_cs<NEOX, N>(a.rf.ang, lane, (float)pos, cs, sn);
  }
  if constexpr (PF) {
    if (pre) {
      const int base = b + warp * 32, nk = min(32, e - base);
      stage_v_tile(vt[warp], a, base, nk, hk);
      stage_k_tile(kt[warp], a, base, nk, hk);
      cpa::commit();
    }
  }
  pdl_wait();
  const float* qrow = a.q + (int64_t)i * a.ld_q + (int64_t)h0 * D;
  if constexpr (KP == KP_Q8I) {
    // One warp per 32-element block of the G heads: d = amax / 127, q = rn(x * (1 / d)). A warp's
    // blocks are all copied to shared memory before the first is quantized: one global round trip
    // instead of one per block (the loop had kept each load behind the previous block's
    // shuffles); through shared memory, not registers, which made the default instance spill.
    constexpr int kNb = G * D / 32, kPer = (kNb + kWarps - 1) / kWarps;
    __shared__ float qf[kNb * 32];
    if constexpr (RF) {
      // Warp w prepares query heads w, w + 4, ... (lane owns elements lane + 32 t, as the RoPE
      // kernel). In the last split every warp also normalizes and rotates the new K head (the
      // same values in every warp) and quantizes block w of it and of the V head (4 blocks at
      // head_dim 128, one per warp, as put_head: block t from elements lane + 32 t); all loads
      // are issued before the first use.
      float kraw[N], vraw = 0.0f;
      if (last) {
        const float* ks = a.rf.k_src + (int64_t)hk * D;
#pragma unroll
        for (int t = 0; t < N; ++t) kraw[t] = ks[lane + 32 * t];
        vraw = a.rf.v_src[(int64_t)hk * D + lane + 32 * warp];
      }
      for (int g = warp; g < G; g += kWarps) {
        float v[N], o[N];
#pragma unroll
        for (int t = 0; t < N; ++t) v[t] = qrow[g * D + lane + 32 * t];
        norm_rope_head<NEOX, N>(v, a.rf.q_norm != nullptr, wq, D, a.rf.eps, cs, sn, lane, o);
#pragma unroll
        for (int t = 0; t < N; ++t) qf[g * D + lane + 32 * t] = o[t];
      }
      if (last) {  // block-uniform
        const float mine = norm_rope_head_at<NEOX, N>(kraw, a.rf.k_norm != nullptr, wk, D, a.rf.eps, cs, sn, lane, warp);
        kvq::quantize_block(a.type_k, mine, lane, knew + warp * 34);
        kvq::quantize_block(a.type_v, vraw, lane, vnew + warp * (kVsSlice / N));
      }
      __syncthreads();  // a warp quantizes blocks of other warps' heads below
    } else {
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int blk = warp + i * kWarps;
        if (blk < kNb) qf[blk * 32 + lane] = qrow[blk * 32 + lane];
      }
      __syncwarp();
    }
    for (int blk = warp; blk < kNb; blk += kWarps) {
      float d;
      const int qv = attn::q8_query_quant(qf[blk * 32 + lane], d);
      const int g = blk / (D / 32), b = blk % (D / 32);
      reinterpret_cast<int8_t*>(qi.q[g])[b * 32 + lane] = (int8_t)qv;
      if (lane == 0) qi.d[g][b] = d;
    }
  } else {
    for (int t = threadIdx.x; t < G * D; t += kWarps * 32) qs[t / D][t % D] = qrow[t];
  }
  [[maybe_unused]] __shared__ attn::MsQuery<MS ? 4 : 0> msq;
  if constexpr (MS) attn::ms_prepare_query(msq, qi, threadIdx.x, kWarps * 32);
  __syncthreads();
  if constexpr (RF) {
    if (last) {  // block-uniform
      // The warp whose tiles hold pos scores the new key from the shared copy (score_key_q8i on
      // the same bytes: the same bits) before its tiles, for its lane of that key; two other
      // warps copy the new key and value to the caches at pos (same bytes as the RoPE kernel's
      // append). No block barrier: nothing else in the kernel reads these.
      // Head split: every block of the group scores the new key; the group's first writes it.
      const int pw = ((pos - b) / 32) % kWarps;
      const bool writer = h0 % a.group == 0;
      if (warp == pw) {
        float dn[G];
#pragma unroll
        for (int g = 0; g < G; ++g) dn[g] = 0.0f;
        score_key_q8i<D, G, true>(knew, 0, qi, dn);
        if (lane == 0)
#pragma unroll
          for (int g = 0; g < G; ++g) dnew[g] = dn[g];
        __syncwarp();
      } else if (writer && warp == (pw + 1) % kWarps) {
        uint16_t* kd = reinterpret_cast<uint16_t*>(const_cast<uint8_t*>(a.k) + (int64_t)pos * a.k_row_bytes +
                                                   (int64_t)hk * (D / 32) * 34);
        for (int c = lane; c < D / 32 * 17; c += 32) kd[c] = reinterpret_cast<const uint16_t*>(knew)[c];
      } else if (writer && warp == (pw + 2) % kWarps) {
        uint32_t* vd = reinterpret_cast<uint32_t*>(const_cast<uint8_t*>(a.v) + (int64_t)pos * a.v_row_bytes +
                                                   (int64_t)hk * kVsSlice);
        if (lane < kVsSlice / 4) vd[lane] = reinterpret_cast<const uint32_t*>(vnew)[lane];
      }
    }
  }

  if constexpr (PV) {
#pragma unroll
    for (int g = G; g < 8; ++g) ph[warp][g][lane] = __float2half_rn(0.0f);
  }
  float m[G], l[G], acc[G][N], corr[G];
  [[maybe_unused]] float m1 = -INFINITY, l1 = 0.0f, corr1 = 1.0f, dt[2][2];  // MS: head lane & 3
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int n = 0; n < N; ++n) acc[g][n] = 0.0f;
  }
  // KS (PF with AttnParams::RopeFold::stage_k): every later tile's K slices are staged in shared
  // memory too, each requested while the tile before it is finished (after its scores, when its
  // slices have been read), and scored from there: the same words (the same bits), coalesced.
  // cp.async groups per thread, oldest first: [K, V of the first tile], then per tile the next
  // tile's K (empty past the last) and, from the second tile on, the tile's own V before it.
  constexpr bool ks = KS;
  for (int base = b + warp * 32; base < e; base += kWarps * 32) {
    const int j = base + lane;
    const bool valid = j < e;
    // PF: the first tile's V and K slices were requested before the wait.
    [[maybe_unused]] const bool first_pre = PF && pre && base == b + warp * 32;
    if constexpr (VS) {  // this tile's V slices -> shared memory, in flight during the scores
      if (!first_pre) {
        stage_v_tile(vt[warp], a, base, min(32, e - base), hk);
        cpa::commit();
      }
    }
    float dot[G];
#pragma unroll
    for (int g = 0; g < G; ++g) dot[g] = 0.0f;
    if constexpr (PF) {
      if (first_pre) {  // the K slices (and the V slices, requested together) have landed
        cpa::wait_all();
        __syncwarp();
      } else if constexpr (KS) {  // this tile's K (requested during the previous tile) has landed; its V may not
        cpa::wait_group<1>();
        __syncwarp();
      }
    }
    if constexpr (MS) {
      attn::ms_tile_scores(kt[warp], msq, dt);
    } else if constexpr (KP == KP_Q8I) {
      if (RF && j == pos) {  // the fold's new key (last split only): scored from its shared copy
#pragma unroll
        for (int g = 0; g < G; ++g) dot[g] = dnew[g];
      } else if (valid) {
        if (first_pre || ks)
          score_key_q8i<D, G, true>(&kt[warp][lane][0], 0, qi, dot);  // the same words from shared memory
        else
          score_key_q8i<D, G>(a.k + (int64_t)j * a.k_row_bytes, hk, qi, dot);
      }
    } else {
      if (valid) score_key<D, G, KP>(a.k + (int64_t)j * a.k_row_bytes, hk, a.type_k, qs, dot);
    }
    if constexpr (KS) {
      {  // the next tile's K slices into the tile just read
        __syncwarp();
        const int nb = base + kWarps * 32;
        if (nb < e) stage_k_tile(kt[warp], a, nb, min(32, e - nb), hk);
        cpa::commit();
      }
    }
    float p[G];
    if constexpr (MS) {
      const int newk = RF && pos >= base && pos < base + 32 ? pos - base : -1;
      attn::ms_tile_softmax(dt, min(32, e - base), newk, dnew, a.scale, a.softcap, m1, l1, corr1, ph[warp]);
    } else if constexpr (SI) {
      float sc[G], mx[G], ps[G];
#pragma unroll
      for (int g = 0; g < G; ++g) {
        sc[g] = valid ? attn::finish_score(dot[g], a.scale, a.softcap) : -INFINITY;
        mx[g] = sc[g];
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int g = 0; g < G; ++g) mx[g] = fmaxf(mx[g], __shfl_xor_sync(0xffffffffu, mx[g], o));
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float m_new = fmaxf(m[g], mx[g]);  // finite: lane 0's key is always valid
        corr[g] = expf(m[g] - m_new);
        p[g] = valid ? expf(sc[g] - m_new) : 0.0f;
        ps[g] = p[g];
        m[g] = m_new;
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int g = 0; g < G; ++g) ps[g] += __shfl_xor_sync(0xffffffffu, ps[g], o);  // attn::warp_sum's order
#pragma unroll
      for (int g = 0; g < G; ++g) l[g] = l[g] * corr[g] + ps[g];
    }
#pragma unroll
    for (int g = 0; g < (SI ? 0 : G); ++g) {
      const float sc = valid ? attn::finish_score(dot[g], a.scale, a.softcap) : -INFINITY;
      float mx = sc;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float m_new = fmaxf(m[g], mx);  // finite: lane 0's key is always valid
      corr[g] = expf(m[g] - m_new);
      p[g] = valid ? expf(sc - m_new) : 0.0f;
      l[g] = l[g] * corr[g] + attn::warp_sum(p[g]);
      if constexpr (!PV) {
#pragma unroll
        for (int n = 0; n < N; ++n) acc[g][n] *= corr[g];
      }
      m[g] = m_new;
    }
    // V rows in batches of 8 whose loads are all issued before the first use (one memory
    // latency per batch instead of one per key; measured neutral on the H200 at 33 and 4097 keys,
    // where the fixed per-call cost dominates: kept as the form with fewer round trips).
    const int nk = min(32, e - base);
    if constexpr (VS) {
      if constexpr (KS)
        cpa::wait_group<1>();  // this tile's V (the next tile's K may still be in flight)
      else
        cpa::wait_all();
      __syncwarp();
      if constexpr (RF) {
        if (pos >= base && pos < base + nk) {  // warp-uniform: the fold's new value replaces the copy
          if (lane < kVsSlice / 4)
            reinterpret_cast<uint32_t*>(&vt[warp][pos - base][0])[lane] = reinterpret_cast<const uint32_t*>(vnew)[lane];
          __syncwarp();
        }
      }
    }
    if constexpr (PV) {
      // This lane's C columns are heads 2t and 2t + 1 (columns past G hold zeros).
      const int t2 = 2 * (lane & 3);
      float c0 = 1.0f, c1 = 1.0f;
      if constexpr (MS) {  // the probabilities are in ph already; head h's correction is lane h's
        const float h0c = attn::ms_head(corr1, t2), h1c = attn::ms_head(corr1, t2 + 1);
        c0 = t2 < G ? h0c : 1.0f;
        c1 = t2 + 1 < G ? h1c : 1.0f;
      } else {
#pragma unroll
        for (int g = 0; g < G; ++g) ph[warp][g][lane] = __float2half_rn(p[g]);
#pragma unroll
        for (int g = 0; g < G; ++g) {  // registers, not an indexed load (attn::select_f32)
          c0 = attn::select_f32(g == t2, corr[g], c0);
          c1 = attn::select_f32(g == t2 + 1, corr[g], c1);
        }
      }
#pragma unroll
      for (int mt = 0; mt < 8; ++mt) {
        cacc[mt][0] *= c0;
        cacc[mt][1] *= c1;
        cacc[mt][2] *= c0;
        cacc[mt][3] *= c1;
      }
      __syncwarp();
      pv_tile_mma(vt[warp], ph[warp], nk, cacc);
    }
    for (int k0 = 0; !PV && k0 < nk; k0 += 8) {
      float vv[8][N];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        if (k0 + u < nk) {
          const uint8_t* vrow = a.v + (int64_t)(base + k0 + u) * a.v_row_bytes;
          if constexpr (VS)
            kvq::load_words<N, true>(a.type_v, &vt[warp][k0 + u][0], lane * N, vv[u]);
          else if (a.v_words)
            kvq::load_words<N>(a.type_v, vrow, hk * D + lane * N, vv[u]);
          else
            kvq::load<N>(a.type_v, vrow, hk * D + lane * N, vv[u]);
        } else {
#pragma unroll
          for (int n = 0; n < N; ++n) vv[u][n] = 0.0f;  // p is 0 there too
        }
      }
#pragma unroll
      for (int u = 0; u < 8; ++u)
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const float pk = __shfl_sync(0xffffffffu, p[g], k0 + u);
#pragma unroll
          for (int n = 0; n < N; ++n) acc[g][n] += pk * vv[u][n];
        }
    }
    if constexpr (VS) __syncwarp();  // the tile's slices (and PV: probabilities) are read before the next tile's land
  }
  __shared__ MergeSmem<D, G> sm;
  if constexpr (MS)
#pragma unroll
    for (int h = 0; h < G; ++h) m[h] = attn::ms_head(m1, h), l[h] = attn::ms_head(l1, h);
  if constexpr (PV) {
    const int g8 = lane >> 2, t2 = 2 * (lane & 3);
    merge_and_store_with<D, G>(
        sm, m, l,
        [&](float (&w)[G][D]) {
#pragma unroll
          for (int mt = 0; mt < 8; ++mt)
#pragma unroll
            for (int x = 0; x < 4; ++x) {
              const int g = t2 + (x & 1), d = 16 * mt + g8 + 8 * (x >> 1);
              if (g < G) w[g][d] = cacc[mt][x];
            }
        },
        a, i, h0, s, a.one_split_direct && used == 1);
  } else {
    merge_and_store<D, G>(sm, m, l, acc, a, i, h0, s, a.one_split_direct && used == 1);
  }
}

// grid (n_head, n_tokens), D threads: thread d merges element d over the row's splits.
template <int D>
__global__ void __launch_bounds__(D) attn_decode_combine_kernel(attn::Args a) {
  __shared__ CombineSmem cs;
  const int h = blockIdx.x, i = blockIdx.y;
  // pos is read before the dependency wait (no kernel of the step writes it: AttnParams::pos0).
  int lo, hi;
  attn::key_range(*a.pos0 + i, a.window, lo, hi);
  const int n_used = attn::splits_used(max(0, hi - lo), a.n_splits, a.min_split_keys);
  pdl_wait();  // also where the split kernel wrote the row itself: the dependents wait on this grid
  if (a.one_split_direct && n_used == 1) return;
  const auto used = [&] { return n_used; };
  if (a.combine_direct)
    combine_element<D, false>(a, i, h, threadIdx.x, used, &cs);
  else
    combine_element<D, true>(a, i, h, threadIdx.x, used, &cs);
}

// Which cache reads the GQA kernel uses (from the types and the alignment of the cache).
struct WordLoads {
  int k = KP_BYTES;
  bool v = false;
};
WordLoads word_loads(const attn::Args& a, int D) {
  WordLoads w;
  if (a.byte_loads) return w;
  const auto aligned = [](const uint8_t* base, int64_t row_bytes, int n) {
    return (reinterpret_cast<uintptr_t>(base) | (uintptr_t)row_bytes) % (uintptr_t)n == 0;
  };
  const int n = D / 32;  // V elements per lane
  const int v_align = a.type_v == QType::F16 ? std::min(16, 2 * n) : 4;  // kvq::words_align<n>
  const bool v_special = a.type_v == QType::F16 || (a.type_v == QType::Q8_0 && n >= 2) ||
                         (a.type_v == QType::Q5_1 && n >= 4);
  w.v = v_special && aligned(a.v, a.v_row_bytes, v_align);
  if (a.type_k == QType::Q8_0 && D >= 64 && aligned(a.k, a.k_row_bytes, D >= 128 ? 8 : 4)) w.k = KP_Q8;
  if (a.type_k == QType::F16 && aligned(a.k, a.k_row_bytes, 16)) w.k = KP_F16;
  return w;
}

// V staging applies to head_dim 128, q5_1 V, rows and base 16-byte aligned (and not byte_loads).
bool v_stage_applies(const attn::Args& a, int D) {
  return a.v_stage && !a.byte_loads && D == 128 && a.type_v == QType::Q5_1 &&
         (reinterpret_cast<uintptr_t>(a.v) | (uintptr_t)a.v_row_bytes) % 16 == 0;
}

// RopeFold::head_split (1 or 2) applies to the fold with prefetch and stage_k and P x V on tensor
// cores (the int8 scores with V staged), one token; the group (4 or 8) is the launcher's G.
bool head_split_applies(const attn::Args& a, int D) {
  return a.rf.on && (a.rf.head_split == 1 || a.rf.head_split == 2) && a.rf.head_split < a.group && a.rf.prefetch && a.rf.stage_k && a.q8_scores && a.pv_mma && a.n_tokens == 1 &&
         v_stage_applies(a, D);
}

// RopeFold::softmax_interleave applies where stage_k does (the caller checks that), with NeoX
// pairs (the instances built).
bool softmax_interleave_applies(const attn::Args& a) { return a.rf.softmax_interleave && a.rf.neox; }

template <int D, int G>
cudaError_t launch_gqa(const attn::Args& a, int n_tokens, cudaStream_t s) {
  const dim3 grid(a.grid_splits, a.n_head_kv, n_tokens), block(kWarps * 32);
  attn::Args b = a;
  const WordLoads w = word_loads(a, D);
  b.v_words = w.v;
  if constexpr (D == 128 && (G == 4 || G == 8)) {
    if (head_split_applies(a, D) && w.k == KP_Q8) {  // blocks of 1 or 2 query heads: the G = 1 / 2 instances
      const dim3 gh(a.grid_splits, a.n_head_kv * G / a.rf.head_split, n_tokens);
      if (softmax_interleave_applies(a)) {
        if (a.rf.head_split == 2)
          return launch_kernel(attn_decode_gqa_kernel<D, 2, KP_Q8I, true, true, true, true, true, true, true>, gh, block, 0, s, b);
        return launch_kernel(attn_decode_gqa_kernel<D, 1, KP_Q8I, true, true, true, true, true, true, true>, gh, block, 0, s, b);
      }
      if (a.rf.head_split == 2) {
        if (a.rf.neox)
          return launch_kernel(attn_decode_gqa_kernel<D, 2, KP_Q8I, true, true, true, true, true, true>, gh, block, 0, s, b);
        return launch_kernel(attn_decode_gqa_kernel<D, 2, KP_Q8I, true, true, false, true, true, true>, gh, block, 0, s, b);
      }
      if (a.rf.neox)
        return launch_kernel(attn_decode_gqa_kernel<D, 1, KP_Q8I, true, true, true, true, true, true>, gh, block, 0, s, b);
      return launch_kernel(attn_decode_gqa_kernel<D, 1, KP_Q8I, true, true, false, true, true, true>, gh, block, 0, s, b);
    }
  }
  if constexpr (D == 128) {
    if (v_stage_applies(a, D) && w.k == KP_Q8) {
      if constexpr (G == 4 || G == 8) {
        if (a.q8_scores && a.pv_mma) {
          if constexpr (G == 4) {  // G = 8: the key slices would take the block past 48 KB of static shared memory
            if (a.rf.on && a.rf.prefetch && a.rf.stage_k && softmax_interleave_applies(a)) {
              if (a.rf.mma_scores)
                return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, true, true, true, true, true, true, true>, grid, block, 0, s, b);
              return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, true, true, true, true, true, true>, grid, block, 0, s, b);
            }
            if (a.rf.on && a.rf.prefetch && a.rf.stage_k && a.rf.neox)
              return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, true, true, true, true, true>, grid, block, 0, s, b);
            if (a.rf.on && a.rf.prefetch && a.rf.stage_k)
              return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, true, false, true, true, true>, grid, block, 0, s, b);
            if (a.rf.on && a.rf.prefetch && a.rf.neox)
              return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, true, true, true, true>, grid, block, 0, s, b);
            if (a.rf.on && a.rf.prefetch)
              return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, true, false, true, true>, grid, block, 0, s, b);
          }
          if (a.rf.on && a.rf.neox) return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, true, true, true>, grid, block, 0, s, b);
          if (a.rf.on) return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, true, false, true>, grid, block, 0, s, b);
          return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, false, true, true>, grid, block, 0, s, b);
        }
        if (a.q8_scores && a.rf.on) {
          if (a.rf.neox) return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, true, true>, grid, block, 0, s, b);
          return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true, true, false>, grid, block, 0, s, b);
        }
      }
      if (a.rf.on) return cudaErrorInvalidValue;  // attn_decode_rope_fold_applies says no
      if (w.k == KP_Q8 && a.q8_scores) return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I, true>, grid, block, 0, s, b);
      if (w.k == KP_Q8) return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8, true>, grid, block, 0, s, b);
    }
  }
  if (a.rf.on) return cudaErrorInvalidValue;  // attn_decode_rope_fold_applies says no
  if (w.k == KP_Q8 && a.q8_scores) return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8I>, grid, block, 0, s, b);
  if (w.k == KP_Q8) return launch_kernel(attn_decode_gqa_kernel<D, G, KP_Q8>, grid, block, 0, s, b);
  if (w.k == KP_F16) return launch_kernel(attn_decode_gqa_kernel<D, G, KP_F16>, grid, block, 0, s, b);
  return launch_kernel(attn_decode_gqa_kernel<D, G, KP_BYTES>, grid, block, 0, s, b);
}

template <int D>
cudaError_t run_decode(const attn::Args& a, int n_tokens, int n_head, cudaStream_t s) {
  cudaError_t e = cudaSuccess;
  if (attn::f16_mma_applies(a, D))  // an f16 cache on tensor cores (kernels/attn/attn_decode_mma.cu)
    e = attn::launch_decode_f16_mma(a, n_tokens, s);
  else switch (n_head / a.n_head_kv) {
#ifndef MEMRA_REDUCED_INSTANCES
    case 1: e = launch_gqa<D, 1>(a, n_tokens, s); break;
    case 2: e = launch_gqa<D, 2>(a, n_tokens, s); break;
    case 3: e = launch_gqa<D, 3>(a, n_tokens, s); break;
    case 5: e = launch_gqa<D, 5>(a, n_tokens, s); break;
    case 6: e = launch_gqa<D, 6>(a, n_tokens, s); break;
    case 7: e = launch_gqa<D, 7>(a, n_tokens, s); break;
    case 8: e = launch_gqa<D, 8>(a, n_tokens, s); break;
#endif
    case 4: e = launch_gqa<D, 4>(a, n_tokens, s); break;
    default:  // groups wider than 8 (or outside the reduced set): one block per query head
      e = launch_kernel(attn_decode_kernel<D>, dim3(a.grid_splits, n_head, n_tokens), dim3(kWarps * 32), 0, s, a);
  }
  if (e != cudaSuccess || (a.one_split_direct && a.rows_one_split)) return e;  // every row written by the split kernel
  return launch_kernel(attn_decode_combine_kernel<D>, dim3(n_head, n_tokens), dim3(D), 0, s, a);
}

}  // namespace

namespace attn {
// The combine kernel alone, for split kernels launched elsewhere (kernels/attn/attn_decode_i8.cu).
cudaError_t launch_decode_combine(const Args& a, int head_dim, int n_tokens, cudaStream_t s) {
  if (head_dim != 128) return cudaErrorInvalidValue;
  return launch_kernel(attn_decode_combine_kernel<128>, dim3(a.n_head, n_tokens), dim3(128), 0, s, a);
}
}  // namespace attn

bool attn_head_dim_supported(int head_dim) {
#ifdef MEMRA_REDUCED_INSTANCES
  return head_dim == 128;
#else
  return head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256;
#endif
}

size_t attn_decode_workspace_floats(int n_tokens, int n_head, int head_dim, int n_splits) {
  return (size_t)n_tokens * n_head * n_splits * (head_dim + 2);
}

int attn_decode_splits(int n_ctx, int n_head, int n_head_kv, int sm_count, int max_splits, int min_split_keys,
                       int blocks_per_sm) {
  // Blocks per split: one per kv head on the GQA path (groups of up to 8), else one per query
  // head. Aim for ~4 blocks per SM at full context, but no split shorter than 128 keys (one
  // 32-key round per warp), capped at max_splits (64 before kernels.attn_max_splits) so the merge
  // stays short. Why the cap matters at depth (bench/notes/attn-decode.md, fifteenth section): a
  // split of c keys gives its 4 warps ceil(ceil(c / 32) / 4) tiles at most, so 64 splits of a
  // 16385..16896-key row (257..264 keys each) leave warp 0 of every block a third tile of 1-8 keys
  // while the others have two; 66 splits (4 blocks on each of the H200's 132 SMs with 8 kv heads)
  // keep every warp at two. Measured on the H200
  // (kernel-check --perf, q8_0 K / q5_1 V, 32/8 heads x 128, 4097 keys): 88 us with 9 splits
  // sized for per-query-head blocks and 4 partials per block, 47 us with this choice and the
  // in-block merge. That is still 0.03 of the 4.8 TB/s floor: a fixed ~20 us per call (33 keys
  // take 28 us) dominates; bench/notes_attn_decode.md lists what to try next.
  const int g = n_head_kv > 0 ? n_head / n_head_kv : 1;
  const int per_split = (g >= 1 && g <= 8) ? n_head_kv : n_head;
  // 4 blocks per SM at full context (was 2: at 16384 keys that left 8 warps per SM on a
  // latency-bound kernel); the per-row count actually used is attn::splits_used (>= 128 keys each).
  // kernels.attn_blocks_per_sm and AttnParams::min_split_keys (kernels.attn_f16_split_keys) move
  // both terms; 4 and 128 are the rule above.
  const int want = (std::max(1, blocks_per_sm) * sm_count + per_split - 1) / std::max(1, per_split);
  const int by_len = std::max(1, n_ctx / std::max(1, min_split_keys));
  return std::max(1, std::min({want, by_len, std::clamp(max_splits, 1, 1024)}));
}

bool attn_decode_word_loads(const AttnParams& p) {
  if (!attn::valid(p)) return false;
  const int g = p.n_head / p.n_head_kv;
  if (g < 1 || g > 8) return false;  // the per-query-head form reads byte-wise
  const WordLoads w = word_loads(attn::make_args(p), p.head_dim);
  return w.k != KP_BYTES || w.v;
}

bool attn_decode_q8_scores(const AttnParams& p) {
  if (!p.q8_scores || !attn::valid(p)) return false;
  const int g = p.n_head / p.n_head_kv;
  if (g < 1 || g > 8) return false;
  return word_loads(attn::make_args(p), p.head_dim).k == KP_Q8;
}

namespace {
// The int8-score, V-staged path at head_dim 128 with a group of 4 or 8 query heads (4 only in
// reduced builds): where the fold and the tensor-core P x V have kernels.
bool q8i_staged_g48(const AttnParams& p) {
  if (p.head_dim != 128 || !attn::valid(p)) return false;
  const int g = p.n_head / p.n_head_kv;
#ifdef MEMRA_REDUCED_INSTANCES
  if (g != 4) return false;
#else
  if (g != 4 && g != 8) return false;
#endif
  return attn_decode_q8_scores(p) && attn_decode_v_stage(p);
}
}  // namespace

bool attn_decode_rope_fold_applies(const AttnParams& p) {
  return p.n_tokens == 1 && p.rope.k_src && p.rope.v_src && q8i_staged_g48(p);
}

bool attn_decode_pv_mma(const AttnParams& p) { return p.pv_mma && q8i_staged_g48(p); }

bool attn_decode_f16_mma(const AttnParams& p) {
  return attn::valid(p) && attn::f16_mma_applies(attn::make_args(p), p.head_dim);
}

bool attn_decode_head_split(const AttnParams& p) {
  if (attn::planes(p)) return attn_decode_planes_head_split(p);
  return attn_decode_rope_fold_applies(p) && attn_decode_pv_mma(p) && head_split_applies(attn::make_args(p), p.head_dim);
}

bool attn_decode_softmax_interleave(const AttnParams& p) {
  if (!(p.rope.on && p.rope.prefetch && p.rope.stage_k && attn_decode_rope_fold_applies(p) && attn_decode_pv_mma(p)))
    return false;
  if (p.n_head != 4 * p.n_head_kv && !attn_decode_head_split(p)) return false;  // G = 8's group block: no staged form
  return softmax_interleave_applies(attn::make_args(p));
}

bool attn_decode_mma_scores(const AttnParams& p) {
  return p.rope.mma_scores && p.n_head == 4 * p.n_head_kv && !attn_decode_head_split(p) &&
         attn_decode_softmax_interleave(p);
}

bool attn_decode_v_stage(const AttnParams& p) {
  if (!attn::valid(p)) return false;
  const int g = p.n_head / p.n_head_kv;
  if (g < 1 || g > 8) return false;
  const attn::Args a = attn::make_args(p);
  return v_stage_applies(a, p.head_dim) && word_loads(a, p.head_dim).k == KP_Q8;
}

cudaError_t launch_attn_decode(const AttnParams& p, cudaStream_t s) {
  if (!attn::valid(p) || p.n_splits < 1 || p.n_splits > 1024 || !p.workspace || p.grid_splits < 0 ||
      p.grid_splits > p.n_splits)
    return cudaErrorInvalidValue;
  if (attn::planes(p)) return launch_attn_decode_planes(p, s);  // q8_0 split-plane rows: the int8 tile form
  if (p.min_split_keys < 16 || p.min_split_keys > kAttnMinSplitKeys ||
      (p.min_split_keys != kAttnMinSplitKeys && !attn_decode_f16_mma(p)))
    return cudaErrorInvalidValue;  // shorter splits only in the f16 tile form
  if (p.n_tokens == 0) return cudaSuccess;
  if (p.n_tokens > 65535 || p.n_head > 65535) return cudaErrorInvalidValue;
  if (p.rope.on && !attn_decode_rope_fold_applies(p)) return cudaErrorInvalidValue;
  if (p.q8s_il && (!p.q8s_xq || p.n_tokens != 1)) return cudaErrorInvalidValue;  // one row's order
  const attn::Args a = attn::make_args(p);
  switch (p.head_dim) {
#ifndef MEMRA_REDUCED_INSTANCES
    case 32: return run_decode<32>(a, p.n_tokens, p.n_head, s);
    case 64: return run_decode<64>(a, p.n_tokens, p.n_head, s);
    case 256: return run_decode<256>(a, p.n_tokens, p.n_head, s);
#endif
    case 128: return run_decode<128>(a, p.n_tokens, p.n_head, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace memra::cuda
