#pragma once
// Shared by the mmvs case files (cases_mmvs.cu, cases_mmvs_pairs.cu): the q8s activation inputs,
// the device weights in the split layout, the launch parameters of one product, and MmvsCase (one
// product against the f64 CPU reference; the tolerance is explained in cases_mmvs.cu's header).
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "case_util.h"
#include "cases_ref.h"
#include "matvec/mmvs.h"
#include "matvec/q8s_order.h"
#include "matvec/split_layout.h"
#include "quant/quant.h"

namespace memra::kc::mmvs_cases {

inline constexpr double kTol = 1e-5;

// One q8s row of k quants in the interleaved order that MmvsParams::act_il reads (q8s_order.h;
// o = il_q6k: its Q6_K variant, act_il_q6k), the unused bytes of a short last group filled with
// junk (a read of them changes the result).
inline std::vector<int8_t> act_il_order(const std::vector<int8_t>& xq, int64_t k, cuda::q8s::Order o = cuda::q8s::Order::il) {
  std::vector<int8_t> out((size_t)cuda::q8s::il_row_bytes(k), (int8_t)0x5A);
  cuda::q8s::to_interleaved(xq.data(), k, out.data(), o);
  return out;
}

// m fresh N(0,1) activation rows as q8_1 blocks (returned, for the reference) and uploaded as the
// q8s planes mmvs reads (dxq_il: one row in the interleaved order il_order too).
inline std::vector<uint8_t> random_q8s_input(Env& env, int m, int64_t k, int8_t** dxq, float** dxds, int8_t** dxq_il = nullptr,
                                      cuda::q8s::Order il_order = cuda::q8s::Order::il) {
  const auto x = env.normal((size_t)(m * k));
  std::vector<uint8_t> blocks((size_t)(m * (k / 32)) * 36);
  for (int j = 0; j < m; ++j)
    quantize_row(QType::Q8_1, x.data() + j * k, blocks.data() + (size_t)j * (k / 32) * 36, k);
  std::vector<int8_t> xq;
  std::vector<float> xds;
  q8_1_to_q8s(blocks, m, k, xq, xds);
  *dxq = env.upload(xq);
  *dxds = env.upload(xds);
  if (dxq_il) {
    if (m != 1) throw std::invalid_argument("random_q8s_input: the interleaved order is one row's");
    *dxq_il = env.upload(act_il_order(xq, k, il_order));
  }
  return blocks;
}

// Device copy of a weight in the layout mmvs reads (split_layout.h, body order il): repacked
// planes, or the GGUF rows (blocked Q4_K).
struct DeviceWeight {
  bool il = true;
  const void* w = nullptr;
  const void* w_d = nullptr;
  const void* w_aux = nullptr;
};
inline DeviceWeight upload_split(Env& env, QType t, const std::vector<uint8_t>& gguf, int64_t n, int64_t k, bool il) {
  const auto pl = cuda::sp::plan(t, n, k, il);
  const auto L = cuda::sp::layout(t, il);
  if (!L.repacked) return {il, env.upload(gguf), nullptr, nullptr};
  std::vector<uint8_t> packed(pl.total_bytes);
  cuda::sp::repack(t, gguf.data(), gguf.size() / (size_t)n, n, k, il, packed.data());
  const uint8_t* d = env.upload(packed);
  return {il, d, L.d_src >= 0 ? d + pl.d_offset : nullptr, L.aux_src >= 0 ? d + pl.aux_offset : nullptr};
}

// Launch parameters of one mmvs product (w2 set: the fused SiLU GLU pair).
inline cuda::MmvsParams mmvs_params(QType t, const DeviceWeight& w, const DeviceWeight* w2, int64_t n, int64_t k, int m,
                             const int8_t* xq, const float* xds, float* y) {
  cuda::MmvsParams p;
  p.w_type = t;
  p.interleaved = w.il;
  p.w = w.w;
  p.w_d = w.w_d;
  p.w_aux = w.w_aux;
  if (w2) {
    p.w2 = w2->w;
    p.w2_d = w2->w_d;
    p.w2_aux = w2->w_aux;
    p.glu = 1;
  }
  p.n_rows = n;
  p.n_cols = k;
  p.m = m;
  p.xq = xq;
  p.xds = xds;
  p.y = y;
  return p;
}

// One extra matrix of a multi-matrix launch (MmvsParams::extra): w's planes, n_rows rows into y.
inline cuda::MmvsParams::Segment segment_of(const DeviceWeight& w, int64_t n_rows, float* y, bool type2) {
  cuda::MmvsParams::Segment e;
  e.w = w.w;
  e.w_d = w.w_d;
  e.w_aux = w.w_aux;
  e.n_rows = n_rows;
  e.y = y;
  e.type2 = type2;
  return e;
}

// The outputs of a q/k/v launch (dy[i]: rows[i] floats) and the separate launches' (sep_in[i]), each
// concatenated in matrix order.
inline void gather_qkv(Env& env, float* const (&dy)[3], const int64_t (&rows)[3], const std::vector<float> (&sep_in)[3],
                       std::vector<float>& got, std::vector<float>& sep) {
  for (int i = 0; i < 3; ++i) {
    const auto g = env.download(dy[i], (size_t)rows[i]);
    got.insert(got.end(), g.begin(), g.end());
    sep.insert(sep.end(), sep_in[i].begin(), sep_in[i].end());
  }
}

inline double silu64(double x) { return x / (1.0 + std::exp(-x)); }

class MmvsCase : public Case {
 public:
  // act_q6k: with act_il, the Q6_K variant of the order (MmvsParams::act_il_q6k).
  // row_pairs: with act_il, MmvsParams::row_pairs (two rows per warp): 1 two tasks per row in
  // flight, 2 one (row_pair_one_task; with glu = 1 the SiLU GLU pairs, kernels.mmvs_glu_pairs).
  MmvsCase(QType t, int64_t n, int64_t k, int m, int glu, bool il, bool split, int cap = 0, bool preload = true,
           int max_warps = 4, bool act_il = false, bool act_q6k = false, int row_pairs = 0)
      : t_(t), n_(n), k_(k), m_(m), glu_(glu), il_(il), split_(split), cap_(cap), preload_(preload), max_warps_(max_warps),
        act_il_(act_il), act_q6k_(act_q6k), row_pairs_(row_pairs) {}
  // MmvsParams::split_min_tasks (kernels.mmvs_split_min_k / 64); 65 = the default rule.
  MmvsCase& split_min_tasks(int t) {
    min_tasks_ = t;
    return *this;
  }
  void generate(Env& env) override {
    w_ = random_weight_bytes(env, t_, n_, k_);
    dw_ = upload_split(env, t_, w_, n_, k_, il_);
    if (glu_) {
      w2_ = random_weight_bytes(env, t_, n_, k_);
      dw2_ = upload_split(env, t_, w2_, n_, k_, il_);
    }
    xq1_ = random_q8s_input(env, m_, k_, &dxq_, &dxds_, act_il_ ? &dxq_il_ : nullptr,
                            act_q6k_ ? cuda::q8s::Order::il_q6k : cuda::q8s::Order::il);
    dy_ = env.alloc_output<float>((size_t)(m_ * n_));
  }
  cudaError_t launch(Env& env) override { return cuda::launch_mmvs(params(), env.stream()); }
  void reference(Env&) override {
    const auto xf = dequantize_rows(QType::Q8_1, xq1_, m_, k_);
    ref_ = matmul_f64(dequantize_rows(t_, w_, n_, k_), xf, n_, k_, m_);
    if (glu_) {
      const auto u = matmul_f64(dequantize_rows(t_, w2_, n_, k_), xf, n_, k_, m_);
      for (size_t i = 0; i < ref_.size(); ++i) ref_[i] = silu64(ref_[i]) * u[i];
    }
    w_.clear();
    w2_.clear();
  }
  Verdict compare(Env& env) override { return ref::norm(env.download(dy_, (size_t)(m_ * n_)), ref_, kTol); }
  PerfCount perf_count() const override {
    const double wb = (double)*qtype_row_bytes(t_, k_) * (double)n_ * (glu_ ? 2 : 1);
    return {wb + (double)m_ * (double)k_ * 1.25 + 4.0 * (double)(m_ * n_), 0};
  }

