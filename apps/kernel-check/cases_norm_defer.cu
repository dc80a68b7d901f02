// Section "mmvs_id": the deferred decode norm (kernels/norm/norm_kernels.h RmsNormDeferParams, for
// kernels.norm_defer) and the matvec side of it (MmvsParams::norm_ss).
// - norm_defer/<cols>/split<S>[/no_w]: the q8s planes of u = x * w byte-identical to the CPU q8_1
//   quantizer of the same products (put in the interleaved order, the poisoned unused bytes kept),
//   and the partials' sum (in the consumer's order) against the f64 sum of squares (1e-5 relative);
//   split 9 refused.
// - mmvs_norm_ss/<type>/<n>x<k>/<form>/cap<c>: the one-token matvec with the scale s = 1 / sqrt(sum
//   of the partials / k + eps) applied to its dot products, against the f64 product of s and the
//   dequantized weights and activation (the mmvs tolerance, cases_mmvs.cu); forms: plain, the SiLU
//   GLU (s inside the activation), the row pairs (two tasks and one), the GLU pairs. The refusals
//   (a residual, 33 partials, a cap without scaled instances) are checked in every case.
// - mmvs_norm_ss_qkv/<types>/<k>/cap<c>: q, k, v in one launch with the scale (three matrices of one
//   type; the mixed Q4_K + Q6_K pair) byte-identical to each matrix launched alone with it.
#include <cmath>
#include <vector>

#include "case_util.h"
#include "cases_mmvs.h"
#include "cases_ref.h"
#include "norm/norm_kernels.h"

namespace memra::kc {
namespace {

using mmvs_cases::DeviceWeight;

// The consumer's sum of the partials: lane l holds partial l, then the xor tree (f64 here: the
// comparison is against the f64 sum of squares with a tolerance).
double partials_sum(const std::vector<float>& p) {
  double s = 0.0;
  for (float v : p) s += (double)v;
  return s;
}

class NormDeferCase : public Case {
 public:
  NormDeferCase(int cols, int split, bool has_w) : cols_(cols), split_(split), has_w_(has_w) {}
  void generate(Env& env) override {
    x_ = env.normal((size_t)cols_, 2.0f);
    w_ = env.normal((size_t)cols_, 0.2f, 1.0f);
    dx_ = env.upload(x_);
    dw_ = env.upload(w_);
    dxq_ = env.alloc_output<int8_t>((size_t)cuda::q8s::il_row_bytes(cols_));
    dxds_ = env.alloc_output<float>((size_t)cols_ / 16);
    n_part_ = cuda::rms_norm_defer_partials(split_);
    dpart_ = env.alloc_output<float>((size_t)n_part_);
  }
  cuda::RmsNormDeferParams params() const {
    cuda::RmsNormDeferParams p;
    p.x = dx_;
    p.w = has_w_ ? dw_ : nullptr;
    p.cols = cols_;
    p.split = split_;
    p.q8s_xq = dxq_;
    p.q8s_xds = dxds_;
    p.q8s_il = true;
    p.partials = dpart_;
    return p;
  }
  cudaError_t launch(Env& env) override {
    cuda::RmsNormDeferParams bad = params();
    bad.split = cuda::kMaxNormSplit + 1;
    refused_ = cuda::launch_rms_norm_defer(bad, env.stream()) == cudaErrorInvalidValue;
    return cuda::launch_rms_norm_defer(params(), env.stream());
  }
  void reference(Env& env) override {
    std::vector<float> u((size_t)cols_);
    for (int i = 0; i < cols_; ++i) u[(size_t)i] = has_w_ ? x_[(size_t)i] * w_[(size_t)i] : x_[(size_t)i];
    std::vector<uint8_t> blocks((size_t)(cols_ / 32) * 36);
    quantize_row(QType::Q8_1, u.data(), blocks.data(), cols_);
    std::vector<int8_t> xq;
    q8_1_to_q8s(blocks, 1, cols_, xq, xds_);
    xq_ = env.download(dxq_, (size_t)cuda::q8s::il_row_bytes(cols_));  // the poison stays where no quant goes
    cuda::q8s::to_interleaved(xq.data(), cols_, xq_.data(), cuda::q8s::Order::il);
    ss_ = 0.0;
    for (float v : x_) ss_ += (double)v * (double)v;
  }
  Verdict compare(Env& env) override {
    if (!refused_) return ref::fail(ref::cat("split ", cuda::kMaxNormSplit + 1, " was not refused"));
    const auto q = env.download(dxq_, xq_.size());
    const auto ds = env.download(dxds_, xds_.size());
    const auto part = env.download(dpart_, (size_t)n_part_);
    const double got = partials_sum(part), rel = std::fabs(got - ss_) / ss_;
    Verdict v = ref::all_of({{"quants", compare_bytes(q.data(), xq_.data(), q.size())},
                             {"scales and sums", compare_bytes(ds.data(), xds_.data(), ds.size() * 4)}});
    if (v.pass && !(rel <= 1e-5))
      return ref::fail(ref::cat("sum of squares ", got, " from ", n_part_, " partials against ", ss_, " (f64): ", rel, " relative"));
    v.detail += ref::cat("; ", n_part_, " partials, sum of squares ", rel, " relative to f64");
    return v;
  }
  PerfCount perf_count() const override { return {(double)cols_ * 9.25, 0}; }

