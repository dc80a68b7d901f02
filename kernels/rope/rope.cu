#include <cmath>
#include "common/launch.cuh"

#include "rope/rope_kernels.h"
#include "rope/rope_math.cuh"
#include "kv/kv_quant.cuh"
#include "norm/norm_math.cuh"
#include "norm/q8_1_emit.cuh"

namespace memra::cuda {
namespace {

constexpr float kPi = 3.14159265358979323846f;

float corr_dim(int n_rot, int n_ctx_orig, float n_rotations, float base) {
  return (float)n_rot * logf((float)n_ctx_orig / (n_rotations * 2.0f * kPi)) / (2.0f * logf(base));
}

struct RopeArgs {
  const float* x;
  int64_t ld_x;
  float* out;
  int64_t ld_out;
  int rows, n_head, head_dim, n_rot;
  const int32_t* pos0;
  RopeAngles ang;
};

// One thread per rotated pair; grid-stride over rows * n_head * n_rot/2.
template <bool NEOX>
__global__ void rope_kernel(RopeArgs a) {
  pdl_wait();
  const int half = a.n_rot / 2;
  const int64_t total = (int64_t)a.rows * a.n_head * half;
  const int pos0 = *a.pos0;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total;
       t += (int64_t)gridDim.x * blockDim.x) {
    const int j = (int)(t % half);
    const int64_t hr = t / half;
    const int h = (int)(hr % a.n_head);
    const int64_t r = hr / a.n_head;
    float sn, cs;
    rope_cs(a.ang, j, (float)(pos0 + r), cs, sn);
    const float* hp = a.x + r * a.ld_x + (int64_t)h * a.head_dim;
    float* op = a.out + r * a.ld_out + (int64_t)h * a.head_dim;
    const int i0 = NEOX ? j : 2 * j;
    const int i1 = NEOX ? j + half : 2 * j + 1;
    const float x0 = hp[i0], x1 = hp[i1];
    float y0, y1;
    rope_rotate(x0, x1, cs, sn, y0, y1);
    op[i0] = y0;
    op[i1] = y1;
    if (j == 0 && op != hp)
      for (int d = a.n_rot; d < a.head_dim; ++d) op[d] = hp[d];
  }
}

// q and k heads in one launch, in place: optional per-head RMSNorm (the arithmetic of
// head_rms_norm_kernel) then the rotation of rope_kernel, the head held in registers (lane l owns
// elements l + 32 t). One warp per (row, head), q heads first. N = head_dim / 32; full rotation
// (n_rot == head_dim); NeoX needs N even (pair partner t + N/2 in the same lane), Normal pairs
// (2j, 2j+1) are lanes l and l^1.
// A KV cache side the fused kernel appends to (cache == null: no append).
struct KvOut {
  uint8_t* cache;
  QType t;
  int64_t row_bytes;
  int block_bytes;
  int n_ctx;
  const float* src;  // V only: the rows to append
  int64_t ld_src;
  int scale_plane;  // KvAppendParams::scale_plane
};

// Head `head` of cache row pos from the warp's registers (lane owns elements lane + 32 t), as
// kv_append_blocks_kernel / kv_append_plain_kernel write it.
template <int N>
__device__ __forceinline__ void put_head(const KvOut& c, int64_t pos, int head, int head_dim, const float (&o)[N],
                                         int lane) {
  if (pos < 0 || pos >= c.n_ctx) return;  // uniform across the warp
  uint8_t* row = c.cache + pos * c.row_bytes;
#pragma unroll
  for (int t = 0; t < N; ++t) {
    const int e = head * head_dim + lane + 32 * t;
    if (c.t == QType::F32) {
      reinterpret_cast<float*>(row)[e] = o[t];
    } else if (c.t == QType::F16) {
      reinterpret_cast<__half*>(row)[e] = __float2half_rn(o[t]);
    } else {
      kvq::quantize_block_row(c.t, c.scale_plane, o[t], lane, row, head * head_dim / 32 + t, c.block_bytes);
    }
  }
}

// With kc.cache set the roped K heads also go to the K cache, and n_head_kv more warps per row
// append the V heads (vc.src) to the V cache: the fused kv append (same bytes as
// launch_kv_append_pair after this kernel).
template <bool NEOX, int N>
__global__ void qk_norm_rope_kernel(RopeArgs a, float* k, int64_t ld_k, int n_head_kv, const float* wq,
                                    const float* wk, float eps, KvOut kc, KvOut vc) {
  const int64_t gw = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  const int heads = a.n_head + n_head_kv + (kc.cache ? n_head_kv : 0);
  if (gw >= (int64_t)a.rows * heads) return;
  const int64_t r = gw / heads;
  const int h = (int)(gw % heads);
  const bool is_q = h < a.n_head, is_v = h >= a.n_head + n_head_kv;
  // Before the dependency wait: what no kernel of the step writes. The norm weights, and the
  // rotation's cos/sin, which depend only on the position (staged by the step's copy before its
  // first kernel; the same values as computed after the wait, so the same bits). Their round trip
  // and the powf/sincosf chains overlap the q/k/v matvec's tail instead of following it.
  const float* w = is_q ? wq : wk;
  float wv[N], cs[N], sn[N];
  if (!is_v) {
    head_norm_weights<N>(w, lane, wv);
    head_rope_cs<NEOX, N>(a.ang, lane, (float)(*a.pos0 + r), cs, sn);
  }
  pdl_wait();
  if (is_v) {  // a V head: straight to the cache
    const int hv = h - a.n_head - n_head_kv;
    const float* vp = vc.src + r * vc.ld_src + (int64_t)hv * a.head_dim;
    float v[N];
#pragma unroll
    for (int t = 0; t < N; ++t) v[t] = vp[lane + 32 * t];
    put_head<N>(vc, (int64_t)*a.pos0 + r, hv, a.head_dim, v, lane);
    return;
  }
  float* hp = is_q ? a.out + r * a.ld_out + (int64_t)h * a.head_dim : k + r * ld_k + (int64_t)(h - a.n_head) * a.head_dim;
  float v[N];
#pragma unroll
  for (int t = 0; t < N; ++t) v[t] = hp[lane + 32 * t];
  float o[N];
  norm_rope_head<NEOX, N>(v, w != nullptr, wv, a.head_dim, eps, cs, sn, lane, o);
#pragma unroll
  for (int t = 0; t < N; ++t) hp[lane + 32 * t] = o[t];
  if (!is_q && kc.cache) put_head<N>(kc, (int64_t)*a.pos0 + r, h - a.n_head, a.head_dim, o, lane);
}

}  // namespace

