#pragma once
// Pieces shared by the decode and prefill attention kernels.
#include <cstdint>
#include <utility>

#include "attn/attn_kernels.h"
#include "kv/kv_dequant.cuh"
#include "kv/kv_kernels.h"

namespace memra::cuda::attn {

struct Args {
  const float* q;
  int64_t ld_q;
  const uint8_t* k;
  QType type_k;
  int64_t k_row_bytes;
  const uint8_t* v;
  QType type_v;
  int64_t v_row_bytes;
  float* out;
  int64_t ld_out;
  int n_tokens, n_head, n_head_kv;
  const int32_t* pos0;
  float scale;
  int window;
  float softcap;
  int n_splits;
  int min_split_keys;  // AttnParams::min_split_keys
  int grid_splits;     // the launch grid's split extent (AttnParams::grid_splits, or n_splits)
  float* ws;
  int8_t* q8s_xq;
  float2* q8s_xds;
  bool q8s_il;      // AttnParams::q8s_il
  bool byte_loads;  // AttnParams::byte_loads
  bool v_words;     // decode (set by the launcher): V rows through kvq::load_words
  bool q8_scores;   // AttnParams::q8_scores
  bool v_stage;     // AttnParams::v_stage
  bool combine_direct;  // AttnParams::combine_direct
  bool pv_mma;          // AttnParams::pv_mma
  bool combine_preload;  // AttnParams::combine_preload
  AttnParams::RopeFold rf;  // AttnParams::rope
  int group;                // n_head / n_head_kv
  bool one_split_direct;    // AttnParams::one_split_direct
  bool rows_one_split;      // AttnParams::rows_one_split
  bool f16_mma;             // AttnParams::f16_mma
  int k_plane, v_plane;     // AttnParams::k_scale_plane / v_scale_plane
  int probe_delay_cycles;   // AttnParams::probe_delay_cycles
};

inline Args make_args(const AttnParams& p) {
  return {p.q, p.ld_q, static_cast<const uint8_t*>(p.k_cache), p.type_k, p.k_row_bytes,
          static_cast<const uint8_t*>(p.v_cache), p.type_v, p.v_row_bytes, p.out, p.ld_out,
          p.n_tokens, p.n_head, p.n_head_kv, p.pos0, p.scale, p.window, p.softcap, p.n_splits,
          p.min_split_keys, p.grid_splits > 0 ? p.grid_splits : p.n_splits, p.workspace, p.q8s_xq, static_cast<float2*>(p.q8s_xds), p.q8s_il, p.byte_loads, false, p.q8_scores, p.v_stage, p.combine_direct, p.pv_mma, p.combine_preload, p.rope,
          p.n_head_kv > 0 ? p.n_head / p.n_head_kv : 1, p.one_split_direct, p.rows_one_split, p.f16_mma,
          p.k_scale_plane, p.v_scale_plane, p.probe_delay_cycles};
}

// p ? a : b through an opaque PTX select. A chain of these picks one of a warp-uniform array's
// elements by a lane-dependent index while the array stays in registers: written as plain
// conditionals, the compiler folds the chain into one indexed load and moves the array to local
// memory (a store per element and a load per use: the G = 4 / 8 decode instances' P x V rescale
// had 16 / 32 bytes of stack for it).
__device__ __forceinline__ float select_f32(bool p, float a, float b) {
  float r;
  asm("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %3, 0;\n\tselp.f32 %0, %1, %2, q;\n\t}"
      : "=f"(r)
      : "f"(a), "f"(b), "r"(static_cast<unsigned>(p)));
  return r;
}

// Key range [lo, hi) visible from position pos.
__device__ __forceinline__ void key_range(int pos, int window, int& lo, int& hi) {
  hi = pos + 1;
  lo = window > 0 ? max(0, pos - window + 1) : 0;
}

// Splits a decode row of len keys actually uses: n_splits (fixed by the cache capacity, so the
// grid and a captured graph stay the same) caps it, but no split gets fewer than kMinSplitKeys
// keys. A function of the row's own key count only, so decode and verify rows still agree bit
// for bit. Why: at depth ~0 with n_splits = 33 every split held ~4 keys and the combine walked 33
// partials: 15.7 + 10.6 us per layer on the H200 (ncu, 2026-12-01) for ~130 keys.
// Rows of up to kMinSplitKeys keys use one split; a longer row's splits get at least min_keys keys
// each (AttnParams::min_split_keys: kMinSplitKeys, one 32-key round for each of the 4 warps of a
// block, except in the f16 tile form, whose warps take 16-key tiles).
constexpr int kMinSplitKeys = kAttnMinSplitKeys;
__device__ __forceinline__ int splits_used(int len, int n_splits, int min_keys) {
  if (len <= kMinSplitKeys) return 1;
  return max(1, min(n_splits, (len + min_keys - 1) / min_keys));
}

// Split s's keys [b, e) of the decode row at position pos (chunks of ceil(len / used) from the row's
// first key) and the row's split count `used`; false when the row uses fewer than s + 1 splits.
__device__ __forceinline__ bool split_keys(const Args& a, int pos, int s, int& b, int& e, int& used) {
  int lo, hi;
  key_range(pos, a.window, lo, hi);
  const int len = max(0, hi - lo);
  used = splits_used(len, a.n_splits, a.min_split_keys);
  if (s >= used) return false;
  const int chunk = (len + used - 1) / used;
  b = lo + s * chunk;
  e = min(hi, b + chunk);
  return true;
}

// The int8 score path's query rule for one 32-element block held one element per lane (all 32 lanes
// call it): d = amax / 127 (returned through d), q = rn(x * (1 / d)), 0 for an all-zero block.
__device__ __forceinline__ int q8_query_quant(float x, float& d) {
  float amax = fabsf(x);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  d = amax / 127.0f;
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  return __float2int_rn(x * id);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// D += A B on tensor cores, m16n8k16, f16 inputs, f32 accumulators. Fragments (lane = 4 g + t):
// A (16 x 16, row-major) a0 = (row g, cols 2t, 2t + 1), a1 = (row g + 8, the same cols), a2 / a3 =
// the same rows at cols + 8; B (16 x 8) b0 = (rows 2t, 2t + 1, col g), b1 = rows + 8; C (16 x 8)
// c0, c1 = (row g, cols 2t, 2t + 1), c2, c3 = row g + 8. Each pair: lower index in the low half.
__device__ __forceinline__ void mma16816(float* c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float finish_score(float dot, float scale, float softcap) {
  float s = dot * scale;
  if (softcap > 0.0f) s = softcap * tanhf(s / softcap);
  return s;
}

// Validation shared by both launchers.
inline bool valid(const AttnParams& p) {
  if (!p.q || !p.k_cache || !p.v_cache || !p.out || !p.pos0) return false;
  if (p.n_tokens < 0 || p.n_head <= 0 || p.n_head_kv <= 0 || p.n_head % p.n_head_kv) return false;
  if (!attn_head_dim_supported(p.head_dim)) return false;
  const int64_t w = (int64_t)p.n_head * p.head_dim;
  if (p.ld_q < w || p.ld_out < w) return false;
  const uint64_t kv_row = (uint64_t)p.n_head_kv * p.head_dim;
  for (auto [t, rb] : {std::pair{p.type_k, p.k_row_bytes}, std::pair{p.type_v, p.v_row_bytes}}) {
    switch (t) {
      case QType::F32: case QType::F16: case QType::Q8_0: case QType::Q5_1: case QType::Q5_0:
      case QType::Q4_0: case QType::Q4_1:
        break;
      default:
        return false;
    }
    const auto need = qtype_row_bytes(t, kv_row);
    if (!need || rb < (int64_t)*need) return false;
  }
  return (p.k_scale_plane > 0) == (p.v_scale_plane > 0) &&
         kv_scale_plane_valid(p.type_k, (int)kv_row, p.k_row_bytes, p.k_scale_plane) &&
         kv_scale_plane_valid(p.type_v, (int)kv_row, p.v_row_bytes, p.v_scale_plane);
}

// Whether p's cache rows are the q8_0 split-plane layout (AttnParams::k_scale_plane).
inline bool planes(const AttnParams& p) { return p.k_scale_plane > 0; }

}  // namespace memra::cuda::attn
