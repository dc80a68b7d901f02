// Section "matvec_v2": the 16-byte-load decode matvec (kernels/matvec/matvec_v2.h), m = 1, against
// the f64 CPU reference on the same quantized inputs (W = the CPU dequantization of the very weight
// bytes the GPU reads, x = the CPU dequantization of the q8_1 activation bytes it reads).
//
// Tolerance: normalized error <= 1e-5, the bound of cases_matvec.cu and for the same reason: the
// integer dot product per 32-element chunk is exact, what remains is f32 rounding of one scale
// product per chunk and of the f32 accumulation over <= 448 chunks split over 32 lanes and a
// shuffle tree (~1e-7..1e-6 on random data); one wrong chunk out of 448 moves the error to
// ~5e-2, and an unwritten output is NaN (poison) and fails outright.
//
// Layout cases beyond the dense ones: a padded row stride whose row starts walk through every
// offset mod 16 (the window's head granule), and a weight base 2 bytes past a 16-byte boundary
// (the first and last granule stick out of the allocation and are assembled from bytes).
//
// Section "matvec_v2_id": whether v2's output is byte-identical to v1 (launch_matvec, m = 1) on
// the same inputs. v2 keeps v1's per-lane chunk order and shuffle tree, so it should be; if it
// holds, v2 decode and v1 verify (m > 1) keep the decode == verify identity. Kept apart so that a
// miss there (a compiler contracting differently) does not hide the correctness verdict above.
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "case_util.h"
#include "cases_ref.h"
#include "core/error.h"
#include "matvec/matvec.h"
#include "matvec/matvec_v2.h"
#include "quant/quant.h"

namespace memra::kc {
namespace {

constexpr double kMatvecTol = 1e-5;

class MatvecV2Case : public Case {
 public:
  // pad: extra bytes per row (row stride = dense + pad); shift: bytes between a 16-byte-aligned
  // allocation and the weight base.
  MatvecV2Case(QType t, int64_t n, int64_t k, int rows_per_block, int pad, int shift, bool vs_v1)
      : t_(t), n_(n), k_(k), rpb_(rows_per_block), pad_(pad), shift_(shift), vs_v1_(vs_v1) {}
  void generate(Env& env) override {
    MEMRA_CHECK(cuda::matvec_v2_built(t_), "matvec_v2 has no {} kernel in this build", qtype_name(t_));
    w_ = random_weight_bytes(env, t_, n_, k_);
    dense_ = w_.size() / (size_t)n_;
    stride_ = dense_ + (size_t)pad_;
    std::vector<uint8_t> laid((size_t)shift_ + stride_ * (size_t)n_ + 16);
    for (auto& b : laid) b = (uint8_t)(env.rng()() & 0xFF);  // pad bytes must never matter
    for (int64_t r = 0; r < n_; ++r)
      std::memcpy(laid.data() + shift_ + r * stride_, w_.data() + r * dense_, dense_);
    dw_ = static_cast<uint8_t*>(env.upload(laid)) + shift_;
    const auto x = env.normal((size_t)k_);
    xq_.resize((size_t)(k_ / 32) * 36);
    quantize_row(QType::Q8_1, x.data(), xq_.data(), k_);
    dx_ = env.upload(xq_);
    if (vs_v1_) {
      dy_v1_ = env.upload(std::vector<float>((size_t)n_, std::numeric_limits<float>::quiet_NaN()));
      cuda::MatvecParams p = params();
      p.y = dy_v1_;
      p.rows_per_block = 4;
      ref::check(cuda::launch_matvec(p, env.stream()), "launch_matvec (v1, m = 1)");
    }
    dy_ = env.alloc_output<float>((size_t)n_);
  }
  cudaError_t launch(Env& env) override {
    cuda::MatvecParams p = params();
    p.y = dy_;
    return cuda::launch_matvec_v2(p, env.stream());
  }
  void reference(Env&) override {
    const auto w = dequantize_rows(t_, w_, n_, k_);
    w_.clear();
    w_.shrink_to_fit();
    ref_ = matmul_f64(w, dequantize_rows(QType::Q8_1, xq_, 1, k_), n_, k_, 1);
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dy_, (size_t)n_);
    if (!vs_v1_) return ref::norm(got, ref_, kMatvecTol);
    const auto v1 = env.download(dy_v1_, (size_t)n_);
    return ref::all_of({{"v1 vs f64 reference", ref::norm(v1, ref_, kMatvecTol)},
                        {"v2 vs f64 reference", ref::norm(got, ref_, kMatvecTol)},
                        {"v2 vs v1 bytes", compare_bytes(got.data(), v1.data(), got.size() * 4)}});
  }
  PerfCount perf_count() const override {
    const double wb = (double)*qtype_row_bytes(t_, k_) * (double)n_;
    return {wb + (double)(k_ / 32) * 36 + 4.0 * n_, 0};
  }

