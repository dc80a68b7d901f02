// Section "mmvs_id": the residual launch that takes the next deferred norm
// (cuda::launch_mmvs_emit_norm, kernels.mmvs_emit_norm).
// - mmvs_glu_emit/<type>/<n>x<k>/<act>/<scale>[/<order>]: the GLU form (launch_mmvs_glu_emit) against
//   launch_mmvs's GLU then launch_quantize_q8s (MmvsGluEmitCase below).
// - mmvs_emit_norm/<type>/<n>x<k>/w<warps>[/splitw4][/q6k][/nopreload][/no_w]: one launch against
//   the two it replaces, run here on the same inputs: launch_mmvs with the residual epilogue, then
//   launch_rms_norm_defer on its output. y, the q8s planes of y * w (interleaved), their scales and
//   sums, and the partial sums of squares byte-identical; y also against the f64 product plus the
//   residual (the mmvs tolerance), and the partials' sum against the f64 sum of squares of the
//   kernel's own y (1e-5 relative). Refusals: rows not a multiple of 32, 48 warps, no residual.
#include <algorithm>
#include <cmath>
#include <vector>

#include "case_util.h"
#include "cases_mmvs.h"
#include "cases_ref.h"
#include "norm/norm_kernels.h"

namespace memra::kc {
namespace {

using mmvs_cases::DeviceWeight;

class MmvsEmitNormCase : public Case {
 public:
  struct Form {
    int warps = 16;
    int split_max_warps = 2;  // kernels.mmvs_split_max_warps (the default 2, or 4)
    bool q6k = false;         // the input in the Q6_K variant of the order (Q6_K rows)
    bool preload = true;
    bool has_w = true;
    bool both = false;  // MmvsEmitNormParams::both_groups (8 warps, rows of one warp)
  };
  MmvsEmitNormCase(QType t, int64_t n, int64_t k, Form f) : t_(t), n_(n), k_(k), f_(f) {}
  void generate(Env& env) override {
    w_ = random_weight_bytes(env, t_, n_, k_);
    dw_ = mmvs_cases::upload_split(env, t_, w_, n_, k_, true);
    int8_t* plain = nullptr;
    x_ = mmvs_cases::random_q8s_input(env, 1, k_, &plain, &dxds_, &dxq_il_,
                                      f_.q6k ? cuda::q8s::Order::il_q6k : cuda::q8s::Order::il);
    res_ = env.normal((size_t)n_, 2.0f);
    dres_ = env.upload(res_);
    nw_ = env.normal((size_t)n_, 0.2f, 1.0f);
    dnw_ = env.upload(nw_);
    dy_ = env.alloc_output<float>((size_t)n_);
    dq_ = env.alloc_output<int8_t>(q_bytes());
    dds_ = env.alloc_output<float>((size_t)n_ / 16);
    dpart_ = env.alloc_output<float>((size_t)n_ / 32);
  }
  size_t q_bytes() const { return (size_t)cuda::q8s::il_row_bytes(n_); }
  // The n quants of an interleaved row in element order (the bytes of a short last group unused).
  std::vector<int8_t> plain(const std::vector<int8_t>& il) const {
    std::vector<int8_t> out((size_t)n_);
    cuda::q8s::from_interleaved(il.data(), n_, out.data());
    return out;
  }
  cuda::MmvsParams mv(float* y) const {
    auto p = mmvs_cases::mmvs_params(t_, dw_, nullptr, n_, k_, 1, dxq_il_, dxds_, y);
    p.act_il = true;
    p.act_il_q6k = f_.q6k;
    p.split_max_warps = f_.split_max_warps;
    p.preload = f_.preload;
    p.residual = dres_;
    return p;
  }
  cuda::MmvsEmitNormParams params() const {
    cuda::MmvsEmitNormParams e;
    e.mv = mv(dy_);
    e.norm_w = f_.has_w ? dnw_ : nullptr;
    e.out_xq = dq_;
    e.out_xds = dds_;
    e.out_il = true;
    e.partials = dpart_;
    e.warps = f_.warps;
    e.both_groups = f_.both;
    return e;
  }
  cudaError_t launch(Env& env) override {
    cuda::MmvsEmitNormParams bad = params();
    bad.mv.n_rows = n_ - 16;
    refused_ = cuda::launch_mmvs_emit_norm(bad, env.stream()) == cudaErrorInvalidValue;
    bad = params();
    bad.warps = 48;
    refused_ = refused_ && cuda::launch_mmvs_emit_norm(bad, env.stream()) == cudaErrorInvalidValue;
    bad = params();
    bad.mv.residual = nullptr;
    refused_ = refused_ && cuda::launch_mmvs_emit_norm(bad, env.stream()) == cudaErrorInvalidValue;
    if (f_.both) {  // both groups: 8 warps only, nothing launched at 16
      bad = params();
      bad.warps = 16;
      refused_ = refused_ && cuda::launch_mmvs_emit_norm(bad, env.stream()) == cudaErrorNotSupported;
    }
    return cuda::launch_mmvs_emit_norm(params(), env.stream());
  }
  void reference(Env& env) override {
    // The two launches it replaces, on the same inputs.
    float* y = env.alloc<float>((size_t)n_);
    ref::check(cuda::launch_mmvs(mv(y), env.stream()), "mmvs with the residual");
    int8_t* q = env.alloc<int8_t>(q_bytes());
    float* ds = env.alloc<float>((size_t)n_ / 16);
    float* part = env.alloc<float>((size_t)n_ / 32);
    cuda::RmsNormDeferParams d;
    d.x = y;
    d.rows = 1;
    d.w = f_.has_w ? dnw_ : nullptr;
    d.cols = (int)n_;
    d.q8s_xq = q;
    d.q8s_xds = ds;
    d.q8s_il = true;
    d.partials = part;
    ref::check(cuda::launch_rms_norm_defer(d, env.stream()), "the deferred norm");
    y_ = env.download(y, (size_t)n_);
    q_ = plain(env.download(q, q_bytes()));
    ds_ = env.download(ds, (size_t)n_ / 16);
    part_ = env.download(part, (size_t)n_ / 32);
    ref_ = matmul_f64(dequantize_rows(t_, w_, n_, k_), dequantize_rows(QType::Q8_1, x_, 1, k_), n_, k_, 1);
    for (int64_t r = 0; r < n_; ++r) ref_[(size_t)r] += (double)res_[(size_t)r];
    w_.clear();
  }
  Verdict compare(Env& env) override {
    if (!refused_) return ref::fail("rows not a multiple of 32, 48 warps, no residual or (both groups) 16 warps was not refused");
    const auto y = env.download(dy_, (size_t)n_);
    const auto q = plain(env.download(dq_, q_bytes()));
    const auto ds = env.download(dds_, (size_t)n_ / 16);
    const auto part = env.download(dpart_, (size_t)n_ / 32);
    Verdict v = ref::all_of({{"y vs mmvs residual, bytes", compare_bytes(y.data(), y_.data(), y.size() * 4)},
                             {"quants vs the deferred norm, bytes", compare_bytes(q.data(), q_.data(), q.size())},
                             {"scales and sums, bytes", compare_bytes(ds.data(), ds_.data(), ds.size() * 4)},
                             {"partials, bytes", compare_bytes(part.data(), part_.data(), part.size() * 4)},
                             {"y vs f64", ref::norm(y, ref_, mmvs_cases::kTol)}});
    if (!v.pass) return v;
    double ss = 0.0, got = 0.0;
    for (float e : y) ss += (double)e * (double)e;
    for (float e : part) got += (double)e;
    if (!(std::fabs(got - ss) <= 1e-5 * ss))
      return ref::fail(ref::cat("partials sum to ", got, " against the f64 sum of squares ", ss));
    v.detail += ref::cat("; ", part.size(), " partials sum within ", std::fabs(got - ss) / ss, " of f64");
    return v;
  }
  PerfCount perf_count() const override {
    return {(double)*qtype_row_bytes(t_, k_) * (double)n_ + (double)k_ * 1.25 + 10.0 * (double)n_, 0};
  }

