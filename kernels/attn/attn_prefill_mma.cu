// Prefill attention on tensor cores (FlashAttention-2 style, mma.sync m16n8k16 f16 -> f32):
// a block of 4 warps owns 64 query rows of one head, 16 per warp; K tiles ([key][dim]) and V
// tiles (transposed, [dim][key]) are dequantized to f16 in shared memory; S = Q K^T stays in
// registers, the online softmax runs on the accumulator fragments, and P is re-packed from
// the S accumulators straight into the A fragments of O += P V (their layouts coincide).
// Precision class: Q, K, V and P rounded to f16, f32 accumulation (gated against a naive
// implementation of the same class in kernel-check).
#include <cuda_fp16.h>

#include <algorithm>

#include "attn/attn_common.cuh"
#include "attn/attn_prefill_f16.h"
#include "quant/quant_kernels.h"

namespace memra::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerBlock = 16 * kWarps;

template <int D>
constexpr int mma_key_tile() {
  return D >= 256 ? 32 : 64;
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

using attn::mma16816;

// Q fragments of a warp's 16 rows starting at wr0 (rows past n_tokens read as 0).
template <int D>
__device__ __forceinline__ void load_q_frags(const attn::Args& a, int h, int wr0, int g, int t,
                                             uint32_t (&qf)[D / 16][4]) {
  const int ra = wr0 + g, rb = wr0 + g + 8;
  const float* qa = a.q + (int64_t)min(ra, a.n_tokens - 1) * a.ld_q + (int64_t)h * D;
  const float* qb = a.q + (int64_t)min(rb, a.n_tokens - 1) * a.ld_q + (int64_t)h * D;
  const float za = ra < a.n_tokens ? 1.0f : 0.0f, zb = rb < a.n_tokens ? 1.0f : 0.0f;
#pragma unroll
  for (int kd = 0; kd < D / 16; ++kd) {
    const int c = kd * 16 + 2 * t;
    qf[kd][0] = pack_half2(qa[c] * za, qa[c + 1] * za);
    qf[kd][1] = pack_half2(qb[c] * zb, qb[c + 1] * zb);
    qf[kd][2] = pack_half2(qa[c + 8] * za, qa[c + 9] * za);
    qf[kd][3] = pack_half2(qb[c + 8] * zb, qb[c + 9] * zb);
  }
}

// One key tile's step of the online softmax on the S accumulators (scale, softcap, mask by each
// row's visible range [lo_r, hi_r)): s becomes the probabilities P; the running max m, the
// thread-partial sums l (the quad is summed at the end) and the O accumulators are rescaled.
template <int NT, int DT>
__device__ __forceinline__ void softmax_tile(const attn::Args& a, int t0, int t, const int (&lo_r)[2],
                                             const int (&hi_r)[2], float (&s)[NT][4], float (&m)[2], float (&l)[2],
                                             float (&o)[DT][4]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int j = t0 + nt * 8 + 2 * t + c;
        float v = attn::finish_score(s[nt][2 * r + c], a.scale, a.softcap);
        if (j < lo_r[r] || j >= hi_r[r]) v = -INFINITY;
        s[nt][2 * r + c] = v;
        mx = fmaxf(mx, v);
      }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m[r], mx);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row with no visible key yet
    const float corr = expf(m[r] - m_use);
    float sum = 0.0f;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const float p = expf(s[nt][2 * r + c] - m_use);
        s[nt][2 * r + c] = p;
        sum += p;
      }
    l[r] = l[r] * corr + sum;
    m[r] = m_new;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      o[dt][2 * r] *= corr;
      o[dt][2 * r + 1] *= corr;
    }
  }
}

// This thread's two rows (row0 = wr0 + g and row0 + 8) of head h, each normalized by its
// running sum l summed over the quad; rows past n_tokens are not written.
template <int D>
__device__ __forceinline__ void store_rows(const attn::Args& a, const float (&o)[D / 8][4], const float (&l)[2],
                                           int row0, int h, int t) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float lt = l[r];
    lt += __shfl_xor_sync(0xffffffffu, lt, 1);
    lt += __shfl_xor_sync(0xffffffffu, lt, 2);
    const int row = row0 + 8 * r;
    if (row >= a.n_tokens) continue;
    const float inv = lt > 0.0f ? 1.0f / lt : 0.0f;
    float* op = a.out + (int64_t)row * a.ld_out + (int64_t)h * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      op[dt * 8] = o[dt][2 * r] * inv;
      op[dt * 8 + 1] = o[dt][2 * r + 1] * inv;
    }
  }
}

