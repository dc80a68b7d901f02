// Section "mmvs_id": the residual launch that takes the next deferred norm
// (cuda::launch_mmvs_emit_norm, kernels.mmvs_emit_norm).
// - mmvs_emit_norm/<type>/<n>x<k>/w<warps>[/splitw4][/q6k][/nopreload][/no_w]: one launch against
//   the two it replaces, run here on the same inputs: launch_mmvs with the residual epilogue, then
//   launch_rms_norm_defer on its output. y, the q8s planes of y * w (interleaved), their scales and
//   sums, and the partial sums of squares byte-identical; y also against the f64 product plus the
//   residual (the mmvs tolerance), and the partials' sum against the f64 sum of squares of the
//   kernel's own y (1e-5 relative). Refusals: rows not a multiple of 32, 48 warps, no residual.
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
    if (!refused_) return ref::fail("rows not a multiple of 32, 48 warps or no residual was not refused");
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

void add_emit_norm_cases(Registry& r) {
  using Form = MmvsEmitNormCase::Form;
  const auto add = [&](QType t, int64_t n, int64_t k, Form f) {
    r.add("mmvs_id", ref::cat("mmvs_emit_norm/", qtype_name(t), "/", n, "x", k, "/w", f.warps,
                              f.split_max_warps == 4 ? "/splitw4" : "", f.q6k ? "/q6k" : "", f.preload ? "" : "/nopreload",
                              f.has_w ? "" : "/no_w"),
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
  f.has_w = false;
  add(QType::Q4_K, 4096, 4096, f);
  add(QType::Q4_K, 160, 4096, f);  // 5 CTAs
}

}  // namespace
MEMRA_KC_REGISTER(add_emit_norm_cases);
}  // namespace memra::kc