void rope_yarn_corr_dims(int n_rot, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                         float dims[2]);

namespace {
RopeArgs make_args(const RopeParams& p, const float* x, int64_t ld_x) {
  return RopeArgs{x, ld_x, p.out, p.ld_out, p.rows, p.n_head, p.head_dim, p.n_rot, p.pos0, rope_angles(p)};
}
}  // namespace

RopeAngles rope_angles(const RopeParams& p) {
  RopeAngles g;
  g.theta_scale = powf(p.freq_base, -2.0f / (float)p.n_rot);
  g.freq_scale = p.freq_scale;
  g.freq_factors = p.freq_factors;
  g.ext_factor = p.ext_factor;
  g.attn_factor = p.attn_factor;
  if (p.ext_factor != 0.0f) {
    float dims[2];
    rope_yarn_corr_dims(p.n_rot, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow, dims);
    g.corr_lo = dims[0];
    g.corr_hi = dims[1];
  }
  return g;
}

void rope_yarn_corr_dims(int n_rot, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                         float dims[2]) {
  const float start = floorf(corr_dim(n_rot, n_ctx_orig, beta_fast, freq_base));
  const float end = ceilf(corr_dim(n_rot, n_ctx_orig, beta_slow, freq_base));
  dims[0] = fmaxf(0.0f, start);
  dims[1] = fminf((float)(n_rot - 1), end);
}

