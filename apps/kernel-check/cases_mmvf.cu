// Section "mmvf": the float-weight decode matvec mmvf2 (kernels/matvec/mmvf.h) against an f64 CPU
// reference on the weight bytes it reads and the f32 activations, and byte for byte against its own
// other forms: the same rows at every m (decode == verify), at 1, 2 and 4 rows per warp, with the
// preload off, and the fused GLU / residual epilogues against the plain launch followed by the
// unfused kernel (launch_glu; the residual add done on the host with the same f32 add).
//
// Tolerance: normalized error <= 1e-5 against f64 (an f32 FMA chain per lane over k/256 chunks of 8,
// then a 32-lane tree: ~1e-7 on random data; one wrong chunk or row moves it to >= 1e-2, and any
// unwritten output is NaN poison).
#include <cstring>

#include "act/act_kernels.h"
#include "case_util.h"
#include "cases_ref.h"
#include "matvec/matvec.h"
#include "matvec/mmvf.h"
#include "quant/quant.h"

namespace memra::kc {
namespace {

constexpr double kTol = 1e-5;

class MmvfCase : public Case {
 public:
  // kind: 0 plain (f64 reference), 1 the forms' bytes (every m row of an m = 5 launch against m = 1
  // launches, rows per warp 1 / 2 / 4 and preload off against the default), 2 the GLU epilogue
  // against plain launches + launch_glu (SiLU), 3 the residual epilogue against a plain launch + the
  // add, 4 the GELU-tanh GLU epilogue (gemma's) against plain launches + launch_glu (GeluTanh).
  MmvfCase(QType t, int64_t n, int64_t k, int m, int rpw, int kind = 0) : t_(t), n_(n), k_(k), m_(m), rpw_(rpw), kind_(kind) {}
  void generate(Env& env) override {
    w_ = random_weight_bytes(env, t_, n_, k_);
    dw_ = env.upload(w_);
    if (glu() != 0) dw2_ = env.upload(random_weight_bytes(env, t_, n_, k_));
    x_ = env.normal((size_t)(m_ * k_));
    dx_ = env.upload(x_);
    if (kind_ == 3) {
      res_ = env.normal((size_t)(m_ * n_));
      dres_ = env.upload(res_);
    }
    dy_ = env.alloc_output<float>((size_t)(m_ * n_));
  }
  cuda::MmvfParams params(float* y, int m, int rpw) const {
    cuda::MmvfParams p;
    p.w_type = t_;
    p.w = dw_;
    p.n_rows = n_;
    p.n_cols = k_;
    p.m = m;
    p.x = dx_;
    p.y = y;
    p.rows_per_warp = rpw;
    return p;
  }
  cudaError_t launch(Env& env) override {
    cuda::MmvfParams p = params(dy_, m_, rpw_);
    if (glu() != 0) {
      p.w2 = dw2_;
      p.glu = glu();
    }
    if (kind_ == 3) {  // y = res + W x, in place over a copy of res
      ref::check(cudaMemcpyAsync(dy_, dres_, (size_t)(m_ * n_) * 4, cudaMemcpyDeviceToDevice, env.stream()), "copy");
      p.residual = dy_;
    }
    return cuda::launch_mmvf(p, env.stream());
  }
  void reference(Env& env) override {
    if (kind_ == 0) {
      ref_ = matmul_f64(dequantize_rows(t_, w_, n_, k_), x_, n_, k_, m_);
      return;
    }
    // The other forms' outputs, all m rows, m * n floats each.
    const size_t nn = (size_t)(m_ * n_);
    auto run = [&](cuda::MmvfParams p) {
      float* y = env.alloc<float>(nn);
      p.y = y;
      ref::check(cuda::launch_mmvf(p, env.stream()), "an mmvf2 form");
      return env.download(y, nn);
    };
    if (kind_ == 1) {
      for (int rpw : {1, 2, 4}) forms_.push_back(run(params(nullptr, m_, rpw)));
      auto np = params(nullptr, m_, rpw_);
      np.preload = false;
      forms_.push_back(run(np));
      // Each row j of the m-row launch against a one-row launch on x's row j.
      std::vector<float> ones(nn);
      for (int j = 0; j < m_; ++j) {
        auto p1 = params(nullptr, 1, rpw_);
        p1.x = dx_ + (size_t)j * k_;
        const auto y1 = run(p1);
        std::memcpy(ones.data() + (size_t)j * n_, y1.data(), (size_t)n_ * 4);
      }
      forms_.push_back(ones);
    } else if (glu() != 0) {
      const auto gate = run(params(nullptr, m_, rpw_));
      auto pu = params(nullptr, m_, rpw_);
      pu.w = dw2_;
      const auto up = run(pu);
      float *dg = env.alloc<float>(nn), *du = env.alloc<float>(nn), *dout = env.alloc<float>(nn);
      ref::check(cudaMemcpyAsync(dg, gate.data(), nn * 4, cudaMemcpyHostToDevice, env.stream()), "copy");
      ref::check(cudaMemcpyAsync(du, up.data(), nn * 4, cudaMemcpyHostToDevice, env.stream()), "copy");
      cuda::GluParams g;
      g.gate = dg;
      g.up = du;
      g.out = dout;
      g.ld_gate = g.ld_up = g.ld_out = n_;
      g.rows = m_;
      g.cols = (int)n_;
      g.act = glu() == 2 ? cuda::ActKind::GeluTanh : cuda::ActKind::Silu;
      ref::check(cuda::launch_glu(g, env.stream()), "launch_glu");
      forms_.push_back(env.download(dout, nn));
    } else {
      auto y = run(params(nullptr, m_, rpw_));
      for (size_t i = 0; i < nn; ++i) y[i] = res_[i] + y[i];  // one f32 add, round to nearest
      forms_.push_back(y);
    }
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dy_, (size_t)(m_ * n_));
    if (kind_ == 0) return compare_norm(got, ref_, kTol);
    Verdict v = ref::fail("no other form was run");
    for (const auto& f : forms_) {
      v = compare_bytes(got.data(), f.data(), got.size() * 4);
      if (!v.pass) return v;
    }
    return v;
  }
  PerfCount perf_count() const override {
    const double wb = (double)*qtype_row_bytes(t_, k_) * (double)n_ * (glu() != 0 ? 2 : 1);
    return {wb + (double)m_ * k_ * 4 + 4.0 * m_ * n_, 0};
  }

