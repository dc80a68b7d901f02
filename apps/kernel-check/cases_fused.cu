// Section "fused": byte identity of the fused decode launches against the unfused chains they
// replace (the unfused kernels are themselves gated against the CPU in their own sections):
//   qk_norm_rope      == head_rms_norm(q), head_rms_norm(k), rope(q), rope(k)
//   kv_append_pair    == kv_append(K), kv_append(V)
//   qk_norm_rope_kv   == qk_norm_rope, kv_append_pair (the append fused into the rotation kernel)
//   attn_decode_rope  == qk_norm_rope_kv, then the split decode attention (AttnParams::rope: the
//                        norm, rotation and append done by the attention kernel)
// Inputs are fresh random values; the fused outputs are poisoned before each launch.
#include <memory>

#include "attn/attn_i8_tile.h"
#include "attn/attn_kernels.h"
#include "case_util.h"
#include "cases_ref.h"
#include "kv/kv_kernels.h"
#include "norm/norm_kernels.h"
#include "quant/quant.h"
#include "rope/rope_kernels.h"

namespace memra::kc {
namespace {

// One cache side of an append of n_tokens dense rows of row_elems floats.
cuda::KvAppendParams kv_side(const float* src, int n_tokens, int row_elems, void* cache, QType t, int64_t row_bytes,
                             const int32_t* pos0, int n_ctx) {
  cuda::KvAppendParams p;
  p.src = src;
  p.ld_src = row_elems;
  p.n_tokens = n_tokens;
  p.row_elems = row_elems;
  p.cache = cache;
  p.type = t;
  p.row_bytes = row_bytes;
  p.pos0 = pos0;
  p.n_ctx = n_ctx;
  return p;
}

// In-place rotation of rows x n_head heads of head_dim at *pos (full rotation, freq_base 1e6;
// yarn: a YaRN context extension).
cuda::RopeParams rope_in_place(float* x, int rows, int n_head, int head_dim, cuda::RopeKind kind, const int32_t* pos,
                               bool yarn) {
  cuda::RopeParams p;
  p.x = p.out = x;
  p.ld_x = p.ld_out = (int64_t)n_head * head_dim;
  p.rows = rows;
  p.n_head = n_head;
  p.head_dim = p.n_rot = head_dim;
  p.kind = kind;
  p.pos0 = pos;
  p.freq_base = 1e6f;
  if (yarn) {
    p.freq_scale = 0.25f;
    p.ext_factor = 1.0f;
    p.n_ctx_orig = 4096;
  }
  return p;
}

struct QkCfg {
  cuda::RopeKind kind;
  int rows, n_head, n_kv, head_dim, pos0;
  bool norm, yarn;
};

class QkNormRopeCase : public Case {
 public:
  explicit QkNormRopeCase(QkCfg c) : c_(c) {}
  void generate(Env& env) override {
    const size_t nq = (size_t)c_.rows * c_.n_head * c_.head_dim, nk = (size_t)c_.rows * c_.n_kv * c_.head_dim;
    const auto q = env.normal(nq, 2.0f), k = env.normal(nk, 2.0f);
    dq_ = env.upload(q);
    dk_ = env.upload(k);
    dq2_ = env.upload(q);
    dk2_ = env.upload(k);
    wq_ = env.upload(env.normal((size_t)c_.head_dim, 0.3f, 1.0f));
    wk_ = env.upload(env.normal((size_t)c_.head_dim, 0.3f, 1.0f));
    dpos_ = env.upload(std::vector<int32_t>{c_.pos0});
    nq_ = nq;
    nk_ = nk;
  }
  cuda::RopeParams rope(float* x, int n_head) const {
    return rope_in_place(x, c_.rows, n_head, c_.head_dim, c_.kind, dpos_, c_.yarn);
  }
  cudaError_t launch(Env& env) override {
    // In place on q and k (a --perf replay keeps rotating them: only the first launch is compared).
    cuda::QkNormRopeParams p;
    p.rope = rope(dq_, c_.n_head);
    p.k = dk_;
    p.ld_k = (int64_t)c_.n_kv * c_.head_dim;
    p.n_head_kv = c_.n_kv;
    p.q_norm = c_.norm ? wq_ : nullptr;
    p.k_norm = c_.norm ? wk_ : nullptr;
    p.eps = 1e-6f;
    return cuda::launch_qk_norm_rope(p, env.stream());
  }
  void reference(Env& env) override {
    if (c_.norm) {
      for (int which = 0; which < 2; ++which) {
        cuda::HeadRmsNormParams h;
        h.x = which ? dk2_ : dq2_;
        h.out = which ? dk2_ : dq2_;
        h.n_head = which ? c_.n_kv : c_.n_head;
        h.ld_x = h.ld_out = (int64_t)h.n_head * c_.head_dim;
        h.w = which ? wk_ : wq_;
        h.rows = c_.rows;
        h.head_dim = c_.head_dim;
        h.eps = 1e-6f;
        ref::check(cuda::launch_head_rms_norm(h, env.stream()), "launch_head_rms_norm");
      }
    }
    ref::check(cuda::launch_rope(rope(dq2_, c_.n_head), env.stream()), "launch_rope (q)");
    ref::check(cuda::launch_rope(rope(dk2_, c_.n_kv), env.stream()), "launch_rope (k)");
  }
  Verdict compare(Env& env) override {
    const auto q1 = env.download(dq_, nq_), q2 = env.download(dq2_, nq_);
    const auto k1 = env.download(dk_, nk_), k2 = env.download(dk2_, nk_);
    return ref::all_of({{"q", compare_bytes(q1.data(), q2.data(), nq_ * 4)},
                        {"k", compare_bytes(k1.data(), k2.data(), nk_ * 4)}});
  }