 private:
  cuda::MmvsParams params() const {
    auto p = mmvs_params(t_, dw_, glu_ ? &dw2_ : nullptr, n_, k_, m_, dxq_, dxds_, dy_);
    p.split_k = split_;
    p.min_blocks = p.min_blocks_glu = cap_;
    p.preload = preload_;
    p.split_max_warps = max_warps_;
    p.split_min_tasks = min_tasks_;
    if (act_il_) {
      p.act_il = true;
      p.act_il_q6k = act_q6k_;
      p.xq = dxq_il_;
    }
    p.row_pairs = row_pairs_ > 0;
    p.row_pair_one_task = row_pairs_ == 2;
    return p;
  }
  QType t_;
  int64_t n_, k_;
  int m_, glu_;
  bool il_, split_;
  int cap_;
  bool preload_;
  int max_warps_;
  bool act_il_, act_q6k_;
  int row_pairs_;
  int min_tasks_ = 65;
  int8_t* dxq_il_ = nullptr;
  std::vector<uint8_t> w_, w2_, xq1_;
  std::vector<double> ref_;
  DeviceWeight dw_, dw2_;
  int8_t* dxq_ = nullptr;
  float* dxds_ = nullptr;
  float* dy_ = nullptr;
};

}  // namespace memra::kc::mmvs_cases
