// kernel-check section "attn": the split-plane int8 decode attention probe (kernels/attn/attn_i8_tile.h,
// bench/notes/attn-i8-tile.md). Each key's K and V head slices are quantized as q8_0 (the project's
// quantize_row: blocks of 32 with an f16 scale), their quants and scales laid out as separate planes.
// Against the f64 reference from the dequantized values; tolerance as the other attention cases
// (normalized error <= 4 * e_naive + 1e-6) with the naive twin of the kernel's class: the query
// quantized per block as the q8 score path (exact integer block sums scaled by d_k * d_q in f32),
// max-subtracted softmax in f32, P rounded to f16 and multiplied by V's block scale into f16, V's
// quants exact, f32 sums. Named as the other decode cases at the same shapes (n1@16383 ...), so
// --perf --filter compares them.
// The cache-row cases (".../rows/...") take the engine's path instead (kv.planes): launch_attn_decode
// over q8_0 split-plane cache rows (each position's quants for all kv heads, then their scales:
// AttnParams::k_scale_plane), the same reference and tolerance, and byte-identical to the probe
// over dense planes of the same values (the same kernel, other strides), with the engine's decode
// switches at their defaults (one-split rows written directly, no combine for rows of <= 128 keys,
// the grid trimmed at round 8) and the q8s planes for the o projection (interleaved for one row)
// byte for byte launch_quantize_q8s of the output. ".../pd2": two tiles in flight per warp
// (AttnParams::planes_stages), the dense-plane side with one: so also the bytes of one in flight.
// ".../tensor": the quant tiles by the copy engine (AttnParams::planes_copy), the dense-plane side by
// cp.async: so also the bytes of the cp.async form.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <tuple>

#include "attn/attn_i8_tile.h"
#include "attn/attn_kernels.h"
#include "case_util.h"
#include "cases_ref.h"
#include "core/half.h"
#include "kv/kv_kernels.h"
#include "matvec/mmvs.h"
#include "matvec/q8s_order.h"
#include "quant/quant.h"

