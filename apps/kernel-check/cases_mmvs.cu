// Sections "mmvs" and "mmvs_id": the split-plane decode matvec (kernels/matvec/mmvs.h).
//
// mmvs: against the f64 CPU reference on the very bytes the GPU reads (W = lib/quant's
// dequantization of the GGUF rows that were repacked, x = the dequantization of the q8_1 blocks
// the q8s planes were made from), m = 1..8, odd row counts, and the fused GLU pair (reference:
// act(g) * u in f64 on the f64 products). Tolerance 1e-5 normalized, as the v1 matvec cases: the
// integer dot per 16/32 weights is exact, what remains is f32 rounding of a few products per task
// and the f32 sum over <= 224 tasks; one wrong task moves the error to ~1e-2, an unwritten
// output reads NaN (poison).
// The q8s producers (launch_quantize_q8s, the norms' emits) are in cases_q8s.cu.
//
// mmvs_id: byte identity claims. (1) row results at m = 1 equal those at m = 4 and m = 8 (the
// decode == verify property of the kernel); (2) the fused GLU output equals mmvs(gate),
// mmvs(up), launch_glu on the same inputs.
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "act/act_kernels.h"
#include "case_util.h"
#include "cases_mmvs.h"
#include "cases_ref.h"
#include "core/error.h"
#include "core/half.h"
#include "matvec/mmvs.h"
#include "matvec/mmvs_task.cuh"
#include "matvec/q8s_order.h"
#include "matvec/split_layout.h"
#include "quant/quant.h"

namespace memra::kc {
namespace {

using namespace mmvs_cases;

// Byte identities: m = 1 rows vs m = 4 / 8 rows (same activation row in slot 0), the fused
// GLU vs mmvs(gate), mmvs(up), launch_glu, and (layouts) the interleaved body order vs the
// blocked one at m = 1 and m = 3, plain and GLU (same tasks summed in the same order: same bits).
class MmvsIdCase : public Case {
 public:
  enum Mode { kM, kGlu, kLayouts };
  MmvsIdCase(QType t, int64_t n, int64_t k, Mode mode, int max_warps = 4, int min_tasks = 65)
      : t_(t), n_(n), k_(k), glu_(mode == kGlu), layouts_(mode == kLayouts), max_warps_(max_warps), min_tasks_(min_tasks) {}
  void generate(Env& env) override {
    const auto w = random_weight_bytes(env, t_, n_, k_);
    dw_ = upload_split(env, t_, w, n_, k_, true);
    const auto w2 = random_weight_bytes(env, t_, n_, k_);
    dw2_ = upload_split(env, t_, w2, n_, k_, true);
    if (layouts_) {
      bw_ = upload_split(env, t_, w, n_, k_, false);
      bw2_ = upload_split(env, t_, w2, n_, k_, false);
    }
    random_q8s_input(env, 8, k_, &dxq_, &dxds_);
    dy_ = env.alloc_output<float>((size_t)(8 * n_));
    dy4_ = env.alloc_output<float>((size_t)(4 * n_));
    dg_ = env.alloc_output<float>((size_t)n_);
    du_ = env.alloc_output<float>((size_t)n_);
    dglu_ = env.alloc_output<float>((size_t)n_);
    dy1_ = env.alloc_output<float>((size_t)n_);
  }
  cudaError_t launch(Env& env) override {
    auto run = [&](const DeviceWeight& w, const DeviceWeight* w2, int m, float* y) {
      auto p = mmvs_params(t_, w, w2, n_, k_, m, dxq_, dxds_, y);
      p.split_max_warps = max_warps_;
      p.split_min_tasks = min_tasks_;
      return cuda::launch_mmvs(p, env.stream());
    };
    cudaError_t e;
    if (layouts_) {  // y1 | dg: interleaved m = 1 plain | GLU; dy4 | du: blocked; dy (3 rows) | dglu: m = 3
      if ((e = run(dw_, nullptr, 1, dy1_)) != cudaSuccess) return e;
      if ((e = run(bw_, nullptr, 1, dy4_)) != cudaSuccess) return e;
      if ((e = run(dw_, &dw2_, 1, dg_)) != cudaSuccess) return e;
      if ((e = run(bw_, &bw2_, 1, du_)) != cudaSuccess) return e;
      if ((e = run(dw_, nullptr, 3, dy_)) != cudaSuccess) return e;
      return run(bw_, nullptr, 3, dy_ + 3 * n_);
    }
    if (!glu_) {
      if ((e = run(dw_, nullptr, 1, dy1_)) != cudaSuccess) return e;
      if ((e = run(dw_, nullptr, 4, dy4_)) != cudaSuccess) return e;
      return run(dw_, nullptr, 8, dy_);
    }
    if ((e = run(dw_, &dw2_, 1, dy1_)) != cudaSuccess) return e;
    if ((e = run(dw_, nullptr, 1, dg_)) != cudaSuccess) return e;
    if ((e = run(dw2_, nullptr, 1, du_)) != cudaSuccess) return e;
    cuda::GluParams g;
    g.gate = dg_;
    g.ld_gate = n_;
    g.up = du_;
    g.ld_up = n_;
    g.out = dglu_;
    g.ld_out = n_;
    g.rows = 1;
    g.cols = (int)n_;
    g.act = cuda::ActKind::Silu;
    return cuda::launch_glu(g, env.stream());
  }
  void reference(Env&) override {}
  Verdict compare(Env& env) override {
    const auto y1 = env.download(dy1_, (size_t)n_);
    if (layouts_) {
      const auto b1 = env.download(dy4_, (size_t)n_), g = env.download(dg_, (size_t)n_), bg = env.download(du_, (size_t)n_);
      const auto y3 = env.download(dy_, (size_t)(6 * n_));
      return ref::all_of({{"m=1 interleaved vs blocked bytes", compare_bytes(y1.data(), b1.data(), y1.size() * 4)},
                          {"GLU interleaved vs blocked bytes", compare_bytes(g.data(), bg.data(), g.size() * 4)},
                          {"m=3 interleaved vs blocked bytes", compare_bytes(y3.data(), y3.data() + 3 * n_, (size_t)(3 * n_) * 4)}});
    }
    if (glu_) {
      const auto unfused = env.download(dglu_, (size_t)n_);
      return ref::all_of({{"fused GLU vs mmvs+mmvs+glu bytes", compare_bytes(y1.data(), unfused.data(), y1.size() * 4)}});
    }
    const auto y4 = env.download(dy4_, (size_t)n_);  // row 0 of the m = 4 run
    const auto y8 = env.download(dy_, (size_t)n_);
    return ref::all_of({{"m=1 vs m=4 bytes", compare_bytes(y1.data(), y4.data(), y1.size() * 4)},
                        {"m=1 vs m=8 bytes", compare_bytes(y1.data(), y8.data(), y1.size() * 4)}});
  }

