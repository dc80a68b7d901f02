// kernel-check section "norm": RMSNorm, fused residual add + RMSNorm, RMSNorm emitting q8_1, and
// the per-head (q/k) RMSNorm, against an f64 CPU reference; the q8_1 forms byte-for-byte against
// lib/quant's CPU quantizer and against the unfused device chain.
// Tolerance: normalized L2 error <= 2e-6. The f32 kernel's error is a few ulp per element (a
// 256-way tree sum of squares, one sqrt, one divide, two products: ~2e-7 measured scale), so 2e-6
// is 10x headroom while any indexing or formula error (>= 1e-3) fails.
#include <cmath>
#include <memory>

#include "cases_ref.h"
#include "core/half.h"
#include "norm/norm_kernels.h"
#include "quant/quant.h"
#include "quant/quant_kernels.h"

namespace memra::kc {
namespace {

constexpr double kNormTol = 2e-6;
constexpr float kEps = 1e-6f;

void rms_ref(const float* x, const float* w, int cols, float eps, double* out) {
  double ss = 0;
  for (int i = 0; i < cols; ++i) ss += (double)x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / cols + eps);
  for (int i = 0; i < cols; ++i) out[i] = x[i] * inv * (w ? (double)w[i] : 1.0);
}

// RMSNorm (plain or residual-add) into f32, out of place; with_w false uses null weights.
class RmsNormCase : public Case {
 public:
  // pad: leading dimension - cols. 3 (a stride > cols catches row-stride bugs, and rows are not
  // 16-byte aligned: the kernel's scalar path); 0 with cols % 4 == 0: its float4 path.
  // f16: also the f16 copy of out (RmsNormParams::out_f16, the prefill GEMM's input), checked
  // byte for byte against core/half.h's rounding of the kernel's own f32 output, and that f32
  // output against a launch without the copy (same bytes).
  RmsNormCase(int rows, int cols, bool add, bool with_w, bool in_place = false, int pad = 3, bool f16 = false)
      : rows_(rows), cols_(cols), add_(add), with_w_(with_w), in_place_(in_place), pad_(pad), f16_(f16) {}
  void generate(Env& env) override {
    ld_ = cols_ + pad_;
    x_ = env.normal((size_t)rows_ * ld_, 1.5f, 0.2f);
    d_ = env.normal((size_t)rows_ * ld_, 0.7f);
    w_ = env.normal(cols_, 0.3f, 1.0f);
    dx_ = env.upload(x_);
    dd_ = env.upload(d_);
    dw_ = with_w_ ? env.upload(w_) : nullptr;
    dout_ = env.alloc_output<float>((size_t)rows_ * ld_);
    dres_ = in_place_ ? dx_ : env.alloc_output<float>((size_t)rows_ * ld_);
    if (f16_) {
      d16_ = env.alloc_output<uint16_t>((size_t)rows_ * cols_);
      dplain_ = env.alloc<float>((size_t)rows_ * ld_);
      dres2_ = env.alloc<float>((size_t)rows_ * ld_);
    }
  }
  cudaError_t run(Env& env, float* out, float* res, void* out16) {
    if (!add_) {
      cuda::RmsNormParams p{dx_, ld_, dw_, out, ld_, rows_, cols_, kEps};
      p.out_f16 = out16;
      if (out16 && !cuda::rms_norm_f16_copy_supported(p)) return cudaErrorNotSupported;
      return cuda::launch_rms_norm(p, env.stream());
    }
    cuda::AddRmsNormParams p{dx_, ld_, dd_, ld_, res, ld_, dw_, out, ld_, rows_, cols_, kEps};
    p.out_f16 = out16;
    if (out16 && !cuda::add_rms_norm_f16_copy_supported(p)) return cudaErrorNotSupported;
    return cuda::launch_add_rms_norm(p, env.stream());
  }
  cudaError_t launch(Env& env) override { return run(env, dout_, dres_, d16_); }
  void reference_host() {
    ref_.assign((size_t)rows_ * cols_, 0.0);
    res_.assign((size_t)rows_ * cols_, 0.0f);
    std::vector<float> src(cols_);
    for (int r = 0; r < rows_; ++r) {
      for (int i = 0; i < cols_; ++i) {
        const size_t k = (size_t)r * ld_ + i;
        src[i] = add_ ? x_[k] + d_[k] : x_[k];  // the f32 sum is exact IEEE: byte-comparable
        res_[(size_t)r * cols_ + i] = src[i];
      }
      rms_ref(src.data(), with_w_ ? w_.data() : nullptr, cols_, kEps, ref_.data() + (size_t)r * cols_);
    }
  }
  void reference(Env& env) override {
    reference_host();
    if (!f16_) return;
    // The plain launch (no copy) for the byte comparison of the f32 output; not in place.
    ref::check(run(env, dplain_, dres2_, nullptr), "rms_norm without the f16 copy");
    plain_ = packed(env.download(dplain_, (size_t)rows_ * ld_));
  }
  Verdict compare(Env& env) override {
    const auto out = packed(env.download(dout_, (size_t)rows_ * ld_));
    Verdict vn = ref::norm(out, ref_, kNormTol);
    if (f16_) {
      const auto h = env.download(d16_, (size_t)rows_ * cols_);
      std::vector<uint16_t> want(out.size());
      for (size_t i = 0; i < out.size(); ++i) want[i] = f32_to_fp16(out[i]);
      return ref::all_of({{"normed", vn},
                          {"f32 out vs the launch without the copy", compare_bytes(out.data(), plain_.data(), out.size() * 4)},
                          {"f16 copy vs core/half.h of the f32 out",
                           compare_bytes(reinterpret_cast<const uint8_t*>(h.data()),
                                         reinterpret_cast<const uint8_t*>(want.data()), h.size() * 2)}});
    }
    if (!add_) return vn;
    const auto res = packed(env.download(dres_, (size_t)rows_ * ld_));
    return ref::all_of({{"residual_out bytes", compare_bytes(res.data(), res_.data(), res.size() * 4)},
                        {"normed", vn}});
  }
  PerfCount perf_count() const override {
    const double n = (double)rows_ * cols_ * 4;
    return {add_ ? 4 * n : 2 * n, 0};
  }

