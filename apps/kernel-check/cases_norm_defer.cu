// Section "mmvs_id": the deferred decode norm (kernels/norm/norm_kernels.h RmsNormDeferParams, for
// kernels.norm_defer) and the matvec side of it (MmvsParams::norm_ss).
// - norm_defer/<cols>/split<S>[/no_w]: the q8s planes of u = x * w byte-identical to the CPU q8_1
//   quantizer of the same products (put in the interleaved order, the poisoned unused bytes kept),
//   the partials (one per 32-element block) byte-identical to the host's float replay of
//   defer_block_ss, and their sum against the f64 sum of squares (1e-5 relative); split 9 refused.
// - mmvs_norm_ss/<type>/<n>x<k>/<form>/cap<c>: the one-token matvec with the scale s = 1 / sqrt(sum
//   of the partials / k + eps) applied to its dot products, against the f64 product of s and the
//   dequantized weights and activation (the mmvs tolerance, cases_mmvs.cu); forms: plain, the SiLU
//   GLU (s inside the activation), the row pairs (two tasks and one), the GLU pairs. The refusals
//   (a residual, kNormDeferMaxPartials + 1 partials, a cap without scaled instances) are checked in
//   every case.
// - mmvs_norm_ss_qkv/<types>/<k>/cap<c>: q, k, v in one launch with the scale (three matrices of one
//   type; the mixed Q4_K + Q6_K pair) byte-identical to each matrix launched alone with it.
// - norm_defer/3x<cols>/...: a verify batch's rows (the plain order, per-row partials), and
//   mmvs_norm_ss_m3/*: the m = 3 launch with per-row partials against f64 and, row by row, byte-
//   identical to the m = 1 launch of that row (decode == verify).
// - .../scale and .../final: the scale computed by the norm (RmsNormDeferParams::scale, one block
//   per row) byte-identical to the host's xor tree over the partials launch's partials and
//   1 / sqrtf(sum / cols + eps) (IEEE float, as norm_scale), its planes as above; the launches taking
//   that scale (MmvsParams::norm_ss_final) byte-identical to the same launch from the partials.
#include <cmath>
#include <vector>

#include "case_util.h"
#include "cases_mmvs.h"
#include "cases_ref.h"
#include "norm/norm_kernels.h"

