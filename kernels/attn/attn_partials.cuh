#pragma once
// The split-K decode attention's partials (kernels/attn/attn_decode.cu): the in-block merge of
// the 4 warps' online-softmax partials into one partial per (row, head, split), and the combine
// of a row's split partials into the output (and its q8s planes). Fixed summation orders
// throughout, so decode and verify rows agree bit for bit.
#include <cstdint>

#include "attn/attn_common.cuh"
#include "norm/q8_1_emit.cuh"

namespace memra::cuda::attn {

constexpr int kDecodeWarps = 4;  // warps per block of the split kernels

// Element d of head h of row i from its softmax sum l and unnormalized output o: out (and, where
// the launch asks for them, its q8s block: all 32 lanes of the warp call this for 32 consecutive d
// of one head).
template <int D>
__device__ __forceinline__ void write_result(const Args& a, int i, int h, int d, float l, float o) {
  const float v = l > 0.0f ? o / l : 0.0f;
  const int64_t col = (int64_t)h * D + d;
  a.out[(int64_t)i * a.ld_out + col] = v;
  if (a.q8s_xq) {
    const int64_t row_cols = (int64_t)a.n_head * D;
    emit_q8s_block(v, d & 31, a.q8s_xq + (int64_t)i * row_cols, col & ~int64_t{31}, a.q8s_il,
                   a.q8s_xds + ((int64_t)i * row_cols + col) / 32);
  }
}

// The block's 4 warp partials of G heads merged in shared memory (fixed order), then written as
// one partial (m, l, acc[D]) per (row, head, split). Lane-owned elements: lane * N + n.
template <int D, int G>
struct MergeSmem {
  float m[kDecodeWarps][G];
  float l[kDecodeWarps][G];
  float acc[kDecodeWarps][G][D];
};

// put_acc(sm.acc[warp]) writes the warp's unnormalized outputs of its G heads.
// direct (AttnParams::one_split_direct on a row of one split): the merged element is the row's
// result, written as the combine kernel would write it (o / l, and its q8s block: each pass of
// the loop below gives a warp 32 consecutive elements of one head) instead of as a partial; the
// combine of a one-split partial multiplies by expf(m - m) = 1 and adds to 0, so the same bits.
// The merge itself, from m_at(w, g) / l_at(w, g) / acc_at(w, g, d), the warp w's maximum, sum and
// unnormalized output element d of head g (wherever the kernel keeps them in shared memory);
// called by every thread of the block after a barrier.
template <int D, int G, class MAt, class LAt, class AccAt>
__device__ __forceinline__ void merge_warps_and_store(MAt m_at, LAt l_at, AccAt acc_at, const Args& a, int i, int h0,
                                                      int s, bool direct) {
  for (int t = threadIdx.x; t < G * D; t += kDecodeWarps * 32) {
    const int g = t / D, d = t % D;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) mx = fmaxf(mx, m_at(w, g));
    float lsum = 0.0f, o = 0.0f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int w = 0; w < kDecodeWarps; ++w) {
        const float f = expf(m_at(w, g) - mx);  // an empty warp: m = -inf -> 0
        lsum += l_at(w, g) * f;
        o += acc_at(w, g, d) * f;
      }
    }
    if (direct) {  // block-uniform
      write_result<D>(a, i, h0 + g, d, lsum, o);
      continue;
    }
    float* part = a.ws + (((int64_t)i * a.n_head + h0 + g) * a.n_splits + s) * (D + 2);
    if (d == 0) {
      part[0] = mx;
      part[1] = lsum;
    }
    part[2 + d] = o;
  }
}

