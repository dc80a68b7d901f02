// kernel-check section "moe", the device-routed MoE (kernels.moe_device_route):
// - route/*: the router kernel against the CPU oracle's backend::moe_route on the same logits:
//   expert ids byte-identical (random logits leave no near-ties), weights within 1e-6 normalized
//   error (both compute them in f64 and round once to f32; the device's exp / summation order may
//   move the f64 value by ~1e-16, so a rare 1-ulp f32 difference is possible, ~6e-8 relative,
//   while a wrong expert or a missing renormalization is >= 1e-2).
// - routed_matvec/*: the plain matvec's routed form (MatvecParams::ids): every slot's row
//   byte-identical to a plain launch on that slot's expert matrix and activation row, and within
//   the section matvec's 1e-5 of an f64 product of the CPU-dequantized bytes; a slot with an id
//   out of range writes NaN (never reads outside the experts).
#include <array>
#include <cmath>
#include <memory>
#include <utility>

#include "case_util.h"
#include "cases_ref.h"
#include "matvec/matvec.h"
#include "matvec/matvec_v2.h"
#include "moe/moe_kernels.h"
#include "quant/quant.h"
#include "route_ref.h"

namespace memra::kc {
namespace {

class MoeRouteCase : public Case {
 public:
  MoeRouteCase(int n, int e, int k, int gating, bool rbias, bool sbias, bool norm, float scale)
      : n_(n), e_(e), k_(k), rbias_(rbias), sbias_(sbias) {
    rp_.n_tokens = n;
    rp_.n_expert = e;
    rp_.k_used = k;
    rp_.gating = gating;
    rp_.norm_topk = norm;
    rp_.weights_scale = scale;
  }
  void generate(Env& env) override {
    ld_ = e_ + 3;
    logits_ = env.normal((size_t)n_ * ld_, 2.0f);
    if (rbias_) rb_ = env.normal((size_t)e_, 0.5f);
    if (sbias_) sb_ = env.uniform((size_t)e_, -0.3f, 0.3f);
    dl_ = env.upload(logits_);
    if (rbias_) drb_ = env.upload(rb_);
    if (sbias_) dsb_ = env.upload(sb_);
    dids_ = env.alloc_output<int32_t>((size_t)n_ * k_);
    dw_ = env.alloc_output<float>((size_t)n_ * k_);
  }
  cudaError_t launch(Env& env) override {
    cuda::MoeRouteParams p;
    p.logits = dl_;
    p.ld = ld_;
    p.router_bias = drb_;
    p.selection_bias = dsb_;
    p.n_tokens = rp_.n_tokens;
    p.n_expert = rp_.n_expert;
    p.k_used = rp_.k_used;
    p.gating = rp_.gating;
    p.norm_topk = rp_.norm_topk;
    p.weights_scale = rp_.weights_scale;
    p.ids = dids_;
    p.weights = dw_;
    return cuda::launch_moe_route(p, env.stream());
  }
  void reference(Env&) override {
    RouteRefParams p = rp_;
    p.router_bias = rbias_ ? rb_.data() : nullptr;
    p.selection_bias = sbias_ ? sb_.data() : nullptr;
    ids_.resize((size_t)n_ * k_);
    w_.resize((size_t)n_ * k_);
    moe_route_ref(p, logits_.data(), ld_, ids_.data(), w_.data());
  }
  Verdict compare(Env& env) override {
    const auto ids = env.download(dids_, ids_.size());
    const auto w = env.download(dw_, w_.size());
    const std::vector<double> wref(w_.begin(), w_.end());
    return ref::all_of({{"ids", compare_bytes(ids.data(), ids_.data(), ids.size() * 4)},
                        {"weights", ref::norm(w, wref, 1e-6)}});
  }
  PerfCount perf_count() const override { return {(double)n_ * (e_ + 2 * k_) * 4, 0}; }