 private:
  QType t_;
  int64_t n_, k_;
  bool glu_, layouts_;
  int max_warps_, min_tasks_;
  DeviceWeight dw_, dw2_, bw_, bw2_;
  int8_t* dxq_ = nullptr;
  float* dxds_ = nullptr;
  float *dy_ = nullptr, *dy4_ = nullptr, *dy1_ = nullptr, *dg_ = nullptr, *du_ = nullptr, *dglu_ = nullptr;
};

// Three matrices (q, k, v shapes, odd row counts) in one launch (MmvsParams::extra) vs three
// launches: byte-identical outputs.
class MmvsSegCase : public Case {
 public:
  MmvsSegCase(QType t, int64_t k) : t_(t), k_(k) {}
  void generate(Env& env) override {
    for (int i = 0; i < 3; ++i) {
      dw_[i] = upload_split(env, t_, random_weight_bytes(env, t_, rows_[i], k_), rows_[i], k_, true);
      dy_[i] = env.alloc_output<float>((size_t)rows_[i]);
      dsep_[i] = env.alloc_output<float>((size_t)rows_[i]);
    }
    random_q8s_input(env, 1, k_, &dxq_, &dxds_);
  }
  cudaError_t launch(Env& env) override {
    auto base = [&](int i, float* y) { return mmvs_params(t_, dw_[i], nullptr, rows_[i], k_, 1, dxq_, dxds_, y); };
    cuda::MmvsParams p = base(0, dy_[0]);
    p.n_extra = 2;
    for (int i = 1; i < 3; ++i) {
      p.extra[i - 1].w = dw_[i].w;
      p.extra[i - 1].w_d = dw_[i].w_d;
      p.extra[i - 1].w_aux = dw_[i].w_aux;
      p.extra[i - 1].n_rows = rows_[i];
      p.extra[i - 1].y = dy_[i];
    }
    cudaError_t e = cuda::launch_mmvs(p, env.stream());
    for (int i = 0; i < 3 && e == cudaSuccess; ++i) e = cuda::launch_mmvs(base(i, dsep_[i]), env.stream());
    return e;
  }
  void reference(Env&) override {}
  Verdict compare(Env& env) override {
    std::vector<float> a, b;
    for (int i = 0; i < 3; ++i) {
      const auto x = env.download(dy_[i], (size_t)rows_[i]), y = env.download(dsep_[i], (size_t)rows_[i]);
      a.insert(a.end(), x.begin(), x.end());
      b.insert(b.end(), y.begin(), y.end());
    }
    return compare_bytes(a.data(), b.data(), a.size() * 4);
  }

