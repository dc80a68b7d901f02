// Section "matvec": decode matrix-vector products (m = 1..8) against an f64 CPU reference on the
// same quantized inputs: W = the CPU dequantization of the very weight bytes the GPU reads, x =
// the CPU dequantization of the q8_1 activation bytes the GPU reads (quantized W) or the f32
// activations (float W).
//
// Tolerance: normalized error ||y - y_ref|| / ||y_ref|| <= 1e-5. The kernel's integer dot
// products per 32-element chunk are exact; what remains is f32 rounding of one scale product per
// chunk and of the f32 accumulation over k/32 chunks (<= 448 here), split over 32 lanes and a
// shuffle tree: expected ~1e-7..1e-6 on random data. One wrong chunk out of 448 already moves the
// error to ~1/sqrt(448) ~ 5e-2, and any unwritten output is NaN (poison) and fails outright.
#include <fmt/format.h>

#include "case_util.h"
#include "matvec/matvec.h"
#include "quant/quant.h"
#include "quant/quant_kernels.h"
#include "quant/weight_decode.cuh"

namespace memra::kc {
namespace {

constexpr double kMatvecTol = 1e-5;

class MatvecCase : public Case {
 public:
  MatvecCase(QType t, int64_t n, int64_t k, int m, int rows_per_block)
      : t_(t), n_(n), k_(k), m_(m), rpb_(rows_per_block) {}
  void generate(Env& env) override {
    quantized_ = qtype_traits(t_).quantized;
    w_ = random_weight_bytes(env, t_, n_, k_);
    dw_ = env.upload(w_);
    x_ = env.normal((size_t)(m_ * k_));
    if (quantized_) {
      xq_.resize((size_t)(m_ * (k_ / 32) * 36));
      for (int j = 0; j < m_; ++j) quantize_row(QType::Q8_1, x_.data() + j * k_, xq_.data() + j * (k_ / 32) * 36, k_);
      dx_ = env.upload(xq_);
    } else {
      dx_ = env.upload(x_);
    }
    dy_ = env.alloc_output<float>((size_t)(m_ * n_));
  }
  cudaError_t launch(Env& env) override {
    cuda::MatvecParams p;
    p.w_type = t_;
    p.w = dw_;
    p.n_rows = n_;
    p.n_cols = k_;
    p.m = m_;
    if (quantized_) p.x_q8_1 = dx_;
    else p.x_f32 = static_cast<const float*>(dx_);
    p.y = dy_;
    p.rows_per_block = rpb_;
    return cuda::launch_matvec(p, env.stream());
  }
  void reference(Env&) override {
    const auto w = dequantize_rows(t_, w_, n_, k_);
    w_.clear();
    w_.shrink_to_fit();
    const auto x = quantized_ ? dequantize_rows(QType::Q8_1, xq_, m_, k_) : x_;
    ref_ = matmul_f64(w, x, n_, k_, m_);
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dy_, (size_t)(m_ * n_));
    return compare_norm(got, ref_, kMatvecTol);
  }
  PerfCount perf_count() const override {
    const double wb = (double)*qtype_row_bytes(t_, k_) * (double)n_;
    const double xb = quantized_ ? (double)m_ * (k_ / 32) * 36 : (double)m_ * k_ * 4;
    return {wb + xb + 4.0 * m_ * n_, 0};
  }

 private:
  QType t_;
  int64_t n_, k_;
  int m_, rpb_;
  bool quantized_ = false;
  std::vector<uint8_t> w_, xq_;
  std::vector<float> x_;
  std::vector<double> ref_;
  void* dw_ = nullptr;
  void* dx_ = nullptr;
  float* dy_ = nullptr;
};

void add_matvec_cases(Registry& r) {
  const QType all[] = {
#define MEMRA_T(N) QType::N,
      MEMRA_CUDA_WTYPES(MEMRA_T)
#undef MEMRA_T
          QType::F16, QType::BF16, QType::F32};
  auto add = [&](QType t, int64_t n, int64_t k, int m, int rpb) {
    const char* v = qtype_traits(t).quantized ? "mmvq" : "mmvf";
    r.add("matvec", fmt::format("{}_r{}/{}/{}x{}/m{}", v, rpb, qtype_name(t), n, k, m),
          [=] { return std::make_unique<MatvecCase>(t, n, k, m, rpb); });
  };
  // Odd row count (4097: the last CTA is partly empty) and k = 1536 (6 superblocks, 48 blocks),
  // every m the decode path serves up to 8.
  for (QType t : all)
    for (int m : {1, 2, 3, 5, 8}) add(t, 4097, 1536, m, 4);
  // Model-sized shapes (llama/qwen3 8B FFN) for --perf, m = 1 and one batched m.
  for (QType t : {QType::Q4_0, QType::Q4_K, QType::Q8_0, QType::Q6_K, QType::Q5_K, QType::IQ4_XS, QType::F16}) {
    add(t, 4096, 14336, 1, 4);
    add(t, 14336, 4096, 1, 4);
  }
  for (QType t : {QType::Q4_K, QType::Q4_0}) add(t, 14336, 4096, 4, 4);
  // Every CTA geometry once.
  for (int rpb : {1, 2, 8}) add(QType::Q4_K, 4097, 4096, 3, rpb);
  // Float weights with k not a multiple of 8 (scalar path).
  for (QType t : {QType::F16, QType::BF16, QType::F32}) add(t, 1031, 1003, 3, 4);
}

}  // namespace
MEMRA_KC_REGISTER(add_matvec_cases);
}  // namespace memra::kc