 private:
  int cols_, split_;
  bool has_w_;
  bool refused_ = false;
  int n_part_ = 0;
  std::vector<float> x_, w_, xds_;
  std::vector<int8_t> xq_;
  double ss_ = 0.0;
  float *dx_ = nullptr, *dw_ = nullptr, *dxds_ = nullptr, *dpart_ = nullptr;
  int8_t* dxq_ = nullptr;
};

// form: 0 plain, 1 SiLU GLU, 2 row pairs (two tasks), 3 row pairs (one task), 4 SiLU GLU pairs.
class MmvsNormSsCase : public Case {
 public:
  MmvsNormSsCase(QType t, int64_t n, int64_t k, int form, int cap, int n_part)
      : t_(t), n_(n), k_(k), form_(form), cap_(cap), n_part_(n_part) {}
  void generate(Env& env) override {
    w_ = random_weight_bytes(env, t_, n_, k_);
    dw_ = mmvs_cases::upload_split(env, t_, w_, n_, k_, true);
    if (glu()) {
      w2_ = random_weight_bytes(env, t_, n_, k_);
      dw2_ = mmvs_cases::upload_split(env, t_, w2_, n_, k_, true);
    }
    int8_t* plain = nullptr;
    xq1_ = mmvs_cases::random_q8s_input(env, 1, k_, &plain, &dxds_, &dxq_il_);
    // Partials of a sum of squares near k (mean square ~1): s near 1, each partial its own size.
    part_ = env.uniform((size_t)n_part_, 0.2f, 1.8f);
    for (float& v : part_) v *= (float)k_ / (float)n_part_;
    dpart_ = env.upload(part_);
    dy_ = env.alloc_output<float>((size_t)n_);
  }
  cuda::MmvsParams params() const {
    auto p = mmvs_cases::mmvs_params(t_, dw_, glu() ? &dw2_ : nullptr, n_, k_, 1, dxq_il_, dxds_, dy_);
    p.act_il = true;
    p.min_blocks = p.min_blocks_glu = cap_;
    p.row_pairs = form_ >= 2;
    p.row_pair_one_task = form_ >= 3;
    p.norm_ss = dpart_;
    p.norm_ss_n = n_part_;
    p.norm_eps = kEps;
    return p;
  }
  cudaError_t launch(Env& env) override {
    cuda::MmvsParams bad = params();
    bad.norm_ss_n = 33;
    refusals_ = cuda::launch_mmvs(bad, env.stream()) == cudaErrorInvalidValue;
    bad = params();
    bad.min_blocks = bad.min_blocks_glu = 8;
    const cudaError_t e8 = cuda::launch_mmvs(bad, env.stream());
    refusals_ = refusals_ && (e8 == cudaErrorNotSupported || e8 == cudaErrorInvalidValue);
    if (!glu()) {
      bad = params();
      bad.residual = dy_;
      refusals_ = refusals_ && cuda::launch_mmvs(bad, env.stream()) == cudaErrorInvalidValue;
    }
    return cuda::launch_mmvs(params(), env.stream());
  }
  void reference(Env&) override {
    const double s = 1.0 / std::sqrt(partials_sum(part_) / (double)k_ + (double)kEps);
    const auto xf = dequantize_rows(QType::Q8_1, xq1_, 1, k_);
    ref_ = matmul_f64(dequantize_rows(t_, w_, n_, k_), xf, n_, k_, 1);
    if (glu()) {
      const auto u = matmul_f64(dequantize_rows(t_, w2_, n_, k_), xf, n_, k_, 1);
      for (size_t i = 0; i < ref_.size(); ++i) ref_[i] = mmvs_cases::silu64(s * ref_[i]) * (s * u[i]);
    } else {
      for (double& v : ref_) v *= s;
    }
    w_.clear();
    w2_.clear();
  }
  Verdict compare(Env& env) override {
    if (!refusals_) return ref::fail("a residual, 33 partials or cap 8 with norm_ss was not refused");
    return ref::norm(env.download(dy_, (size_t)n_), ref_, mmvs_cases::kTol);
  }
  PerfCount perf_count() const override {
    return {(double)*qtype_row_bytes(t_, k_) * (double)n_ * (glu() ? 2 : 1) + (double)k_ * 1.25 + 4.0 * (double)n_, 0};
  }