template <int D>
__global__ void __launch_bounds__(kWarps * 32) attn_prefill_mma_kernel(attn::Args a) {
  constexpr int BK = mma_key_tile<D>();
  constexpr int KS = D + 8;   // K row stride in halves: +16 bytes keeps fragment loads conflict-free
  constexpr int VS = BK + 8;  // Vt row stride
  constexpr int NT = BK / 8;  // key n-tiles of S
  constexpr int DT = D / 8;   // dim n-tiles of O
  constexpr int KD = D / 16;  // k-steps of Q K^T
  __shared__ __align__(16) __half ks[BK * KS];
  __shared__ __align__(16) __half vt[D * VS];

  const int h = blockIdx.y;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int hk = h / (a.n_head / a.n_head_kv);
  const int pos0 = *a.pos0;
  const int row0 = blockIdx.x * kRowsPerBlock;
  const int last_row = min(a.n_tokens, row0 + kRowsPerBlock) - 1;
  int blo, bhi, tmp;
  attn::key_range(pos0 + row0, a.window, blo, tmp);
  attn::key_range(pos0 + last_row, a.window, tmp, bhi);

  // Q fragments of this warp's 16 rows (rows past n_tokens read as 0).
  const int wr0 = row0 + warp * 16;
  uint32_t qf[KD][4];
  load_q_frags<D>(a, h, wr0, g, t, qf);
  // Per thread: rows g (index 0) and g + 8 (index 1) of the warp's 16.
  int lo_r[2], hi_r[2];
  attn::key_range(pos0 + wr0 + g, a.window, lo_r[0], hi_r[0]);
  attn::key_range(pos0 + wr0 + g + 8, a.window, lo_r[1], hi_r[1]);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[DT][4];
#pragma unroll
  for (int i = 0; i < DT; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;

  for (int t0 = blo; t0 < bhi; t0 += BK) {
    __syncthreads();  // previous tile consumed
    for (int gi = threadIdx.x; gi < BK * (D / 8); gi += kWarps * 32) {
      const int kj = gi / (D / 8), e = (gi % (D / 8)) * 8;
      float kv[8], vv[8];
      if (t0 + kj < bhi) {
        kvq::load_row<8>(a.type_k, a.k_plane, a.k + (int64_t)(t0 + kj) * a.k_row_bytes, hk * D + e, kv);
        kvq::load_row<8>(a.type_v, a.v_plane, a.v + (int64_t)(t0 + kj) * a.v_row_bytes, hk * D + e, vv);
      } else {  // past the block's last key: zeros (0 * p, never NaN * 0)
#pragma unroll
        for (int x = 0; x < 8; ++x) kv[x] = vv[x] = 0.0f;
      }
      uint32_t* kdst = reinterpret_cast<uint32_t*>(ks + kj * KS + e);
#pragma unroll
      for (int x = 0; x < 4; ++x) kdst[x] = pack_half2(kv[2 * x], kv[2 * x + 1]);
#pragma unroll
      for (int x = 0; x < 8; ++x) vt[(e + x) * VS + kj] = __float2half_rn(vv[x]);
    }
    __syncthreads();

    // S = Q K^T for this warp: 16 x BK.
    float s[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
      const __half* kr = ks + (nt * 8 + g) * KS + 2 * t;
#pragma unroll
      for (int kd = 0; kd < KD; ++kd) {
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(kr + kd * 16);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(kr + kd * 16 + 8);
        mma16816(s[nt], qf[kd][0], qf[kd][1], qf[kd][2], qf[kd][3], b0, b1);
      }
    }
    // Scale, softcap, mask; online softmax per row.
    softmax_tile<NT, DT>(a, t0, t, lo_r, hi_r, s, m, l, o);
    // O += P V: P's A fragments come from pairs of S n-tiles.
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      const uint32_t a0 = pack_half2(s[2 * kk][0], s[2 * kk][1]);
      const uint32_t a1 = pack_half2(s[2 * kk][2], s[2 * kk][3]);
      const uint32_t a2 = pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      const uint32_t a3 = pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int dt = 0; dt < DT; ++dt) {
        const __half* vr = vt + (dt * 8 + g) * VS + kk * 16 + 2 * t;
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(vr);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(vr + 8);
        mma16816(o[dt], a0, a1, a2, a3, b0, b1);
      }
    }
  }
  store_rows<D>(a, o, l, wr0 + g, h, t);
}

