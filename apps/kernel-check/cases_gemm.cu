// Section "gemm": prefill products y[m][n] = x[m][k] . W[n][k]^T through cuBLASLt, against an f64
// CPU reference with W = the CPU dequantization of the same weight bytes and x = the f32
// activations.
//
// Tolerances (normalized error ||y - y_ref|| / ||y_ref||), from the operand rounding:
//   f16 operands (quantized W dequantized to f16, F16 W; x rounded to f16): each operand carries a
//     relative rounding error <= 2^-11 (rms ~2^-12/sqrt(3) ~ 1.4e-4); with f32 accumulation the
//     normalized error of a random sum is ~2e-4: bound 2e-3;
//   bf16 operands (x rounded to bf16, W exact): 2^-8 per element (rms ~1.1e-3): bound 1e-2;
//   f32 operands with f32 compute (no TF32): as the matvec, bound 1e-5.
// An unwritten element is NaN (poison) and fails; a wrong tile moves the error to O(1e-1).
#include <fmt/format.h>

#include "case_util.h"
#include "cases_ref.h"
#include "core/error.h"
#include "gemm/gemm.h"
#include "quant/quant_kernels.h"

namespace memra::kc {
namespace {

double gemm_tolerance(QType t) {
  if (t == QType::F32) return 1e-5;
  if (t == QType::BF16) return 1e-2;
  return 2e-3;
}

// One launch_gemm with the context's cuBLASLt handle and workspace, the library's error text
// rethrown when it has one.
cudaError_t run_gemm(Env& env, cuda::GemmParams p) {
  p.lt = env.ctx().cublaslt();
  p.workspace = env.ctx().cublas_workspace();
  p.workspace_bytes = env.ctx().cublas_workspace_bytes();
  const cudaError_t e = cuda::launch_gemm(p, env.stream());
  if (e != cudaSuccess && *cuda::gemm_last_error()) throw Error(fmt::format("launch_gemm: {}", cuda::gemm_last_error()));
  return e;
}
cuda::GemmParams gemm_params(QType t, const void* w, uint64_t row_bytes, int64_t n, int64_t k, int64_t m,
                             const float* x, float* y, void* scratch) {
  cuda::GemmParams p;
  p.w_type = t;
  p.w = w;
  p.w_row_bytes = row_bytes;
  p.n = n;
  p.k = k;
  p.m = m;
  p.x = x;
  p.y = y;
  p.scratch = scratch;
  return p;
}
// row_bytes 0 = dense rows.
cudaError_t run_gemm(Env& env, QType t, const void* w, uint64_t row_bytes, int64_t n, int64_t k, int64_t m,
                     const float* x, float* y, void* scratch) {
  return run_gemm(env, gemm_params(t, w, row_bytes, n, k, m, x, y, scratch));
}

class GemmCase : public Case {
 public:
  GemmCase(QType t, int64_t m, int64_t n, int64_t k) : t_(t), m_(m), n_(n), k_(k) {}
  void generate(Env& env) override {
    w_ = random_weight_bytes(env, t_, n_, k_);
    dw_ = env.upload(w_);
    x_ = env.normal((size_t)(m_ * k_));
    dx_ = env.upload(x_);
    dy_ = env.alloc_output<float>((size_t)(m_ * n_));
    scratch_ = env.alloc_bytes(std::max<size_t>(cuda::gemm_scratch_bytes(t_, n_, k_, m_), 256));
  }
  cudaError_t launch(Env& env) override { return run_gemm(env, t_, dw_, 0, n_, k_, m_, dx_, dy_, scratch_); }
  void reference(Env&) override {
    const auto w = dequantize_rows(t_, w_, n_, k_);
    ref_ = matmul_f64(w, x_, n_, k_, m_);
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dy_, (size_t)(m_ * n_));
    return compare_norm(got, ref_, gemm_tolerance(t_));
  }
  PerfCount perf_count() const override {
    return {(double)w_.size() + 4.0 * m_ * k_ + 4.0 * m_ * n_, 2.0 * m_ * n_ * k_};
  }

 private:
  QType t_;
  int64_t m_, n_, k_;
  std::vector<uint8_t> w_;
  std::vector<float> x_;
  std::vector<double> ref_;
  void* dw_ = nullptr;
  float* dx_ = nullptr;
  float* dy_ = nullptr;
  void* scratch_ = nullptr;
};

// Section "gemm_id": the prefill GEMM on a quantized W (dequantized into scratch per call) vs
// the same GEMM on the f16 copy of W that kernels.prefill_f16_weights keeps (launch_dequantize at
// load, then W as F16): identical output bytes.
class GemmF16CopyCase : public Case {
 public:
  GemmF16CopyCase(QType t, int64_t m, int64_t n, int64_t k) : t_(t), m_(m), n_(n), k_(k) {}
  void generate(Env& env) override {
    dw_ = env.upload(random_weight_bytes(env, t_, n_, k_));
    dx_ = env.upload(env.normal((size_t)(m_ * k_)));
    dy_ = env.alloc_output<float>((size_t)(m_ * n_));
    dy2_ = env.alloc_output<float>((size_t)(m_ * n_));
    dw16_ = env.alloc_bytes((size_t)(n_ * k_) * 2);
    scratch_ = env.alloc_bytes(cuda::gemm_scratch_bytes(t_, n_, k_, m_));
  }
  cudaError_t gemm(Env& env, QType t, const void* w, uint64_t row_bytes, float* y) {
    return run_gemm(env, t, w, row_bytes, n_, k_, m_, dx_, y, scratch_);
  }
  cudaError_t launch(Env& env) override {
    if (cudaError_t e = gemm(env, t_, dw_, 0, dy_); e != cudaSuccess) return e;
    cuda::DequantizeParams dq;
    dq.type = t_;
    dq.w = dw_;
    dq.row_bytes = *qtype_row_bytes(t_, k_);
    dq.rows = n_;
    dq.cols = k_;
    dq.out = dw16_;
    dq.out_f16 = true;
    if (cudaError_t e = cuda::launch_dequantize(dq, env.stream()); e != cudaSuccess) return e;
    return gemm(env, QType::F16, dw16_, (uint64_t)k_ * 2, dy2_);
  }
  void reference(Env&) override {}
  Verdict compare(Env& env) override {
    const auto a = env.download(dy_, (size_t)(m_ * n_)), b = env.download(dy2_, (size_t)(m_ * n_));
    return compare_bytes(a.data(), b.data(), a.size() * 4);
  }

