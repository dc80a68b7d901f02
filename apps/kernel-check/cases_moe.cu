// kernel-check section "moe": the routed-MoE combine (weighted expert rows summed per token in slot
// order, each product rounded before it is added: byte-identical to that f32 computation on the
// host) and the head-wise sigmoid gate (against f64; tolerance 2e-6: one expf, one divide, one
// product per element, ~1e-7 measured scale, while a wrong head index is >= 1e-1).
#include <cmath>
#include <memory>

#include "cases_ref.h"
#include "moe/moe_kernels.h"

namespace memra::kc {
namespace {

class MoeCombineCase : public Case {
 public:
  // identity: rows = null (row s for slot s, the device-routed path); resid: added in place to a
  // residual row (MoeCombineParams::residual = out, kernels.moe_combine_residual)
  MoeCombineCase(int n, int k, int cols, bool identity = false, bool resid = false)
      : n_(n), k_(k), cols_(cols), identity_(identity), resid_(resid) {}
  void generate(Env& env) override {
    ld_d_ = cols_ + 5;
    d_ = env.normal((size_t)n_ * k_ * ld_d_, 1.0f);
    w_ = env.uniform((size_t)n_ * k_, 0.05f, 1.0f);
    // A permutation of the rows (grouped by expert in the backend), not the identity.
    rows_.resize((size_t)n_ * k_);
    for (int i = 0; i < n_ * k_; ++i) rows_[(size_t)i] = identity_ ? i : (int32_t)(n_ * k_ - 1 - i);
    dd_ = env.upload(d_);
    dw_ = env.upload(w_);
    drows_ = env.upload(rows_);
    dout_ = env.alloc_output<float>((size_t)n_ * cols_);
    if (resid_) res_ = env.normal((size_t)n_ * cols_, 3.0f);
  }
  cudaError_t launch(Env& env) override {
    if (resid_) env.upload_bytes(dout_, res_.data(), res_.size() * 4);  // in place: the stream first
    cuda::MoeCombineParams p;
    p.residual = resid_ ? dout_ : nullptr;
    p.ld_residual = cols_;
    p.d = dd_;
    p.ld_d = ld_d_;
    p.rows = identity_ ? nullptr : drows_;
    p.w = dw_;
    p.out = dout_;
    p.ld_out = cols_;
    p.n_tokens = n_;
    p.k_used = k_;
    p.cols = cols_;
    return cuda::launch_moe_combine(p, env.stream());
  }
  void reference(Env&) override {
    ref_.assign((size_t)n_ * cols_, 0.0f);
    for (int t = 0; t < n_; ++t)
      for (int c = 0; c < cols_; ++c) {
        float acc = 0.0f;
        for (int k = 0; k < k_; ++k) {
          const size_t s = (size_t)t * k_ + k;
          volatile float prod = w_[s] * d_[(size_t)rows_[s] * ld_d_ + c];  // rounded, never fused
          acc = acc + prod;
        }
        if (resid_) {
          volatile float sum = res_[(size_t)t * cols_ + c] + acc;  // one rounded add after the sum
          acc = sum;
        }
        ref_[(size_t)t * cols_ + c] = acc;
      }
  }
  Verdict compare(Env& env) override {
    const auto out = env.download(dout_, ref_.size());
    return compare_bytes(reinterpret_cast<const uint8_t*>(out.data()), reinterpret_cast<const uint8_t*>(ref_.data()),
                         out.size() * 4);
  }
  PerfCount perf_count() const override { return {(double)n_ * (k_ + 1) * cols_ * 4, 0}; }

 private:
  int n_, k_, cols_;
  bool identity_, resid_;
  int64_t ld_d_ = 0;
  std::vector<float> d_, w_, ref_, res_;
  std::vector<int32_t> rows_;
  float *dd_ = nullptr, *dw_ = nullptr, *dout_ = nullptr;
  int32_t* drows_ = nullptr;
};

// The gather of each expert's token rows: byte-identical copies.
class GatherRowsCase : public Case {
 public:
  GatherRowsCase(int src_rows, int rows, int cols) : src_rows_(src_rows), rows_(rows), cols_(cols) {}
  void generate(Env& env) override {
    src_ = env.normal((size_t)src_rows_ * (cols_ + 1), 1.0f);
    for (int i = 0; i < rows_; ++i) idx_.push_back((int32_t)((i * 5 + 2) % src_rows_));
    dsrc_ = env.upload(src_);
    didx_ = env.upload(idx_);
    ddst_ = env.alloc_output<float>((size_t)rows_ * cols_);
  }
  cudaError_t launch(Env& env) override {
    cuda::GatherRowsParams p;
    p.src = dsrc_;
    p.ld_src = cols_ + 1;
    p.idx = didx_;
    p.dst = ddst_;
    p.ld_dst = cols_;
    p.rows = rows_;
    p.cols = cols_;
    return cuda::launch_gather_rows(p, env.stream());
  }
  void reference(Env&) override {
    ref_.clear();
    for (int i = 0; i < rows_; ++i)
      for (int c = 0; c < cols_; ++c) ref_.push_back(src_[(size_t)idx_[(size_t)i] * (cols_ + 1) + c]);
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(ddst_, ref_.size());
    return compare_bytes(reinterpret_cast<const uint8_t*>(got.data()), reinterpret_cast<const uint8_t*>(ref_.data()),
                         got.size() * 4);
  }
  PerfCount perf_count() const override { return {(double)rows_ * cols_ * 8, 0}; }