 private:
  QType t_;
  int64_t k_;
  int64_t rows_[3] = {1031, 257, 259};
  DeviceWeight dw_[3];
  float* dy_[3] = {};
  float* dsep_[3] = {};
  int8_t* dxq_ = nullptr;
  float* dxds_ = nullptr;
};

// kernels.mmvs_mixed_types: q and k in Q4_K and v in Q6_K (the q4_k_m mix) in one launch
// (MmvsParams::w_type2) against the two launches it replaces (q and k together, then v), at m = 1
// and the pair's caps (0, 6): byte-identical outputs; the rows also against the f64 reference on
// the bytes the GPU reads. The launch is refused where the Q6_K rows would not start a CTA (one
// q row fewer: 4 rows per CTA at one warp per row, 2 at k = 5120), at m = 3 and with the types
// swapped.
class MmvsPairCase : public Case {
 public:
  // act_il: the one launch reads the activation in the interleaved order (MmvsParams::act_il), the
  // two launches it is compared with the plain order.
  // min_tasks: MmvsParams::split_min_tasks of every launch (kernels.mmvs_split_min_k / 64). pairs
  // (kernels.mmvs_row_pairs_qkv; with act_il, cap 0): the one launch with row pairs, Q4_K rows two
  // tasks per row in flight and Q6_K rows one; then an odd row count is NotSupported and a Q6_K half
  // not starting a CTA (r1 - 2 rows of k) InvalidValue.
  // t1 / t2: the pair's types (q and k / v), one of mmvs_pair_ok's pairs. quads (1 or 2; with act_il,
  // not pairs; kernels.mmvs_qkv_quads): the one launch as row quads with that many tasks per row in
  // flight; then a row count not a multiple of 4 is NotSupported and a Q6_K quarter not starting a
  // CTA (r1 - 4 rows of k) InvalidValue.
  MmvsPairCase(int64_t k, int64_t r0, int64_t r1, int64_t r2, int cap, bool act_il = false, int min_tasks = 65,
               bool pairs = false, QType t1 = QType::Q4_K, QType t2 = QType::Q6_K, int quads = 0)
      : k_(k), rows_{r0, r1, r2}, cap_(cap), act_il_(act_il), min_tasks_(min_tasks), pairs_(pairs), t1_(t1), t2_(t2),
        quads_(quads) {}
  void generate(Env& env) override {
    for (int i = 0; i < 3; ++i) {
      w_[i] = random_weight_bytes(env, type(i), rows_[i], k_);
      dw_[i] = upload_split(env, type(i), w_[i], rows_[i], k_, true);
      dy_[i] = env.alloc_output<float>((size_t)rows_[i]);
    }
    x_ = random_q8s_input(env, 1, k_, &dxq_, &dxds_, act_il_ ? &dxq_il_ : nullptr);
  }
  cudaError_t launch(Env& env) override { return cuda::launch_mmvs(one_launch(dy_), env.stream()); }
  cuda::MmvsParams one_launch(float* const* y) const {
    cuda::MmvsParams p = pair_params(y, 1);
    if (act_il_) {
      p.act_il = true;
      p.xq = dxq_il_;
    }
    p.row_pairs = p.row_pair_one_task2 = pairs_;
    p.row_quads = quads_;
    return p;
  }
  void reference(Env& env) override {
    // The two launches the pair replaces: q and k in one Q4_K launch, v in its own Q6_K launch.
    float* sep[3];
    for (int i = 0; i < 3; ++i) sep[i] = env.alloc<float>((size_t)rows_[i]);
    cuda::MmvsParams qk = base(0, sep[0], 1);
    qk.n_extra = 1;
    qk.extra[0] = segment(1, sep[1]);
    ref::check(cuda::launch_mmvs(qk, env.stream()), "q and k in one launch");
    ref::check(cuda::launch_mmvs(base(2, sep[2], 1), env.stream()), "v alone");
    const auto xf = dequantize_rows(QType::Q8_1, x_, 1, k_);
    for (int i = 0; i < 3; ++i) {
      sep_[i] = env.download(sep[i], (size_t)rows_[i]);
      const auto r = matmul_f64(dequantize_rows(type(i), w_[i], rows_[i], k_), xf, rows_[i], k_, 1);
      ref_.insert(ref_.end(), r.begin(), r.end());
      w_[i].clear();
    }
    // Refusals: swapped types (no such pair), m = 3, and a Q6_K segment that does not start a CTA.
    cuda::MmvsParams sw = pair_params(sep, 1);
    std::swap(sw.w_type, sw.w_type2);
    swapped_refused_ = cuda::launch_mmvs(sw, env.stream()) != cudaSuccess;
    m3_refused_ = cuda::launch_mmvs(pair_params(sep, 3), env.stream()) != cudaSuccess;
    cuda::MmvsParams odd = formed() ? one_launch(sep) : pair_params(sep, 1);
    odd.n_rows = rows_[0] - 1;
    odd_status_ = cuda::launch_mmvs(odd, env.stream());
    if (act_il_ && !pairs_ && t1_ != QType::Q4_K) {  // the row-pair form exists for Q4_K + Q6_K only
      cuda::MmvsParams rp = one_launch(sep);
      rp.row_pairs = rp.row_pair_one_task2 = true;
      rp_refused_ = cuda::launch_mmvs(rp, env.stream()) == cudaErrorNotSupported;
    }
    if (formed()) {  // the Q6_K rows' first half (quarter) off a CTA boundary (k's rows less 2 (4))
      cuda::MmvsParams off = one_launch(sep);
      off.extra[0].n_rows = rows_[1] - (quads_ ? 4 : 2);
      off_status_ = cuda::launch_mmvs(off, env.stream());
    }
  }
  Verdict compare(Env& env) override {
    std::vector<float> got, sep;
    gather_qkv(env, dy_, rows_, sep_, got, sep);
    Verdict v = ref::all_of({{"one launch vs q+k and v launches bytes", compare_bytes(got.data(), sep.data(), got.size() * 4)},
                             {"f64 reference", ref::norm(got, ref_, kTol)}});
    if (!v.pass) return v;
    if (!swapped_refused_) return ref::fail("the pair with its types swapped was not refused");
    if (!m3_refused_) return ref::fail("a mixed launch at m = 3 was not refused");
    if (act_il_ && !pairs_ && t1_ != QType::Q4_K && !rp_refused_)
      return ref::fail("the row-pair form of a pair other than Q4_K + Q6_K was not refused");
    if (odd_status_ != (formed() ? cudaErrorNotSupported : cudaErrorInvalidValue))
      return ref::fail(ref::cat("a Q6_K segment starting at row ", rows_[0] + rows_[1] - 1, ": status ", (int)odd_status_));
    if (formed() && off_status_ != cudaErrorInvalidValue)
      return ref::fail(ref::cat(quads_ ? "as quads, a Q6_K quarter starting at " : "paired, a Q6_K half starting at ",
                                quads_ ? (rows_[0] + rows_[1] - 4) / 4 : (rows_[0] + rows_[1] - 2) / 2, ": status ", (int)off_status_));
    return v;
  }
  PerfCount perf_count() const override {
    double wb = 0;
    for (int i = 0; i < 3; ++i) wb += (double)*qtype_row_bytes(type(i), k_) * (double)rows_[i];
    return {wb + (double)k_ * 1.25 + 4.0 * (double)(rows_[0] + rows_[1] + rows_[2]), 0};
  }