 private:
  QType t_;
  int64_t m_, n_, k_;
  void* dw_ = nullptr;
  float* dx_ = nullptr;
  float *dy_ = nullptr, *dy2_ = nullptr;
  void* dw16_ = nullptr;
  void* scratch_ = nullptr;
};

// Section "gemm_id": the GEMM with its input rounded beforehand (GemmParams::x_conv, what
// kernels.gemm_x_reuse passes) against the plain launch: identical output bytes.
class GemmPathPairCase : public Case {
 public:
  GemmPathPairCase(QType t, int64_t m, int64_t n, int64_t k) : t_(t), m_(m), n_(n), k_(k) {}
  void generate(Env& env) override {
    dw_ = env.upload(random_weight_bytes(env, t_, n_, k_));
    dx_ = env.upload(env.normal((size_t)(m_ * k_)));
    dy_ = env.alloc_output<float>((size_t)(m_ * n_));
    dy2_ = env.alloc<float>((size_t)(m_ * n_));
    dx16_ = env.alloc_bytes((size_t)(m_ * k_) * 2);
    scratch_ = env.alloc_bytes(cuda::gemm_scratch_bytes(t_, n_, k_, m_));
  }
  cuda::GemmParams params(float* y) const { return gemm_params(t_, dw_, 0, n_, k_, m_, dx_, y, scratch_); }
  cudaError_t run(Env& env, const cuda::GemmParams& p) { return run_gemm(env, p); }
  cudaError_t launch(Env& env) override {
    cuda::GemmParams p = params(dy_);
    cuda::ConvertParams cv;
    cv.x = dx_;
    cv.rows = m_;
    cv.cols = k_;
    cv.out = dx16_;
    cv.to_bf16 = cuda::gemm_x_operand_bf16(t_);
    if (cudaError_t e = cuda::launch_convert_f32(cv, env.stream()); e != cudaSuccess) return e;
    p.x_conv = dx16_;
    return run(env, p);
  }
  void reference(Env& env) override { ref::check(run(env, params(dy2_)), "launch_gemm (plain)"); }
  Verdict compare(Env& env) override {
    const auto a = env.download(dy_, (size_t)(m_ * n_)), b = env.download(dy2_, (size_t)(m_ * n_));
    return compare_bytes(a.data(), b.data(), a.size() * 4);
  }

 private:
  QType t_;
  int64_t m_, n_, k_;
  void* dw_ = nullptr;
  float* dx_ = nullptr;
  float *dy_ = nullptr, *dy2_ = nullptr;
  void *dx16_ = nullptr, *scratch_ = nullptr;
};

void add_gemm_cases(Registry& r) {
  auto add = [&](QType t, int64_t m, int64_t n, int64_t k) {
    const char* v = t == QType::F32 ? "lt_f32" : t == QType::F16 ? "lt_f16" : t == QType::BF16 ? "lt_bf16" : "lt_dequant_f16";
    r.add("gemm", fmt::format("{}/{}/m{}/{}x{}", v, qtype_name(t), m, n, k),
          [=] { return std::make_unique<GemmCase>(t, m, n, k); });
  };
  for (QType t : {QType::Q4_0, QType::Q4_1, QType::Q5_0, QType::Q5_1, QType::Q8_0, QType::Q2_K, QType::Q3_K,
                  QType::Q4_K, QType::Q5_K, QType::Q6_K, QType::IQ4_NL, QType::IQ4_XS, QType::F16, QType::BF16,
                  QType::F32})
    for (int64_t m : {17, 31}) add(t, m, 4097, 1536);
  for (QType t : {QType::Q4_K, QType::Q8_0, QType::F16}) add(t, 512 + 7, 4096, 4096);
  // pp512 FFN-up shape of an 8B model, for --perf.
  for (QType t : {QType::Q4_K, QType::Q4_0, QType::F16}) add(t, 512, 14336, 4096);
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::IQ4_XS}) {
    r.add("gemm_id", fmt::format("lt_dequant_f16/{}/m17/4097x1536/f16_copy_vs_per_call_bytes", qtype_name(t)),
          [=] { return std::make_unique<GemmF16CopyCase>(t, 17, 4097, 1536); });
    r.add("gemm_id", fmt::format("lt_dequant_f16/{}/m519/4096x4096/f16_copy_vs_per_call_bytes", qtype_name(t)),
          [=] { return std::make_unique<GemmF16CopyCase>(t, 519, 4096, 4096); });
  }
  for (QType t : {QType::Q4_K, QType::F16, QType::BF16}) {
    r.add("gemm_id", fmt::format("lt/{}/m37/1536x4096/x_conv_vs_own_conversion_bytes", qtype_name(t)),
          [=] { return std::make_unique<GemmPathPairCase>(t, 37, 1536, 4096); });
  }
}

}  // namespace
MEMRA_KC_REGISTER(add_gemm_cases);
}  // namespace memra::kc