namespace memra::kc {
namespace {

using mmvs_cases::DeviceWeight;

// The consumer's sum of the partials: lane l sums partials l, l + 32, ..., then the xor tree (f64 here: the
// comparison is against the f64 sum of squares with a tolerance).
double partials_sum(const std::vector<float>& p) {
  double s = 0.0;
  for (float v : p) s += (double)v;
  return s;
}

// The scale a consumer computes from n partials, in float as the GPU does (norm_math.cuh
// defer_lane_sum): lane l sums p[l], p[l + 32], ... from 0, v_l += v_(l ^ o) for o = 16 .. 1 (every
// add correctly rounded), then 1 / sqrtf(v_0 / cols + eps).
float scale_of_partials(const float* p, int n, int64_t cols, float eps) {
  float v[32];
  for (int l = 0; l < 32; ++l) {
    v[l] = 0.0f;
    for (int i = l; i < n; i += 32) v[l] += p[i];
  }
  for (int o = 16; o > 0; o >>= 1) {
    float t[32];
    for (int l = 0; l < 32; ++l) t[l] = v[l] + v[l ^ o];
    std::copy(t, t + 32, v);
  }
  return 1.0f / std::sqrt(v[0] / (float)cols + eps);
}

// The deferred norm's partial of each 32-element block of a row (norm_math.cuh defer_block_ss), in
// float as the GPU does: lane k of the block's 8 sums the squares of elements 4k .. 4k + 3 in order
// from 0, then v_k += v_(k ^ o) for o = 1, 2, 4.
std::vector<float> block_partials(const float* x, int64_t cols) {
  std::vector<float> out((size_t)(cols / 32));
  for (int64_t b = 0; b < cols / 32; ++b) {
    float v[8];
    for (int k = 0; k < 8; ++k) {
      v[k] = 0.0f;
      for (int e = 0; e < 4; ++e) {
        const float u = x[32 * b + 4 * k + e];
        v[k] += u * u;
      }
    }
    for (int o = 1; o < 8; o <<= 1) {
      float t[8];
      for (int k = 0; k < 8; ++k) t[k] = v[k] + v[k ^ o];
      std::copy(t, t + 8, v);
    }
    out[(size_t)b] = v[0];
  }
  return out;
}

class NormDeferCase : public Case {
 public:
  // rows > 1: a verify batch, the planes in the plain order, row r's partials after row r - 1's.
  // scale: the launch under test writes the rows' scales (RmsNormDeferParams::scale); a partials
  // launch of the same input (its own planes, in reference()) gives the partials they must come from.
  NormDeferCase(int cols, int split, bool has_w, int rows = 1, bool scale = false)
      : cols_(cols), split_(split), rows_(rows), has_w_(has_w), scale_(scale) {}
  void generate(Env& env) override {
    x_ = env.normal((size_t)(rows_ * cols_), 2.0f);
    w_ = env.normal((size_t)cols_, 0.2f, 1.0f);
    dx_ = env.upload(x_);
    dw_ = env.upload(w_);
    dxq_ = env.alloc_output<int8_t>(xq_bytes());
    dxds_ = env.alloc_output<float>((size_t)(rows_ * cols_) / 16);
    n_part_ = cuda::rms_norm_defer_partials(cols_);
    dpart_ = env.alloc_output<float>((size_t)(rows_ * n_part_));
    if (scale_) {
      dscale_ = env.alloc_output<float>((size_t)rows_);
      dxq2_ = env.alloc_output<int8_t>(xq_bytes());
      dxds2_ = env.alloc_output<float>((size_t)(rows_ * cols_) / 16);
    }
  }
  size_t xq_bytes() const { return rows_ == 1 ? (size_t)cuda::q8s::il_row_bytes(cols_) : (size_t)(rows_ * cols_); }
  cuda::RmsNormDeferParams params() const {
    cuda::RmsNormDeferParams p;
    p.x = dx_;
    p.rows = rows_;
    p.w = has_w_ ? dw_ : nullptr;
    p.cols = cols_;
    p.split = split_;
    p.q8s_xq = dxq_;
    p.q8s_xds = dxds_;
    p.q8s_il = rows_ == 1;
    p.partials = dpart_;
    if (scale_) {  // the partials launch writes its own planes
      p.q8s_xq = dxq2_;
      p.q8s_xds = dxds2_;
    }
    return p;
  }
  cuda::RmsNormDeferParams scale_params() const {
    cuda::RmsNormDeferParams p = params();
    p.q8s_xq = dxq_;
    p.q8s_xds = dxds_;
    p.partials = nullptr;
    p.scale = dscale_;
    p.eps = kEps;
    return p;
  }
  cudaError_t launch(Env& env) override {
    cuda::RmsNormDeferParams bad = params();
    bad.split = cuda::kMaxNormSplit + 1;
    refused_ = cuda::launch_rms_norm_defer(bad, env.stream()) == cudaErrorInvalidValue;
    if (!scale_) return cuda::launch_rms_norm_defer(params(), env.stream());
    bad = scale_params();
    bad.partials = dpart_;  // both outputs
    refused_ = refused_ && cuda::launch_rms_norm_defer(bad, env.stream()) == cudaErrorInvalidValue;
    bad.partials = bad.scale = nullptr;  // neither
    refused_ = refused_ && cuda::launch_rms_norm_defer(bad, env.stream()) == cudaErrorInvalidValue;
    return cuda::launch_rms_norm_defer(scale_params(), env.stream());  // alone: --perf times this launch
  }
  void reference(Env& env) override {
    if (scale_) ref::check(cuda::launch_rms_norm_defer(params(), env.stream()), "the partials launch");
    std::vector<float> u((size_t)(rows_ * cols_));
    for (size_t i = 0; i < u.size(); ++i) u[i] = has_w_ ? x_[i] * w_[i % (size_t)cols_] : x_[i];
    std::vector<uint8_t> blocks((size_t)(rows_ * (cols_ / 32)) * 36);
    for (int r = 0; r < rows_; ++r)
      quantize_row(QType::Q8_1, u.data() + (size_t)r * cols_, blocks.data() + (size_t)r * (cols_ / 32) * 36, cols_);
    std::vector<int8_t> xq;
    q8_1_to_q8s(blocks, rows_, cols_, xq, xds_);
    if (rows_ == 1) {
      xq_ = env.download(dxq_, xq_bytes());  // the poison stays where no quant goes
      cuda::q8s::to_interleaved(xq.data(), cols_, xq_.data(), cuda::q8s::Order::il);
    } else {
      xq_ = std::move(xq);
    }
    ss_.assign((size_t)rows_, 0.0);
    for (size_t i = 0; i < x_.size(); ++i) ss_[i / (size_t)cols_] += (double)x_[i] * (double)x_[i];
    part_.clear();
    for (int r = 0; r < rows_; ++r) {
      const auto pr = block_partials(x_.data() + (size_t)r * cols_, cols_);
      part_.insert(part_.end(), pr.begin(), pr.end());
    }
  }
  Verdict compare(Env& env) override {
    if (!refused_) return ref::fail(ref::cat("split ", cuda::kMaxNormSplit + 1, " (or both / neither of partials and scale) was not refused"));
    const auto q = env.download(dxq_, xq_.size());
    const auto ds = env.download(dxds_, xds_.size());
    const auto part = env.download(dpart_, (size_t)(rows_ * n_part_));
    Verdict v = ref::all_of({{"quants", compare_bytes(q.data(), xq_.data(), q.size())},
                             {"scales and sums", compare_bytes(ds.data(), xds_.data(), ds.size() * 4)}});
    if (v.pass) {
      const Verdict vp = compare_bytes(part.data(), part_.data(), part.size() * 4);
      if (!vp.pass) return ref::fail("partials vs the host's per-block rule: " + vp.detail);
    }
    double worst = 0.0;
    for (int r = 0; r < rows_; ++r) {
      const std::vector<float> pr(part.begin() + (ptrdiff_t)r * n_part_, part.begin() + (ptrdiff_t)(r + 1) * n_part_);
      const double got = partials_sum(pr), rel = std::fabs(got - ss_[(size_t)r]) / ss_[(size_t)r];
      worst = std::max(worst, rel);
      if (v.pass && !(rel <= 1e-5))
        return ref::fail(ref::cat("row ", r, ": sum of squares ", got, " from ", n_part_, " partials against ",
                                  ss_[(size_t)r], " (f64): ", rel, " relative"));
    }
    v.detail += ref::cat("; ", n_part_, " partials per row, sums of squares within ", worst, " of f64");
    if (scale_ && v.pass) {  // each row's scale: the host's float xor tree and root of its partials
      const auto sc = env.download(dscale_, (size_t)rows_);
      std::vector<float> want((size_t)rows_);
      for (int r = 0; r < rows_; ++r) want[(size_t)r] = scale_of_partials(part.data() + (ptrdiff_t)r * n_part_, n_part_, cols_, kEps);
      const Verdict vs = compare_bytes(sc.data(), want.data(), sc.size() * 4);
      if (!vs.pass) return ref::fail("scales: " + vs.detail);
      v.detail += ref::cat("; ", rows_, " scales identical to the partials' (", sc[0], ")");
    }
    return v;
  }
  PerfCount perf_count() const override { return {(double)cols_ * 9.25, 0}; }