 private:
  std::vector<float> packed(const std::vector<float>& v) const {
    std::vector<float> o((size_t)rows_ * cols_);
    for (int r = 0; r < rows_; ++r)
      for (int i = 0; i < cols_; ++i) o[(size_t)r * cols_ + i] = v[(size_t)r * ld_ + i];
    return o;
  }
  int rows_, cols_;
  bool add_, with_w_, in_place_;
  int pad_;
  bool f16_;
  int64_t ld_ = 0;
  std::vector<float> x_, d_, w_, res_, plain_;
  uint16_t* d16_ = nullptr;
  float *dplain_ = nullptr, *dres2_ = nullptr;
  std::vector<double> ref_;
  float *dx_ = nullptr, *dd_ = nullptr, *dw_ = nullptr, *dout_ = nullptr, *dres_ = nullptr;
};

// RMSNorm -> q8_1 (fused). Identity claims: (1) equals lib/quant's CPU quantize_row(Q8_1) of the
// f32 kernel's output; (2) equals the unfused device chain rms_norm -> quantize_q8_1.
class RmsNormQ81Case : public Case {
 public:
  RmsNormQ81Case(int rows, int cols, bool add) : rows_(rows), cols_(cols), add_(add) {}
  void generate(Env& env) override {
    qrow_ = (int64_t)cols_ / 32 * 36;
    x_ = env.normal((size_t)rows_ * cols_, 1.2f);
    d_ = env.normal((size_t)rows_ * cols_, 0.5f);
    w_ = env.normal(cols_, 0.3f, 1.0f);
    dx_ = env.upload(x_);
    dd_ = env.upload(d_);
    dw_ = env.upload(w_);
    dq_ = env.alloc_output<uint8_t>((size_t)rows_ * qrow_);
    dres_ = env.alloc_output<float>((size_t)rows_ * cols_);
    df32_ = env.alloc<float>((size_t)rows_ * cols_);
    dres2_ = env.alloc<float>((size_t)rows_ * cols_);
    dq2_ = env.alloc<uint8_t>((size_t)rows_ * qrow_);
  }
  cudaError_t launch(Env& env) override {
    cuda::RmsNormQ81Params p;
    p.x = add_ ? nullptr : dx_;
    p.ld_x = cols_;
    if (add_) {
      p.residual = dx_;
      p.ld_residual = cols_;
      p.delta = dd_;
      p.ld_delta = cols_;
      p.residual_out = dres_;
      p.ld_residual_out = cols_;
    }
    p.w = dw_;
    p.out_q8_1 = dq_;
    p.ld_out_bytes = qrow_;
    p.rows = rows_;
    p.cols = cols_;
    p.eps = kEps;
    return cuda::launch_rms_norm_q8_1(p, env.stream());
  }
  void reference(Env& env) override {
    // The unfused device chain, then lib/quant's CPU quantizer on its f32 output.
    if (add_) {
      cuda::AddRmsNormParams a{dx_, cols_, dd_, cols_, dres2_, cols_, dw_, df32_, cols_, rows_, cols_, kEps};
      ref::check(cuda::launch_add_rms_norm(a, env.stream()), "launch_add_rms_norm (reference chain)");
    } else {
      cuda::RmsNormParams a{dx_, cols_, dw_, df32_, cols_, rows_, cols_, kEps};
      ref::check(cuda::launch_rms_norm(a, env.stream()), "launch_rms_norm (reference chain)");
    }
    cuda::QuantizeQ8_1Params q{};
    q.x = df32_;
    q.y = dq2_;
    q.n = cols_;
    q.rows = rows_;
    q.ld_x = cols_;
    ref::check(cuda::launch_quantize_q8_1(q, env.stream()), "launch_quantize_q8_1 (reference chain)");
    const auto f32 = env.download(df32_, (size_t)rows_ * cols_);
    unfused_ = env.download(dq2_, (size_t)rows_ * qrow_);
    cpu_q_.assign((size_t)rows_ * qrow_, 0);
    for (int r = 0; r < rows_; ++r)
      quantize_row(QType::Q8_1, f32.data() + (size_t)r * cols_, cpu_q_.data() + (size_t)r * qrow_, cols_);
    // And the f32 values themselves against f64 (so the identity is not between two wrong things).
    ref_.assign((size_t)rows_ * cols_, 0.0);
    std::vector<float> src(cols_);
    for (int r = 0; r < rows_; ++r) {
      for (int i = 0; i < cols_; ++i) {
        const size_t k = (size_t)r * cols_ + i;
        src[i] = add_ ? x_[k] + d_[k] : x_[k];
      }
      rms_ref(src.data(), w_.data(), cols_, kEps, ref_.data() + (size_t)r * cols_);
    }
    f32_ = f32;
  }
  Verdict compare(Env& env) override {
    const auto q = env.download(dq_, (size_t)rows_ * qrow_);
    return ref::all_of({{"f32 chain vs f64", ref::norm(f32_, ref_, kNormTol)},
                        {"fused vs CPU quantize_row(Q8_1)", compare_bytes(q.data(), cpu_q_.data(), q.size())},
                        {"fused vs unfused device chain", compare_bytes(q.data(), unfused_.data(), q.size())}});
  }
  PerfCount perf_count() const override {
    return {(double)rows_ * cols_ * 4 * (add_ ? 3 : 1) + (double)rows_ * qrow_, 0};
  }