 private:
  QType t_;
  int64_t n_, k_;
  Form f_;
  bool refused_ = false;
  std::vector<uint8_t> w_, x_;
  std::vector<float> res_, nw_, y_, ds_, part_;
  std::vector<int8_t> q_;
  std::vector<double> ref_;
  DeviceWeight dw_;
  int8_t *dxq_il_ = nullptr, *dq_ = nullptr;
  float *dxds_ = nullptr, *dres_ = nullptr, *dnw_ = nullptr, *dy_ = nullptr, *dds_ = nullptr, *dpart_ = nullptr;
};

// The GLU form (cuda::launch_mmvs_glu_emit, kernels.mmvs_glu_emit) against the two launches it
// replaces on the same inputs: launch_mmvs's GLU (the deferred norm's scale from partials, from a
// final scale, or none) then launch_quantize_q8s of its output in the same order. y, the quants (in
// element order) and the scales and sums byte-identical; y also against the f64 GLU of the scaled
// products (the mmvs tolerance). warps 8 (MmvsGluEmitParams::warps): the CTAs compiled for two per SM,
// with min_tasks (MmvsParams::split_min_tasks) where a row stays one warp's; a row of several warps
// there (the split rule of 65 tasks at 5120 weights) must be refused with nothing launched.
class MmvsGluEmitCase : public Case {
 public:
  // ns: 0 none, 1 partials, 2 the final scale; order: the output planes' q8s order.
  MmvsGluEmitCase(QType t, int64_t n, int64_t k, int glu, int ns, cuda::q8s::Order order, int warps = 16,
                  int min_tasks = 65)
      : t_(t), n_(n), k_(k), glu_(glu), ns_(ns), order_(order), warps_(warps), min_tasks_(min_tasks) {}
  void generate(Env& env) override {
    w_ = random_weight_bytes(env, t_, n_, k_);
    w2_ = random_weight_bytes(env, t_, n_, k_);
    dw_ = mmvs_cases::upload_split(env, t_, w_, n_, k_, true);
    dw2_ = mmvs_cases::upload_split(env, t_, w2_, n_, k_, true);
    int8_t* plain = nullptr;
    x_ = mmvs_cases::random_q8s_input(env, 1, k_, &plain, &dxds_, &dxq_il_);
    part_ = env.uniform((size_t)kParts, 0.2f, 1.8f);
    for (float& v : part_) v *= (float)k_ / (float)kParts;
    dpart_ = env.upload(part_);
    // the final scale as the norm writes it: 1 / sqrtf(sum / k + eps) of the partials in the consumers' order
    float lanes[32];
    for (int l = 0; l < 32; ++l) {
      lanes[l] = 0.0f;
      for (int i = l; i < kParts; i += 32) lanes[l] += part_[(size_t)i];
    }
    for (int o = 16; o > 0; o >>= 1) {
      float t[32];
      for (int l = 0; l < 32; ++l) t[l] = lanes[l] + lanes[l ^ o];
      std::copy(t, t + 32, lanes);
    }
    scale_ = 1.0f / std::sqrt(lanes[0] / (float)k_ + kEps);
    dscale_ = env.upload(std::vector<float>{scale_});
    dy_ = env.alloc_output<float>((size_t)n_);
    dq_ = env.alloc_output<int8_t>(q_bytes());
    dds_ = env.alloc_output<float>((size_t)n_ / 16);
  }
  size_t q_bytes() const { return order_ == cuda::q8s::Order::plain ? (size_t)n_ : (size_t)cuda::q8s::il_row_bytes(n_); }
  std::vector<int8_t> plain(const std::vector<int8_t>& q) const {
    if (order_ == cuda::q8s::Order::plain) return q;
    std::vector<int8_t> out((size_t)n_);
    cuda::q8s::from_interleaved(q.data(), n_, out.data(), order_);
    return out;
  }
  cuda::MmvsParams mv(float* y) const {
    auto p = mmvs_cases::mmvs_params(t_, dw_, &dw2_, n_, k_, 1, dxq_il_, dxds_, y);
    p.glu = glu_;
    p.act_il = true;
    p.split_min_tasks = min_tasks_;
    if (ns_ != 0) {
      p.norm_ss = ns_ == 2 ? dscale_ : dpart_;
      p.norm_ss_n = ns_ == 2 ? 1 : kParts;
      p.norm_eps = kEps;
      p.norm_ss_final = ns_ == 2;
    }
    return p;
  }
  cuda::MmvsGluEmitParams params() const {
    cuda::MmvsGluEmitParams e;
    e.mv = mv(dy_);
    e.out_xq = dq_;
    e.out_xds = dds_;
    e.out_order = order_;
    e.warps = warps_;
    return e;
  }
  cudaError_t launch(Env& env) override {
    cuda::MmvsGluEmitParams bad = params();
    bad.mv.n_rows = n_ - 16;
    refused_ = cuda::launch_mmvs_glu_emit(bad, env.stream()) == cudaErrorInvalidValue;
    bad = params();
    bad.mv.residual = dy_;
    refused_ = refused_ && cuda::launch_mmvs_glu_emit(bad, env.stream()) == cudaErrorInvalidValue;
    bad = params();
    bad.mv.glu = 0;
    refused_ = refused_ && cuda::launch_mmvs_glu_emit(bad, env.stream()) == cudaErrorInvalidValue;
    bad = params();
    bad.warps = 4;
    refused_ = refused_ && cuda::launch_mmvs_glu_emit(bad, env.stream()) == cudaErrorInvalidValue;
    if (warps_ == 8 && k_ > 4096 && t_ != QType::Q4_0) {  // two warps per row at the 65-task rule: not the 8-warp form's
      bad = params();
      bad.mv.split_min_tasks = 65;
      refused_ = refused_ && cuda::launch_mmvs_glu_emit(bad, env.stream()) == cudaErrorNotSupported;
    }
    return cuda::launch_mmvs_glu_emit(params(), env.stream());
  }
  void reference(Env& env) override {
    float* y = env.alloc<float>((size_t)n_);
    ref::check(cuda::launch_mmvs(mv(y), env.stream()), "the mmvs GLU");
    int8_t* q = env.alloc<int8_t>(q_bytes());
    float* ds = env.alloc<float>((size_t)n_ / 16);
    cuda::QuantizeQ8sParams qp;
    qp.x = y;
    qp.n = n_;
    qp.xq = q;
    qp.xds = ds;
    qp.act_il = order_ != cuda::q8s::Order::plain;
    qp.act_il_q6k = order_ == cuda::q8s::Order::il_q6k;
    ref::check(cuda::launch_quantize_q8s(qp, env.stream()), "the quantizer");
    y_ = env.download(y, (size_t)n_);
    q_ = plain(env.download(q, q_bytes()));
    ds_ = env.download(ds, (size_t)n_ / 16);
    const double s = ns_ == 0 ? 1.0 : (double)scale_;
    const auto xf = dequantize_rows(QType::Q8_1, x_, 1, k_);
    ref_ = matmul_f64(dequantize_rows(t_, w_, n_, k_), xf, n_, k_, 1);
    const auto u = matmul_f64(dequantize_rows(t_, w2_, n_, k_), xf, n_, k_, 1);
    for (size_t i = 0; i < ref_.size(); ++i) {
      const double g = s * ref_[i];
      const double a = glu_ == 1 ? mmvs_cases::silu64(g) : 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
      ref_[i] = a * (s * u[i]);
    }
    w_.clear();
    w2_.clear();
  }
  Verdict compare(Env& env) override {
    if (!refused_) return ref::fail("rows not a multiple of 32, a residual, no GLU, 4 warps or (8 warps) a split row was not refused");
    const auto y = env.download(dy_, (size_t)n_);
    const auto q = plain(env.download(dq_, q_bytes()));
    const auto ds = env.download(dds_, (size_t)n_ / 16);
    return ref::all_of({{"y vs the mmvs GLU, bytes", compare_bytes(y.data(), y_.data(), y.size() * 4)},
                        {"quants vs the quantizer, bytes", compare_bytes(q.data(), q_.data(), q.size())},
                        {"scales and sums, bytes", compare_bytes(ds.data(), ds_.data(), ds.size() * 4)},
                        {"y vs f64", ref::norm(y, ref_, mmvs_cases::kTol)}});
  }
  PerfCount perf_count() const override {
    return {2.0 * (double)*qtype_row_bytes(t_, k_) * (double)n_ + (double)k_ * 1.25 + 5.0 * (double)n_, 0};
  }