 private:
  static constexpr float kEps = 1e-6f;
  bool glu() const { return form_ == 1 || form_ == 4; }
  QType t_;
  int64_t n_, k_;
  int form_, cap_, n_part_;
  bool refusals_ = false;
  std::vector<uint8_t> w_, w2_, xq1_;
  std::vector<float> part_;
  std::vector<double> ref_;
  DeviceWeight dw_, dw2_;
  int8_t* dxq_il_ = nullptr;
  float *dxds_ = nullptr, *dpart_ = nullptr, *dy_ = nullptr;
};

// q, k, v in one launch with the scale (MmvsParams::norm_ss with extra segments: three matrices of
// one type, or the mixed pair Q4_K q, k + Q6_K v) against each matrix launched alone with the scale:
// byte-identical rows (each row's operations do not depend on the launch), and against f64.
class MmvsNormSsSegCase : public Case {
 public:
  MmvsNormSsSegCase(QType t, QType tv, int64_t k, int64_t rq, int64_t rkv, int cap)
      : t_{t, t, tv}, k_(k), rows_{rq, rkv, rkv}, cap_(cap) {}
  void generate(Env& env) override {
    for (int i = 0; i < 3; ++i) {
      w_[i] = random_weight_bytes(env, t_[i], rows_[i], k_);
      dw_[i] = mmvs_cases::upload_split(env, t_[i], w_[i], rows_[i], k_, true);
      dy_[i] = env.alloc_output<float>((size_t)rows_[i]);
    }
    int8_t* plain = nullptr;
    x_ = mmvs_cases::random_q8s_input(env, 1, k_, &plain, &dxds_, &dxq_il_);
    part_ = env.uniform(32, 0.2f, 1.8f);
    for (float& v : part_) v *= (float)k_ / 32.0f;
    dpart_ = env.upload(part_);
  }
  cuda::MmvsParams one(int i, float* y) const {
    auto p = mmvs_cases::mmvs_params(t_[i], dw_[i], nullptr, rows_[i], k_, 1, dxq_il_, dxds_, y);
    p.act_il = true;
    p.split_max_warps = 2;
    p.min_blocks = cap_;
    p.norm_ss = dpart_;
    p.norm_ss_n = 32;
    p.norm_eps = 1e-6f;
    return p;
  }
  cudaError_t launch(Env& env) override {
    cuda::MmvsParams p = one(0, dy_[0]);
    p.n_extra = 2;
    for (int i = 1; i < 3; ++i) {
      auto& e = p.extra[i - 1];
      e.w = dw_[i].w;
      e.w_d = dw_[i].w_d;
      e.w_aux = dw_[i].w_aux;
      e.n_rows = rows_[i];
      e.y = dy_[i];
      e.type2 = t_[i] != t_[0];
    }
    if (t_[2] != t_[0]) p.w_type2 = t_[2];
    return cuda::launch_mmvs(p, env.stream());
  }
  void reference(Env& env) override {
    const double s = 1.0 / std::sqrt(partials_sum(part_) / (double)k_ + 1e-6);
    const auto xf = dequantize_rows(QType::Q8_1, x_, 1, k_);
    for (int i = 0; i < 3; ++i) {
      float* y = env.alloc<float>((size_t)rows_[i]);
      ref::check(cuda::launch_mmvs(one(i, y), env.stream()), "one matrix with the scale");
      sep_[i] = env.download(y, (size_t)rows_[i]);
      auto r = matmul_f64(dequantize_rows(t_[i], w_[i], rows_[i], k_), xf, rows_[i], k_, 1);
      for (double& v : r) v *= s;
      ref_.insert(ref_.end(), r.begin(), r.end());
      w_[i].clear();
    }
  }
  Verdict compare(Env& env) override {
    std::vector<float> got, sep;
    for (int i = 0; i < 3; ++i) {
      const auto g = env.download(dy_[i], (size_t)rows_[i]);
      got.insert(got.end(), g.begin(), g.end());
      sep.insert(sep.end(), sep_[i].begin(), sep_[i].end());
    }
    return ref::all_of({{"one launch vs each matrix alone, bytes", compare_bytes(got.data(), sep.data(), got.size() * 4)},
                        {"f64 reference", ref::norm(got, ref_, mmvs_cases::kTol)}});
  }
  PerfCount perf_count() const override {
    double wb = 0;
    for (int i = 0; i < 3; ++i) wb += (double)*qtype_row_bytes(t_[i], k_) * (double)rows_[i];
    return {wb + (double)k_ * 1.25, 0};
  }

