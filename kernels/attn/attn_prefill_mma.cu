// Prefill attention on tensor cores (FlashAttention-2 style, mma.sync m16n8k16 f16 -> f32):
// a block of 4 warps owns 64 query rows of one head, 16 per warp; K tiles ([key][dim]) and V
// tiles (transposed, [dim][key]) are dequantized to f16 in shared memory; S = Q K^T stays in
// registers, the online softmax runs on the accumulator fragments, and P is re-packed from
// the S accumulators straight into the A fragments of O += P V (their layouts coincide).
// Precision class: Q, K, V and P rounded to f16, f32 accumulation (gated against a naive
// implementation of the same class in kernel-check).
#include <cuda_fp16.h>

#include "attn/attn_common.cuh"

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

__device__ __forceinline__ void mma16816(float* c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
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
  {
    const int ra = wr0 + g, rb = wr0 + g + 8;
    const float* qa = a.q + (int64_t)min(ra, a.n_tokens - 1) * a.ld_q + (int64_t)h * D;
    const float* qb = a.q + (int64_t)min(rb, a.n_tokens - 1) * a.ld_q + (int64_t)h * D;
    const float za = ra < a.n_tokens ? 1.0f : 0.0f, zb = rb < a.n_tokens ? 1.0f : 0.0f;
#pragma unroll
    for (int kd = 0; kd < KD; ++kd) {
      const int c = kd * 16 + 2 * t;
      qf[kd][0] = pack_half2(qa[c] * za, qa[c + 1] * za);
      qf[kd][1] = pack_half2(qb[c] * zb, qb[c + 1] * zb);
      qf[kd][2] = pack_half2(qa[c + 8] * za, qa[c + 9] * za);
      qf[kd][3] = pack_half2(qb[c + 8] * zb, qb[c + 9] * zb);
    }
  }
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
        kvq::load<8>(a.type_k, a.k + (int64_t)(t0 + kj) * a.k_row_bytes, hk * D + e, kv);
        kvq::load<8>(a.type_v, a.v + (int64_t)(t0 + kj) * a.v_row_bytes, hk * D + e, vv);
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
      l[r] = l[r] * corr + sum;  // thread-partial; the quad is summed at the end
      m[r] = m_new;
#pragma unroll
      for (int dt = 0; dt < DT; ++dt) {
        o[dt][2 * r] *= corr;
        o[dt][2 * r + 1] *= corr;
      }
    }
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
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float lt = l[r];
    lt += __shfl_xor_sync(0xffffffffu, lt, 1);
    lt += __shfl_xor_sync(0xffffffffu, lt, 2);
    const int row = wr0 + g + 8 * r;
    if (row >= a.n_tokens) continue;
    const float inv = lt > 0.0f ? 1.0f / lt : 0.0f;
    float* op = a.out + (int64_t)row * a.ld_out + (int64_t)h * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) {
      op[dt * 8] = o[dt][2 * r] * inv;
      op[dt * 8 + 1] = o[dt][2 * r + 1] * inv;
    }
  }
}

template <int D>
cudaError_t run_mma(const attn::Args& a, int n_tokens, int n_head, cudaStream_t s) {
  const unsigned tiles = (unsigned)((n_tokens + kRowsPerBlock - 1) / kRowsPerBlock);
  attn_prefill_mma_kernel<D><<<dim3(tiles, n_head), kWarps * 32, 0, s>>>(a);
  return cudaGetLastError();
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