 private:
  QType type(int i) const { return i < 2 ? t1_ : t2_; }
  bool formed() const { return pairs_ || quads_ > 0; }
  cuda::MmvsParams base(int i, float* y, int m) const {
    auto p = mmvs_params(type(i), dw_[i], nullptr, rows_[i], k_, m, dxq_, dxds_, y);
    p.split_max_warps = 2;
    p.split_min_tasks = min_tasks_;
    p.min_blocks = cap_;
    return p;
  }
  cuda::MmvsParams::Segment segment(int i, float* y) const { return segment_of(dw_[i], rows_[i], y, type(i) != type(0)); }
  cuda::MmvsParams pair_params(float* const* y, int m) const {
    cuda::MmvsParams p = base(0, y[0], m);
    p.n_extra = 2;
    p.extra[0] = segment(1, y[1]);
    p.extra[1] = segment(2, y[2]);
    p.w_type2 = t2_;
    return p;
  }
  int64_t k_;
  int64_t rows_[3];
  int cap_;
  bool act_il_;
  int min_tasks_;
  bool pairs_;
  QType t1_, t2_;
  int quads_;
  cudaError_t off_status_ = cudaSuccess;
  int8_t* dxq_il_ = nullptr;
  std::vector<uint8_t> w_[3], x_;
  std::vector<float> sep_[3];
  std::vector<double> ref_;
  bool swapped_refused_ = false, m3_refused_ = false, rp_refused_ = false;
  cudaError_t odd_status_ = cudaSuccess;
  DeviceWeight dw_[3];
  int8_t* dxq_ = nullptr;
  float* dxds_ = nullptr;
  float* dy_[3] = {};
};

// Every other instance and switch of the same order vs the default launch: the register-capped
// instances (MmvsParams::min_blocks / min_blocks_glu = 5, 6, 8, 12; m = 1 only) and preload off:
// byte-identical rows for a plain matrix, the fused GLU pair and three matrices in one launch, at
// m = 1 and m = 3. One row per warp, 2 and 4 warps per row (k = 2304, 5120, 12288).
class MmvsInstIdCase : public Case {
 public:
  MmvsInstIdCase(QType t, int64_t n, int64_t k, int m) : t_(t), n_(n), k_(k), m_(m) {}
  void generate(Env& env) override {
    dw_ = upload_split(env, t_, random_weight_bytes(env, t_, n_, k_), n_, k_, true);
    dw2_ = upload_split(env, t_, random_weight_bytes(env, t_, n_, k_), n_, k_, true);
    for (int i = 0; i < 2; ++i) dx_[i] = upload_split(env, t_, random_weight_bytes(env, t_, xr_[i], k_), xr_[i], k_, true);
    random_q8s_input(env, m_, k_, &dxq_, &dxds_);
    for (int v = 0; v < kN; ++v) dy_[v] = env.alloc_output<float>(outs());
  }
  // Per variant v (0 = the default instance and timing): y = [plain, n | GLU, n | three
  // matrices, n + 257 + 259], each m rows.
  cudaError_t launch(Env& env) override {
    for (int v = 0; v < kN; ++v)
      for (int kind = 0; kind < 3; ++kind)
        if (const cudaError_t e = cuda::launch_mmvs(params(kind, kV[v], dy_[v] + kind * n_ * m_), env.stream());
            e != cudaSuccess)
          return e;
    return cudaSuccess;
  }
  void reference(Env&) override {}
  Verdict compare(Env& env) override {
    const auto p0 = env.download(dy_[0], outs());
    const size_t n = (size_t)(n_ * m_), n3 = outs() - 2 * n;
    Verdict last;
    for (int v = 1; v < kN; ++v) {
      const auto pv = env.download(dy_[v], outs());
      Verdict r = ref::all_of({{"plain vs default bytes", compare_bytes(pv.data(), p0.data(), n * 4)},
                               {"GLU vs default bytes", compare_bytes(pv.data() + n, p0.data() + n, n * 4)},
                               {"x3 vs default bytes", compare_bytes(pv.data() + 2 * n, p0.data() + 2 * n, n3 * 4)}});
      r.detail = ref::cat("min_blocks ", kV[v].cap, " preload ", kV[v].preload, ": ", r.detail);
      if (!r.pass) return r;
      last = r;
    }
    last.detail = "min_blocks 5, 6, 8, 12 and preload off (alone and with a cap) identical to the default";
    return last;
  }

 private:
  struct Variant {
    int cap;
    bool preload;
  };
  static constexpr int kN = 7;
  static constexpr Variant kV[kN] = {{0, true}, {5, true}, {6, true}, {8, true}, {12, true}, {0, false}, {6, false}};
  size_t outs() const { return (size_t)((3 * n_ + xr_[0] + xr_[1]) * m_); }
  // kind 0: the plain matrix, 1: the SiLU GLU pair, 2: the matrix plus two more (257, 259 rows).
  cuda::MmvsParams params(int kind, Variant v, float* y) const {
    auto p = mmvs_params(t_, dw_, kind == 1 ? &dw2_ : nullptr, n_, k_, m_, dxq_, dxds_, y);
    p.min_blocks = p.min_blocks_glu = v.cap;
    p.preload = v.preload;
    if (kind == 2) {
      p.n_extra = 2;
      int64_t off = n_ * m_;
      for (int i = 0; i < 2; ++i) {
        p.extra[i].w = dx_[i].w;
        p.extra[i].w_d = dx_[i].w_d;
        p.extra[i].w_aux = dx_[i].w_aux;
        p.extra[i].n_rows = xr_[i];
        p.extra[i].y = y + off;
        off += xr_[i] * m_;
      }
    }
    return p;
  }
  QType t_;
  int64_t n_, k_;
  int m_;
  int64_t xr_[2] = {257, 259};
  DeviceWeight dw_, dw2_, dx_[2];
  int8_t* dxq_ = nullptr;
  float* dxds_ = nullptr;
  float* dy_[kN] = {};
};

// MmvsParams::act_il (the activation in the interleaved q8s order) against the plain order, m = 1:
// byte-identical rows for a plain matrix and the SiLU GLU pair, uncapped and capped at 6, 8, 12
// (the instances kernels.mmvs_act_il takes). q6k: the Q6_K variant of the order (act_il_q6k, a
// plain Q6_K launch; the instances kernels.mmvs_act_il_q6k takes), and its refusals: a GLU launch,
// another weight type, act_il off.
class MmvsActIlIdCase : public Case {
 public:
  MmvsActIlIdCase(QType t, int64_t n, int64_t k, int glu, int cap, bool q6k = false)
      : t_(t), n_(n), k_(k), glu_(glu), cap_(cap), q6k_(q6k) {}
  void generate(Env& env) override {
    dw_ = upload_split(env, t_, random_weight_bytes(env, t_, n_, k_), n_, k_, true);
    if (glu_) dw2_ = upload_split(env, t_, random_weight_bytes(env, t_, n_, k_), n_, k_, true);
    random_q8s_input(env, 1, k_, &dxq_, &dxds_, &dxq_il_, q6k_ ? cuda::q8s::Order::il_q6k : cuda::q8s::Order::il);
    for (auto*& y : dy_) y = env.alloc_output<float>((size_t)n_);
  }
  cudaError_t launch(Env& env) override {
    for (int v = 0; v < 2; ++v) {
      auto p = mmvs_params(t_, dw_, glu_ ? &dw2_ : nullptr, n_, k_, 1, v ? dxq_il_ : dxq_, dxds_, dy_[v]);
      p.split_max_warps = 2;
      p.min_blocks = p.min_blocks_glu = cap_;
      p.act_il = v == 1;
      p.act_il_q6k = v == 1 && q6k_;
      if (const cudaError_t e = cuda::launch_mmvs(p, env.stream()); e != cudaSuccess) return e;
    }
    if (q6k_) {  // the launches the Q6_K variant has no instance for
      auto p = mmvs_params(t_, dw_, &dw_, n_, k_, 1, dxq_il_, dxds_, dy_[1]);
      p.act_il = p.act_il_q6k = true;
      refusals_ = cuda::launch_mmvs(p, env.stream()) == cudaErrorNotSupported;  // GLU
      p = mmvs_params(t_, dw_, nullptr, n_, k_, 1, dxq_il_, dxds_, dy_[1]);
      p.act_il_q6k = true;
      refusals_ = refusals_ && cuda::launch_mmvs(p, env.stream()) == cudaErrorNotSupported;  // act_il off
      p.w_type = QType::Q4_K;  // the same bytes read as Q4_K
      p.act_il = true;
      refusals_ = refusals_ && cuda::launch_mmvs(p, env.stream()) == cudaErrorNotSupported;
    }
    return cudaSuccess;
  }
  void reference(Env&) override {}
  Verdict compare(Env& env) override {
    if (q6k_ && !refusals_) return ref::fail("act_il_q6k on a GLU, without act_il or on Q4_K rows was not refused");
    const auto a = env.download(dy_[0], (size_t)n_), b = env.download(dy_[1], (size_t)n_);
    return compare_bytes(b.data(), a.data(), (size_t)n_ * 4);
  }