cudaError_t launch_rope(const RopeParams& p, cudaStream_t s) {
  if (!p.x || !p.out || p.ld_out < (int64_t)p.n_head * p.head_dim || !p.pos0 || p.rows < 0 || p.n_head <= 0 || p.head_dim <= 0 || p.n_rot <= 0 ||
      p.n_rot % 2 || p.n_rot > p.head_dim || p.ld_x < (int64_t)p.n_head * p.head_dim ||
      !(p.freq_base > 0.0f) || !(p.freq_scale > 0.0f))
    return cudaErrorInvalidValue;
  if (p.ext_factor != 0.0f && p.n_ctx_orig <= 0) return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  const RopeArgs a = make_args(p, p.x, p.ld_x);
  const int64_t total = (int64_t)p.rows * p.n_head * (p.n_rot / 2);
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((total + threads - 1) / threads, 65535);
  if (p.kind == RopeKind::Neox) return launch_kernel(rope_kernel<true>, dim3((unsigned)blocks), dim3(threads), 0, s, a);
  return launch_kernel(rope_kernel<false>, dim3((unsigned)blocks), dim3(threads), 0, s, a);
}

bool qk_norm_rope_supported(const RopeParams& p, int head_dim) {
  const int n = head_dim / 32;
  return head_dim % 32 == 0 && (n == 1 || n == 2 || n == 4 || n == 8) && p.n_rot == head_dim &&
         p.head_dim == head_dim && (p.kind != RopeKind::Neox || n % 2 == 0);
}

cudaError_t launch_qk_norm_rope(const QkNormRopeParams& qp, cudaStream_t s) {
  const RopeParams& p = qp.rope;
  if (!qk_norm_rope_supported(p, p.head_dim) || !p.out || !qp.k || !p.pos0 || p.rows < 0 || p.n_head <= 0 ||
      qp.n_head_kv <= 0 || p.ld_out < (int64_t)p.n_head * p.head_dim || qp.ld_k < (int64_t)qp.n_head_kv * p.head_dim ||
      !(p.freq_base > 0.0f) || !(p.freq_scale > 0.0f) || (p.ext_factor != 0.0f && p.n_ctx_orig <= 0))
    return cudaErrorInvalidValue;
  if (p.rows == 0) return cudaSuccess;
  const RopeArgs a = make_args(p, p.out, p.ld_out);
  KvOut kc{}, vc{};
  const bool append = qp.kv_k.cache || qp.kv_v.cache;
  if (append) {
    const int64_t row = (int64_t)qp.n_head_kv * p.head_dim;
    for (int which = 0; which < 2; ++which) {
      const KvAppendParams& c = which ? qp.kv_v : qp.kv_k;
      const auto need = qtype_row_bytes(c.type, (uint64_t)row);
      const auto blk = qtype_row_bytes(c.type, 32);
      if (!kv_type_supported(c.type) || !c.cache || !need || !blk || c.row_bytes < (int64_t)*need ||
          c.row_bytes % 2 || c.row_elems != row || c.n_tokens != p.rows || c.n_ctx <= 0 ||
          !kv_scale_plane_valid(c.type, c.row_elems, c.row_bytes, c.scale_plane))
        return cudaErrorInvalidValue;
      KvOut& o = which ? vc : kc;
      o = {static_cast<uint8_t*>(c.cache), c.type, c.row_bytes, (int)*blk, c.n_ctx, c.src, c.ld_src, c.scale_plane};
    }
    if (!qp.kv_v.src || qp.kv_v.ld_src < row) return cudaErrorInvalidValue;
  }
  const int64_t warps = (int64_t)p.rows * (p.n_head + qp.n_head_kv * (append ? 2 : 1));
  const dim3 grid((unsigned)((warps * 32 + 255) / 256)), block(256);
  const bool neox = p.kind == RopeKind::Neox;
#define MEMRA_QKR(N)                                                                                   \
  case N:                                                                                              \
    return neox ? launch_kernel(qk_norm_rope_kernel<true, N>, grid, block, 0, s, a, qp.k, qp.ld_k,     \
                                qp.n_head_kv, qp.q_norm, qp.k_norm, qp.eps, kc, vc)                    \
                : launch_kernel(qk_norm_rope_kernel<false, N>, grid, block, 0, s, a, qp.k, qp.ld_k,    \
                                qp.n_head_kv, qp.q_norm, qp.k_norm, qp.eps, kc, vc);
  switch (p.head_dim / 32) {
    MEMRA_QKR(1) MEMRA_QKR(2) MEMRA_QKR(4) MEMRA_QKR(8)
    default: return cudaErrorInvalidValue;
  }
#undef MEMRA_QKR
}

}  // namespace memra::cuda