 private:
  cuda::MatvecParams params() const {
    cuda::MatvecParams p;
    p.w_type = t_;
    p.w = dw_;
    p.w_row_bytes = stride_;
    p.n_rows = n_;
    p.n_cols = k_;
    p.m = 1;
    p.x_q8_1 = dx_;
    p.rows_per_block = rpb_;
    return p;
  }

  QType t_;
  int64_t n_, k_;
  int rpb_, pad_, shift_;
  bool vs_v1_;
  size_t dense_ = 0, stride_ = 0;
  std::vector<uint8_t> w_, xq_;
  std::vector<double> ref_;
  const uint8_t* dw_ = nullptr;
  void* dx_ = nullptr;
  float* dy_ = nullptr;
  float* dy_v1_ = nullptr;
};

void add_matvec_v2_cases(Registry& r) {
  // Asks the library, not MEMRA_REDUCED_INSTANCES: that macro is private to memra_backend_cuda
  // (the reduced CI build has only the Q4_K kernel).
  std::vector<QType> types;
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0})
    if (cuda::matvec_v2_built(t)) types.push_back(t);
  auto add = [&](const char* section, QType t, int64_t n, int64_t k, int rpb, int pad, int shift) {
    std::string name = fmt::format("mmvq_v2_r{}/{}/{}x{}", rpb, qtype_name(t), n, k);
    if (pad) name += fmt::format("/pad{}", pad);
    if (shift) name += fmt::format("/shift{}", shift);
    const bool vs_v1 = std::string(section) == "matvec_v2_id";
    if (vs_v1) name += "/bytes_vs_v1";  // case names are unique across sections
    r.add(section, name, [=] { return std::make_unique<MatvecV2Case>(t, n, k, rpb, pad, shift, vs_v1); });
  };
  for (QType t : types) {
    // Odd row count (4097: the last CTA is partly empty); k = 1536 (one partial pass; Q6_K rows
    // of 1260 B start at every even offset mod 16) and 14336 (3.5 passes).
    for (int64_t k : {1536, 14336}) add("matvec_v2", t, 4097, k, 8, 0, 0);
    // Every CTA geometry; padded stride; unaligned base.
    for (int rpb : {1, 2, 4}) add("matvec_v2", t, 4097, 1536, rpb, 0, 0);
    // Row starts keep the block type's natural alignment (launch_matvec_v2 rejects less):
    // 4 bytes for Q4_K, 2 for the others.
    const int al = t == QType::Q4_K ? 4 : 2;
    add("matvec_v2", t, 1031, 4096, 8, 3 * al, 0);
    add("matvec_v2", t, 1031, 4096, 8, 0, al);
    // Model shapes (qwen3-8b / llama-8b: q/o 4096x4096, k/v 1024x4096, gate/up 12288|14336x4096,
    // down 4096x12288|14336, output head 151936x4096) for --perf.
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {1024, 4096}, {12288, 4096}, {14336, 4096},
                        {4096, 12288}, {4096, 14336}, {151936, 4096}})
      add("matvec_v2", t, n, k, 8, 0, 0);
    for (int64_t k : {1536, 14336}) add("matvec_v2_id", t, 4097, k, 8, 0, 0);
  }
}

}  // namespace
MEMRA_KC_REGISTER(add_matvec_v2_cases);
}  // namespace memra::kc
