// Section "matvec_rp": the split-plane Q4_0 mirror (kernels/matvec_rp).
//   repack:  byte identity of both planes against a CPU repack of the same GGUF bytes (dense and
//            padded row strides);
//   matvec:  the split-plane matvec against the f64 CPU reference (tolerance 1e-5, the argument of
//            cases_matvec.cu) AND byte identity against the GGUF-block kernel (launch_matvec,
//            Q4_0, same rows_per_block) on the same weights and activations: the split-plane
//            kernel claims bit-identical outputs; with the activations in the GGUF q8_1 blocks
//            and with them as split planes too (repack/q8_1 cases: byte identity vs a CPU repack).
// The GGUF-block output is produced in generate() into a buffer this file fills with 0xFF first
// (it is not an alloc_output buffer, which would be re-poisoned before the timed launch); a NaN
// left in it fails the reference comparison.
#include <cstring>
#include <limits>

#include "case_util.h"
#include "cases_ref.h"
#include "matvec/matvec.h"
#include "matvec_rp/matvec_rp.h"
#include "quant/quant.h"

namespace memra::kc {
namespace {

constexpr double kMatvecTol = 1e-5;

// The split-plane layout written out plainly (matvec_rp.h): qs bytes of block (r, c) at
// (r*n_chunks + c)*16, its f16 scale at index r*n_chunks + c.
void cpu_repack(const std::vector<uint8_t>& w, size_t row_bytes, int64_t rows, int64_t cols, std::vector<uint8_t>& qs,
                std::vector<uint8_t>& d) {
  const int64_t nc = cols / 32;
  qs.assign((size_t)(rows * nc * 16), 0);
  d.assign((size_t)(rows * nc * 2), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < nc; ++c) {
      const uint8_t* b = w.data() + r * row_bytes + c * 18;
      std::memcpy(&d[(size_t)(r * nc + c) * 2], b, 2);
      std::memcpy(&qs[(size_t)(r * nc + c) * 16], b + 2, 16);
    }
}

class RepackCase : public Case {
 public:
  RepackCase(int64_t n, int64_t k, size_t pad) : n_(n), k_(k), pad_(pad) {}
  void generate(Env& env) override {
    const size_t dense = (size_t)(k_ / 32) * 18;
    rb_ = dense + pad_;
    const auto packed = random_weight_bytes(env, QType::Q4_0, n_, k_);
    w_ = env.random_bytes(rb_ * n_);  // padding bytes random too: the repack must skip them
    for (int64_t r = 0; r < n_; ++r) std::memcpy(&w_[r * rb_], &packed[r * dense], dense);
    dw_ = env.upload(w_);
    dqs_ = env.alloc_output<uint8_t>(cuda::rp_q4_0_qs_bytes(n_, k_));
    dd_ = env.alloc_output<uint8_t>(cuda::rp_q4_0_d_bytes(n_, k_));
  }
  cudaError_t launch(Env& env) override {
    cuda::RepackQ4_0RpParams p;
    p.w = dw_;
    p.w_row_bytes = pad_ ? rb_ : 0;
    p.n_rows = n_;
    p.n_cols = k_;
    p.qs = dqs_;
    p.d = dd_;
    return cuda::launch_repack_q4_0_rp(p, env.stream());
  }
  void reference(Env&) override { cpu_repack(w_, rb_, n_, k_, qs_, d_); }
  Verdict compare(Env& env) override {
    const auto qs = env.download(dqs_, qs_.size());
    const auto d = env.download(dd_, d_.size());
    return ref::all_of({{"qs plane", compare_bytes(qs.data(), qs_.data(), qs_.size())},
                        {"d plane", compare_bytes(d.data(), d_.data(), d_.size())}});
  }
  PerfCount perf_count() const override { return {2.0 * (double)n_ * (double)(k_ / 32) * 18, 0}; }