 private:
  int n_, e_, k_;
  bool rbias_, sbias_;
  RouteRefParams rp_;
  int64_t ld_ = 0;
  std::vector<float> logits_, rb_, sb_, w_;
  std::vector<int32_t> ids_;
  float *dl_ = nullptr, *drb_ = nullptr, *dsb_ = nullptr, *dw_ = nullptr;
  int32_t* dids_ = nullptr;
};

// n tokens x k distinct experts of e each (random order), optionally some ids out of range.
std::vector<int32_t> random_route_ids(Env& env, int n, int k, int e, int n_bad) {
  std::vector<int32_t> ids;
  for (int t = 0; t < n; ++t) {
    std::vector<int32_t> perm((size_t)e);
    for (int i = 0; i < e; ++i) perm[(size_t)i] = i;
    for (int i = e - 1; i > 0; --i) std::swap(perm[(size_t)i], perm[(size_t)(env.rng()() % (uint64_t)(i + 1))]);
    ids.insert(ids.end(), perm.begin(), perm.begin() + k);
  }
  for (int b = 0; b < n_bad && !ids.empty(); ++b) ids[(size_t)(env.rng()() % ids.size())] = b % 2 ? -3 : e + b;
  return ids;
}

// n tokens x k slots over e experts of [rows x cols]; x_div = k: every slot of a token reads the
// token's row (gate / up); x_div = 1: each slot its own row (down). bad: the last slot's id is e.
// The form launched: the plain kernel's routed form (one slot per block row), the v2 kernel's
// (launch_matvec_v2, kernels.moe_routed_v2) or the grouped form (launch_moe_group, then
// MatvecParams::groups: up to 8 slots of one expert per block row, kernels.moe_device_route_prefill).
// Every form: each valid slot byte-identical to a plain v1 launch on its expert's matrix (v2 keeps
// v1's per-lane chunk order and shuffle tree, the grouped form the routed form's per-slot
// arithmetic), the bad slot's rows NaN, and (f64) within 1e-5 of f64; the --perf shapes of the
// grouped form (512 tokens) skip the f64 reference.
// kGroupedMma (launch_matvec_grouped_mma, kernels.moe_grouped_mma: Q8_0 on the int8 tensor cores,
// another summation order) is held to the plain launches and f64 within 1e-5 instead of bytes.
// kPair: the plain routed form with a second expert stack in the same launch (MatvecParams::w2 / y2,
// kernels.moe_gate_up_one_launch), each matrix's slots byte-identical to per-slot plain launches.
enum class RoutedForm { kPlain, kV2, kGrouped, kGroupedMma, kPair };
class RoutedMatvecCase : public Case {
 public:
  RoutedMatvecCase(QType t, int e, int64_t rows, int64_t cols, int n, int k, bool per_slot_x, bool bad,
                   RoutedForm form = RoutedForm::kPlain, bool f64 = true)
      : t_(t), e_(e), rows_(rows), cols_(cols), n_(n), k_(k), per_slot_x_(per_slot_x), bad_(bad), form_(form), f64_(f64) {}
  void generate(Env& env) override {
    quantized_ = qtype_traits(t_).quantized;
    row_bytes_ = *qtype_row_bytes(t_, cols_);
    w_ = random_weight_bytes(env, t_, (int64_t)e_ * rows_, cols_);
    dw_ = env.upload(w_);
    if (form_ == RoutedForm::kPair) {
      dw2_ = env.upload(random_weight_bytes(env, t_, (int64_t)e_ * rows_, cols_));
      dy2_ = env.alloc_output<float>((size_t)(slots() * rows_));
      dplain2_ = env.alloc_output<float>((size_t)(slots() * rows_));
    }
    ids_ = random_route_ids(env, n_, k_, e_, 0);  // k distinct experts per token, in a random order
    if (bad_) ids_.back() = e_;
    dids_ = env.upload(ids_);
    if (form_ == RoutedForm::kGrouped || form_ == RoutedForm::kGroupedMma) {
      n_groups_ = (int)cuda::moe_group_capacity(slots(), e_);
      dg_ = env.alloc_output<int32_t>((size_t)n_groups_ * cuda::kMoeGroupStride);
    }
    const int64_t xrows = per_slot_x_ ? slots() : n_;
    x_ = env.normal((size_t)(xrows * cols_));
    if (quantized_) {
      xq_.resize((size_t)(xrows * (cols_ / 32) * 36));
      for (int64_t j = 0; j < xrows; ++j)
        quantize_row(QType::Q8_1, x_.data() + j * cols_, xq_.data() + j * (cols_ / 32) * 36, cols_);
      dx_ = env.upload(xq_);
    } else {
      dx_ = env.upload(x_);
    }
    dy_ = env.alloc_output<float>((size_t)(slots() * rows_));
    dplain_ = env.alloc_output<float>((size_t)(slots() * rows_));
  }
  int64_t slots() const { return (int64_t)n_ * k_; }
  int64_t x_row(int64_t s) const { return per_slot_x_ ? s : s / k_; }
  cuda::MatvecParams plain_params(const void* x) const {
    cuda::MatvecParams p;
    p.w_type = t_;
    p.w = dw_;
    p.n_rows = rows_;
    p.n_cols = cols_;
    p.m = 1;
    if (quantized_) p.x_q8_1 = x;
    else p.x_f32 = static_cast<const float*>(x);
    p.rows_per_block = 4;
    return p;
  }
  cudaError_t launch(Env& env) override {
    cuda::MatvecParams p = plain_params(dx_);
    p.y = dy_;
    p.ldy = rows_;
    p.ids = dids_;
    p.n_slots = (int)slots();
    p.n_experts = e_;
    p.expert_bytes = (size_t)rows_ * row_bytes_;
    p.x_slot_div = per_slot_x_ ? 1 : k_;
    if (form_ == RoutedForm::kV2) return cuda::launch_matvec_v2(p, env.stream());
    if (form_ == RoutedForm::kPair) {
      p.w2 = dw2_;
      p.y2 = dy2_;
    }
    if (form_ == RoutedForm::kGrouped || form_ == RoutedForm::kGroupedMma) {
      cuda::MoeGroupParams gp;
      gp.ids = dids_;
      gp.n_slots = (int)slots();
      gp.n_expert = e_;
      gp.groups = dg_;
      gp.n_groups = n_groups_;
      const cudaError_t ge = cuda::launch_moe_group(gp, env.stream());
      if (ge != cudaSuccess) return ge;
      p.ids = nullptr;
      p.n_slots = 0;
      p.groups = dg_;
      p.n_groups = n_groups_;
      if (form_ == RoutedForm::kGroupedMma) return cuda::launch_matvec_grouped_mma(p, env.stream());
    }
    return cuda::launch_matvec(p, env.stream());
  }
  void reference(Env&) override {
    ref_.assign((size_t)(slots() * rows_), 0.0);
    if (!f64_) return;
    const auto x = quantized_ ? dequantize_rows(QType::Q8_1, xq_, per_slot_x_ ? slots() : n_, cols_) : x_;
    for (int e = 0; e < e_; ++e) {  // each expert used dequantized once (the bad slot: NaN in compare)
      std::vector<float> wf;
      for (int64_t s = 0; s < slots(); ++s) {
        if (ids_[(size_t)s] != e) continue;
        if (wf.empty())
          wf = dequantize_rows(t_, std::vector<uint8_t>(w_.begin() + (int64_t)e * rows_ * row_bytes_,
                                                         w_.begin() + ((int64_t)e + 1) * rows_ * row_bytes_),
                               rows_, cols_);
        const std::vector<float> xs(x.begin() + x_row(s) * cols_, x.begin() + (x_row(s) + 1) * cols_);
        const auto y = matmul_f64(wf, xs, rows_, cols_, 1);
        std::copy(y.begin(), y.end(), ref_.begin() + s * rows_);
      }
    }
  }
  // The plain launches, one per slot, of the expert stack at dw into dplain; then the routed output
  // dy and those rows (the bad slot's rows checked NaN and dropped from both).
  std::pair<std::vector<float>, std::vector<float>> routed_and_plain(Env& env, const uint8_t* dw, float* dy,
                                                                     float* dplain, Verdict* bad_rows) {
    const size_t x_bytes = quantized_ ? (size_t)(cols_ / 32) * 36 : (size_t)cols_ * 4;
    for (int64_t s = 0; s < slots(); ++s) {
      if (ids_[(size_t)s] >= e_) continue;
      cuda::MatvecParams p = plain_params(static_cast<const uint8_t*>(dx_) + x_row(s) * x_bytes);
      p.w = dw + (size_t)ids_[(size_t)s] * rows_ * row_bytes_;
      p.y = dplain + s * rows_;
      ref::check(cuda::launch_matvec(p, env.stream()), "launch_matvec (plain, per slot)");
    }
    auto got = env.download(dy, (size_t)(slots() * rows_));
    auto plain = env.download(dplain, got.size());
    bad_rows->pass = true;
    if (bad_) {
      const int64_t good = slots() - 1;  // the bad slot is the last
      for (int64_t i = good * rows_; i < slots() * rows_; ++i)
        if (!std::isnan(got[(size_t)i])) {
          *bad_rows = ref::fail(ref::cat("slot with id ", e_, ": row ", i - good * rows_, " is not NaN"));
          break;
        }
      got.resize((size_t)(good * rows_));
      plain.resize(got.size());
    }
    return {got, plain};
  }
  Verdict compare(Env& env) override {
    Verdict bad_rows;
    auto [got, plain] = routed_and_plain(env, dw_, dy_, dplain_, &bad_rows);
    if (!bad_rows.pass) return bad_rows;
    ref_.resize(got.size());
    if (form_ == RoutedForm::kPair) {  // the second matrix's slots against its own plain launches
      Verdict bad2;
      const auto [got2, plain2] = routed_and_plain(env, dw2_, dy2_, dplain2_, &bad2);
      if (!bad2.pass) return bad2;
      return ref::all_of({{"first matrix vs plain", compare_bytes(got.data(), plain.data(), got.size() * 4)},
                          {"second matrix vs plain", compare_bytes(got2.data(), plain2.data(), got2.size() * 4)},
                          {"f64", ref::norm(got, ref_, 1e-5)}});
    }
    if (form_ == RoutedForm::kGroupedMma) {  // another summation order: tolerances, not bytes
      const std::vector<double> pd(plain.begin(), plain.end());
      if (!f64_) return ref::norm(got, pd, 1e-5);
      return ref::all_of({{"vs plain", ref::norm(got, pd, 1e-5)}, {"f64", ref::norm(got, ref_, 1e-5)}});
    }
    if (!f64_) return compare_bytes(got.data(), plain.data(), got.size() * 4);
    return ref::all_of({{"routed vs plain", compare_bytes(got.data(), plain.data(), got.size() * 4)},
                        {"f64", ref::norm(got, ref_, 1e-5)}});
  }
  PerfCount perf_count() const override {
    const double xb = quantized_ ? (double)(cols_ / 32) * 36 : (double)cols_ * 4;
    if (form_ != RoutedForm::kGrouped && form_ != RoutedForm::kGroupedMma)
      return {(double)slots() * ((double)rows_ * row_bytes_ + xb + 4.0 * rows_), 0};
    // Grouped: each expert used read at least once (the floor), not once per slot.
    std::vector<bool> used((size_t)e_, false);
    for (int32_t id : ids_)
      if (id >= 0 && id < e_) used[(size_t)id] = true;
    double b = 0;
    for (bool u : used) b += u ? (double)rows_ * row_bytes_ : 0;
    return {b + (double)slots() * (xb + 4.0 * rows_), 0};
  }