namespace memra::kc {
namespace {

float h16(float x) { return fp16_to_f32(f32_to_fp16(x)); }

class AttnI8TileCase : public Case {
 public:
  AttnI8TileCase(int n_tokens, int pos0, int n_head, int n_head_kv, int max_splits, int bps, bool rows = false, int pd = 1,
                 cuda::PlanesCopy cp = cuda::PlanesCopy::Async)
      : n_(n_tokens), pos0_(pos0), nh_(n_head), nkv_(n_head_kv), max_splits_(max_splits), bps_(bps), rows_(rows), pd_(pd),
        cp_(cp) {}
  void generate(Env& env) override {
    n_ctx_ = pos0_ + n_ + 3;
    const int row = nkv_ * kD;
    const std::vector<float> k = env.normal((size_t)n_ctx_ * row, 1.0f);
    const std::vector<float> v = env.normal((size_t)n_ctx_ * row, 1.0f);
    kq_.resize(k.size());
    vq_.resize(v.size());
    kd_.resize(k.size() / 32);
    vd_.resize(v.size() / 32);
    kf_.resize(k.size());
    vf_.resize(v.size());
    std::vector<uint8_t> blk(34 * 4);
    for (size_t h = 0; h < k.size() / kD; ++h) {  // one (position, kv head) slice at a time
      for (int c = 0; c < 2; ++c) {
        const std::vector<float>& src = c ? v : k;
        std::vector<int8_t>& q = c ? vq_ : kq_;
        std::vector<uint16_t>& d = c ? vd_ : kd_;
        std::vector<float>& f = c ? vf_ : kf_;
        quantize_row(QType::Q8_0, src.data() + h * kD, blk.data(), kD);
        dequantize_row(QType::Q8_0, blk.data(), f.data() + h * kD, kD);
        for (int b = 0; b < kD / 32; ++b) {
          d[h * 4 + b] = (uint16_t)(blk[34 * b] | (blk[34 * b + 1] << 8));
          for (int t = 0; t < 32; ++t) q[h * kD + 32 * b + t] = (int8_t)blk[34 * b + 2 + t];
        }
      }
    }
    q_ = env.normal((size_t)n_ * nh_ * kD, 1.5f);  // sharper than N(0,1): peakier softmax
    pl_.k_quants = env.upload(kq_);
    pl_.v_quants = env.upload(vq_);
    pl_.k_scales = env.upload(kd_);
    pl_.v_scales = env.upload(vd_);
    pl_.n_ctx = n_ctx_;
    if (rows_) {  // the cache rows: position j's quants (nkv * 128 bytes), then its nkv * 4 f16 scales,
                  // then the stride's padding (odd kv head counts), poisoned: never read
      const size_t rb = (size_t)cuda::kv_planes_row_bytes(row);
      std::vector<uint8_t> kr((size_t)n_ctx_ * rb, 0xA5), vr(kr.size(), 0x5A);
      for (int j = 0; j < n_ctx_; ++j)
        for (int c = 0; c < 2; ++c) {
          uint8_t* dst = (c ? vr : kr).data() + (size_t)j * rb;
          const int8_t* q = (c ? vq_ : kq_).data() + (size_t)j * row;
          const uint16_t* d = (c ? vd_ : kd_).data() + (size_t)j * row / 32;
          std::memcpy(dst, q, (size_t)row);
          std::memcpy(dst + row, d, (size_t)row / 16);
        }
      dk_rows_ = env.upload(kr);
      dv_rows_ = env.upload(vr);
      dout_dense_ = env.alloc_output<float>((size_t)n_ * nh_ * kD);
      const size_t nn = (size_t)n_ * nh_ * kD, nq = n_ == 1 ? (size_t)cuda::q8s::il_row_bytes((int64_t)nn) : nn;
      dxq_ = env.alloc_output<int8_t>(nq);
      dxds_ = env.alloc_output<float>(nn / 32 * 2);
      dxq2_ = env.alloc<int8_t>(nq);
      dxds2_ = env.alloc<float>(nn / 32 * 2);
    }
    dq_ = env.upload(q_);
    dpos_ = env.upload(std::vector<int32_t>{pos0_});
    dout_ = env.alloc_output<float>((size_t)n_ * nh_ * kD);
    splits_ = cuda::attn_decode_splits(n_ctx_, nh_, nkv_, env.ctx().info().sm_count, max_splits_, 128, bps_);
    dws_ = env.alloc<float>(cuda::attn_decode_workspace_floats(n_, nh_, kD, splits_));
  }
  cuda::AttnParams params() const {
    cuda::AttnParams p;
    p.q = dq_;
    p.ld_q = (int64_t)nh_ * kD;
    p.out = dout_;
    p.ld_out = p.ld_q;
    p.n_tokens = n_;
    p.n_head = nh_;
    p.n_head_kv = nkv_;
    p.head_dim = kD;
    p.pos0 = dpos_;
    p.scale = 1.0f / std::sqrt((float)kD);
    p.n_splits = splits_;
    p.workspace = dws_;
    p.combine_preload = true;  // the config's default combine
    p.min_split_keys = 128;
    p.planes_stages = pd_;
    p.planes_copy = cp_;
    p.kv_rows = n_ctx_;
    if (rows_) {  // the engine's defaults (CudaBackend::attention_planes)
      p.one_split_direct = true;
      p.rows_one_split = pos0_ + n_ <= 128;
      p.grid_splits = cuda::attn_decode_grid_splits(pos0_ + n_, splits_, 8);
    }
    return p;
  }
  cudaError_t launch(Env& env) override {
    if (!rows_) return cuda::launch_attn_decode_i8_tile(params(), pl_, env.stream());
    cuda::AttnParams p = params();
    const int row = nkv_ * kD;
    p.k_cache = dk_rows_;
    p.v_cache = dv_rows_;
    p.type_k = p.type_v = QType::Q8_0;
    p.k_row_bytes = p.v_row_bytes = cuda::kv_planes_row_bytes(row);
    p.k_scale_plane = p.v_scale_plane = row;
    p.q8s_xq = dxq_;
    p.q8s_xds = dxds_;
    p.q8s_il = n_ == 1;
    return cuda::launch_attn_decode(p, env.stream());
  }
  void reference(Env&) override {
    const int G = nh_ / nkv_, row = nkv_ * kD;
    const float scale = 1.0f / std::sqrt((float)kD);
    ref_.assign((size_t)n_ * nh_ * kD, 0.0);
    naive_.assign(ref_.size(), 0.0f);
    ref_pool().parallel_for((size_t)n_ * nh_, [&](size_t w0, size_t w1) {
      std::vector<double> s64;
      std::vector<float> s32;
      for (size_t w = w0; w < w1; ++w) {
        const int i = (int)(w / (size_t)nh_), h = (int)(w % (size_t)nh_), hk = h / G;
        const int hi = pos0_ + i + 1;
        const float* q = q_.data() + ((size_t)i * nh_ + h) * kD;
        int qi[kD];
        float qd[kD / 32];
        for (int b = 0; b < kD / 32; ++b) {  // the q8 score path's rule
          float amax = 0.0f;
          for (int t = 0; t < 32; ++t) amax = std::max(amax, std::fabs(q[b * 32 + t]));
          const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
          qd[b] = d;
          for (int t = 0; t < 32; ++t) qi[b * 32 + t] = (int)std::nearbyint(q[b * 32 + t] * id);
        }
        s64.assign(hi, 0.0);
        s32.assign(hi, 0.0f);
        double m64 = -INFINITY;
        float m32 = -INFINITY;
        for (int j = 0; j < hi; ++j) {
          const size_t o = (size_t)j * row + (size_t)hk * kD;
          double d64 = 0;
          float d32 = 0;
          for (int d = 0; d < kD; ++d) d64 += (double)q[d] * kf_[o + d];
          for (int b = 0; b < kD / 32; ++b) {
            int isum = 0;
            for (int t = 0; t < 32; ++t) isum += qi[b * 32 + t] * kq_[o + 32 * b + t];
            d32 += (float)isum * (fp16_to_f32(kd_[o / 32 + b]) * qd[b]);
          }
          s64[j] = d64 * scale;
          s32[j] = d32 * scale;
          m64 = std::max(m64, s64[j]);
          m32 = std::max(m32, s32[j]);
        }
        double l64 = 0;
        float l32 = 0;
        double* o64 = ref_.data() + ((size_t)i * nh_ + h) * kD;
        float* o32 = naive_.data() + ((size_t)i * nh_ + h) * kD;
        for (int j = 0; j < hi; ++j) {
          const size_t o = (size_t)j * row + (size_t)hk * kD;
          const double p64 = std::exp(s64[j] - m64);
          const float p32 = std::exp(s32[j] - m32);
          l64 += p64;
          l32 += p32;
          for (int b = 0; b < kD / 32; ++b) {
            const float pd = h16(h16(p32) * fp16_to_f32(vd_[o / 32 + b]));  // f16 p times f16 d, one rounding
            for (int t = 0; t < 32; ++t) {
              const int d = 32 * b + t;
              o64[d] += p64 * vf_[o + d];
              o32[d] += pd * (float)vq_[o + d];
            }
          }
        }
        for (int d = 0; d < kD; ++d) {
          o64[d] /= l64;
          o32[d] /= l32;
        }
      }
    });
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dout_, ref_.size());
    const double e_naive = ref::norm_err(naive_, ref_);
    Verdict v = ref::norm(got, ref_, 4 * e_naive + 1e-6);
    v.detail += ref::cat(" (naive int8 scores + f16 P d_v error ", e_naive, ", splits ", splits_, ")");
    if (!rows_) return v;
    cuda::AttnParams p = params();
    p.out = dout_dense_;
    p.planes_stages = 1;  // the pd2 rows: the bytes of one tile in flight
    p.planes_copy = cuda::PlanesCopy::Async;  // the tensor rows: the bytes of the cp.async copies
    ref::check(cuda::launch_attn_decode_i8_tile(p, pl_, env.stream()), "launch_attn_decode_i8_tile (dense planes)");
    cuda::QuantizeQ8sParams qp;
    qp.x = dout_dense_;
    qp.n = (int64_t)nh_ * kD;
    qp.rows = n_;
    qp.xq = dxq2_;
    qp.xds = dxds2_;
    qp.act_il = n_ == 1;
    ref::check(cuda::launch_quantize_q8s(qp, env.stream()), "launch_quantize_q8s");
    return ref::all_of({{"against the reference", v},
                        {"out and q8s against the dense planes' out, quantized",
                         ref::compare_q8s_emit(env, dout_, dout_dense_, dxq_, dxq2_, dxds_, dxds2_, ref_.size(), n_ == 1)}});
  }
  PerfCount perf_count() const override {
    const double keys = (double)pos0_ + n_;
    return {keys * nkv_ * 2.0 * (kD + 8) + 8.0 * n_ * nh_ * kD, 0.0};
  }

