// Sections "mmvs_id" and "mmvs": kernels.mmvs_split_min_k (MmvsParams::split_min_tasks), the row length
// from which the one-token and verify matvecs split a row over 2-4 warps. With 81 tasks (5184 weights)
// the 5120-weight rows of qwen3-32b (q/k/v, gate/up, the head) stay on one warp:
// - mmvs_id mmvs_splitmin81/*: the launch with the key byte-identical to the one-warp launch
//   (MmvsParams::split_k off) where the row is shorter than the key, and to the default split where
//   it is longer; a value under 65 tasks refused. The m-independence (decode == verify) and the
//   fused GLU with the key (mmvs_splitmin81*/1031x5120, cases_mmvs.cu), the GLU and row pairs
//   (mmvs_splitmin81_gp/rp1, cases_mmvs_pairs.cu) and the mixed q/k/v pair (mmvs_pair_ail_splitmin81).
// - mmvs mmvs_splitmin81_*: the engine's launch forms at the qwen3-32b shapes against the f64
//   reference, the --perf rows beside the default's (cases_mmvs.cu, cases_mmvs_pairs.cu).
#include <memory>
#include <string>

#include "cases_mmvs.h"

namespace memra::kc {
namespace {

using namespace mmvs_cases;

constexpr int kMin = 81;  // tasks: kernels.mmvs_split_min_k = 5184

class MmvsSplitMinIdCase : public Case {
 public:
  // glu: the fused SiLU GLU pair; cap: MmvsParams::min_blocks[_glu] (the act_il instances).
  MmvsSplitMinIdCase(QType t, int64_t n, int64_t k, bool glu, int cap) : t_(t), n_(n), k_(k), glu_(glu), cap_(cap) {}
  void generate(Env& env) override {
    dw_ = upload_split(env, t_, random_weight_bytes(env, t_, n_, k_), n_, k_, true);
    if (glu_) dw2_ = upload_split(env, t_, random_weight_bytes(env, t_, n_, k_), n_, k_, true);
    random_q8s_input(env, 1, k_, &dxq_, &dxds_, &dxq_il_);
    for (auto*& y : dy_) y = env.alloc_output<float>((size_t)n_);
  }
  cuda::MmvsParams params(float* y, int min_tasks, bool split) const {
    auto p = mmvs_params(t_, dw_, glu_ ? &dw2_ : nullptr, n_, k_, 1, dxq_il_, dxds_, y);
    p.split_max_warps = 2;
    p.split_min_tasks = min_tasks;
    p.split_k = split;
    p.min_blocks = p.min_blocks_glu = cap_;
    p.act_il = true;
    return p;
  }
  // The rule the key should give: one warp below kMin tasks, the default split from there.
  bool one_warp() const { return k_ / 64 < kMin; }
  cudaError_t launch(Env& env) override {
    if (const cudaError_t e = cuda::launch_mmvs(params(dy_[0], kMin, true), env.stream()); e != cudaSuccess) return e;
    if (const cudaError_t e = cuda::launch_mmvs(one_warp() ? params(dy_[1], 65, false) : params(dy_[1], 65, true), env.stream());
        e != cudaSuccess)
      return e;
    refused_ = cuda::launch_mmvs(params(dy_[1], 64, true), env.stream()) == cudaErrorInvalidValue;
    return cudaSuccess;
  }
  void reference(Env&) override {}
  Verdict compare(Env& env) override {
    if (!refused_) return ref::fail("split_min_tasks = 64 was not refused");
    const auto a = env.download(dy_[0], (size_t)n_), b = env.download(dy_[1], (size_t)n_);
    return compare_bytes(a.data(), b.data(), (size_t)n_ * 4);
  }

 private:
  QType t_;
  int64_t n_, k_;
  bool glu_;
  int cap_;
  bool refused_ = false;
  DeviceWeight dw_, dw2_;
  int8_t *dxq_ = nullptr, *dxq_il_ = nullptr;
  float* dxds_ = nullptr;
  float* dy_[2] = {};
};

void add_mmvs_split_min_cases(Registry& r) {
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q5_K, QType::IQ4_XS}) {
    const std::string tn(qtype_name(t));
    // 5120 (80 tasks): one warp with the key; 8192 / 12288: split as by default. Odd row counts.
    for (int64_t k : {int64_t{5120}, int64_t{8192}, int64_t{12288}})
      for (bool glu : {false, true})
        r.add("mmvs_id", ref::cat("mmvs_splitmin81/", tn, "/1031x", k, glu ? "/glu" : "/plain",
                                  k / 64 < kMin ? "/vs_one_warp_bytes" : "/vs_split_bytes"),
              [=] { return std::make_unique<MmvsSplitMinIdCase>(t, 1031, k, glu, glu ? 5 : 6); });
    // The qwen3-32b launch forms at 5120 weights (f64 reference; --perf beside the default's rows):
    // the GLU pairs and the GLU at cap 5 (gate/up 25600x5120), the q/k/v rows in one matrix at cap
    // 6 (10240x5120, with the default's row), the one-task row-pair head at cap 6.
    auto add = [&](const std::string& form, int64_t n, int glu, int cap, int pairs, int min_tasks) {
      r.add("mmvs", ref::cat(form, "/", tn, "/", n, "x5120/m1"), [=] {
        auto c = std::make_unique<MmvsCase>(t, n, 5120, 1, glu, true, true, cap, true, 2, true, false, pairs);
        c->split_min_tasks(min_tasks);
        return c;
      });
    };
    add("mmvs_splitmin81_gp_cap5", 25600, 1, 5, 2, kMin);
    add("mmvs_splitmin81_ail_glu_cap5", 25600, 1, 5, 0, kMin);
    add("mmvs_splitmin81_ail_cap6", 10240, 0, 6, 0, kMin);
    add("mmvs_ail_cap6", 10240, 0, 6, 0, 65);
    add("mmvs_splitmin81_rp1_cap6", 151936, 0, 6, 2, kMin);
  }
}

}  // namespace
MEMRA_KC_REGISTER(add_mmvs_split_min_cases);
}  // namespace memra::kc