 private:
  QType t_;
  int e_;
  int64_t rows_, cols_;
  int n_, k_;
  bool per_slot_x_, bad_;
  RoutedForm form_;
  bool f64_;
  int n_groups_ = 0;
  int32_t* dg_ = nullptr;
  bool quantized_ = false;
  size_t row_bytes_ = 0;
  std::vector<uint8_t> w_, xq_;
  std::vector<float> x_;
  std::vector<int32_t> ids_;
  std::vector<double> ref_;
  uint8_t* dw_ = nullptr;
  uint8_t* dw2_ = nullptr;  // kPair
  void* dx_ = nullptr;
  int32_t* dids_ = nullptr;
  float *dy_ = nullptr, *dplain_ = nullptr;
  float *dy2_ = nullptr, *dplain2_ = nullptr;  // kPair
};

// launch_moe_group against the grouping written out on the host from its definition
// (moe_kernels.h): for each expert in order (the bad ids' pseudo-expert last), its slots in slot
// order, eight to a group; unused groups all -1. Byte identity of the whole array.
std::vector<int32_t> moe_groups_ref(const std::vector<int32_t>& ids, int e, int n_groups) {
  std::vector<int32_t> g((size_t)n_groups * cuda::kMoeGroupStride, -1);
  int at = 0;
  for (int x = 0; x <= e; ++x) {
    int c = 0;
    for (size_t s = 0; s < ids.size(); ++s) {
      const int32_t id = ids[s] >= 0 && ids[s] < e ? ids[s] : e;
      if (id != x) continue;
      int32_t* grp = g.data() + (size_t)(at + c / cuda::kMoeGroupSlots) * cuda::kMoeGroupStride;
      if (c % cuda::kMoeGroupSlots == 0) grp[0] = x;
      grp[1 + c % cuda::kMoeGroupSlots] = (int32_t)s;
      ++c;
    }
    at += (c + cuda::kMoeGroupSlots - 1) / cuda::kMoeGroupSlots;
  }
  return g;
}

class MoeGroupCase : public Case {
 public:
  MoeGroupCase(int n, int k, int e, int n_bad) : n_(n), k_(k), e_(e), n_bad_(n_bad) {}
  void generate(Env& env) override {
    ids_ = random_route_ids(env, n_, k_, e_, n_bad_);
    n_groups_ = (int)cuda::moe_group_capacity((int64_t)ids_.size(), e_) + 3;  // room past the capacity too
    dids_ = env.upload(ids_);
    dg_ = env.alloc_output<int32_t>((size_t)n_groups_ * cuda::kMoeGroupStride);
  }
  cudaError_t launch(Env& env) override {
    cuda::MoeGroupParams p;
    p.ids = dids_;
    p.n_slots = (int)ids_.size();
    p.n_expert = e_;
    p.groups = dg_;
    p.n_groups = n_groups_;
    return cuda::launch_moe_group(p, env.stream());
  }
  void reference(Env& env) override {
    ref_ = moe_groups_ref(ids_, e_, n_groups_);
    cuda::MoeGroupParams p;  // too few groups: refused
    p.ids = dids_;
    p.n_slots = (int)ids_.size();
    p.n_expert = e_;
    p.groups = dg_;
    p.n_groups = (int)cuda::moe_group_capacity((int64_t)ids_.size(), e_) - 1;
    refused_ = cuda::launch_moe_group(p, env.stream()) == cudaErrorInvalidValue;
  }
  Verdict compare(Env& env) override {
    if (!refused_) return ref::fail("fewer groups than moe_group_capacity was not refused");
    const auto g = env.download(dg_, ref_.size());
    return compare_bytes(g.data(), ref_.data(), g.size() * 4);
  }
  PerfCount perf_count() const override { return {(double)ids_.size() * 4 + (double)ref_.size() * 4, 0}; }