 private:
  QType t_[3];
  int64_t k_;
  int64_t rows_[3];
  int cap_;
  std::vector<uint8_t> w_[3], x_;
  std::vector<float> part_, sep_[3];
  std::vector<double> ref_;
  DeviceWeight dw_[3];
  int8_t* dxq_il_ = nullptr;
  float *dxds_ = nullptr, *dpart_ = nullptr;
  float* dy_[3] = {};
};

void add_norm_defer_cases(Registry& r) {
  // 4096 / 5120: the qwen3 widths; 4160: chunks past a block's 128 threads; 160: fewer chunks than
  // blocks x threads.
  for (int cols : {4096, 5120, 4160, 160})
    for (int split : {1, 8})
      r.add("mmvs_id", ref::cat("norm_defer/", cols, "/split", split, "/bytes_vs_cpu_q8_1"),
            [=] { return std::make_unique<NormDeferCase>(cols, split, true); });
  r.add("mmvs_id", "norm_defer/4096/split4/no_w/bytes_vs_cpu_q8_1", [] { return std::make_unique<NormDeferCase>(4096, 4, false); });
  static const char* kForm[] = {"plain", "glu", "rp", "rp1", "gp"};
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1024, 4096}, {514, 5120}, {256, 12288}})
      for (int form = 0; form < 5; ++form)
        for (int cap : {0, 5, 6}) {
          if (cap == 5 && form != 1 && form != 4) continue;  // 5: the GLU launches' cap
          r.add("mmvs_id", ref::cat("mmvs_norm_ss/", qtype_name(t), "/", n, "x", k, "/", kForm[form], "/cap", cap),
                [=] { return std::make_unique<MmvsNormSsCase>(t, n, k, form, cap, 32); });
        }
  // The q/k/v launches of the step: three matrices of one type, and the mixed Q4_K + Q6_K pair (the
  // qwen3-8b / qwen3-32b widths and row counts: 4096 q + 1024 k, v; 8192 q + 1024 k, v).
  for (int cap : {0, 6}) {
    for (QType t : {QType::Q4_K, QType::Q8_0, QType::Q4_0, QType::Q6_K})
      r.add("mmvs_id", ref::cat("mmvs_norm_ss_qkv/", qtype_name(t), "/4096/cap", cap, "/vs_each_alone_bytes"),
            [=] { return std::make_unique<MmvsNormSsSegCase>(t, t, 4096, 4096, 1024, cap); });
    for (auto [k, rq] : {std::pair<int64_t, int64_t>{4096, 4096}, {5120, 8192}})
      r.add("mmvs_id", ref::cat("mmvs_norm_ss_qkv/Q4_K+Q6_K/", k, "/cap", cap, "/vs_each_alone_bytes"),
            [=] { return std::make_unique<MmvsNormSsSegCase>(QType::Q4_K, QType::Q6_K, k, rq, 1024, cap); });
  }
  // Fewer partials than lanes (a deferred norm over fewer blocks).
  r.add("mmvs_id", "mmvs_norm_ss/Q4_K/1024x4096/glu/cap5/4_partials",
        [] { return std::make_unique<MmvsNormSsCase>(QType::Q4_K, 1024, 4096, 1, 5, 4); });
}

}  // namespace
MEMRA_KC_REGISTER(add_norm_defer_cases);
}  // namespace memra::kc
