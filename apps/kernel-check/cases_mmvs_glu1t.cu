// kernels.mmvs_glu_one_task (MmvsParams::glu_one_task): the one-token GLU launches with one task per
// matrix in flight per lane. mmvs_id: byte identity with the default two-task GLU launch (the same
// lane task order), for every type, SiLU and GELU, at the caps 0 / 5 / 6, one, two and four warps per
// row, and the refusal of the flag without a GLU. mmvs: --perf rows at the qwen3-8b / qwen3-32b GLU
// shapes beside mmvs_ail_glu* (the launch itself against the default launch's bytes).
#include "cases_mmvs.h"

namespace memra::kc {
namespace {

using namespace mmvs_cases;

class MmvsGluOneTaskCase : public Case {
 public:
  MmvsGluOneTaskCase(QType t, int64_t n, int64_t k, int glu, int cap) : t_(t), n_(n), k_(k), glu_(glu), cap_(cap) {}
  void generate(Env& env) override {
    dw_ = upload_split(env, t_, random_weight_bytes(env, t_, n_, k_), n_, k_, true);
    dw2_ = upload_split(env, t_, random_weight_bytes(env, t_, n_, k_), n_, k_, true);
    random_q8s_input(env, 1, k_, &dxq_, &dxds_, &dxq_il_);
    dy_ = env.alloc_output<float>((size_t)n_);
  }
  cuda::MmvsParams params(float* y, bool one, int cap) const {
    auto p = mmvs_params(t_, dw_, &dw2_, n_, k_, 1, dxq_il_, dxds_, y);
    p.glu = glu_;
    p.split_max_warps = 2;
    p.act_il = true;
    p.min_blocks_glu = cap;
    p.glu_one_task = one;
    return p;
  }
  cudaError_t launch(Env& env) override { return cuda::launch_mmvs(params(dy_, true, cap_), env.stream()); }
  void reference(Env& env) override {
    float* y = env.alloc<float>((size_t)n_);
    ref::check(cuda::launch_mmvs(params(y, false, 0), env.stream()), "the two-task GLU launch");
    want_ = env.download(y, (size_t)n_);
    auto plain = mmvs_params(t_, dw_, nullptr, n_, k_, 1, dxq_il_, dxds_, y);
    plain.act_il = plain.glu_one_task = true;
    refused_ = cuda::launch_mmvs(plain, env.stream()) == cudaErrorInvalidValue;
  }
  Verdict compare(Env& env) override {
    if (!refused_) return ref::fail("glu_one_task without a GLU was not refused");
    const auto got = env.download(dy_, (size_t)n_);
    return compare_bytes(got.data(), want_.data(), (size_t)n_ * 4);
  }
  PerfCount perf_count() const override {
    return {2.0 * (double)*qtype_row_bytes(t_, k_) * (double)n_ + (double)k_ * 1.25 + 4.0 * (double)n_, 0};
  }

 private:
  QType t_;
  int64_t n_, k_;
  int glu_, cap_;
  bool refused_ = false;
  DeviceWeight dw_, dw2_;
  int8_t *dxq_ = nullptr, *dxq_il_ = nullptr;
  float* dxds_ = nullptr;
  float* dy_ = nullptr;
  std::vector<float> want_;
};

void add_mmvs_glu1t_cases(Registry& r) {
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS}) {
    const std::string tn(qtype_name(t));
    for (int glu : {1, 2})
      for (int cap : {0, 5, 6})
        for (auto [n, k] : {std::pair<int64_t, int64_t>{1031, 2304}, {1031, 5120}, {1033, 12288}})
          r.add("mmvs_id", ref::cat("mmvs_glu1t/", tn, glu == 1 ? "/silu" : "/gelu", "/cap", cap, "/", n, "x", k, "/vs_two_task_bytes"),
                [=] { return std::make_unique<MmvsGluOneTaskCase>(t, n, k, glu, cap); });
    for (int cap : {0, 5, 6})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{12288, 4096}, {25600, 5120}})
        r.add("mmvs", ref::cat("mmvs_glu1t_cap", cap, "/", tn, "/", n, "x", k, "/m1"),
              [=] { return std::make_unique<MmvsGluOneTaskCase>(t, n, k, 1, cap); });
  }
}

}  // namespace
MEMRA_KC_REGISTER(add_mmvs_glu1t_cases);
}  // namespace memra::kc