// The tensor-core tile forms' online softmax over one tile (attn_decode_mma.cu, attn_decode_i8.cu), in
// the mma C layout: lane (g, t) holds head g's scores sc of keys 2t, 2t + 1, 8 + 2t, 9 + 2t (-inf where
// masked: p = 0 there), a head's maximum and sum over its 4 lanes by two xor-shuffles; m and l are
// updated, p returned, and the O^T fragments c (columns: heads 2t, 2t + 1, whose corrections sit in
// lanes 8t and 8t + 4) rescaled where a correction is not 1. Called by all 32 lanes (a warp vote). ex:
// the exponential of the scores' units (expf, or exp2f on scores scaled by log2 e).
template <int MT, class Ex>
__device__ __forceinline__ void tile_softmax(const float (&sc)[4], float& m, float& l, float (&p)[4], float (&c)[MT][4],
                                             Ex ex) {
  const int t = threadIdx.x & 3;
  float mx = fmaxf(fmaxf(sc[0], sc[1]), fmaxf(sc[2], sc[3]));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  const float m_new = fmaxf(m, mx);  // finite: the tile's key 0 is valid
  const float corr = ex(m - m_new);
  float ps = 0.0f;
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    p[u] = sc[u] == -INFINITY ? 0.0f : ex(sc[u] - m_new);
    ps += p[u];
  }
  ps += __shfl_xor_sync(0xffffffffu, ps, 1);
  ps += __shfl_xor_sync(0xffffffffu, ps, 2);
  l = l * corr + ps;
  m = m_new;
  // Once no head's maximum moves (corr exactly 1 in every lane: most tiles past the first few) the
  // products below are x * 1 = x: skipped, the same bits, 2 shuffles and 8 MT multiplies fewer.
  if (!__any_sync(0xffffffffu, corr != 1.0f)) return;
  const float c0 = __shfl_sync(0xffffffffu, corr, 8 * t), c1 = __shfl_sync(0xffffffffu, corr, 8 * t + 4);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    c[mt][0] *= c0;
    c[mt][1] *= c1;
    c[mt][2] *= c0;
    c[mt][3] *= c1;
  }
}

// The tensor-core tile forms' end (attn_decode_mma.cu, attn_decode_i8.cu): the warp's O^T fragments
// c (m-tile mt, row r: element elem_of(mt, r); lane (g, t) holds rows g, g + 8 of heads 2t, 2t + 1) and
// its heads' maximum and sum (the same in a head's 4 lanes) go to the warp's own shared memory (acc_of(w):
// G x D floats, ml_of(w): the G maxima, then the G sums), then after a block barrier the block's warps
// are merged and stored (merge_warps_and_store).
template <int D, int G, class ElemOf, class AccOf, class MlOf>
__device__ __forceinline__ void tile_merge_and_store(const float (&c)[D / 16][4], float m, float l, ElemOf elem_of,
                                                     AccOf acc_of, MlOf ml_of, const Args& a, int i, int h0, int s,
                                                     bool direct) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float* acc = acc_of(warp);
#pragma unroll
  for (int mt = 0; mt < D / 16; ++mt)
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int hh = 2 * t + (x & 1), d = elem_of(mt, g + 8 * (x >> 1));
      if (hh < G) acc[hh * D + d] = c[mt][x];
    }
  float* ml = ml_of(warp);
  if (t == 0 && g < G) {
    ml[g] = m;
    ml[G + g] = l;
  }
  __syncthreads();
  merge_warps_and_store<D, G>([&](int w, int hh) { return ml_of(w)[hh]; }, [&](int w, int hh) { return ml_of(w)[G + hh]; },
                              [&](int w, int hh, int d) { return acc_of(w)[hh * D + d]; }, a, i, h0, s, direct);
}

template <int D, int G, class PutAcc>
__device__ __forceinline__ void merge_and_store_with(MergeSmem<D, G>& sm, const float (&m)[G], const float (&l)[G],
                                                     PutAcc put_acc, const Args& a, int i, int h0, int s,
                                                     bool direct) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (lane == 0) {
      sm.m[warp][g] = m[g];
      sm.l[warp][g] = l[g];
    }
  }
  put_acc(sm.acc[warp]);
  __syncthreads();
  merge_warps_and_store<D, G>([&](int w, int g) { return sm.m[w][g]; }, [&](int w, int g) { return sm.l[w][g]; },
                              [&](int w, int g, int d) { return sm.acc[w][g][d]; }, a, i, h0, s, direct);
}
template <int D, int G>
__device__ __forceinline__ void merge_and_store(MergeSmem<D, G>& sm, const float (&m)[G], const float (&l)[G],
                                                const float (&acc)[G][D / 32], const Args& a, int i,
                                                int h0, int s, bool direct) {
  constexpr int N = D / 32;
  const int lane = threadIdx.x & 31;
  merge_and_store_with<D, G>(
      sm, m, l,
      [&](float (&w)[G][D]) {
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
          for (int n = 0; n < N; ++n) w[g][lane * N + n] = acc[g][n];
      },
      a, i, h0, s, direct);
}