 protected:
  QkCfg c_;
  float *dq_ = nullptr, *dk_ = nullptr, *dq2_ = nullptr, *dk2_ = nullptr, *wq_ = nullptr, *wk_ = nullptr;
  int32_t* dpos_ = nullptr;
  size_t nq_ = 0, nk_ = 0;
};

// The fused kernel also appending K (after the rotation) and V to the caches (QkNormRopeParams
// kv_k / kv_v) against qk_norm_rope followed by launch_kv_append_pair: q, k and both whole caches
// byte-identical (the reference caches start as the poison pattern the fused ones get).
class QkNormRopeKvCase : public QkNormRopeCase {
 public:
  // planes: both caches q8_0 split-plane rows (kv.planes) on both sides.
  QkNormRopeKvCase(QkCfg c, QType tk, QType tv, bool planes = false)
      : QkNormRopeCase(c), tk_(tk), tv_(tv), planes_(planes) {}
  void generate(Env& env) override {
    QkNormRopeCase::generate(env);
    row_ = c_.n_kv * c_.head_dim;
    ctx_ = c_.pos0 + c_.rows + 5;
    dv_ = env.upload(env.normal((size_t)c_.rows * row_, 1.5f));
    rbk_ = (int64_t)*qtype_row_bytes(tk_, row_);
    rbv_ = (int64_t)*qtype_row_bytes(tv_, row_);
    ck_ = env.alloc_output<uint8_t>((size_t)(rbk_ * ctx_));
    cv_ = env.alloc_output<uint8_t>((size_t)(rbv_ * ctx_));
    ck2_ = env.upload(std::vector<uint8_t>((size_t)(rbk_ * ctx_), 0xFF));
    cv2_ = env.upload(std::vector<uint8_t>((size_t)(rbv_ * ctx_), 0xFF));
  }
  cuda::KvAppendParams side(const float* src, void* cache, QType t, int64_t rb) const {
    cuda::KvAppendParams p = kv_side(src, c_.rows, row_, cache, t, rb, dpos_, ctx_);
    p.scale_plane = planes_ ? row_ : 0;
    return p;
  }
  cudaError_t launch(Env& env) override {
    cuda::QkNormRopeParams p;
    p.rope = rope(dq_, c_.n_head);
    p.k = dk_;
    p.ld_k = row_;
    p.n_head_kv = c_.n_kv;
    p.q_norm = c_.norm ? wq_ : nullptr;
    p.k_norm = c_.norm ? wk_ : nullptr;
    p.eps = 1e-6f;
    p.kv_k = side(nullptr, ck_, tk_, rbk_);
    p.kv_v = side(dv_, cv_, tv_, rbv_);
    return cuda::launch_qk_norm_rope(p, env.stream());
  }
  void reference(Env& env) override {
    QkNormRopeCase::reference(env);
    ref::check(cuda::launch_kv_append_pair(side(dk2_, ck2_, tk_, rbk_), side(dv_, cv2_, tv_, rbv_), env.stream()),
               "launch_kv_append_pair");
  }
  Verdict compare(Env& env) override {
    const auto a = env.download(ck_, (size_t)(rbk_ * ctx_)), b = env.download(ck2_, (size_t)(rbk_ * ctx_));
    const auto c = env.download(cv_, (size_t)(rbv_ * ctx_)), d = env.download(cv2_, (size_t)(rbv_ * ctx_));
    return ref::all_of({{"q and k", QkNormRopeCase::compare(env)},
                        {"K cache", compare_bytes(a.data(), b.data(), a.size())},
                        {"V cache", compare_bytes(c.data(), d.data(), c.size())}});
  }

 private:
  QType tk_, tv_;
  bool planes_;
  int row_ = 0, ctx_ = 0;
  int64_t rbk_ = 0, rbv_ = 0;
  float* dv_ = nullptr;
  uint8_t *ck_ = nullptr, *cv_ = nullptr, *ck2_ = nullptr, *cv2_ = nullptr;
};

class KvPairCase : public Case {
 public:
  KvPairCase(QType tk, QType tv, int n_tokens, int row, bool planes = false)
      : tk_(tk), tv_(tv), n_(n_tokens), row_(row), planes_(planes) {}
  void generate(Env& env) override {
    ctx_ = 37 + n_;
    dk_ = env.upload(env.normal((size_t)n_ * row_, 1.5f));
    dv_ = env.upload(env.normal((size_t)n_ * row_, 1.5f));
    rbk_ = ((int64_t)*qtype_row_bytes(tk_, row_) + 1) & ~int64_t{1};
    rbv_ = ((int64_t)*qtype_row_bytes(tv_, row_) + 1) & ~int64_t{1};
    ck_ = env.alloc_output<uint8_t>((size_t)(rbk_ * ctx_));
    cv_ = env.alloc_output<uint8_t>((size_t)(rbv_ * ctx_));
    ck2_ = env.alloc_output<uint8_t>((size_t)(rbk_ * ctx_));
    cv2_ = env.alloc_output<uint8_t>((size_t)(rbv_ * ctx_));
    dpos_ = env.upload(std::vector<int32_t>{31});
  }
  cuda::KvAppendParams side(const float* src, void* cache, QType t, int64_t rb) const {
    cuda::KvAppendParams p = kv_side(src, n_, row_, cache, t, rb, dpos_, ctx_);
    p.scale_plane = planes_ ? row_ : 0;
    return p;
  }
  cudaError_t launch(Env& env) override {
    cudaError_t e = cuda::launch_kv_append_pair(side(dk_, ck_, tk_, rbk_), side(dv_, cv_, tv_, rbv_), env.stream());
    if (e != cudaSuccess) return e;
    e = cuda::launch_kv_append(side(dk_, ck2_, tk_, rbk_), env.stream());
    return e != cudaSuccess ? e : cuda::launch_kv_append(side(dv_, cv2_, tv_, rbv_), env.stream());
  }
  void reference(Env&) override {}
  Verdict compare(Env& env) override {
    // Rows outside [31, 31 + n) were poisoned identically in both caches: the whole caches match.
    const auto a = env.download(ck_, (size_t)(rbk_ * ctx_)), b = env.download(ck2_, (size_t)(rbk_ * ctx_));
    const auto c = env.download(cv_, (size_t)(rbv_ * ctx_)), d = env.download(cv2_, (size_t)(rbv_ * ctx_));
    return ref::all_of({{"K cache", compare_bytes(a.data(), b.data(), a.size())},
                        {"V cache", compare_bytes(c.data(), d.data(), c.size())}});
  }

