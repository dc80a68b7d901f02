// Prefill attention, tiled (CUDA cores, f32): a block of 8 warps owns 8 consecutive query rows
// of one head; K/V tiles of the block's key range are dequantized once into shared memory and
// shared by the 8 rows; each warp keeps an online softmax for its row. Lanes own elements
// lane + 32 n so shared-memory reads are conflict-free.
// The tensor-core kernel (attn_prefill_mma.cu) replaces this for head dims 64/128/256; this one
// stays for the other head dims and as the f32 form kernel-check compares against.
#include <algorithm>

#include "attn/attn_common.cuh"

namespace memra::cuda {
namespace {

constexpr int kRows = 8;  // warps per block = query rows per block

template <int D>
constexpr int key_tile() {
  return D >= 256 ? 16 : 32;  // 2 * KT * D * 4 bytes = 32 KB of shared memory (static limit 48 KB)
}

template <int D>
__global__ void __launch_bounds__(kRows * 32) attn_prefill_kernel(attn::Args a) {
  constexpr int N = D / 32, KT = key_tile<D>();
  __shared__ float ks[KT][D];
  __shared__ float vs[KT][D];
  const int h = blockIdx.y;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int hk = h / (a.n_head / a.n_head_kv);
  const int pos0 = *a.pos0;
  const int r_first = blockIdx.x * kRows;
  const int r_last = min(a.n_tokens, r_first + kRows) - 1;
  const int i = r_first + warp;
  const bool active = i < a.n_tokens;

  int lo, hi, blo, bhi, tmp;
  attn::key_range(pos0 + (active ? i : r_last), a.window, lo, hi);
  attn::key_range(pos0 + r_first, a.window, blo, tmp);
  attn::key_range(pos0 + r_last, a.window, tmp, bhi);

  float q[N], acc[N];
  const float* qp = a.q + (int64_t)(active ? i : r_last) * a.ld_q + (int64_t)h * D;
#pragma unroll
  for (int n = 0; n < N; ++n) {
    q[n] = qp[lane + 32 * n];
    acc[n] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;

  for (int t0 = blo; t0 < bhi; t0 += KT) {
    const int nk = min(KT, bhi - t0);
    __syncthreads();  // the previous tile is consumed
    for (int g = threadIdx.x; g < nk * (D / 8); g += kRows * 32) {
      const int kj = g / (D / 8), e = (g % (D / 8)) * 8;
      kvq::load_row<8>(a.type_k, a.k_plane, a.k + (int64_t)(t0 + kj) * a.k_row_bytes, hk * D + e, &ks[kj][e]);
      kvq::load_row<8>(a.type_v, a.v_plane, a.v + (int64_t)(t0 + kj) * a.v_row_bytes, hk * D + e, &vs[kj][e]);
    }
    __syncthreads();
    if (!active) continue;
    const int jb = max(lo, t0), je = min(hi, t0 + nk);
    for (int j = jb; j < je; ++j) {
      const int kj = j - t0;
      float dot = 0.0f;
#pragma unroll
      for (int n = 0; n < N; ++n) dot += q[n] * ks[kj][lane + 32 * n];
      const float sc = attn::finish_score(attn::warp_sum(dot), a.scale, a.softcap);
      const float m_new = fmaxf(m, sc);
      const float corr = expf(m - m_new);
      const float p = expf(sc - m_new);
      l = l * corr + p;
#pragma unroll
      for (int n = 0; n < N; ++n) acc[n] = acc[n] * corr + p * vs[kj][lane + 32 * n];
      m = m_new;
    }
  }
  if (!active) return;
  float* op = a.out + (int64_t)i * a.ld_out + (int64_t)h * D;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
  for (int n = 0; n < N; ++n) op[lane + 32 * n] = acc[n] * inv;
}

template <int D>
cudaError_t run_prefill(const attn::Args& a, int n_tokens, int n_head, cudaStream_t s) {
  const unsigned tiles = (unsigned)((n_tokens + kRows - 1) / kRows);
  attn_prefill_kernel<D><<<dim3(tiles, n_head), kRows * 32, 0, s>>>(a);
  return cudaGetLastError();
}

}  // namespace

AttnPrefillKernel attn_prefill_choose(int head_dim) {
  return attn_prefill_mma_supported(head_dim) ? AttnPrefillKernel::Mma : AttnPrefillKernel::Tiled;
}

cudaError_t launch_attn_prefill(const AttnParams& p, cudaStream_t s) {
  return attn_prefill_choose(p.head_dim) == AttnPrefillKernel::Mma ? launch_attn_prefill_mma(p, s)
                                                                    : launch_attn_prefill_tiled(p, s);
}

cudaError_t launch_attn_prefill_tiled(const AttnParams& p, cudaStream_t s) {
  if (!attn::valid(p)) return cudaErrorInvalidValue;
  if (p.n_tokens == 0) return cudaSuccess;
  if (p.n_head > 65535) return cudaErrorInvalidValue;
  const attn::Args a = attn::make_args(p);
  switch (p.head_dim) {
#ifndef MEMRA_REDUCED_INSTANCES
    case 32: return run_prefill<32>(a, p.n_tokens, p.n_head, s);
    case 64: return run_prefill<64>(a, p.n_tokens, p.n_head, s);
    case 256: return run_prefill<256>(a, p.n_tokens, p.n_head, s);
#endif
    case 128: return run_prefill<128>(a, p.n_tokens, p.n_head, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace memra::cuda