 private:
  static constexpr int kParts = 128;
  static constexpr float kEps = 1e-6f;
  QType t_;
  int64_t n_, k_;
  int glu_, ns_;
  cuda::q8s::Order order_;
  int warps_, min_tasks_;
  bool refused_ = false;
  float scale_ = 1.0f;
  std::vector<uint8_t> w_, w2_, x_;
  std::vector<float> part_, y_, ds_;
  std::vector<int8_t> q_;
  std::vector<double> ref_;
  DeviceWeight dw_, dw2_;
  int8_t *dxq_il_ = nullptr, *dq_ = nullptr;
  float *dxds_ = nullptr, *dpart_ = nullptr, *dscale_ = nullptr, *dy_ = nullptr, *dds_ = nullptr;
};

void add_emit_norm_cases(Registry& r) {
  // The GLU form: the qwen3-8b and qwen3-32b gate / up shapes, every type, SiLU with the scale from
  // partials (the step's form), a final scale and none; GELU once per type; the Q6_K and plain orders.
  using Ord = cuda::q8s::Order;
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS}) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{12288, 4096}, {25600, 5120}})
      r.add("mmvs_id", ref::cat("mmvs_glu_emit/", qtype_name(t), "/", n, "x", k, "/silu/ns"),
            [=] { return std::make_unique<MmvsGluEmitCase>(t, n, k, 1, 1, Ord::il); });
    r.add("mmvs_id", ref::cat("mmvs_glu_emit/", qtype_name(t), "/12288x4096/gelu/final"),
          [=] { return std::make_unique<MmvsGluEmitCase>(t, 12288, 4096, 2, 2, Ord::il); });
  }
  // 8 warps (two CTAs per SM): the 8B's rows, the 32B's at its split rule (81 tasks: one warp per row).
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS}) {
    r.add("mmvs_id", ref::cat("mmvs_glu_emit/", qtype_name(t), "/12288x4096/silu/ns/w8"),
          [=] { return std::make_unique<MmvsGluEmitCase>(t, 12288, 4096, 1, 1, Ord::il, 8); });
    r.add("mmvs_id", ref::cat("mmvs_glu_emit/", qtype_name(t), "/25600x5120/silu/ns/w8"),
          [=] { return std::make_unique<MmvsGluEmitCase>(t, 25600, 5120, 1, 1, Ord::il, 8, 81); });
  }
  r.add("mmvs_id", "mmvs_glu_emit/Q4_K/12288x4096/gelu/final/w8",
        [] { return std::make_unique<MmvsGluEmitCase>(QType::Q4_K, 12288, 4096, 2, 2, Ord::il, 8); });
  r.add("mmvs_id", "mmvs_glu_emit/Q4_K/12288x4096/silu/no_ns", [] { return std::make_unique<MmvsGluEmitCase>(QType::Q4_K, 12288, 4096, 1, 0, Ord::il); });
  r.add("mmvs_id", "mmvs_glu_emit/Q4_K/12288x4096/silu/ns/q6k_order", [] { return std::make_unique<MmvsGluEmitCase>(QType::Q4_K, 12288, 4096, 1, 1, Ord::il_q6k); });
  r.add("mmvs_id", "mmvs_glu_emit/Q8_0/1056x4096/silu/ns/plain_order", [] { return std::make_unique<MmvsGluEmitCase>(QType::Q8_0, 1056, 4096, 1, 1, Ord::plain); });

  using Form = MmvsEmitNormCase::Form;
  const auto add = [&](QType t, int64_t n, int64_t k, Form f) {
    r.add("mmvs_id", ref::cat("mmvs_emit_norm/", qtype_name(t), "/", n, "x", k, "/w", f.warps,
                              f.split_max_warps == 4 ? "/splitw4" : "", f.q6k ? "/q6k" : "", f.preload ? "" : "/nopreload",
                              f.has_w ? "" : "/no_w", f.both ? "/both" : ""),
          [=] { return std::make_unique<MmvsEmitNormCase>(t, n, k, f); });
  };
  // The qwen3-8b residual launches (o 4096 x 4096, down 4096 x 12288), the qwen3-32b ones (5120 x
  // 8192, 5120 x 25600: 1, 2 and 4 warps' partitions of a row), every mmvs type, both CTA forms.
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS})
    for (int warps : {8, 16, 32})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {4096, 12288}, {5120, 8192}, {5120, 25600}}) {
        Form f;
        f.warps = warps;
        add(t, n, k, f);
      }
  Form f;
  f.q6k = true;
  add(QType::Q6_K, 4096, 12288, f);  // the q4_k_m downs' order
  f.warps = 32;
  add(QType::Q6_K, 4096, 12288, f);
  f.warps = 8;
  add(QType::Q6_K, 4096, 12288, f);
  f = Form{};
  f.split_max_warps = 4;  // a 12288-weight row over 4 sub-warps
  for (QType t : {QType::Q4_K, QType::Q8_0}) {
    add(t, 4096, 12288, f);
    f.warps = 8;
    add(t, 4096, 12288, f);
    f.warps = 16;
  }
  f = Form{};
  f.preload = false;
  add(QType::Q8_0, 4096, 12288, f);
  f = Form{};
  f.warps = 8;
  f.both = true;  // the 8B's o projection (4096 weights: one warp per row) with its whole row in flight
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS}) add(t, 4096, 4096, f);
  add(QType::Q4_0, 5120, 5120, f);  // three groups: two, then one
  f = Form{};
  f.has_w = false;
  add(QType::Q4_K, 4096, 4096, f);
  add(QType::Q4_K, 160, 4096, f);  // 5 CTAs
}

}  // namespace
MEMRA_KC_REGISTER(add_emit_norm_cases);
}  // namespace memra::kc