 private:
  QType t_;
  int64_t n_, k_;
  int glu_, cap_;
  bool q6k_;
  bool refusals_ = false;
  DeviceWeight dw_, dw2_;
  int8_t *dxq_ = nullptr, *dxq_il_ = nullptr;
  float* dxds_ = nullptr;
  float* dy_[2] = {};
};

// kernels.fuse_residual: the residual epilogue (MmvsParams::residual) against the plain launch
// followed by the f32 add on the host (the same IEEE add): into another buffer and in place,
// byte-identical; a GLU launch with a residual is refused.
class MmvsResidualCase : public Case {
 public:
  MmvsResidualCase(QType t, int64_t n, int64_t k, int m) : t_(t), n_(n), k_(k), m_(m) {}
  void generate(Env& env) override {
    const auto w = random_weight_bytes(env, t_, n_, k_);
    dw_ = upload_split(env, t_, w, n_, k_, true);
    random_q8s_input(env, m_, k_, &dxq_, &dxds_);
    res_ = env.normal((size_t)(m_ * n_), 2.0f);
    dres_ = env.upload(res_);
    dy_ = env.alloc_output<float>((size_t)(m_ * n_));
  }
  cudaError_t launch(Env& env) override {
    auto p = mmvs_params(t_, dw_, nullptr, n_, k_, m_, dxq_, dxds_, dy_);
    p.residual = dres_;
    return cuda::launch_mmvs(p, env.stream());
  }
  void reference(Env& env) override {
    const size_t n = (size_t)(m_ * n_);
    float* y0 = env.alloc<float>(n);
    ref::check(cuda::launch_mmvs(mmvs_params(t_, dw_, nullptr, n_, k_, m_, dxq_, dxds_, y0), env.stream()), "plain mmvs");
    const auto y = env.download(y0, n);
    want_.resize(n);
    for (size_t i = 0; i < n; ++i) want_[i] = res_[i] + y[i];
    float* ip = env.upload(res_);  // in place: y = residual
    auto p = mmvs_params(t_, dw_, nullptr, n_, k_, m_, dxq_, dxds_, ip);
    p.residual = ip;
    ref::check(cuda::launch_mmvs(p, env.stream()), "mmvs with the residual in place");
    in_place_ = env.download(ip, n);
    p.w2 = dw_.w, p.w2_d = dw_.w_d, p.w2_aux = dw_.w_aux, p.glu = 1;
    glu_refused_ = cuda::launch_mmvs(p, env.stream()) == cudaErrorInvalidValue;
  }
  Verdict compare(Env& env) override {
    const size_t n = (size_t)(m_ * n_);
    const auto got = env.download(dy_, n);
    Verdict v = ref::all_of({{"epilogue vs matvec + add bytes", compare_bytes(got.data(), want_.data(), n * 4)},
                             {"in place vs matvec + add bytes", compare_bytes(in_place_.data(), want_.data(), n * 4)}});
    if (v.pass && !glu_refused_) return ref::fail("a GLU launch with a residual was not refused");
    return v;
  }