 private:
  int glu() const { return kind_ == 2 ? 1 : kind_ == 4 ? 2 : 0; }  // MmvfParams::glu of the case
  QType t_;
  int64_t n_, k_;
  int m_, rpw_, kind_;
  std::vector<uint8_t> w_;
  std::vector<float> x_, res_;
  std::vector<double> ref_;
  std::vector<std::vector<float>> forms_;
  void* dw_ = nullptr;
  void* dw2_ = nullptr;
  float* dx_ = nullptr;
  float* dres_ = nullptr;
  float* dy_ = nullptr;
};

void add_mmvf_cases(Registry& r) {
  for (QType t : {QType::F16, QType::BF16, QType::F32}) {
    const std::string tn(qtype_name(t));
    auto add = [&](const char* what, int64_t n, int64_t k, int m, int rpw, int kind) {
      r.add("mmvf", ref::cat("mmvf2", what, "_r", rpw, "/", tn, "/", n, "x", k, "/m", m),
            [=] { return std::make_unique<MmvfCase>(t, n, k, m, rpw, kind); });
    };
    // Odd row counts (the last warp's rows partly past n), k with a partial last round of chunks
    // (1032 = 129 chunks: lane 0 takes a fifth), every m class, every rows-per-warp value.
    for (int rpw : {1, 2, 4}) {
      for (int m : {1, 3, 8}) add("", 4097, 1032, m, rpw, 0);
      add("", 1031, 4096, 1, rpw, 0);
    }
    for (int rpw : {1, 2, 4}) add("_forms", 1031, 2056, 5, rpw, 1);
    for (int m : {1, 3}) {
      add("_glu", 1031, 2056, m, 2, 2);
      add("_glu", 1030, 4096, m, 4, 2);
      add("_residual", 1031, 2056, m, 2, 3);
    }
    for (int rpw : {1, 2, 4}) add("_geglu", 1031, 2056, rpw == 2 ? 3 : 1, rpw, 4);
    // Model shapes (qwen3-8b q / o 4096x4096, k / v 1024x4096, down 4096x12288, head 151936x4096;
    // llama3-8b down / gate 4096x14336 / 14336x4096) for --perf, the last two beside the first float
    // matvec's rows (section matvec, mmvf_r4/F16/...).
    for (int rpw : {1, 2, 4})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {1024, 4096}, {4096, 12288}, {151936, 4096},
                          {4096, 14336}, {14336, 4096}})
        add("", n, k, 1, rpw, 0);
    for (int rpw : {1, 2, 4}) add("_glu", 12288, 4096, 1, rpw, 2);
  }
}

}  // namespace
MEMRA_KC_REGISTER(add_mmvf_cases);
}  // namespace memra::kc