 private:
  int rows_, cols_;
  bool add_;
  int64_t qrow_ = 0;
  std::vector<float> x_, d_, w_, f32_;
  std::vector<double> ref_;
  std::vector<uint8_t> unfused_, cpu_q_;
  float *dx_ = nullptr, *dd_ = nullptr, *dw_ = nullptr, *dres_ = nullptr, *df32_ = nullptr, *dres2_ = nullptr;
  uint8_t *dq_ = nullptr, *dq2_ = nullptr;
};

class HeadRmsNormCase : public Case {
 public:
  HeadRmsNormCase(int rows, int n_head, int head_dim, bool with_w)
      : rows_(rows), n_head_(n_head), hd_(head_dim), with_w_(with_w) {}
  void generate(Env& env) override {
    ld_ = (int64_t)n_head_ * hd_ + 5;
    x_ = env.normal((size_t)rows_ * ld_, 2.0f, -0.3f);
    w_ = env.normal(hd_, 0.2f, 1.0f);
    dx_ = env.upload(x_);
    dw_ = with_w_ ? env.upload(w_) : nullptr;
    dout_ = env.alloc_output<float>((size_t)rows_ * ld_);
  }
  cudaError_t launch(Env& env) override {
    cuda::HeadRmsNormParams p{dx_, ld_, dout_, ld_, dw_, rows_, n_head_, hd_, kEps};
    return cuda::launch_head_rms_norm(p, env.stream());
  }
  void reference(Env&) override {
    ref_.assign((size_t)rows_ * n_head_ * hd_, 0.0);
    for (int r = 0; r < rows_; ++r)
      for (int h = 0; h < n_head_; ++h)
        rms_ref(x_.data() + r * ld_ + (int64_t)h * hd_, with_w_ ? w_.data() : nullptr, hd_, kEps,
                ref_.data() + ((size_t)r * n_head_ + h) * hd_);
  }
  Verdict compare(Env& env) override {
    const auto o = env.download(dout_, (size_t)rows_ * ld_);
    std::vector<float> got;
    for (int r = 0; r < rows_; ++r)
      got.insert(got.end(), o.begin() + r * ld_, o.begin() + r * ld_ + (int64_t)n_head_ * hd_);
    return ref::norm(got, ref_, kNormTol);
  }
  PerfCount perf_count() const override { return {(double)rows_ * n_head_ * hd_ * 8, 0}; }