template <int D>
cudaError_t run_mma(const attn::Args& a, int n_tokens, int n_head, cudaStream_t s) {
  const unsigned tiles = (unsigned)((n_tokens + kRowsPerBlock - 1) / kRowsPerBlock);
  attn_prefill_mma_kernel<D><<<dim3(tiles, n_head), kWarps * 32, 0, s>>>(a);
  return cudaGetLastError();
}

// ---- staged form (attn_prefill_f16.h) ----

__device__ __forceinline__ void cp_async16_zfill(void* smem, const void* gmem, bool valid) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  const int n = valid ? 16 : 0;  // 0: the 16 bytes are zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(gmem), "r"(n) : "memory");
}
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const __half* p) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const __half* p) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

template <int D>
constexpr size_t staged_smem_bytes() {
  return (size_t)2 * 2 * mma_key_tile<D>() * (D + 8) * sizeof(__half);  // 2 stages x (K, V)
}

// a.k / a.v: the staged f16 rows, row j of the cache at (j - key0) * a.k_row_bytes.
template <int D>
__global__ void __launch_bounds__(kWarps * 32) attn_prefill_staged_kernel(attn::Args a, int key0) {
  constexpr int BK = mma_key_tile<D>();
  constexpr int KS = D + 8;  // row stride in halves (16-byte aligned, ldmatrix conflict-free)
  constexpr int NT = BK / 8, DT = D / 8, KD = D / 16;
  constexpr int CPR = D / 8;  // 16-byte chunks per row
  static_assert(KD % 2 == 0 && DT % 2 == 0, "ldmatrix.x4 takes two k-steps / two n-tiles");
  extern __shared__ __align__(16) __half smem[];
  __half* const ks0 = smem;                 // [2][BK][KS]
  __half* const vs0 = smem + 2 * BK * KS;   // [2][BK][KS]

  const int h = blockIdx.y;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int hk = h / (a.n_head / a.n_head_kv);
  const int pos0 = *a.pos0;
  const int row0 = (gridDim.x - 1 - blockIdx.x) * kRowsPerBlock;  // heaviest causal tiles first
  const int last_row = min(a.n_tokens, row0 + kRowsPerBlock) - 1;
  int blo, bhi, tmp;
  attn::key_range(pos0 + row0, a.window, blo, tmp);
  attn::key_range(pos0 + last_row, a.window, tmp, bhi);
  const int64_t ld = a.k_row_bytes / 2;  // halves per staged row (K and V alike)
  const __half* kbase = reinterpret_cast<const __half*>(a.k) + (int64_t)hk * D;
  const __half* vbase = reinterpret_cast<const __half*>(a.v) + (int64_t)hk * D;

  auto issue = [&](int t0, int st) {
    __half* kd = ks0 + st * BK * KS;
    __half* vd = vs0 + st * BK * KS;
    for (int c = threadIdx.x; c < BK * CPR; c += kWarps * 32) {
      const int r = c / CPR, part = c % CPR;
      const int j = t0 + r;
      const bool ok = j < bhi;
      const int64_t off = (int64_t)((ok ? j : t0) - key0) * ld + part * 8;
      cp_async16_zfill(kd + r * KS + part * 8, kbase + off, ok);
      cp_async16_zfill(vd + r * KS + part * 8, vbase + off, ok);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
  if (blo < bhi) issue(blo, 0);

  const int wr0 = row0 + warp * 16;
  uint32_t qf[KD][4];
  load_q_frags<D>(a, h, wr0, g, t, qf);
  int lo_r[2], hi_r[2];
  attn::key_range(pos0 + wr0 + g, a.window, lo_r[0], hi_r[0]);
  attn::key_range(pos0 + wr0 + g + 8, a.window, lo_r[1], hi_r[1]);
  // The warp's visible key span: tiles wholly outside it are skipped (warp-uniform).
  int wlo, whi;
  attn::key_range(pos0 + wr0, a.window, wlo, tmp);
  attn::key_range(pos0 + min(wr0 + 15, last_row), a.window, tmp, whi);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[DT][4];
#pragma unroll
  for (int i = 0; i < DT; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;

  int st = 0;
  for (int t0 = blo; t0 < bhi; t0 += BK, st ^= 1) {
    if (t0 + BK < bhi) {
      issue(t0 + BK, st ^ 1);
      asm volatile("cp.async.wait_group 1;" ::: "memory");
    } else {
      asm volatile("cp.async.wait_group 0;" ::: "memory");
    }
    __syncthreads();
    if (wr0 <= last_row && t0 < whi && t0 + BK > wlo) {
      const __half* kt = ks0 + st * BK * KS;
      const __half* vt = vs0 + st * BK * KS;
      float s[NT][4];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
        const __half* kr = kt + (nt * 8 + (lane & 7)) * KS + (lane >> 3) * 8;
#pragma unroll
        for (int kd = 0; kd < KD; kd += 2) {
          uint32_t b[4];
          ldsm_x4(b, kr + kd * 16);
          mma16816(s[nt], qf[kd][0], qf[kd][1], qf[kd][2], qf[kd][3], b[0], b[1]);
          mma16816(s[nt], qf[kd + 1][0], qf[kd + 1][1], qf[kd + 1][2], qf[kd + 1][3], b[2], b[3]);
        }
      }
      softmax_tile<NT, DT>(a, t0, t, lo_r, hi_r, s, m, l, o);
      // O += P V; V's B fragments by ldmatrix.trans of the [key][dim] tile.
      const __half* vr = vt + (lane & 7) * KS + ((lane >> 3) & 1) * 8 * KS + (lane >> 4) * 8;
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        const uint32_t a0 = pack_half2(s[2 * kk][0], s[2 * kk][1]);
        const uint32_t a1 = pack_half2(s[2 * kk][2], s[2 * kk][3]);
        const uint32_t a2 = pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
        const uint32_t a3 = pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
        for (int dt = 0; dt < DT; dt += 2) {
          uint32_t b[4];
          ldsm_x4_trans(b, vr + kk * 16 * KS + dt * 8);
          mma16816(o[dt], a0, a1, a2, a3, b[0], b[1]);
          mma16816(o[dt + 1], a0, a1, a2, a3, b[2], b[3]);
        }
      }
    }
    __syncthreads();  // this stage is consumed before the next issue overwrites it
  }
  store_rows<D>(a, o, l, wr0 + g, h, t);
}

template <int D>
cudaError_t run_staged(const attn::Args& a, int key0, int n_tokens, int n_head, cudaStream_t s) {
  constexpr size_t smem = staged_smem_bytes<D>();
  static const cudaError_t attr =
      cudaFuncSetAttribute(attn_prefill_staged_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (attr != cudaSuccess) return attr;
  const unsigned tiles = (unsigned)((n_tokens + kRowsPerBlock - 1) / kRowsPerBlock);
  attn_prefill_staged_kernel<D><<<dim3(tiles, n_head), kWarps * 32, smem, s>>>(a, key0);
  return cudaGetLastError();
}

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

// The staged row range of a call: [lo of its first row, pos0 + n_tokens).
void staged_rows(const AttnParams& p, int pos0, int& lo, int& hi) {
  hi = pos0 + p.n_tokens;
  lo = p.window > 0 ? std::max(0, pos0 - p.window + 1) : 0;
}

}  // namespace

bool attn_prefill_mma_supported(int head_dim) {
#ifdef MEMRA_REDUCED_INSTANCES
  return head_dim == 128;
#else
  return head_dim == 64 || head_dim == 128 || head_dim == 256;
#endif
}

cudaError_t launch_attn_prefill_mma(const AttnParams& p, cudaStream_t s) {
  if (!attn::valid(p) || !attn_prefill_mma_supported(p.head_dim)) return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
  if (p.n_head > 65535) return cudaErrorInvalidValue;
  const attn::Args a = attn::make_args(p);
  switch (p.head_dim) {
#ifndef MEMRA_REDUCED_INSTANCES
    case 64: return run_mma<64>(a, p.n_tokens, p.n_head, s);
    case 256: return run_mma<256>(a, p.n_tokens, p.n_head, s);
#endif
    case 128: return run_mma<128>(a, p.n_tokens, p.n_head, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace memra::cuda

namespace memra::cuda {

bool attn_prefill_staged_supported(int head_dim) { return attn_prefill_mma_supported(head_dim); }

size_t attn_prefill_stage_bytes(const AttnParams& p, int pos0) {
  int lo, hi;
  staged_rows(p, pos0, lo, hi);
  const size_t row = (size_t)p.n_head_kv * (size_t)p.head_dim * sizeof(__half);
  return 2 * align256((size_t)std::max(0, hi - lo) * row);
}

cudaError_t launch_attn_prefill_staged(const AttnParams& p, int pos0, void* stage, size_t stage_bytes,
                                       cudaStream_t s) {
  if (!attn::valid(p) || !attn_prefill_staged_supported(p.head_dim) || pos0 < 0) return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
  if (p.n_head > 65535 || !stage || stage_bytes < attn_prefill_stage_bytes(p, pos0) ||
      reinterpret_cast<uintptr_t>(stage) % 256)
    return cudaErrorInvalidValue;
  int lo, hi;
  staged_rows(p, pos0, lo, hi);
  const int64_t cols = (int64_t)p.n_head_kv * p.head_dim;
  const size_t plane = align256((size_t)(hi - lo) * (size_t)cols * sizeof(__half));
  auto* ks = static_cast<uint8_t*>(stage);
  auto* vs = ks + plane;
  for (int x = 0; x < 2; ++x) {
    if (attn::planes(p)) {  // q8_0 split-plane rows: the same values through the cache's reader
      KvReadParams r;
      r.cache = x == 0 ? p.k_cache : p.v_cache;
      r.type = x == 0 ? p.type_k : p.type_v;
      r.row_bytes = x == 0 ? p.k_row_bytes : p.v_row_bytes;
      r.row_elems = (int)cols;
      r.pos_begin = lo;
      r.n_rows = hi - lo;
      r.ld_dst = cols;
      r.scale_plane = x == 0 ? p.k_scale_plane : p.v_scale_plane;
      r.dst_f16 = x == 0 ? ks : vs;
      if (const cudaError_t e = launch_kv_read(r, s); e != cudaSuccess) return e;
      continue;
    }
    DequantizeParams dq;
    dq.type = x == 0 ? p.type_k : p.type_v;
    dq.w = static_cast<const uint8_t*>(x == 0 ? p.k_cache : p.v_cache) + (int64_t)lo * (x == 0 ? p.k_row_bytes : p.v_row_bytes);
    dq.row_bytes = (size_t)(x == 0 ? p.k_row_bytes : p.v_row_bytes);
    dq.rows = hi - lo;
    dq.cols = cols;
    dq.out = x == 0 ? ks : vs;
    dq.out_f16 = true;
    dq.ld_out = cols;
    if (const cudaError_t e = launch_dequantize(dq, s); e != cudaSuccess) return e;
  }
  attn::Args a = attn::make_args(p);
  a.k = ks;
  a.v = vs;
  a.type_k = a.type_v = QType::F16;
  a.k_row_bytes = a.v_row_bytes = cols * (int64_t)sizeof(__half);
  a.k_plane = a.v_plane = 0;
  switch (p.head_dim) {
#ifndef MEMRA_REDUCED_INSTANCES
    case 64: return run_staged<64>(a, lo, p.n_tokens, p.n_head, s);
    case 256: return run_staged<256>(a, lo, p.n_tokens, p.n_head, s);
#endif
    case 128: return run_staged<128>(a, lo, p.n_tokens, p.n_head, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace memra::cuda