 private:
  static constexpr float kEps = 1e-6f;
  int cols_, split_, rows_;
  bool has_w_, scale_;
  bool refused_ = false;
  int n_part_ = 0;
  std::vector<float> x_, w_, xds_, part_;
  std::vector<int8_t> xq_;
  std::vector<double> ss_;
  float *dx_ = nullptr, *dw_ = nullptr, *dxds_ = nullptr, *dpart_ = nullptr, *dscale_ = nullptr, *dxds2_ = nullptr;
  int8_t *dxq_ = nullptr, *dxq2_ = nullptr;
};

// form: 0 plain, 1 SiLU GLU, 2 row pairs (two tasks), 3 row pairs (one task), 4 SiLU GLU pairs.
class MmvsNormSsCase : public Case {
 public:
  // final: the launch takes the scale (MmvsParams::norm_ss_final) the host computed from the
  // partials as the norm does, and must give the bytes of the launch from the partials.
  MmvsNormSsCase(QType t, int64_t n, int64_t k, int form, int cap, int n_part, bool final = false)
      : t_(t), n_(n), k_(k), form_(form), cap_(cap), n_part_(n_part), final_(final) {}
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
    dscale_ = env.upload(std::vector<float>{scale_of_partials(part_.data(), n_part_, k_, kEps)});
    dy_ = env.alloc_output<float>((size_t)n_);
  }
  cuda::MmvsParams params(bool final) const {
    auto p = mmvs_cases::mmvs_params(t_, dw_, glu() ? &dw2_ : nullptr, n_, k_, 1, dxq_il_, dxds_, dy_);
    p.act_il = true;
    p.min_blocks = p.min_blocks_glu = cap_;
    p.row_pairs = form_ >= 2;
    p.row_pair_one_task = form_ >= 3;
    p.norm_ss = final ? dscale_ : dpart_;
    p.norm_ss_n = final ? 1 : n_part_;
    p.norm_eps = kEps;
    p.norm_ss_final = final;
    return p;
  }
  cuda::MmvsParams params() const { return params(final_); }
  cudaError_t launch(Env& env) override {
    cuda::MmvsParams bad = params();
    bad.norm_ss_n = cuda::kNormDeferMaxPartials + 1;
    refusals_ = cuda::launch_mmvs(bad, env.stream()) == cudaErrorInvalidValue;
    if (final_) {
      bad = params();
      bad.norm_ss_n = 2;
      refusals_ = refusals_ && cuda::launch_mmvs(bad, env.stream()) == cudaErrorInvalidValue;
    }
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
  void reference(Env& env) override {
    if (final_) {  // the same launch from the partials
      float* y = env.alloc<float>((size_t)n_);
      cuda::MmvsParams p = params(false);
      p.y = y;
      ref::check(cuda::launch_mmvs(p, env.stream()), "the launch from the partials");
      from_partials_ = env.download(y, (size_t)n_);
    }
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
    if (!refusals_) return ref::fail("a residual, 257 partials, cap 8 (or a final scale with 2) with norm_ss was not refused");
    const auto got = env.download(dy_, (size_t)n_);
    if (!final_) return ref::norm(got, ref_, mmvs_cases::kTol);
    return ref::all_of({{"vs the launch from the partials, bytes", compare_bytes(got.data(), from_partials_.data(), got.size() * 4)},
                        {"f64 reference", ref::norm(got, ref_, mmvs_cases::kTol)}});
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
  bool final_;
  bool refusals_ = false;
  std::vector<uint8_t> w_, w2_, xq1_;
  std::vector<float> part_, from_partials_;
  std::vector<double> ref_;
  DeviceWeight dw_, dw2_;
  int8_t* dxq_il_ = nullptr;
  float *dxds_ = nullptr, *dpart_ = nullptr, *dscale_ = nullptr, *dy_ = nullptr;
};

// q, k, v in one launch with the scale (MmvsParams::norm_ss with extra segments: three matrices of
// one type, or the mixed pair Q4_K q, k + Q6_K v) against each matrix launched alone with the scale:
// byte-identical rows (each row's operations do not depend on the launch), and against f64.
class MmvsNormSsSegCase : public Case {
 public:
  // final: every launch takes the scale the host computed from the partials (norm_ss_final).
  MmvsNormSsSegCase(QType t, QType tv, int64_t k, int64_t rq, int64_t rkv, int cap, bool final = false)
      : t_{t, t, tv}, k_(k), rows_{rq, rkv, rkv}, cap_(cap), final_(final) {}
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
    dscale_ = env.upload(std::vector<float>{scale_of_partials(part_.data(), 32, k_, 1e-6f)});
  }
  cuda::MmvsParams one(int i, float* y) const {
    auto p = mmvs_cases::mmvs_params(t_[i], dw_[i], nullptr, rows_[i], k_, 1, dxq_il_, dxds_, y);
    p.act_il = true;
    p.split_max_warps = 2;
    p.min_blocks = cap_;
    p.norm_ss = final_ ? dscale_ : dpart_;
    p.norm_ss_n = final_ ? 1 : 32;
    p.norm_eps = 1e-6f;
    p.norm_ss_final = final_;
    return p;
  }
  cudaError_t launch(Env& env) override {
    cuda::MmvsParams p = one(0, dy_[0]);
    p.n_extra = 2;
    for (int i = 1; i < 3; ++i) p.extra[i - 1] = mmvs_cases::segment_of(dw_[i], rows_[i], dy_[i], t_[i] != t_[0]);
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
    mmvs_cases::gather_qkv(env, dy_, rows_, sep_, got, sep);
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
  bool final_;
  std::vector<uint8_t> w_[3], x_;
  std::vector<float> part_, sep_[3];
  std::vector<double> ref_;
  DeviceWeight dw_[3];
  int8_t* dxq_il_ = nullptr;
  float *dxds_ = nullptr, *dpart_ = nullptr, *dscale_ = nullptr;
  float* dy_[3] = {};
};

// A verify batch (m = 3, the plain order) with per-row partials (MmvsParams::norm_ss at m > 1):
// against f64 of each row's scale times its product, and each row byte-identical to the m = 1
// launch (the interleaved order, that row's planes and partials): decode == verify.
class MmvsNormSsM3Case : public Case {
 public:
  // final: per-row scales (MmvsParams::norm_ss_final) from the host's xor tree of each row's
  // partials, and the m = 3 launch also byte-identical to the m = 3 launch from the partials.
  MmvsNormSsM3Case(QType t, int64_t n, int64_t k, bool glu, bool final = false)
      : t_(t), n_(n), k_(k), glu_(glu), final_(final) {}
  void generate(Env& env) override {
    w_ = random_weight_bytes(env, t_, n_, k_);
    dw_ = mmvs_cases::upload_split(env, t_, w_, n_, k_, true);
    if (glu_) {
      w2_ = random_weight_bytes(env, t_, n_, k_);
      dw2_ = mmvs_cases::upload_split(env, t_, w2_, n_, k_, true);
    }
    const auto x = env.normal((size_t)(kM * k_));
    blocks_.resize((size_t)(kM * (k_ / 32)) * 36);
    for (int j = 0; j < kM; ++j)
      quantize_row(QType::Q8_1, x.data() + j * k_, blocks_.data() + (size_t)j * (k_ / 32) * 36, k_);
    std::vector<int8_t> xq;
    std::vector<float> xds;
    q8_1_to_q8s(blocks_, kM, k_, xq, xds);
    dxq_ = env.upload(xq);
    dxds_ = env.upload(xds);
    for (int j = 0; j < kM; ++j) {  // each row alone in the interleaved order, for the m = 1 launches
      const std::vector<int8_t> row(xq.begin() + (ptrdiff_t)(j * k_), xq.begin() + (ptrdiff_t)((j + 1) * k_));
      dxq_il_[j] = env.upload(mmvs_cases::act_il_order(row, k_));
    }
    part_ = env.uniform((size_t)(kM * kParts), 0.2f, 1.8f);
    for (float& v : part_) v *= (float)k_ / (float)kParts;
    dpart_ = env.upload(part_);
    std::vector<float> sc(kM);
    for (int j = 0; j < kM; ++j) sc[(size_t)j] = scale_of_partials(part_.data() + j * kParts, kParts, k_, 1e-6f);
    dscale_ = env.upload(sc);
    dy_ = env.alloc_output<float>((size_t)(kM * n_));
  }
  // Row j's norm input: its partials, or with final its scale.
  const float* norm_of(int j, bool final) const { return final ? dscale_ + j : dpart_ + j * kParts; }
  cuda::MmvsParams params(int m, const int8_t* xq, const float* xds, const float* part, float* y, bool final) const {
    auto p = mmvs_cases::mmvs_params(t_, dw_, glu_ ? &dw2_ : nullptr, n_, k_, m, xq, xds, y);
    p.act_il = m == 1;
    p.norm_ss = part;
    p.norm_ss_n = final ? 1 : kParts;
    p.norm_eps = 1e-6f;
    p.norm_ss_final = final;
    return p;
  }
  cudaError_t launch(Env& env) override {
    return cuda::launch_mmvs(params(kM, dxq_, dxds_, norm_of(0, final_), dy_, final_), env.stream());
  }
  void reference(Env& env) override {
    const auto xf = dequantize_rows(QType::Q8_1, blocks_, kM, k_);
    ref_ = matmul_f64(dequantize_rows(t_, w_, n_, k_), xf, n_, k_, kM);
    std::vector<double> u;
    if (glu_) u = matmul_f64(dequantize_rows(t_, w2_, n_, k_), xf, n_, k_, kM);
    for (int j = 0; j < kM; ++j) {
      const std::vector<float> pj(part_.begin() + j * kParts, part_.begin() + (j + 1) * kParts);
      const double s = 1.0 / std::sqrt(partials_sum(pj) / (double)k_ + 1e-6);
      for (int64_t r = 0; r < n_; ++r) {
        double& v = ref_[(size_t)(j * n_ + r)];
        v = glu_ ? mmvs_cases::silu64(s * v) * (s * u[(size_t)(j * n_ + r)]) : s * v;
      }
      float* y1 = env.alloc<float>((size_t)n_);
      ref::check(cuda::launch_mmvs(params(1, dxq_il_[j], dxds_ + j * (k_ / 32) * 2, norm_of(j, final_), y1, final_), env.stream()),
                 "the m = 1 launch of one row");
      const auto got1 = env.download(y1, (size_t)n_);
      one_.insert(one_.end(), got1.begin(), got1.end());
    }
    if (final_) {
      float* y3 = env.alloc<float>((size_t)(kM * n_));
      ref::check(cuda::launch_mmvs(params(kM, dxq_, dxds_, norm_of(0, false), y3, false), env.stream()),
                 "the m = 3 launch from the partials");
      from_partials_ = env.download(y3, (size_t)(kM * n_));
    }
    w_.clear();
    w2_.clear();
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dy_, (size_t)(kM * n_));
    if (final_)
      return ref::all_of({{"each row vs its m = 1 launch, bytes", compare_bytes(got.data(), one_.data(), got.size() * 4)},
                          {"vs the launch from the partials, bytes", compare_bytes(got.data(), from_partials_.data(), got.size() * 4)},
                          {"f64 reference", ref::norm(got, ref_, mmvs_cases::kTol)}});
    return ref::all_of({{"each row vs its m = 1 launch, bytes", compare_bytes(got.data(), one_.data(), got.size() * 4)},
                        {"f64 reference", ref::norm(got, ref_, mmvs_cases::kTol)}});
  }
  PerfCount perf_count() const override {
    return {(double)*qtype_row_bytes(t_, k_) * (double)n_ * (glu_ ? 2 : 1) + (double)(kM * k_) * 1.25, 0};
  }

 private:
  static constexpr int kM = 3, kParts = 32;
  QType t_;
  int64_t n_, k_;
  bool glu_, final_;
  std::vector<uint8_t> w_, w2_, blocks_;
  std::vector<float> part_, one_, from_partials_;
  std::vector<double> ref_;
  DeviceWeight dw_, dw2_;
  int8_t* dxq_ = nullptr;
  int8_t* dxq_il_[kM] = {};
  float *dxds_ = nullptr, *dpart_ = nullptr, *dscale_ = nullptr, *dy_ = nullptr;
};

void add_norm_defer_cases(Registry& r) {
  // 4096 / 5120: the qwen3 widths; 4160: chunks past a block's 128 threads; 160: fewer chunks than
  // blocks x threads.
  for (int cols : {4096, 5120, 4160, 160})
    for (int split : {1, 8})
      r.add("mmvs_id", ref::cat("norm_defer/", cols, "/split", split, "/bytes_vs_cpu_q8_1"),
            [=] { return std::make_unique<NormDeferCase>(cols, split, true); });
  r.add("mmvs_id", "norm_defer/4096/split4/no_w/bytes_vs_cpu_q8_1", [] { return std::make_unique<NormDeferCase>(4096, 4, false); });
  // A verify batch: 3 rows in the plain order, per-row partials.
  r.add("mmvs_id", "norm_defer/3x5120/split8/bytes_vs_cpu_q8_1", [] { return std::make_unique<NormDeferCase>(5120, 8, true, 3); });
  r.add("mmvs_id", "norm_defer/3x4096/split1/bytes_vs_cpu_q8_1", [] { return std::make_unique<NormDeferCase>(4096, 1, true, 3); });
  // The scale computed by the norm (one block per row of split x 128 threads).
  for (int cols : {4096, 5120, 4160, 160})
    for (int split : {1, 8})
      r.add("mmvs_id", ref::cat("norm_defer/", cols, "/split", split, "/scale"),
            [=] { return std::make_unique<NormDeferCase>(cols, split, true, 1, true); });
  r.add("mmvs_id", "norm_defer/4096/split4/no_w/scale", [] { return std::make_unique<NormDeferCase>(4096, 4, false, 1, true); });
  r.add("mmvs_id", "norm_defer/3x5120/split8/scale", [] { return std::make_unique<NormDeferCase>(5120, 8, true, 3, true); });
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS})
    for (bool glu : {false, true})
      r.add("mmvs_id", ref::cat("mmvs_norm_ss_m3/", qtype_name(t), "/512x5120", glu ? "/glu" : "/plain", "/final"),
            [=] { return std::make_unique<MmvsNormSsM3Case>(t, 512, 5120, glu, true); });
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS})
    for (int64_t k : {4096, 12288})
      for (bool glu : {false, true})
        r.add("mmvs_id", ref::cat("mmvs_norm_ss_m3/", qtype_name(t), "/512x", k, glu ? "/glu" : "/plain", "/vs_m1_bytes"),
              [=] { return std::make_unique<MmvsNormSsM3Case>(t, 512, k, glu); });
  static const char* kForm[] = {"plain", "glu", "rp", "rp1", "gp"};
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS})
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
    r.add("mmvs_id", ref::cat("mmvs_norm_ss_qkv/Q4_K+Q6_K/5120/cap", cap, "/final/vs_each_alone_bytes"),
          [=] { return std::make_unique<MmvsNormSsSegCase>(QType::Q4_K, QType::Q6_K, 5120, 8192, 1024, cap, true); });
  }
  // The launches taking the norm's scale (MmvsParams::norm_ss_final): every form and cap at the
  // qwen3-32b width.
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS})
    for (int form = 0; form < 5; ++form)
      for (int cap : {0, 5, 6}) {
        if (cap == 5 && form != 1 && form != 4) continue;
        r.add("mmvs_id", ref::cat("mmvs_norm_ss/", qtype_name(t), "/514x5120/", kForm[form], "/cap", cap, "/final"),
              [=] { return std::make_unique<MmvsNormSsCase>(t, 514, 5120, form, cap, 32, true); });
      }
  // Fewer partials than lanes (a deferred norm over fewer blocks).
  r.add("mmvs_id", "mmvs_norm_ss/Q4_K/1024x4096/glu/cap5/4_partials",
        [] { return std::make_unique<MmvsNormSsCase>(QType::Q4_K, 1024, 4096, 1, 5, 4); });
}

}  // namespace
MEMRA_KC_REGISTER(add_norm_defer_cases);
}  // namespace memra::kc