 private:
  int n_, k_, e_, n_bad_;
  int n_groups_ = 0;
  bool refused_ = false;
  std::vector<int32_t> ids_, ref_;
  int32_t *dids_ = nullptr, *dg_ = nullptr;
};

void add_moe_route_cases(Registry& r) {
  // qwen3moe (softmax top 8 of 128, renormalized), gpt-oss (softmax over the top 4 of 32), step35
  // (sigmoid + selection bias, scaled), no renormalization, one expert, 256 / 1000 experts.
  struct R {
    const char* name;
    int e, k, gating;
    bool rbias, sbias, norm;
    float scale;
  };
  const R rs[] = {{"softmax", 128, 8, 0, false, false, true, 1.0f},
                  {"softmax_norenorm", 128, 8, 0, false, false, false, 1.0f},
                  {"softmax_weight_rbias", 32, 4, 2, true, false, true, 1.0f},
                  {"sigmoid_sbias_scale", 288, 8, 1, false, true, true, 2.5f},
                  {"sigmoid_rbias_sbias", 256, 8, 1, true, true, true, 1.0f},
                  {"softmax_k1", 64, 1, 0, false, false, true, 1.0f},
                  {"softmax_1000", 1000, 16, 0, false, true, true, 1.0f}};
  for (const R& c : rs)
    for (int n : {1, 3, 64})
      r.add("moe", ref::cat("route/", c.name, "/e", c.e, "-k", c.k, "/n", n),
            [=] { return std::make_unique<MoeRouteCase>(n, c.e, c.k, c.gating, c.rbias, c.sbias, c.norm, c.scale); });
  const QType types[] = {QType::Q8_0, QType::Q4_K, QType::Q5_K, QType::Q6_K, QType::Q4_0,
                         QType::IQ4_XS, QType::F16, QType::BF16, QType::F32};
  for (QType t : types) {
    // gate / up of qwen3-30b-a3b's shape on 16 experts (one token, and a 3-token verify batch),
    // its down (each slot its own input), and a slot with a bad id.
    const std::string tn(qtype_name(t));
    r.add("moe", ref::cat("routed_matvec/", tn, "/768x2048/e16-n1-k8"),
          [=] { return std::make_unique<RoutedMatvecCase>(t, 16, 768, 2048, 1, 8, false, false); });
    r.add("moe", ref::cat("routed_matvec/", tn, "/768x2048/e16-n3-k8"),
          [=] { return std::make_unique<RoutedMatvecCase>(t, 16, 768, 2048, 3, 8, false, false); });
    r.add("moe", ref::cat("routed_matvec/", tn, "/2048x768/e16-n2-k8-per_slot"),
          [=] { return std::make_unique<RoutedMatvecCase>(t, 16, 2048, 768, 2, 8, true, false); });
    r.add("moe", ref::cat("routed_matvec/", tn, "/257x512/e5-n1-k4-bad_id"),
          [=] { return std::make_unique<RoutedMatvecCase>(t, 5, 257, 512, 1, 4, true, true); });
  }
  // --perf shapes: qwen3-30b-a3b's experts (128 of [768 x 2048], 8 used), one token.
  for (QType t : {QType::Q8_0, QType::Q4_K, QType::Q6_K}) {
    r.add("moe", ref::cat("routed_matvec/", qtype_name(t), "/768x2048/e128-n1-k8"),
          [=] { return std::make_unique<RoutedMatvecCase>(t, 128, 768, 2048, 1, 8, false, false); });
    r.add("moe", ref::cat("routed_matvec/", qtype_name(t), "/2048x768/e128-n1-k8-per_slot"),
          [=] { return std::make_unique<RoutedMatvecCase>(t, 128, 2048, 768, 1, 8, true, false); });
  }
  // The grouping (kernels.moe_device_route_prefill): qwen3-30b-a3b's 8 of 128 at 1, 9, 512 and 2048
  // tokens (more than one id tile), few experts with long lists, bad ids.
  for (const auto& [n, k, e, bad] : std::vector<std::array<int, 4>>{
           {1, 8, 128, 0}, {9, 8, 128, 0}, {512, 8, 128, 0}, {2048, 8, 128, 0}, {100, 2, 3, 0}, {37, 4, 32, 3},
           {64, 16, 1000, 2}})
    r.add("moe", ref::cat("group/n", n, "-k", k, "-e", e, bad ? ref::cat("-bad", bad) : std::string()),
          [=] { return std::make_unique<MoeGroupCase>(n, k, e, bad); });
  // The grouped forms: the dp4a matvec (grouped_matvec/) and its int8 tensor-core form
  // (grouped_mma/, kernels.moe_grouped_mma, for the types it is built for). The quantized types;
  // gate/up-like (a token's row for its k slots) and down-like (each slot its own row) on 16 experts
  // at 9 tokens (a partial group) and 40, 257 rows (a partial 16-row tile) with bad ids; --perf rows
  // at qwen3-30b-a3b's prefill shape (512 tokens, 8 of 128).
  for (const auto& [form, name] : {std::pair{RoutedForm::kGrouped, "grouped_matvec/"},
                                   std::pair{RoutedForm::kGroupedMma, "grouped_mma/"}}) {
    const bool mma = form == RoutedForm::kGroupedMma;
    for (QType t : {QType::Q8_0, QType::Q4_K, QType::Q5_K, QType::Q6_K, QType::Q4_0, QType::IQ4_XS}) {
      if (mma && !cuda::matvec_grouped_mma_built(t)) continue;
      const std::string tn = ref::cat(name, qtype_name(t));
      const RoutedForm f = form;
      r.add("moe", ref::cat(tn, "/768x2048/e16-n9-k8"),
            [=] { return std::make_unique<RoutedMatvecCase>(t, 16, 768, 2048, 9, 8, false, false, f); });
      r.add("moe", ref::cat(tn, "/2048x768/e16-n40-k4-per_slot"),
            [=] { return std::make_unique<RoutedMatvecCase>(t, 16, 2048, 768, 40, 4, true, false, f); });
      r.add("moe", ref::cat(tn, "/257x512/e5-n11-k4-bad_id"),
            [=] { return std::make_unique<RoutedMatvecCase>(t, 5, 257, 512, 11, 4, true, true, f); });
    }
    for (QType t : {QType::Q8_0, QType::Q4_K, QType::Q6_K}) {
      const std::string tn = ref::cat(name, qtype_name(t));
      const RoutedForm f = form;
      r.add("moe", ref::cat(tn, "/768x2048/e128-n512-k8"),
            [=] { return std::make_unique<RoutedMatvecCase>(t, 128, 768, 2048, 512, 8, false, false, f, false); });
      r.add("moe", ref::cat(tn, "/2048x768/e128-n512-k8-per_slot"),
            [=] { return std::make_unique<RoutedMatvecCase>(t, 128, 2048, 768, 512, 8, true, false, f, false); });
    }
  }
  // Two expert stacks in one routed launch (kernels.moe_gate_up_one_launch: the gate and up experts),
  // the quantized types: qwen3-30b-a3b's gate/up shape at one token and a 3-token verify batch, a bad
  // id, and the --perf shape beside the two plain launches' above.
  for (QType t : {QType::Q8_0, QType::Q4_K, QType::Q5_K, QType::Q6_K, QType::Q4_0, QType::IQ4_XS}) {
    const std::string tn = ref::cat("routed_pair/", qtype_name(t));
    r.add("moe", ref::cat(tn, "/768x2048/e16-n1-k8"),
          [=] { return std::make_unique<RoutedMatvecCase>(t, 16, 768, 2048, 1, 8, false, false, RoutedForm::kPair); });
    r.add("moe", ref::cat(tn, "/768x2048/e16-n3-k8"),
          [=] { return std::make_unique<RoutedMatvecCase>(t, 16, 768, 2048, 3, 8, false, false, RoutedForm::kPair); });
    r.add("moe", ref::cat(tn, "/257x512/e5-n1-k4-bad_id"),
          [=] { return std::make_unique<RoutedMatvecCase>(t, 5, 257, 512, 1, 4, true, true, RoutedForm::kPair); });
  }
  for (QType t : {QType::Q8_0, QType::Q4_K})
    r.add("moe", ref::cat("routed_pair/", qtype_name(t), "/768x2048/e128-n1-k8"),
          [=] { return std::make_unique<RoutedMatvecCase>(t, 128, 768, 2048, 1, 8, false, false, RoutedForm::kPair); });
  // The v2 kernel's routed form, for the types this build has it (kernels.moe_routed_v2): the same
  // shapes, a bad id, and the --perf shapes beside the plain form's above.
  for (QType t : {QType::Q8_0, QType::Q4_K, QType::Q6_K, QType::Q4_0}) {
    if (!cuda::matvec_v2_built(t)) continue;
    const std::string tn(qtype_name(t));
    // experts, rows, cols, tokens, experts per token, per-slot inputs, a bad id; the name's suffix
    struct Shape {
      int e, rows, cols, n, k;
      bool per_slot, bad;
      const char* tag;
    };
    for (const Shape& c : {Shape{16, 768, 2048, 1, 8, false, false, "768x2048/e16-n1-k8"},
                           Shape{16, 768, 2048, 3, 8, false, false, "768x2048/e16-n3-k8"},
                           Shape{16, 2048, 768, 2, 8, true, false, "2048x768/e16-n2-k8-per_slot"},
                           Shape{5, 257, 4608, 1, 4, true, true, "257x4608/e5-n1-k4-bad_id"},
                           Shape{128, 768, 2048, 1, 8, false, false, "768x2048/e128-n1-k8"},
                           Shape{128, 2048, 768, 1, 8, true, false, "2048x768/e128-n1-k8-per_slot"}})
      r.add("moe", ref::cat("routed_matvec_v2/", tn, "/", c.tag), [=] {
        return std::make_unique<RoutedMatvecCase>(t, c.e, c.rows, c.cols, c.n, c.k, c.per_slot, c.bad, RoutedForm::kV2);
      });
  }
}
MEMRA_KC_REGISTER(add_moe_route_cases);

}  // namespace
}  // namespace memra::kc