 private:
  int rows_, n_head_, hd_;
  bool with_w_;
  int64_t ld_ = 0;
  std::vector<float> x_, w_;
  std::vector<double> ref_;
  float *dx_ = nullptr, *dw_ = nullptr, *dout_ = nullptr;
};

void add_norm_cases(Registry& r) {
#ifdef MEMRA_REDUCED_INSTANCES
  const int kRows[] = {1, 17};
  const int kCols[] = {4096};
#else
  const int kRows[] = {1, 17, 33};
  const int kCols[] = {4096, 576, 5120, 544};
#endif
  for (int rows : kRows)
    for (int cols : kCols) {
      const auto shape = ref::cat(rows, "x", cols);
      r.add("norm", "rmsnorm/f32/" + shape, [=] { return std::make_unique<RmsNormCase>(rows, cols, false, true); });
      r.add("norm", "add_rmsnorm/f32/" + shape,
            [=] { return std::make_unique<RmsNormCase>(rows, cols, true, true); });
      r.add("norm", "rmsnorm_q8_1/plain/" + shape,
            [=] { return std::make_unique<RmsNormQ81Case>(rows, cols, false); });
      r.add("norm", "rmsnorm_q8_1/add/" + shape, [=] { return std::make_unique<RmsNormQ81Case>(rows, cols, true); });
    }
  r.add("norm", "rmsnorm/f32-now/17x576", [] { return std::make_unique<RmsNormCase>(17, 576, false, false); });
  r.add("norm", "add_rmsnorm/f32-inplace/33x4096",
        [] { return std::make_unique<RmsNormCase>(33, 4096, true, true, true); });
  // The float4 path (16-byte aligned rows), a short last block (cols % 32 != 0), and rows past
  // 8192 columns (threads owning more than one 32-element block).
  r.add("norm", "rmsnorm/f32-aligned/17x4096", [] { return std::make_unique<RmsNormCase>(17, 4096, false, true, false, 0); });
  r.add("norm", "add_rmsnorm/f32-aligned/1x4096", [] { return std::make_unique<RmsNormCase>(1, 4096, true, true, false, 0); });
  r.add("norm", "add_rmsnorm/f32-aligned-inplace/3x5120", [] { return std::make_unique<RmsNormCase>(3, 5120, true, true, true, 0); });
  r.add("norm", "rmsnorm/f32/5x1000", [] { return std::make_unique<RmsNormCase>(5, 1000, false, true); });
  // The f16 copy for the prefill GEMM: plain and add, prefill-sized, rows past 8192 columns.
  r.add("norm", "rmsnorm/f32+f16/512x4096", [] { return std::make_unique<RmsNormCase>(512, 4096, false, true, false, 0, true); });
  r.add("norm", "add_rmsnorm/f32+f16/512x4096", [] { return std::make_unique<RmsNormCase>(512, 4096, true, true, false, 0, true); });
  r.add("norm", "add_rmsnorm/f32+f16/33x5120", [] { return std::make_unique<RmsNormCase>(33, 5120, true, true, false, 0, true); });
  r.add("norm", "rmsnorm/f32+f16/9x10000", [] { return std::make_unique<RmsNormCase>(9, 10000, false, false, false, 0, true); });
  r.add("norm", "rmsnorm/f32-aligned/3x10000", [] { return std::make_unique<RmsNormCase>(3, 10000, false, true, false, 0); });
  r.add("norm", "add_rmsnorm/f32/2x20003", [] { return std::make_unique<RmsNormCase>(2, 20003, true, true); });
  r.add("norm", "add_rmsnorm/f32-aligned-now/2x16384", [] { return std::make_unique<RmsNormCase>(2, 16384, true, false, false, 0); });
  r.add("norm", "rmsnorm_q8_1/add/2x12288", [] { return std::make_unique<RmsNormQ81Case>(2, 12288, true); });
  struct H {
    int n_head, hd;
  };
  for (H h : {H{32, 128}, H{8, 128}, H{9, 64}, H{3, 64}, H{16, 256}})
    for (int rows : {1, 17}) {
      r.add("norm", ref::cat("head_rmsnorm/f32/", rows, "x", h.n_head, "x", h.hd),
            [=] { return std::make_unique<HeadRmsNormCase>(rows, h.n_head, h.hd, true); });
    }
  r.add("norm", "head_rmsnorm/f32-now/33x8x128", [] { return std::make_unique<HeadRmsNormCase>(33, 8, 128, false); });
}
MEMRA_KC_REGISTER(add_norm_cases);

}  // namespace
}  // namespace memra::kc