 private:
  int64_t n_, k_;
  size_t pad_, rb_ = 0;
  std::vector<uint8_t> w_, qs_, d_;
  void* dw_ = nullptr;
  uint8_t* dqs_ = nullptr;
  uint8_t* dd_ = nullptr;
};

class RepackQ8_1Case : public Case {
 public:
  RepackQ8_1Case(int64_t m, int64_t k) : m_(m), k_(k) {}
  void generate(Env& env) override {
    const auto x = env.normal((size_t)(m_ * k_));
    xq_.resize((size_t)(m_ * (k_ / 32) * 36));
    for (int64_t j = 0; j < m_; ++j) quantize_row(QType::Q8_1, x.data() + j * k_, xq_.data() + j * (k_ / 32) * 36, k_);
    dx_ = env.upload(xq_);
    dqs_ = env.alloc_output<uint8_t>(cuda::rp_q8_1_qs_bytes(m_, k_));
    dd_ = env.alloc_output<uint8_t>(cuda::rp_q8_1_d_bytes(m_, k_));
  }
  cudaError_t launch(Env& env) override {
    cuda::RepackQ8_1RpParams p;
    p.x = dx_;
    p.m = m_;
    p.n_cols = k_;
    p.qs = dqs_;
    p.d = dd_;
    return cuda::launch_repack_q8_1_rp(p, env.stream());
  }
  void reference(Env&) override {
    const int64_t nb = m_ * (k_ / 32);
    qs_.resize((size_t)nb * 32);
    d_.resize((size_t)nb * 2);
    for (int64_t b = 0; b < nb; ++b) {
      std::memcpy(&d_[(size_t)b * 2], &xq_[(size_t)b * 36], 2);
      std::memcpy(&qs_[(size_t)b * 32], &xq_[(size_t)b * 36 + 4], 32);
    }
  }
  Verdict compare(Env& env) override {
    const auto qs = env.download(dqs_, qs_.size());
    const auto d = env.download(dd_, d_.size());
    return ref::all_of({{"qs plane", compare_bytes(qs.data(), qs_.data(), qs_.size())},
                        {"d plane", compare_bytes(d.data(), d_.data(), d_.size())}});
  }

 private:
  int64_t m_, k_;
  std::vector<uint8_t> xq_, qs_, d_;
  void* dx_ = nullptr;
  uint8_t* dqs_ = nullptr;
  uint8_t* dd_ = nullptr;
};

class MatvecRpCase : public Case {
 public:
  MatvecRpCase(int64_t n, int64_t k, int m, int rpb, int prefetch, bool xsplit)
      : n_(n), k_(k), m_(m), rpb_(rpb), pf_(prefetch), xs_(xsplit) {}
  void generate(Env& env) override {
    w_ = random_weight_bytes(env, QType::Q4_0, n_, k_);
    void* dw = env.upload(w_);
    const auto x = env.normal((size_t)(m_ * k_));
    xq_.resize((size_t)(m_ * (k_ / 32) * 36));
    for (int j = 0; j < m_; ++j) quantize_row(QType::Q8_1, x.data() + j * k_, xq_.data() + j * (k_ / 32) * 36, k_);
    dx_ = env.upload(xq_);
    dqs_ = env.alloc<uint8_t>(cuda::rp_q4_0_qs_bytes(n_, k_));
    dd_ = env.alloc<uint8_t>(cuda::rp_q4_0_d_bytes(n_, k_));
    cuda::RepackQ4_0RpParams rp;
    rp.w = dw;
    rp.n_rows = n_;
    rp.n_cols = k_;
    rp.qs = dqs_;
    rp.d = dd_;
    ref::check(cuda::launch_repack_q4_0_rp(rp, env.stream()), "launch_repack_q4_0_rp");
    if (xs_) {
      dxqs_ = env.alloc<uint8_t>(cuda::rp_q8_1_qs_bytes(m_, k_));
      dxd_ = env.alloc<uint8_t>(cuda::rp_q8_1_d_bytes(m_, k_));
      cuda::RepackQ8_1RpParams xp;
      xp.x = dx_;
      xp.m = m_;
      xp.n_cols = k_;
      xp.qs = dxqs_;
      xp.d = dxd_;
      ref::check(cuda::launch_repack_q8_1_rp(xp, env.stream()), "launch_repack_q8_1_rp");
    }
    // The GGUF-block kernel's output on the same inputs: the bytes the split-plane one must match.
    dy_gguf_ = env.upload(std::vector<float>((size_t)(m_ * n_), std::numeric_limits<float>::quiet_NaN()));
    cuda::MatvecParams g;
    g.w_type = QType::Q4_0;
    g.w = dw;
    g.n_rows = n_;
    g.n_cols = k_;
    g.m = m_;
    g.x_q8_1 = dx_;
    g.y = dy_gguf_;
    g.rows_per_block = rpb_;
    ref::check(cuda::launch_matvec(g, env.stream()), "launch_matvec (GGUF-block Q4_0)");
    dy_ = env.alloc_output<float>((size_t)(m_ * n_));
  }
  cudaError_t launch(Env& env) override {
    cuda::MatvecRpQ4_0Params p;
    p.qs = dqs_;
    p.d = dd_;
    p.n_rows = n_;
    p.n_cols = k_;
    p.m = m_;
    if (xs_) {
      p.x_qs = dxqs_;
      p.x_d = dxd_;
    } else {
      p.x_q8_1 = dx_;
    }
    p.y = dy_;
    p.rows_per_block = rpb_;
    p.prefetch = pf_;
    return cuda::launch_matvec_rp_q4_0(p, env.stream());
  }
  void reference(Env&) override {
    const auto w = dequantize_rows(QType::Q4_0, w_, n_, k_);
    w_.clear();
    w_.shrink_to_fit();
    ref_ = matmul_f64(w, dequantize_rows(QType::Q8_1, xq_, m_, k_), n_, k_, m_);
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dy_, (size_t)(m_ * n_));
    const auto gguf = env.download(dy_gguf_, (size_t)(m_ * n_));
    return ref::all_of({{"gguf-block vs f64 reference", ref::norm(gguf, ref_, kMatvecTol)},
                        {"split-plane vs f64 reference", ref::norm(got, ref_, kMatvecTol)},
                        {"split-plane vs gguf-block bytes", compare_bytes(got.data(), gguf.data(), got.size() * 4)}});
  }
  PerfCount perf_count() const override {
    const double wb = (double)n_ * (double)(k_ / 32) * 18;
    return {wb + (double)m_ * (k_ / 32) * 36 + 4.0 * m_ * n_, 0};
  }