// Element d of head h of row i merged over the row's `used` split partials in a fixed order, written
// to out (and its q8s block: all 32 lanes of the warp call this for 32 consecutive d of one head).
// The partials' maxima and sums go through shared memory (SM): every split's (m, l) is loaded
// once per block by one thread each, in parallel, instead of by every thread in a chain of
// dependent rounds; the factors f_p = expf(m_p - mx) are then the same expression as before and
// the sums run over p in the same order: same bits (AttnParams::combine_direct is the old form).
struct CombineSmem {
  float m[1024], f[1024], l[1024];
};
// `used` is a callable giving the row's split count (the kernel reads pos before its dependency
// wait); the SM form requests split 0's values (every row has it) before calling it.
template <int D, bool SM, class Used>
__device__ __forceinline__ void combine_element(const Args& a, int i, int h, int d, Used used_of,
                                                CombineSmem* cs) {
  const float* w = a.ws + ((int64_t)i * a.n_head + h) * a.n_splits * (D + 2);
  float mx = -INFINITY;
  float l = 0.0f, o = 0.0f;
  if constexpr (SM) {
    const float o0 = w[2 + d];
    if (d == 0) {
      cs->m[0] = w[0];
      cs->l[0] = w[1];
    }
    const int used = used_of();
    // AttnParams::combine_preload: the element's values of splits 1 .. kPre - 1 requested now, with
    // the maxima and sums, so the sum below waits on one round trip instead of one per 16 splits
    // (the same values summed in the same order: the same bits). 96 covers kernels.attn_max_splits
    // up to 96 (64 before it: the bits of rows with at most 64 splits are unchanged).
    constexpr int kPre = 96;
    float ov[kPre];
    if (a.combine_preload) {
#pragma unroll
      for (int p = 1; p < kPre; ++p) ov[p] = p < used ? w[(int64_t)p * (D + 2) + 2 + d] : 0.0f;
    }
    for (int p = d == 0 ? D : d; p < used; p += D) {
      cs->m[p] = w[(int64_t)p * (D + 2)];
      cs->l[p] = w[(int64_t)p * (D + 2) + 1];
    }
    __syncthreads();
    for (int p = 0; p < used; ++p) mx = fmaxf(mx, cs->m[p]);
    if (mx != -INFINITY) {
      for (int p = d; p < used; p += D) cs->f[p] = expf(cs->m[p] - mx);  // empty split: m = -inf -> 0
    }
    __syncthreads();
    if (mx != -INFINITY) {
      {  // p = 0 from the value requested first: the same terms in the same order
        const float f = cs->f[0];
        l += cs->l[0] * f;
        o += o0 * f;
      }
      int p = 1;
      if (a.combine_preload) {
#pragma unroll
        for (int q = 1; q < kPre; ++q) {
          if (q < used) {
            const float f = cs->f[q];
            l += cs->l[q] * f;
            o += ov[q] * f;
          }
        }
        p = kPre;
      }
#pragma unroll 16
      for (; p < used; ++p) {
        const float f = cs->f[p];
        l += cs->l[p] * f;
        o += w[(int64_t)p * (D + 2) + 2 + d] * f;
      }
    }
  } else {
    const int used = used_of();
#pragma unroll 8
    for (int p = 0; p < used; ++p) mx = fmaxf(mx, w[(int64_t)p * (D + 2)]);
    if (mx != -INFINITY) {
#pragma unroll 8
      for (int p = 0; p < used; ++p) {
        const float* wp = w + (int64_t)p * (D + 2);
        const float f = expf(wp[0] - mx);  // empty split: m = -inf -> 0
        l += wp[1] * f;
        o += wp[2 + d] * f;
      }
    }
  }
  write_result<D>(a, i, h, d, l, o);  // the warp holds elements 32w .. 32w + 31 of head h
}

}  // namespace memra::cuda::attn