 private:
  static constexpr int kD = 128;
  int n_, pos0_, nh_, nkv_, max_splits_, bps_;
  bool rows_;
  int pd_;
  cuda::PlanesCopy cp_;
  uint8_t *dk_rows_ = nullptr, *dv_rows_ = nullptr;
  float* dout_dense_ = nullptr;
  int8_t *dxq_ = nullptr, *dxq2_ = nullptr;
  float *dxds_ = nullptr, *dxds2_ = nullptr;
  int n_ctx_ = 0, splits_ = 1;
  std::vector<int8_t> kq_, vq_;
  std::vector<uint16_t> kd_, vd_;
  std::vector<float> kf_, vf_, q_, naive_;
  std::vector<double> ref_;
  cuda::AttnI8Planes pl_;
  float *dq_ = nullptr, *dout_ = nullptr, *dws_ = nullptr;
  int32_t* dpos_ = nullptr;
};

void add_attn_i8_cases(Registry& r) {
  // One key, partial tiles and splits (17, 100, 129 keys), several tiles per warp and many splits
  // (1000, 4097, 16384 keys: the depth rows' 66 splits at max_splits 96), a verify batch of 3 rows;
  // at 16384 keys also 64 splits, ~128 (8 blocks per SM aimed at: two waves) and ~33 / ~50 (2 / 3 blocks per
  // SM: longer splits, the blocks' fixed part spread over more tiles).
  for (auto [n, len, ms, bps] :
       {std::tuple<int, int, int, int>{1, 1, 96, 4}, {1, 17, 96, 4}, {1, 100, 96, 4}, {1, 129, 96, 4}, {1, 1000, 96, 4},
        {1, 4097, 96, 4}, {3, 2001, 96, 4}, {1, 16384, 96, 4}, {1, 16384, 64, 4}, {1, 16384, 1024, 8},
        {1, 16384, 96, 2}, {1, 16384, 96, 3}})
    r.add("attn", ref::cat("attn_decode_i8tile/q8_0-planes/32-8x128/n", n, "@", len - 1, "/max_splits", ms,
                           bps != 4 ? ref::cat("/bps", bps) : ""),
          [=] { return std::make_unique<AttnI8TileCase>(n, len - 1, 32, 8, ms, bps); });
  // The engine's route over cache rows (kv.planes), at the shapes of its rows: one key, partial
  // tiles, a verify batch, 4096 and 16384 keys at the default split cap.
  // The same at qwen3-32b's group (8 query heads per kv head: 64 / 8), and at odd kv head counts (rows
  // padded to 16 bytes: kv_planes_row_bytes) with groups of 4 (12 / 3) and 8 (8 / 1).
  for (auto [nh, nkv, n, len] :
       {std::tuple<int, int, int, int>{32, 8, 1, 1}, {32, 8, 1, 129}, {32, 8, 3, 2001}, {32, 8, 1, 4096}, {32, 8, 1, 16384},
        {64, 8, 1, 1}, {64, 8, 1, 129}, {64, 8, 3, 2001}, {64, 8, 1, 16384}, {12, 3, 1, 129}, {12, 3, 3, 4096},
        {8, 1, 1, 2001}})
    r.add("attn", ref::cat("attn_decode_i8tile/q8_0-planes/", nh, "-", nkv, "x128/rows/n", n, "@", len - 1, "/max_splits96"),
          [=] { return std::make_unique<AttnI8TileCase>(n, len - 1, nh, nkv, 96, 4, true); });
  // Two tiles in flight per warp (kernels.attn_planes_stages = 2): out and q8s the bytes of one in flight
  // over the same planes (and within the reference's tolerance), partial and several tiles per warp.
  for (auto [nh, n, len] : {std::tuple<int, int, int>{32, 1, 1}, {32, 1, 129}, {32, 3, 2001}, {32, 1, 4096}, {32, 1, 16384},
                            {64, 1, 16384}})
    r.add("attn", ref::cat("attn_decode_i8tile/q8_0-planes/", nh, "-8x128/rows/n", n, "@", len - 1, "/max_splits96/pd2"),
          [=] { return std::make_unique<AttnI8TileCase>(n, len - 1, nh, 8, 96, 4, true, 2); });
  // The quant tiles by the copy engine (kernels.attn_planes_copy = tensor): out and q8s the bytes of the
  // cp.async copies over the same planes (and within the reference's tolerance), at the cache-row cases' shapes
  // (the last tiles' boxes past the cache's last row: the tensor copies' zero rows).
  for (auto [nh, nkv, n, len] :
       {std::tuple<int, int, int, int>{32, 8, 1, 1}, {32, 8, 1, 17}, {32, 8, 1, 129}, {32, 8, 3, 2001}, {32, 8, 1, 4096},
        {32, 8, 1, 16384}, {64, 8, 1, 129}, {64, 8, 3, 2001}, {64, 8, 1, 16384}, {12, 3, 3, 4096}, {8, 1, 1, 2001}})
    r.add("attn", ref::cat("attn_decode_i8tile/q8_0-planes/", nh, "-", nkv, "x128/rows/n", n, "@", len - 1, "/max_splits96/tensor"),
          [=] { return std::make_unique<AttnI8TileCase>(n, len - 1, nh, nkv, 96, 4, true, 1, cuda::PlanesCopy::TensorTiles); });
}
MEMRA_KC_REGISTER(add_attn_i8_cases);

}  // namespace
}  // namespace memra::kc