 private:
  int64_t n_, k_;
  int m_, rpb_, pf_;
  bool xs_;
  std::vector<uint8_t> w_, xq_;
  uint8_t* dxqs_ = nullptr;
  uint8_t* dxd_ = nullptr;
  std::vector<double> ref_;
  void* dx_ = nullptr;
  uint8_t* dqs_ = nullptr;
  uint8_t* dd_ = nullptr;
  float* dy_gguf_ = nullptr;
  float* dy_ = nullptr;
};

void add_matvec_rp_cases(Registry& r) {
  auto repack = [&](int64_t n, int64_t k, size_t pad) {
    r.add("matvec_rp", ref::cat("repack/q4_0/", n, "x", k, pad ? "/padded" : ""),
          [=] { return std::make_unique<RepackCase>(n, k, pad); });
  };
  repack(4097, 1536, 0);
  repack(1024, 4096, 0);
  repack(333, 4256, 6);  // row stride 2400 bytes: rows start at 2-byte, not 16-byte, alignment
  for (int64_t m : {1, 8}) {
    r.add("matvec_rp", ref::cat("repack/q8_1/", m, "x4256"), [=] { return std::make_unique<RepackQ8_1Case>(m, 4256); });
  }
  auto mv = [&](int64_t n, int64_t k, int m, int rpb, int pf, bool xs) {
    r.add("matvec_rp", ref::cat("mmvq_rp_pf", pf, xs ? "_xs" : "", "_r", rpb, "/q4_0/", n, "x", k, "/m", m),
          [=] { return std::make_unique<MatvecRpCase>(n, k, m, rpb, pf, xs); });
  };
  // k = 1536: 48 chunks, so lanes 16..31 own one chunk fewer and a prefetch group is partial;
  // k = 4256: 133 chunks (not a multiple of 32); odd row counts leave the last CTA partly empty.
  // xs: activations as split planes too.
  for (int pf : {1, 4})
    for (bool xs : {false, true}) {
      for (int m : {1, 2, 3, 5, 8}) mv(4097, 1536, m, 4, pf, xs);
      mv(1001, 4256, 2, 4, pf, xs);
      for (int rpb : {1, 2, 8}) mv(4097, 4096, 3, rpb, pf, xs);
      // Model-sized shapes (qwen3-8b / llama3-8b) for --perf.
      mv(4096, 4096, 1, 4, pf, xs);
      mv(12288, 4096, 1, 4, pf, xs);
      mv(4096, 14336, 1, 4, pf, xs);
      mv(14336, 4096, 4, 4, pf, xs);
    }
}

}  // namespace
MEMRA_KC_REGISTER(add_matvec_rp_cases);
}  // namespace memra::kc