 private:
  int src_rows_, rows_, cols_;
  std::vector<float> src_, ref_;
  std::vector<int32_t> idx_;
  float *dsrc_ = nullptr, *ddst_ = nullptr;
  int32_t* didx_ = nullptr;
};

class HeadGateCase : public Case {
 public:
  HeadGateCase(int rows, int n_head, int hd) : rows_(rows), n_head_(n_head), hd_(hd) {}
  void generate(Env& env) override {
    ld_x_ = (int64_t)n_head_ * hd_ + 3;
    ld_g_ = n_head_ + 2;
    x_ = env.normal((size_t)rows_ * ld_x_, 1.0f);
    g_ = env.normal((size_t)rows_ * ld_g_, 2.0f);
    dx_ = env.alloc_output<float>(x_.size());
    dg_ = env.upload(g_);
  }
  cudaError_t launch(Env& env) override {
    env.upload_bytes(dx_, x_.data(), x_.size() * 4);  // in place: the input first
    cuda::HeadGateParams p;
    p.x = dx_;
    p.ld_x = ld_x_;
    p.gate = dg_;
    p.ld_gate = ld_g_;
    p.rows = rows_;
    p.n_head = n_head_;
    p.head_dim = hd_;
    return cuda::launch_head_gate(p, env.stream());
  }
  void reference(Env&) override {
    ref_.clear();
    for (int r = 0; r < rows_; ++r)
      for (int h = 0; h < n_head_; ++h)
        for (int i = 0; i < hd_; ++i)
          ref_.push_back((double)x_[(size_t)(r * ld_x_ + h * hd_ + i)] /
                         (1.0 + std::exp(-(double)g_[(size_t)(r * ld_g_ + h)])));
  }
  Verdict compare(Env& env) override {
    const auto x = env.download(dx_, x_.size());
    std::vector<float> got;
    for (int r = 0; r < rows_; ++r)
      for (int64_t i = 0; i < (int64_t)n_head_ * hd_; ++i) got.push_back(x[(size_t)(r * ld_x_ + i)]);
    return ref::norm(got, ref_, 2e-6);
  }
  PerfCount perf_count() const override { return {(double)rows_ * n_head_ * hd_ * 8, 0}; }

 private:
  int rows_, n_head_, hd_;
  int64_t ld_x_ = 0, ld_g_ = 0;
  std::vector<float> x_, g_;
  std::vector<double> ref_;
  float *dx_ = nullptr, *dg_ = nullptr;
};

void add_moe_cases(Registry& r) {
  for (int n : {1, 5, 33})
    for (int k : {2, 8}) {
      r.add("moe", ref::cat("moe_combine/f32/n", n, "-k", k, "-2048"), [=] { return std::make_unique<MoeCombineCase>(n, k, 2048); });
    }
  for (int rows : {2, 64, 4096})
    r.add("moe", ref::cat("gather_rows/f32/", rows, "x2048"), [=] { return std::make_unique<GatherRowsCase>(512, rows, 2048); });
  r.add("moe", "gather_rows/f32/3x4097", [] { return std::make_unique<GatherRowsCase>(7, 3, 4097); });
  r.add("moe", "moe_combine/f32/n3-k4-257", [] { return std::make_unique<MoeCombineCase>(3, 4, 257); });
  for (int n : {1, 4})
    r.add("moe", ref::cat("moe_combine_slots/f32/n", n, "-k8-2048"), [=] { return std::make_unique<MoeCombineCase>(n, 8, 2048, true); });
  // Added in place to the residual stream (kernels.moe_combine_residual).
  for (int n : {1, 3})
    r.add("moe", ref::cat("moe_combine_resid/f32/n", n, "-k8-2048"),
          [=] { return std::make_unique<MoeCombineCase>(n, 8, 2048, true, true); });
  r.add("moe", "moe_combine_resid/f32/n2-k4-257", [] { return std::make_unique<MoeCombineCase>(2, 4, 257, true, true); });
  for (int rows : {1, 17})
    for (int nh : {1, 4, 64}) {
      r.add("moe", ref::cat("head_gate/f32/", rows, "x", nh, "x128"), [=] { return std::make_unique<HeadGateCase>(rows, nh, 128); });
    }
  r.add("moe", "head_gate/f32/3x1x4096", [] { return std::make_unique<HeadGateCase>(3, 1, 4096); });
}
MEMRA_KC_REGISTER(add_moe_cases);

}  // namespace
}  // namespace memra::kc