 private:
  QType t_;
  int64_t n_, k_;
  int m_;
  DeviceWeight dw_;
  std::vector<float> res_, want_, in_place_;
  bool glu_refused_ = false;
  int8_t* dxq_ = nullptr;
  float* dxds_ = nullptr;
  float *dres_ = nullptr, *dy_ = nullptr;
};

void add_mmvs_cases(Registry& r) {
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS}) {
    const std::string tn(qtype_name(t));
    // Interleaved body order (the default) as "mmvs...", the blocked order as "mmvs_blocked...";
    // one warp per row at every length (MmvsParams::split_k off) as "mmvs_nosplit...".
    auto add = [&](int64_t n, int64_t k, int m, int glu, bool il = true, bool split = true) {
      r.add("mmvs", ref::cat("mmvs", il ? "" : "_blocked", split ? "" : "_nosplit", glu ? "_glu" : "", "/", tn, "/", n,
                             "x", k, "/m", m),
            [=] { return std::make_unique<MmvsCase>(t, n, k, m, glu, il, split); });
    };
    // Odd row counts (the last CTA partly empty), k with a partial last pair of tasks per lane
    // (1536 = 24 tasks: lanes 24..31 idle; 2304 = 36: 4 lanes take a second task), every m class.
    for (int m : {1, 2, 3, 5, 8}) add(4097, 1536, m, 0);
    add(1031, 2304, 1, 0);
    add(1031, 2304, 3, 1);
    add(4099, 4096, 1, 1);
    // Model shapes (qwen3-8b / llama-8b q|o 4096x4096, k|v 1024x4096, gate|up 12288|14336x4096,
    // down 4096x12288|14336, output 151936x4096; qwen3-32b 5120 / 25600) for --perf.
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {1024, 4096}, {6144, 4096}, {12288, 4096},
                        {14336, 4096}, {4096, 12288}, {4096, 14336}, {151936, 4096}, {5120, 25600},
                        {25600, 5120}})
      add(n, k, 1, 0);
    add(12288, 4096, 1, 1);
    add(25600, 5120, 1, 1);
    // The blocked order on the same qwen3-8b shapes (the kernel-level A/B of --perf) and on the
    // odd shapes above.
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {6144, 4096}, {4096, 12288}, {151936, 4096}})
      add(n, k, 1, 0, false);
    add(12288, 4096, 1, 1, false);
    add(4097, 1536, 3, 0, false);
    add(1031, 2304, 3, 1, false);
    // 2 and 4 warps per row (5120 / 12288 weights; odd row counts leave the last CTA part empty),
    // and the one-warp form on the long qwen3 shapes (the --perf A/B of split_k).
    add(1031, 5120, 3, 1);
    add(1033, 12288, 2, 0);
    add(1033, 12288, 5, 0, false);
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 12288}, {5120, 25600}, {25600, 5120}})
      add(n, k, 1, 0, true, false);
    add(25600, 5120, 1, 1, true, false);
    r.add("mmvs_id", ref::cat("mmvs/", tn, "/4097x2304/m1_vs_m4_m8_bytes"),
          [=] { return std::make_unique<MmvsIdCase>(t, 4097, 2304, MmvsIdCase::kM); });
    r.add("mmvs_id", ref::cat("mmvs_x3/", tn, "/1031+257+259x2304/one_vs_three_launches_bytes"),
          [=] { return std::make_unique<MmvsSegCase>(t, 2304); });
    r.add("mmvs_id", ref::cat("mmvs_glu/", tn, "/4097x2304/fused_vs_unfused_bytes"),
          [=] { return std::make_unique<MmvsIdCase>(t, 4097, 2304, MmvsIdCase::kGlu); });
    r.add("mmvs_id", ref::cat("mmvs/", tn, "/4097x1536/interleaved_vs_blocked_bytes"),
          [=] { return std::make_unique<MmvsIdCase>(t, 4097, 1536, MmvsIdCase::kLayouts); });
    // The same claims where a row is shared by 2 (k = 5120, qwen3-32b's q/k/v and gate/up) or 4
    // warps (k = 12288): the m-independence, the one-launch q/k/v, the fused GLU, both orders.
    for (int64_t k : {int64_t{5120}, int64_t{12288}}) {
      r.add("mmvs_id", ref::cat("mmvs/", tn, "/1031x", k, "/m1_vs_m4_m8_bytes"),
            [=] { return std::make_unique<MmvsIdCase>(t, 1031, k, MmvsIdCase::kM); });
      r.add("mmvs_id", ref::cat("mmvs_glu/", tn, "/1031x", k, "/fused_vs_unfused_bytes"),
            [=] { return std::make_unique<MmvsIdCase>(t, 1031, k, MmvsIdCase::kGlu); });
      r.add("mmvs_id", ref::cat("mmvs/", tn, "/1031x", k, "/interleaved_vs_blocked_bytes"),
            [=] { return std::make_unique<MmvsIdCase>(t, 1031, k, MmvsIdCase::kLayouts); });
    }
    // kernels.mmvs_split_min_k = 5184 (81 tasks): the 5120-weight rows on one warp, the same claims.
    r.add("mmvs_id", ref::cat("mmvs_splitmin81/", tn, "/1031x5120/m1_vs_m4_m8_bytes"),
          [=] { return std::make_unique<MmvsIdCase>(t, 1031, 5120, MmvsIdCase::kM, 2, 81); });
    r.add("mmvs_id", ref::cat("mmvs_splitmin81_glu/", tn, "/1031x5120/fused_vs_unfused_bytes"),
          [=] { return std::make_unique<MmvsIdCase>(t, 1031, 5120, MmvsIdCase::kGlu, 2, 81); });
    r.add("mmvs_id", ref::cat("mmvs_x3/", tn, "/1031+257+259x5120/one_vs_three_launches_bytes"),
          [=] { return std::make_unique<MmvsSegCase>(t, 5120); });
    // Register-capped m = 1 instances (kernels.mmvs_min_blocks[_glu]) and the timing switch
    // (MmvsParams::preload; at m = 3 the caps do not apply, the switch does): byte
    // identity with the default, and the f64 reference / --perf rows beside the plain "mmvs/..." ones.
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4097, 2304}, {1031, 5120}, {1033, 12288}})
      for (int m : {1, 3})
        r.add("mmvs_id", ref::cat("mmvs_inst/", tn, "/", n, "x", k, "/m", m, "/plain_glu_x3/vs_default_bytes"),
              [=] { return std::make_unique<MmvsInstIdCase>(t, n, k, m); });
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {4096, 12288}})
      r.add("mmvs", ref::cat("mmvs_nopreload/", tn, "/", n, "x", k, "/m1"),
            [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 0, true, true, 0, false); });
    // At most 2 warps per row (kernels.mmvs_split_max_warps = 2): rows over 128 tasks (the
    // 12288 / 25600-weight downs) take another fixed order; f64 reference, the m-independence of
    // its bits, the fused GLU, both body orders, and --perf rows beside "mmvs/...".
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 12288}, {5120, 25600}, {1033, 12288}})
      r.add("mmvs", ref::cat("mmvs_splitw2/", tn, "/", n, "x", k, "/m1"),
            [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 0, true, true, 0, true, 2); });
    r.add("mmvs", ref::cat("mmvs_splitw2/", tn, "/1033x12288/m5"),
          [=] { return std::make_unique<MmvsCase>(t, 1033, 12288, 5, 0, true, true, 0, true, 2); });
    r.add("mmvs_id", ref::cat("mmvs_splitw2/", tn, "/1031x12288/m1_vs_m4_m8_bytes"),
          [=] { return std::make_unique<MmvsIdCase>(t, 1031, 12288, MmvsIdCase::kM, 2); });
    r.add("mmvs_id", ref::cat("mmvs_splitw2_glu/", tn, "/1031x12288/fused_vs_unfused_bytes"),
          [=] { return std::make_unique<MmvsIdCase>(t, 1031, 12288, MmvsIdCase::kGlu, 2); });
    r.add("mmvs_id", ref::cat("mmvs_splitw2/", tn, "/1031x12288/interleaved_vs_blocked_bytes"),
          [=] { return std::make_unique<MmvsIdCase>(t, 1031, 12288, MmvsIdCase::kLayouts, 2); });
    // MmvsParams::act_il (a kernel-level experiment): the interleaved activation order against the
    // plain one, byte for byte and against the f64 reference; --perf rows "mmvs_ail_cap6/..." beside
    // "mmvs_ref_cap6/..." (the register form with the same cap and warps per row), GLU rows beside
    // "mmvs_glu/...". Partial task groups: k = 2304 (36 tasks), 14336 (224).
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1031, 2304}, {1031, 14336}, {4096, 4096}, {1031, 5120}})
      for (int glu : {0, 1})
        for (int cap : {0, 5, 6, 8, 12})
          r.add("mmvs_id", ref::cat("mmvs_ail/", tn, "/", n, "x", k, glu ? "/glu" : "/plain", "/cap", cap, "/vs_plain_order_bytes"),
                [=] { return std::make_unique<MmvsActIlIdCase>(t, n, k, glu, cap); });
    // kernels.mmvs_act_il_q6k: plain Q6_K launches on the Q6_K variant of the order.
    if (t == QType::Q6_K)
      for (auto [n, k] : {std::pair<int64_t, int64_t>{1031, 2304}, {1031, 14336}, {4096, 12288}, {1031, 5120}, {4096, 4096}})
        for (int cap : {0, 6, 8, 12})
          r.add("mmvs_id", ref::cat("mmvs_ail_q6k/", tn, "/", n, "x", k, "/plain/cap", cap, "/vs_plain_order_bytes"),
                [=] { return std::make_unique<MmvsActIlIdCase>(t, n, k, 0, cap, true); });
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {4096, 12288}, {151936, 4096}, {1031, 2304}, {1031, 14336}}) {
      r.add("mmvs", ref::cat("mmvs_ail_cap6/", tn, "/", n, "x", k, "/m1"),
            [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 0, true, true, 6, true, 2, true); });
      r.add("mmvs", ref::cat("mmvs_ref_cap6/", tn, "/", n, "x", k, "/m1"),
            [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 0, true, true, 6, true, 2, false); });
      if (t == QType::Q6_K)  // the Q6_K variant of the order (f64 reference; --perf beside mmvs_ail_cap6)
        r.add("mmvs", ref::cat("mmvs_ail_q6k_cap6/", tn, "/", n, "x", k, "/m1"),
              [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 0, true, true, 6, true, 2, true, true); });
    }
    r.add("mmvs", ref::cat("mmvs_ail_glu/", tn, "/12288x4096/m1"),
          [=] { return std::make_unique<MmvsCase>(t, 12288, 4096, 1, 1, true, true, 0, true, 2, true); });
    r.add("mmvs", ref::cat("mmvs_ail_glu/", tn, "/25600x5120/m1"),
          [=] { return std::make_unique<MmvsCase>(t, 25600, 5120, 1, 1, true, true, 0, true, 2, true); });
    // The interleaved GLU capped (kernels.mmvs_cap_fallback: 5 where 6 spills): f64 reference and
    // --perf rows beside mmvs_ail_glu (qwen3-8b and qwen3-32b shapes).
    for (int cap : {5, 6})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{12288, 4096}, {25600, 5120}})
        r.add("mmvs", ref::cat("mmvs_ail_glu_cap", cap, "/", tn, "/", n, "x", k, "/m1"),
              [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 1, true, true, cap, true, 2, true); });
    for (int cap : {6, 8, 12}) {
      for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {6144, 4096}, {4096, 12288}, {151936, 4096}})
        r.add("mmvs", ref::cat("mmvs_cap", cap, "/", tn, "/", n, "x", k, "/m1"),
              [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 0, true, true, cap); });
      r.add("mmvs", ref::cat("mmvs_cap", cap, "_glu/", tn, "/12288x4096/m1"),
            [=] { return std::make_unique<MmvsCase>(t, 12288, 4096, 1, 1, true, true, cap); });
    }
  }
  // kernels.mmvs_mixed_types: the q4_k_m q/k/v (Q4_K q, k; Q6_K v) in one launch. qwen3-8b (one
  // warp per row) and qwen3-32b shapes (k = 5120: 2 warps, 2 rows per CTA), odd v row counts,
  // the pair's two instances.
  for (int cap : {0, 6}) {
    r.add("mmvs_id", ref::cat("mmvs_pair/Q4_K+Q6_K/cap", cap, "/4096+1024+1024x4096/one_vs_two_launches_bytes"),
          [=] { return std::make_unique<MmvsPairCase>(4096, 4096, 1024, 1024, cap); });
    r.add("mmvs_id", ref::cat("mmvs_pair/Q4_K+Q6_K/cap", cap, "/1032+260+259x5120/one_vs_two_launches_bytes"),
          [=] { return std::make_unique<MmvsPairCase>(5120, 1032, 260, 259, cap); });
    r.add("mmvs_id", ref::cat("mmvs_pair/Q4_K+Q6_K/cap", cap, "/516+128+131x2304/one_vs_two_launches_bytes"),
          [=] { return std::make_unique<MmvsPairCase>(2304, 516, 128, 131, cap); });
    // kernels.mmvs_act_il: the pair reading the interleaved order against the plain-order launches.
    r.add("mmvs_id", ref::cat("mmvs_pair_ail/Q4_K+Q6_K/cap", cap, "/4096+1024+1024x4096/vs_plain_order_launches_bytes"),
          [=] { return std::make_unique<MmvsPairCase>(4096, 4096, 1024, 1024, cap, true); });
    r.add("mmvs_id", ref::cat("mmvs_pair_ail/Q4_K+Q6_K/cap", cap, "/1032+260+259x5120/vs_plain_order_launches_bytes"),
          [=] { return std::make_unique<MmvsPairCase>(5120, 1032, 260, 259, cap, true); });
    // kernels.mmvs_split_min_k = 5184: the 5120-weight rows on one warp (4 rows per CTA).
    r.add("mmvs_id", ref::cat("mmvs_pair_ail_splitmin81/Q4_K+Q6_K/cap", cap, "/1032+260+259x5120/vs_plain_order_launches_bytes"),
          [=] { return std::make_unique<MmvsPairCase>(5120, 1032, 260, 259, cap, true, 81); });
  }
  // The other compiled pairs (q5_k_m: Q5_K + Q6_K; iq4_xs: IQ4_XS + Q5_K), the same claims at both
  // caps and activation orders, qwen3-8b / qwen3-32b widths; the row-pair form is Q4_K + Q6_K's only
  // (refused, below), and --perf rows at the qwen3-8b shape.
  for (auto [t1, t2] : {std::pair<QType, QType>{QType::Q5_K, QType::Q6_K}, {QType::IQ4_XS, QType::Q5_K}}) {
    const std::string pn = ref::cat(qtype_name(t1), "+", qtype_name(t2));
    for (int cap : {0, 6})
      for (bool il : {false, true}) {
        r.add("mmvs_id", ref::cat(il ? "mmvs_pair_ail/" : "mmvs_pair/", pn, "/cap", cap, "/4096+1024+1024x4096/vs_two_launches_bytes"),
              [=] { return std::make_unique<MmvsPairCase>(4096, 4096, 1024, 1024, cap, il, 65, false, t1, t2); });
        r.add("mmvs_id", ref::cat(il ? "mmvs_pair_ail/" : "mmvs_pair/", pn, "/cap", cap, "/1032+260+259x5120/vs_two_launches_bytes"),
              [=] { return std::make_unique<MmvsPairCase>(5120, 1032, 260, 259, cap, il, 65, false, t1, t2); });
      }
    r.add("mmvs", ref::cat("mmvs_pair_ail_cap6/", pn, "/4096+1024+1024x4096/m1"),
          [=] { return std::make_unique<MmvsPairCase>(4096, 4096, 1024, 1024, 6, true, 65, false, t1, t2); });
  }
  r.add("mmvs", "mmvs_pair/Q4_K+Q6_K/8192+1024+1024x5120/m1",
        [=] { return std::make_unique<MmvsPairCase>(5120, 8192, 1024, 1024, 6); });
  r.add("mmvs", "mmvs_pair_splitmin81/Q4_K+Q6_K/8192+1024+1024x5120/m1",
        [=] { return std::make_unique<MmvsPairCase>(5120, 8192, 1024, 1024, 6, false, 81); });
  // kernels.mmvs_row_pairs_qkv on the mixed launch: paired against the two unpaired launches (bytes)
  // and f64 (k's halves: 264 / 2 keeps the Q6_K half on a CTA boundary at 1 and 2 warps per row),
  // with --perf rows at the qwen3-8b / qwen3-32b shapes beside the unpaired pair's (mmvs_pair_ail).
  for (int64_t k : {int64_t{2304}, int64_t{4096}, int64_t{5120}})
    r.add("mmvs_id", ref::cat("mmvs_pair_rp/Q4_K+Q6_K/1032+264+258x", k, "/vs_plain_order_launches_bytes"),
          [=] { return std::make_unique<MmvsPairCase>(k, 1032, 264, 258, 0, true, 65, true); });
  // kernels.mmvs_qkv_quads on the mixed launch: as row quads (one and two tasks per row) against the two
  // unquartered launches (bytes) and f64 (264 / 4 keeps the Q6_K quarter on a CTA boundary), with --perf
  // rows beside mmvs_pair_rp at the qwen3-8b / qwen3-32b shapes.
  for (int d : {1, 2}) {
    for (int64_t k : {int64_t{2304}, int64_t{4096}, int64_t{5120}})
      r.add("mmvs_id", ref::cat("mmvs_pair_rq/Q4_K+Q6_K/1032+264+260x", k, "/d", d, "/vs_plain_order_launches_bytes"),
            [=] { return std::make_unique<MmvsPairCase>(k, 1032, 264, 260, 0, true, 65, false, QType::Q4_K, QType::Q6_K, d); });
    for (auto [q, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {8192, 5120}})
      r.add("mmvs", ref::cat("mmvs_pair_rq/Q4_K+Q6_K/", q, "+1024+1024x", k, "/d", d, "/m1"),
            [=] { return std::make_unique<MmvsPairCase>(k, q, 1024, 1024, 0, true, 65, false, QType::Q4_K, QType::Q6_K, d); });
  }
  for (auto [q, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {8192, 5120}}) {
    r.add("mmvs", ref::cat("mmvs_pair_rp/Q4_K+Q6_K/", q, "+1024+1024x", k, "/m1"),
          [=] { return std::make_unique<MmvsPairCase>(k, q, 1024, 1024, 0, true, 65, true); });
    r.add("mmvs", ref::cat("mmvs_pair_ail_cap6/Q4_K+Q6_K/", q, "+1024+1024x", k, "/m1"),
          [=] { return std::make_unique<MmvsPairCase>(k, q, 1024, 1024, 6, true); });
  }
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {4096, 12288}, {1031, 2304}})
      for (int m : {1, 3})
        r.add("mmvs_id", ref::cat("mmvs_residual/", qtype_name(t), "/", n, "x", k, "/m", m, "/vs_matvec_then_add_bytes"),
              [=] { return std::make_unique<MmvsResidualCase>(t, n, k, m); });
}

}  // namespace
MEMRA_KC_REGISTER(add_mmvs_cases);
}  // namespace memra::kc