 private:
  QType tk_, tv_;
  int n_, row_;
  bool planes_;
  int ctx_ = 0;
  int64_t rbk_ = 0, rbv_ = 0;
  float *dk_ = nullptr, *dv_ = nullptr;
  uint8_t *ck_ = nullptr, *cv_ = nullptr, *ck2_ = nullptr, *cv2_ = nullptr;
  int32_t* dpos_ = nullptr;
};

// The decode attention with the q/k norm + RoPE + K/V append folded in (AttnParams::rope) against
// launch_qk_norm_rope with the append followed by the plain decode attention: the attention
// output, its q8s planes and both whole caches byte-identical. The caches start with the same
// random rows (the row at pos is replaced by both paths); int8 scores with V staged (the path the
// fold exists for), one token.
struct FoldCfg {
  cuda::RopeKind kind;
  int n_head, n_kv, len;  // pos = len - 1
  bool norm, yarn;
  int window = 0;
  bool pv = false;  // AttnParams::pv_mma on both sides
  bool pre = false;  // AttnParams::RopeFold::prefetch (the folded side only)
  bool ks = false;   // AttnParams::RopeFold::stage_k (the folded side only)
  int max_splits = 64;  // attn_decode_splits' cap on both sides (kernels.attn_max_splits)
  int hs = 0;           // AttnParams::RopeFold::head_split (the folded side only): query heads per block
  bool direct = false;  // AttnParams::one_split_direct (the folded side only)
  bool si = false;      // AttnParams::RopeFold::softmax_interleave (the folded side only)
  bool ms = false;      // AttnParams::RopeFold::mma_scores (the folded side only)
  int grid_round = 0;   // AttnParams::grid_splits at attn_decode_grid_splits(len, n_splits, this) (the folded side only)
  int extra_ctx = 0;    // cache rows past len + 3 (more splits than the row uses)
  bool planes = false;  // both sides on q8_0 K and V split-plane rows (kv.planes: the int8 tile form's fold)
  int pd = 1;           // AttnParams::planes_stages (the folded side only)
  cuda::PlanesCopy cp = cuda::PlanesCopy::Async;  // AttnParams::planes_copy (the folded side only)
  bool lf = false;      // AttnParams::RopeFold::loads_first (the folded side only)
};
class AttnRopeFoldCase : public Case {
 public:
  static constexpr int kD = 128;
  explicit AttnRopeFoldCase(FoldCfg c) : c_(c) {}
  void generate(Env& env) override {
    pos_ = c_.len - 1;
    ctx_ = c_.len + 3 + c_.extra_ctx;
    row_ = c_.n_kv * kD;
    nq_ = (size_t)c_.n_head * kD;
    tv_ = c_.planes ? QType::Q8_0 : QType::Q5_1;
    rbk_ = c_.planes ? cuda::kv_planes_row_bytes(row_) : (int64_t)*qtype_row_bytes(QType::Q8_0, row_);
    rbv_ = c_.planes ? rbk_ : (int64_t)*qtype_row_bytes(tv_, row_);
    const auto kf = env.normal((size_t)ctx_ * row_, 1.0f), vf = env.normal((size_t)ctx_ * row_, 1.0f);
    std::vector<uint8_t> kc((size_t)(ctx_ * rbk_)), vc((size_t)(ctx_ * rbv_)), blk((size_t)rbk_);
    for (int j = 0; j < ctx_; ++j) {
      quantize_row(QType::Q8_0, kf.data() + (size_t)j * row_, kc.data() + (size_t)j * rbk_, row_);
      quantize_row(tv_, vf.data() + (size_t)j * row_, vc.data() + (size_t)j * rbv_, row_);
      if (c_.planes)
        for (std::vector<uint8_t>* c : {&kc, &vc}) {
          std::copy(c->begin() + (size_t)j * rbk_, c->begin() + (size_t)(j + 1) * rbk_, blk.begin());
          q8_0_blocks_to_planes(blk.data(), row_, c->data() + (size_t)j * rbk_);
        }
    }
    ck_ = env.upload(kc);
    cv_ = env.upload(vc);
    ck2_ = env.upload(kc);
    cv2_ = env.upload(vc);
    const auto q = env.normal(nq_, 2.0f), k = env.normal((size_t)row_, 2.0f);
    dq_ = env.upload(q);
    dk_ = env.upload(k);
    dq2_ = env.upload(q);
    dk2_ = env.upload(k);
    dv_ = env.upload(env.normal((size_t)row_, 1.5f));
    wq_ = env.upload(env.normal((size_t)kD, 0.3f, 1.0f));
    wk_ = env.upload(env.normal((size_t)kD, 0.3f, 1.0f));
    dpos_ = env.upload(std::vector<int32_t>{pos_});
    splits_ = cuda::attn_decode_splits(ctx_, c_.n_head, c_.n_kv, env.ctx().info().sm_count, c_.max_splits);
    const size_t ws = cuda::attn_decode_workspace_floats(1, c_.n_head, kD, splits_);
    dws_ = env.alloc<float>(ws);
    dws2_ = env.alloc<float>(ws);
    dout_ = env.alloc_output<float>(nq_);
    dxq_ = env.alloc_output<int8_t>(nq_);
    dxds_ = env.alloc_output<float>(nq_ / 16);
    dout2_ = env.alloc<float>(nq_);
    dxq2_ = env.alloc<int8_t>(nq_);
    dxds2_ = env.alloc<float>(nq_ / 16);
  }
  cuda::RopeParams rope(float* x, int n_head) const { return rope_in_place(x, 1, n_head, kD, c_.kind, dpos_, c_.yarn); }
  cuda::AttnParams attn(const float* q, uint8_t* k, uint8_t* v, float* ws, float* out, int8_t* xq, float* xds) const {
    cuda::AttnParams p;
    p.q = q;
    p.ld_q = (int64_t)nq_;
    p.k_cache = k;
    p.type_k = QType::Q8_0;
    p.k_row_bytes = rbk_;
    p.v_cache = v;
    p.type_v = tv_;
    p.v_row_bytes = rbv_;
    p.k_scale_plane = p.v_scale_plane = c_.planes ? row_ : 0;
    p.out = out;
    p.ld_out = (int64_t)nq_;
    p.n_tokens = 1;
    p.n_head = c_.n_head;
    p.n_head_kv = c_.n_kv;
    p.head_dim = kD;
    p.pos0 = dpos_;
    p.scale = 1.0f / std::sqrt((float)kD);
    p.window = c_.window;
    p.n_splits = splits_;
    p.workspace = ws;
    p.q8s_xq = xq;
    p.q8s_xds = xds;
    p.q8_scores = true;
    p.v_stage = true;
    p.pv_mma = c_.pv;
    return p;
  }
  cuda::AttnParams folded() const {
    cuda::AttnParams p = attn(dq_, ck_, cv_, dws_, dout_, dxq_, dxds_);
    p.rope.on = true;
    p.rope.k_src = dk_;
    p.rope.v_src = dv_;
    p.rope.q_norm = c_.norm ? wq_ : nullptr;
    p.rope.k_norm = c_.norm ? wk_ : nullptr;
    p.rope.eps = 1e-6f;
    p.rope.neox = c_.kind == cuda::RopeKind::Neox;
    p.rope.ang = cuda::rope_angles(rope(dq_, c_.n_head));
    p.rope.prefetch = c_.pre;
    p.rope.stage_k = c_.ks;
    p.rope.head_split = c_.hs;
    p.rope.loads_first = c_.lf;
    p.rope.softmax_interleave = c_.si;
    p.rope.mma_scores = c_.ms;
    p.one_split_direct = c_.direct;
    p.planes_stages = c_.pd;
    p.planes_copy = c_.cp;
    p.kv_rows = ctx_;
    if (c_.grid_round > 0) p.grid_splits = cuda::attn_decode_grid_splits(c_.len, p.n_splits, c_.grid_round);
    return p;
  }
  // q and k are only read: a --perf replay repeats the same work (the same bytes to row pos).
  cudaError_t launch(Env& env) override { return cuda::launch_attn_decode(folded(), env.stream()); }
  void reference(Env& env) override {
    cuda::QkNormRopeParams p;
    p.rope = rope(dq2_, c_.n_head);
    p.k = dk2_;
    p.ld_k = row_;
    p.n_head_kv = c_.n_kv;
    p.q_norm = c_.norm ? wq_ : nullptr;
    p.k_norm = c_.norm ? wk_ : nullptr;
    p.eps = 1e-6f;
    p.kv_k = kv_side(nullptr, 1, row_, ck2_, QType::Q8_0, rbk_, dpos_, ctx_);
    p.kv_v = kv_side(dv_, 1, row_, cv2_, tv_, rbv_, dpos_, ctx_);
    p.kv_k.scale_plane = p.kv_v.scale_plane = c_.planes ? row_ : 0;
    ref::check(cuda::launch_qk_norm_rope(p, env.stream()), "launch_qk_norm_rope (+kv append)");
    ref::check(cuda::launch_attn_decode(attn(dq2_, ck2_, cv2_, dws2_, dout2_, dxq2_, dxds2_), env.stream()),
               "launch_attn_decode (unfolded)");
  }
  Verdict compare(Env& env) override {
    const auto a = env.download(ck_, (size_t)(rbk_ * ctx_)), b = env.download(ck2_, (size_t)(rbk_ * ctx_));
    const auto c = env.download(cv_, (size_t)(rbv_ * ctx_)), d = env.download(cv2_, (size_t)(rbv_ * ctx_));
    Verdict v = ref::all_of({{"attention", ref::compare_q8s_emit(env, dout_, dout2_, dxq_, dxq2_, dxds_, dxds2_, nq_)},
                             {"K cache", compare_bytes(a.data(), b.data(), a.size())},
                             {"V cache", compare_bytes(c.data(), d.data(), c.size())}});
    if (c_.pv && !cuda::attn_decode_pv_mma(folded())) {
      v.pass = false;
      v.detail += " (the tensor-core P x V path was not taken)";
    }
    if (c_.ms && !cuda::attn_decode_mma_scores(folded())) {
      v.pass = false;
      v.detail += " (the tensor-core scores were not taken)";
    }
    if (c_.hs && !cuda::attn_decode_head_split(folded())) {
      v.pass = false;
      v.detail += " (the head-split form was not taken)";
    }
    if (c_.planes ? !cuda::attn_decode_planes_fold_applies(folded()) : !cuda::attn_decode_rope_fold_applies(folded())) {
      v.pass = false;
      v.detail += " (the fold does not apply to this configuration)";
    }
    return v;
  }

