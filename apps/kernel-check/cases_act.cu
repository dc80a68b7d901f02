// kernel-check section "act": SiLU, GELU-tanh, the gated form act(gate) * up, and the gated form
// emitting q8_1, against an f64 CPU reference.
// Tolerance: normalized L2 error <= 2e-6: expf/tanhf are within 2 ulp and the formula adds a few
// roundings (~3e-7 scale); a wrong constant or formula is >= 1e-4. The q8_1 form is byte-identical
// to lib/quant's CPU quantize_row(Q8_1) of the f32 glu output and to the unfused device chain.
#include <algorithm>
#include <cmath>
#include <memory>

#include "act/act_kernels.h"
#include "cases_ref.h"
#include "core/half.h"
#include "quant/quant.h"
#include "quant/quant_kernels.h"

namespace memra::kc {
namespace {

constexpr double kActTol = 2e-6;

double act_ref(cuda::ActKind a, double x) {
  if (a == cuda::ActKind::Silu) return x / (1.0 + std::exp(-x));
  if (a == cuda::ActKind::Sigmoid) return 1.0 / (1.0 + std::exp(-x));
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

const char* act_name(cuda::ActKind a) {
  return a == cuda::ActKind::Silu ? "silu" : a == cuda::ActKind::GeluTanh ? "gelu_tanh" : a == cuda::ActKind::Sigmoid ? "sigmoid" : "swiglu_oai";
}

// act(gate) * up; gpt-oss's SwiGLU-OAI: min(g, 7) sigmoid(1.702 min(g, 7)) (clamp(u, -7, 7) + 1).
double glu_ref(cuda::ActKind a, double g, double u) {
  if (a != cuda::ActKind::SwigluOai) return act_ref(a, g) * u;
  const double x = std::min(g, 7.0), y = std::clamp(u, -7.0, 7.0);
  return x / (1.0 + std::exp(-1.702 * x)) * (y + 1.0);
}

class ActivateCase : public Case {
 public:
  ActivateCase(int rows, int cols, cuda::ActKind a) : rows_(rows), cols_(cols), act_(a) {}
  void generate(Env& env) override {
    ld_ = cols_ + 1;
    x_ = env.normal((size_t)rows_ * ld_, 3.0f);  // wide enough to reach both tails
    dx_ = env.upload(x_);
    dout_ = env.alloc_output<float>((size_t)rows_ * ld_);
  }
  cudaError_t launch(Env& env) override {
    cuda::ActParams p{dx_, ld_, dout_, ld_, rows_, cols_, act_};
    return cuda::launch_activate(p, env.stream());
  }
  void reference(Env&) override {
    ref_.clear();
    for (int r = 0; r < rows_; ++r)
      for (int c = 0; c < cols_; ++c) ref_.push_back(act_ref(act_, x_[(size_t)r * ld_ + c]));
  }
  Verdict compare(Env& env) override {
    const auto o = env.download(dout_, (size_t)rows_ * ld_);
    std::vector<float> got;
    for (int r = 0; r < rows_; ++r) got.insert(got.end(), o.begin() + r * ld_, o.begin() + r * ld_ + cols_);
    return ref::norm(got, ref_, kActTol);
  }
  PerfCount perf_count() const override { return {(double)rows_ * cols_ * 8, 0}; }

 private:
  int rows_, cols_;
  cuda::ActKind act_;
  int64_t ld_ = 0;
  std::vector<float> x_;
  std::vector<double> ref_;
  float *dx_ = nullptr, *dout_ = nullptr;
};

class GluCase : public Case {
 public:
  // f16: the f32 output plus its f16 copy (GluParams::out_f16), the copy checked byte for byte
  // against core/half.h's rounding of the kernel's own f32 output.
  GluCase(int rows, int cols, cuda::ActKind a, bool q8_1, bool f16 = false)
      : rows_(rows), cols_(cols), act_(a), q81_(q8_1), f16_(f16) {}
  void generate(Env& env) override {
    // gate and up as two column slices of one [rows, 2*cols] matrix, as a fused gate+up matmul
    // leaves them.
    ld_ = 2 * (int64_t)cols_;
    gu_ = env.normal((size_t)rows_ * ld_, 2.0f);
    dgu_ = env.upload(gu_);
    qrow_ = (int64_t)cols_ / 32 * 36;
    if (q81_) {
      dq_ = env.alloc_output<uint8_t>((size_t)rows_ * qrow_);
      df32_ = env.alloc<float>((size_t)rows_ * cols_);
      dq2_ = env.alloc<uint8_t>((size_t)rows_ * qrow_);
    } else {
      dout_ = env.alloc_output<float>((size_t)rows_ * cols_);
      if (f16_) d16_ = env.alloc_output<uint16_t>((size_t)rows_ * cols_);
    }
  }
  cuda::GluParams params(float* out, void* outq) const {
    cuda::GluParams p;
    p.gate = dgu_;
    p.ld_gate = ld_;
    p.up = dgu_ + cols_;
    p.ld_up = ld_;
    p.out = out;
    p.ld_out = cols_;
    p.out_q8_1 = outq;
    p.out_f16 = out && out == dout_ ? d16_ : nullptr;
    p.ld_out_bytes = qrow_;
    p.rows = rows_;
    p.cols = cols_;
    p.act = act_;
    return p;
  }
  cudaError_t launch(Env& env) override {
    return cuda::launch_glu(q81_ ? params(nullptr, dq_) : params(dout_, nullptr), env.stream());
  }
  void reference(Env& env) override {
    ref_.clear();
    for (int r = 0; r < rows_; ++r)
      for (int c = 0; c < cols_; ++c)
        ref_.push_back(glu_ref(act_, gu_[(size_t)r * ld_ + c], gu_[(size_t)r * ld_ + cols_ + c]));
    if (!q81_) return;
    ref::check(cuda::launch_glu(params(df32_, nullptr), env.stream()), "launch_glu f32 (reference chain)");
    cuda::QuantizeQ8_1Params q{};
    q.x = df32_;
    q.y = dq2_;
    q.n = cols_;
    q.rows = rows_;
    ref::check(cuda::launch_quantize_q8_1(q, env.stream()), "launch_quantize_q8_1 (reference chain)");
    f32_ = env.download(df32_, (size_t)rows_ * cols_);
    unfused_ = env.download(dq2_, (size_t)rows_ * qrow_);
    cpu_q_.assign((size_t)rows_ * qrow_, 0);
    for (int r = 0; r < rows_; ++r)
      quantize_row(QType::Q8_1, f32_.data() + (size_t)r * cols_, cpu_q_.data() + (size_t)r * qrow_, cols_);
  }
  Verdict compare(Env& env) override {
    if (!q81_ && !f16_) return ref::norm(env.download(dout_, (size_t)rows_ * cols_), ref_, kActTol);
    if (f16_) {
      const auto o = env.download(dout_, (size_t)rows_ * cols_);
      const auto h = env.download(d16_, (size_t)rows_ * cols_);
      std::vector<uint16_t> want(o.size());
      for (size_t i = 0; i < o.size(); ++i) want[i] = f32_to_fp16(o[i]);
      return ref::all_of({{"f32 glu vs f64", ref::norm(o, ref_, kActTol)},
                          {"f16 copy vs core/half.h of the f32 output",
                           compare_bytes(reinterpret_cast<const uint8_t*>(h.data()),
                                         reinterpret_cast<const uint8_t*>(want.data()), h.size() * 2)}});
    }
    const auto q = env.download(dq_, (size_t)rows_ * qrow_);
    return ref::all_of({{"f32 glu vs f64", ref::norm(f32_, ref_, kActTol)},
                        {"fused vs CPU quantize_row(Q8_1)", compare_bytes(q.data(), cpu_q_.data(), q.size())},
                        {"fused vs unfused device chain", compare_bytes(q.data(), unfused_.data(), q.size())}});
  }
  PerfCount perf_count() const override {
    return {(double)rows_ * cols_ * 8 + (q81_ ? (double)rows_ * qrow_ : (double)rows_ * cols_ * 4), 0};
  }

 private:
  int rows_, cols_;
  cuda::ActKind act_;
  bool q81_, f16_;
  uint16_t* d16_ = nullptr;
  int64_t ld_ = 0, qrow_ = 0;
  std::vector<float> gu_, f32_;
  std::vector<double> ref_;
  std::vector<uint8_t> unfused_, cpu_q_;
  float *dgu_ = nullptr, *dout_ = nullptr, *df32_ = nullptr;
  uint8_t *dq_ = nullptr, *dq2_ = nullptr;
};

void add_act_cases(Registry& r) {
  using cuda::ActKind;
#ifdef MEMRA_REDUCED_INSTANCES
  const int kRows[] = {1, 17};
  const int kCols[] = {12288};
#else
  const int kRows[] = {1, 17, 33};
  const int kCols[] = {12288, 1536, 544};
#endif
  for (ActKind a : {ActKind::Silu, ActKind::GeluTanh})
    for (int rows : kRows)
      for (int cols : kCols) {
        const auto shape = ref::cat(rows, "x", cols);
        r.add("act", ref::cat(act_name(a), "/f32/", shape),
              [=] { return std::make_unique<ActivateCase>(rows, cols, a); });
        r.add("act", ref::cat("glu_", act_name(a), "/f32/", shape),
              [=] { return std::make_unique<GluCase>(rows, cols, a, false); });
        r.add("act", ref::cat("glu_", act_name(a), "/q8_1/", shape),
              [=] { return std::make_unique<GluCase>(rows, cols, a, true); });
        r.add("act", ref::cat("glu_", act_name(a), "/f32+f16/", shape),
              [=] { return std::make_unique<GluCase>(rows, cols, a, false, true); });
      }
  // Sigmoid (qwen35's attention output gate): activate and the f32 GLU only (launch_glu refuses
  // the q8_1 and f16 outputs for it); a gate read with a row stride past its columns.
  for (int rows : kRows)
    for (int cols : {4096, 544}) {
      const auto shape = ref::cat(rows, "x", cols);
      r.add("act", ref::cat("sigmoid/f32/", shape), [=] { return std::make_unique<ActivateCase>(rows, cols, ActKind::Sigmoid); });
      r.add("act", ref::cat("glu_sigmoid/f32/", shape),
            [=] { return std::make_unique<GluCase>(rows, cols, ActKind::Sigmoid, false); });
    }
  // SwiGLU-OAI (gpt-oss's experts), f32 GLU only. GluCase draws N(0, 2) inputs: ~2e-4 of them lie
  // past the clamps at +-7, a few per 12288-column row.
  for (int rows : kRows)
    for (int cols : {12288, 544}) {
      r.add("act", ref::cat("glu_swiglu_oai/f32/", rows, "x", cols),
            [=] { return std::make_unique<GluCase>(rows, cols, ActKind::SwigluOai, false); });
    }
  // The scalar path (cols % 4 != 0) and a prefill-sized batch of the 4-wide one.
  r.add("act", "glu_silu/f32/5x1001", [] { return std::make_unique<GluCase>(5, 1001, ActKind::Silu, false); });
  r.add("act", "glu_silu/f32+f16/512x12288",
        [] { return std::make_unique<GluCase>(512, 12288, ActKind::Silu, false, true); });
}
MEMRA_KC_REGISTER(add_act_cases);

}  // namespace
}  // namespace memra::kc