 private:
  FoldCfg c_;
  QType tv_ = QType::Q5_1;
  int pos_ = 0, ctx_ = 0, row_ = 0, splits_ = 1;
  size_t nq_ = 0;
  int64_t rbk_ = 0, rbv_ = 0;
  uint8_t *ck_ = nullptr, *cv_ = nullptr, *ck2_ = nullptr, *cv2_ = nullptr;
  float *dq_ = nullptr, *dk_ = nullptr, *dq2_ = nullptr, *dk2_ = nullptr, *dv_ = nullptr, *wq_ = nullptr,
        *wk_ = nullptr;
  float *dws_ = nullptr, *dws2_ = nullptr, *dout_ = nullptr, *dout2_ = nullptr, *dxds_ = nullptr, *dxds2_ = nullptr;
  int8_t *dxq_ = nullptr, *dxq2_ = nullptr;
  int32_t* dpos_ = nullptr;
};

void add_fused_cases(Registry& r) {
  using K = cuda::RopeKind;
  for (const QkCfg c : {QkCfg{K::Neox, 1, 32, 8, 128, 4100, true, false}, QkCfg{K::Neox, 3, 32, 8, 128, 77, true, false},
                        QkCfg{K::Normal, 1, 32, 8, 128, 4100, false, false}, QkCfg{K::Normal, 5, 9, 3, 64, 5, true, false},
                        QkCfg{K::Neox, 2, 16, 4, 256, 1000, true, true}, QkCfg{K::Normal, 1, 4, 2, 32, 12, false, true},
                        QkCfg{K::Neox, 1, 40, 8, 64, 300, false, false}})
    r.add("fused", ref::cat("qk_norm_rope/", c.kind == K::Neox ? "neox" : "normal", c.norm ? "_norm" : "",
                            c.yarn ? "_yarn" : "", "/", c.n_head, "-", c.n_kv, "x", c.head_dim, "/n", c.rows, "@", c.pos0,
                            "/vs_unfused_bytes"),
          [=] { return std::make_unique<QkNormRopeCase>(c); });
  for (const QkCfg c : {QkCfg{K::Neox, 1, 32, 8, 128, 4100, true, false}, QkCfg{K::Neox, 3, 32, 8, 128, 77, true, false},
                        QkCfg{K::Normal, 5, 9, 3, 64, 5, true, false}, QkCfg{K::Neox, 2, 16, 4, 256, 1000, true, true},
                        QkCfg{K::Normal, 1, 4, 2, 32, 12, false, true}})
    for (auto [tk, tv] : {std::pair{QType::Q8_0, QType::Q5_1}, std::pair{QType::F16, QType::F16},
                          std::pair{QType::Q4_0, QType::Q4_1}, std::pair{QType::F32, QType::Q5_0}})
      r.add("fused", ref::cat("qk_norm_rope_kv/", c.kind == K::Neox ? "neox" : "normal", c.norm ? "_norm" : "",
                              c.yarn ? "_yarn" : "", "/", qtype_name(tk), "-", qtype_name(tv), "/", c.n_head, "-", c.n_kv,
                              "x", c.head_dim, "/n", c.rows, "@", c.pos0, "/vs_norm_rope_then_append_bytes"),
            [=] { return std::make_unique<QkNormRopeKvCase>(c, tk, tv); });
  for (auto [tk, tv] : {std::pair{QType::Q8_0, QType::Q5_1}, std::pair{QType::Q8_0, QType::Q8_0}, std::pair{QType::Q4_0, QType::Q5_1}})
    for (int n : {1, 4})
      r.add("fused", ref::cat("kv_append_pair/", qtype_name(tk), "-", qtype_name(tv), "/n", n, "x1024/vs_two_launches_bytes"),
            [=] { return std::make_unique<KvPairCase>(tk, tv, n, 1024); });
  // The q8_0 split-plane rows (kv.planes): the fused append and the pair launch against the plain
  // appends of the same layout (kernel-check kv's kv_append/q8_0/planes/* ties those to quantize_row).
  for (int n : {1, 4})
    r.add("fused", ref::cat("kv_append_pair/q8_0-q8_0/planes/n", n, "x1024/vs_two_launches_bytes"),
          [=] { return std::make_unique<KvPairCase>(QType::Q8_0, QType::Q8_0, n, 1024, true); });
  for (const QkCfg c : {QkCfg{K::Neox, 1, 32, 8, 128, 4100, true, false}, QkCfg{K::Neox, 3, 32, 8, 128, 77, true, false}})
    r.add("fused", ref::cat("qk_norm_rope_kv/neox_norm/q8_0-q8_0/planes/32-8x128/n", c.rows, "@", c.pos0,
                            "/vs_norm_rope_then_append_bytes"),
          [=] { return std::make_unique<QkNormRopeKvCase>(c, QType::Q8_0, QType::Q8_0, true); });
  // The RoPE fold: one split (1, 17, 128 keys), the first two-split row (129: the new key opens
  // nothing, it ends the second split), several tiles and splits (4097, 16384), G = 4 and 8, both
  // pair layouts, with and without the head norms, YaRN, a sliding window.
  const auto add_fold = [&r](const FoldCfg& c) {
    // reduced builds: G = 4 only (but for the int8 tile form's fold, whose instances are all built)
    if (!c.planes && c.n_head / c.n_kv != 4 && !cuda::attn_head_dim_supported(64)) return;
    r.add("fused", ref::cat("attn_decode_rope/", c.kind == K::Neox ? "neox" : "normal", c.norm ? "_norm" : "",
                            c.yarn ? "_yarn" : "", c.window ? ref::cat("_win", c.window) : "", c.pv ? "_pv16" : "", c.pre ? "_pre" : "", c.ks ? "_ks" : "", c.hs == 1 ? "_hs" : c.hs == 2 ? "_hs2" : "", c.direct ? "_direct1" : "", c.si ? "_si" : "", c.ms ? "_tcs" : "", c.pd == 2 ? "_pd2" : "", c.cp == cuda::PlanesCopy::TensorTiles ? "_tensor" : "", c.lf ? "_lf" : "",
                            c.max_splits != 64 ? ref::cat("_ms", c.max_splits) : "",
                            c.grid_round ? ref::cat("_grid", c.grid_round, "_ctx", c.len + 3 + c.extra_ctx) : "",
                            c.planes ? "/q8_0-q8_0-planes/" : "/q8_0-q5_1/", c.n_head, "-",
                            c.n_kv, "x128/n1@", c.len - 1, "/vs_qk_norm_rope_kv_then_attn_bytes"),
          [=] { return std::make_unique<AttnRopeFoldCase>(c); });
  };
  const FoldCfg folds[] = {FoldCfg{K::Neox, 32, 8, 1, true, false}, FoldCfg{K::Neox, 32, 8, 17, true, false},
                          FoldCfg{K::Neox, 32, 8, 128, true, false}, FoldCfg{K::Neox, 32, 8, 129, true, false},
                          FoldCfg{K::Neox, 32, 8, 4097, true, false}, FoldCfg{K::Neox, 32, 8, 16384, true, false},
                          FoldCfg{K::Normal, 32, 8, 4097, false, false}, FoldCfg{K::Normal, 32, 8, 33, true, true},
                          FoldCfg{K::Neox, 64, 8, 4097, true, false}, FoldCfg{K::Neox, 64, 8, 300, false, true},
                          FoldCfg{K::Neox, 32, 8, 4097, true, false, 1000},
                          // with P x V on tensor cores (AttnParams::pv_mma) on both sides
                          FoldCfg{K::Neox, 32, 8, 1, true, false, 0, true}, FoldCfg{K::Neox, 32, 8, 129, true, false, 0, true},
                          FoldCfg{K::Neox, 32, 8, 16384, true, false, 0, true}, FoldCfg{K::Normal, 32, 8, 33, true, true, 0, true},
                          FoldCfg{K::Neox, 64, 8, 4097, true, false, 0, true},
                          // with the first tile requested before the wait (RopeFold::prefetch): one
                          // and several tiles per warp, partial first tiles, G = 4 and 8, a window
                          FoldCfg{K::Neox, 32, 8, 1, true, false, 0, true, true},
                          FoldCfg{K::Neox, 32, 8, 17, true, false, 0, true, true},
                          FoldCfg{K::Neox, 32, 8, 129, true, false, 0, true, true},
                          FoldCfg{K::Neox, 32, 8, 16384, true, false, 0, true, true},
                          FoldCfg{K::Normal, 32, 8, 4097, false, false, 0, true, true},
                          FoldCfg{K::Neox, 64, 8, 4097, true, false, 0, true, true},  // G = 8: no prefetch form, the same bytes
                          FoldCfg{K::Neox, 32, 8, 4097, true, false, 1000, true, true},
                          // and every later tile's K staged too (RopeFold::stage_k): two splits, a
                          // partial second tile (4097: 129 keys per split), two and four tiles per
                          // warp (16384, 30001), Normal pairs, a window, G = 8 (no prefetch form)
                          FoldCfg{K::Neox, 32, 8, 129, true, false, 0, true, true, true},
                          FoldCfg{K::Neox, 32, 8, 4097, true, false, 0, true, true, true},
                          FoldCfg{K::Neox, 32, 8, 16384, true, false, 0, true, true, true},
                          FoldCfg{K::Neox, 32, 8, 30001, true, false, 0, true, true, true},
                          FoldCfg{K::Normal, 32, 8, 16384, false, false, 0, true, true, true},
                          FoldCfg{K::Neox, 32, 8, 16384, true, false, 3000, true, true, true},
                          FoldCfg{K::Neox, 64, 8, 16384, true, false, 0, true, true, true},
                          // past 64 splits (kernels.attn_max_splits 96: 66 splits at 8 kv heads
                          // on the H200), the depths where 64 left warp 0 a third tile
                          FoldCfg{K::Neox, 32, 8, 16513, true, false, 0, true, true, true, 96},
                          FoldCfg{K::Neox, 32, 8, 16897, true, false, 0, true, true, true, 96},
                          FoldCfg{K::Neox, 32, 8, 30001, true, false, 0, true, true, true, 96},
                          // one block per query head (RopeFold::head_split) against the group's
                          // block: one split (1, 17, 128 keys), two (129, 255), several splits and
                          // tiles (4097, 16513), Normal pairs without head norms, YaRN, a window,
                          // G = 8 (whose group block has no prefetch form: the same bytes)
                          FoldCfg{K::Neox, 32, 8, 128, true, false, 0, true, true, true, 96},  // --perf twins
                          FoldCfg{K::Neox, 64, 8, 300, true, false, 0, true, true, true, 96},
                          FoldCfg{K::Neox, 32, 8, 1, true, false, 0, true, true, true, 96, true},
                          FoldCfg{K::Neox, 32, 8, 17, true, false, 0, true, true, true, 96, true},
                          FoldCfg{K::Neox, 32, 8, 128, true, false, 0, true, true, true, 96, true},
                          FoldCfg{K::Neox, 32, 8, 129, true, false, 0, true, true, true, 96, true},
                          FoldCfg{K::Neox, 32, 8, 255, true, false, 0, true, true, true, 96, true},
                          FoldCfg{K::Neox, 32, 8, 4097, true, false, 0, true, true, true, 96, true},
                          FoldCfg{K::Neox, 32, 8, 16513, true, false, 0, true, true, true, 96, true},
                          FoldCfg{K::Normal, 32, 8, 300, false, false, 0, true, true, true, 96, true},
                          FoldCfg{K::Normal, 32, 8, 33, true, true, 0, true, true, true, 96, true},
                          FoldCfg{K::Neox, 32, 8, 4097, true, false, 1000, true, true, true, 96, true},
                          FoldCfg{K::Neox, 64, 8, 1, true, false, 0, true, true, true, 96, true},
                          FoldCfg{K::Neox, 64, 8, 300, true, false, 0, true, true, true, 96, true},
                          FoldCfg{K::Neox, 64, 8, 4097, false, true, 0, true, true, true, 96, true},
                          // blocks of 2 query heads (head_split 2): one split, two, several splits
                          // and tiles, Normal pairs, a window, G = 8 (4 blocks per kv head)
                          FoldCfg{K::Neox, 32, 8, 1, true, false, 0, true, true, true, 96, 2},
                          FoldCfg{K::Neox, 32, 8, 129, true, false, 0, true, true, true, 96, 2},
                          FoldCfg{K::Neox, 32, 8, 4097, true, false, 0, true, true, true, 96, 2},
                          FoldCfg{K::Neox, 32, 8, 16513, true, false, 0, true, true, true, 96, 2},
                          FoldCfg{K::Normal, 32, 8, 2049, false, false, 0, true, true, true, 96, 2},
                          FoldCfg{K::Neox, 32, 8, 4097, true, false, 1000, true, true, true, 96, 2},
                          FoldCfg{K::Neox, 64, 8, 300, true, false, 0, true, true, true, 96, 2},
                          FoldCfg{K::Neox, 64, 8, 4097, true, false, 0, true, true, true, 96, 2},
                          FoldCfg{K::Neox, 64, 8, 4097, true, false, 0, true, true, true, 96},  // --perf twin
                          FoldCfg{K::Neox, 32, 8, 128, true, false, 0, true, true, true, 96, 2, true},
                          // one-split rows written by the split kernel (AttnParams::one_split_direct),
                          // with and without the head split: the q8s planes too
                          FoldCfg{K::Neox, 32, 8, 1, true, false, 0, true, true, true, 96, true, true},
                          FoldCfg{K::Neox, 32, 8, 128, true, false, 0, true, true, true, 96, true, true},
                          FoldCfg{K::Neox, 32, 8, 129, true, false, 0, true, true, true, 96, true, true},
                          FoldCfg{K::Neox, 32, 8, 60, true, false, 0, true, true, true, 96, false, true},
                          FoldCfg{K::Neox, 64, 8, 128, true, false, 0, true, true, true, 96, true, true},
                          FoldCfg{K::Normal, 64, 8, 90, false, false, 0, true, true, true, 96, false, true}};
  for (const FoldCfg& c : folds) add_fold(c);
  // The interleaved softmax trees (RopeFold::softmax_interleave) against the unfolded path:
  // every configuration above with K staged in every tile again with the switch (one split, partial
  // and full second tiles, 2 and 4 tiles per warp, 66 splits, windows, YaRN, the head split and the
  // pair form, the one-split direct rows); where no such form exists (Normal pairs, G = 8's group
  // block) the same bytes from the plain form.
  for (FoldCfg c : folds) {
    if (!c.ks) continue;
    c.si = true;
    add_fold(c);
  }
  // The tensor-core scores (RopeFold::mma_scores) against the unfolded path: every configuration
  // above whose group block of 4 query heads takes the interleaved form (NeoX pairs, no head split:
  // one and two splits, partial and full second tiles, 2 and 4 tiles per warp, 66 splits, a window,
  // the one-split direct rows), and lengths that put the new key at other places of its tile.
  for (FoldCfg c : folds) {
    if (!c.ks || c.hs || c.kind != K::Neox || c.n_head != 4 * c.n_kv) continue;
    c.si = c.ms = true;
    add_fold(c);
  }
  // The trimmed grid (AttnParams::grid_splits, kernels.attn_grid_round) on the folded side: the
  // default forms (the head split at <= 1024 keys, the pair form, the group block with the interleaved
  // softmax) at one split, two, 33 and 65 of a cache of 66 splits, rounds 1 and 8, the one-split direct
  // rows, G = 8.
  for (FoldCfg c : {FoldCfg{K::Neox, 32, 8, 1, true, false, 0, true, true, true, 96, 1, true},
                    FoldCfg{K::Neox, 32, 8, 129, true, false, 0, true, true, true, 96, 1, true},
                    FoldCfg{K::Neox, 32, 8, 1000, true, false, 0, true, true, true, 96, 1, true},
                    FoldCfg{K::Neox, 32, 8, 4097, true, false, 0, true, true, true, 96, 2, true},
                    FoldCfg{K::Neox, 32, 8, 4097, true, false, 0, true, true, true, 96, 0, true, true},
                    FoldCfg{K::Neox, 32, 8, 8193, true, false, 0, true, true, true, 96, 0, true, true},
                    FoldCfg{K::Neox, 64, 8, 300, true, false, 0, true, true, true, 96, 2, true}})
    for (int round : {1, 8}) {
      c.grid_round = round;
      c.extra_ctx = 66 * 128 + 200 - c.len;  // 66 splits at 8 kv heads on 132 SMs
      add_fold(c);
    }
  for (int len : {4097 + 7, 4097 + 8, 4097 + 15, 4097 + 16, 4097 + 31, 16384 + 1}) {
    FoldCfg c{K::Neox, 32, 8, len, true, false, 0, true, true, true, 96};
    c.si = c.ms = true;
    add_fold(c);
  }
  // The int8 tile form's fold over split-plane rows (kv.planes): one split, the new key first and
  // last in its tile, two splits, many (66 of a cache's, the grid trimmed at 8, one-split rows
  // direct), both pair layouts, with and without head norms, YaRN; G = 4 and (qwen3-32b's group) 8;
  // the head split to 1024 keys, its pair form past 128 keys to 4608.
  for (FoldCfg c : {FoldCfg{K::Neox, 32, 8, 1, true, false}, FoldCfg{K::Neox, 32, 8, 17, true, false},
                    FoldCfg{K::Neox, 32, 8, 16, true, false}, FoldCfg{K::Neox, 32, 8, 129, true, false},
                    FoldCfg{K::Normal, 32, 8, 300, false, false}, FoldCfg{K::Neox, 32, 8, 4097, true, true},
                    FoldCfg{K::Neox, 32, 8, 16384, true, false}, FoldCfg{K::Neox, 64, 8, 1, true, false},
                    FoldCfg{K::Neox, 64, 8, 129, true, false}, FoldCfg{K::Normal, 64, 8, 4097, false, true},
                    FoldCfg{K::Neox, 64, 8, 16384, true, false}, FoldCfg{K::Neox, 12, 3, 300, true, false},
                    FoldCfg{K::Neox, 8, 1, 2001, true, false}}) {
    c.planes = true;
    c.max_splits = 96;
    c.direct = true;
    c.grid_round = 8;
    c.extra_ctx = c.len < 16384 ? 66 * 128 + 200 - c.len : 0;
    add_fold(c);
    // One block per query head (the fold's head split, taken to kernels.attn_head_split_keys) and blocks
    // of 2 (the pair form, to kernels.attn_head_pair_keys): each block's heads the bytes of the group's block.
    FoldCfg h = c, h2 = c;
    h.hs = 1;
    h2.hs = 2;
    if (c.len <= 1024) add_fold(h);
    if (c.len > 128 && c.len <= 4608) add_fold(h2);
    // The quant tiles by the copy engine (kernels.attn_planes_copy = tensor): every shape, each fold form.
    {
      FoldCfg b = c, hb = h, hb2 = h2;
      b.cp = hb.cp = hb2.cp = cuda::PlanesCopy::TensorTiles;
      add_fold(b);
      if (c.len <= 1024) add_fold(hb);
      if (c.len > 128 && c.len <= 4608) add_fold(hb2);
    }
    // Every value of the prologue requested at once (kernels.attn_fold_loads_first), each fold form, and with
    // the tensor copies on one shape.
    {
      FoldCfg l = c, hl = h, hl2 = h2;
      l.lf = hl.lf = hl2.lf = true;
      add_fold(l);
      if (c.len <= 1024) add_fold(hl);
      if (c.len > 128 && c.len <= 4608) add_fold(hl2);
      if (c.len == 129 && c.n_head == 32) {
        l.cp = hl.cp = cuda::PlanesCopy::TensorTiles;
        add_fold(l);
        add_fold(hl);
      }
    }
    // Two tiles in flight per warp (kernels.attn_planes_stages = 2) where a warp has more than one tile.
    if (c.len >= 129) {
      c.pd = 2;
      add_fold(c);
      h.pd = h2.pd = 2;
      if (c.len <= 1024) add_fold(h);
      if (c.len <= 4608) add_fold(h2);
    }
  }
}

}  // namespace
MEMRA_KC_REGISTER(add_fused_cases);
}  // namespace memra::kc
