// Section "mmvs_id" and "mmvs" rows of the row-pair launches (kernels.mmvs_row_pairs,
// kernels.mmvs_row_pairs_one_task, kernels.mmvs_glu_pairs; kernels/matvec/mmvs.h MmvsParams::row_pairs):
// byte identity with the plain / GLU launch and the refusals, f64-gated --perf rows beside the plain
// launch's (cases_mmvs.cu).
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "cases_mmvs.h"

namespace memra::kc {
namespace {

using namespace mmvs_cases;

// The segments' outputs under test and the plain launch's, each downloaded (segment i: per_row * rows[i]
// floats) and concatenated in segment order, then compared byte for byte; with f64, also against the
// f64 reference (ref) within kTol.
Verdict compare_segments(Env& env, float* const* dy, float* const* dplain, const int64_t* rows, int n, int64_t per_row,
                         bool f64, const std::vector<double>& ref, const char* what) {
  std::vector<float> got, plain;
  for (int i = 0; i < n; ++i) {
    const auto a = env.download(dy[i], (size_t)(per_row * rows[i])), b = env.download(dplain[i], (size_t)(per_row * rows[i]));
    got.insert(got.end(), a.begin(), a.end());
    plain.insert(plain.end(), b.begin(), b.end());
  }
  Verdict v = compare_bytes(got.data(), plain.data(), got.size() * 4);
  if (v.pass && f64) return ref::all_of({{what, v}, {"f64 reference", ref::norm(got, ref, kTol)}});
  return v;
}

// kernels.mmvs_row_pairs: the row-pair launch (MmvsParams::row_pairs, two rows per warp) against the
// plain launch at the same cap, byte for byte, with and without the residual epilogue (then y is
// another buffer than the residual, as the plain launch's); refusals: an odd row count, m = 3, a
// GLU, the plain activation order, the Q6_K order, cap 8, an extra segment of odd rows, an even one
// at a cap (the q/k/v pairs, kernels.mmvs_row_pairs_qkv, are uncapped only).
class MmvsRowPairsIdCase : public Case {
 public:
  // one_task: MmvsParams::row_pair_one_task (one task per row in flight). glu: the SiLU GLU pairs
  // (kernels.mmvs_glu_pairs: one task, no residual) against the GLU launch.
  // min_tasks: MmvsParams::split_min_tasks of both launches (kernels.mmvs_split_min_k / 64).
  MmvsRowPairsIdCase(QType t, int64_t n, int64_t k, int cap, bool residual, bool one_task = false, bool glu = false,
                     int min_tasks = 65)
      : t_(t), n_(n), k_(k), cap_(cap), res_(residual && !glu), one_(one_task || glu), glu_(glu), min_tasks_(min_tasks) {}
  void generate(Env& env) override {
    dw_ = upload_split(env, t_, random_weight_bytes(env, t_, n_, k_), n_, k_, true);
    if (glu_) dw2_ = upload_split(env, t_, random_weight_bytes(env, t_, n_, k_), n_, k_, true);
    random_q8s_input(env, 1, k_, &dxq_, &dxds_, &dxq_il_);
    if (res_) dres_ = env.upload(env.normal((size_t)n_, 2.0f));
    for (auto*& y : dy_) y = env.alloc_output<float>((size_t)n_);
  }
  cuda::MmvsParams params(float* y, bool pairs) const {
    auto p = mmvs_params(t_, dw_, glu_ ? &dw2_ : nullptr, n_, k_, 1, dxq_il_, dxds_, y);
    p.split_max_warps = 2;
    p.split_min_tasks = min_tasks_;
    p.min_blocks = p.min_blocks_glu = cap_;
    p.act_il = true;
    p.row_pairs = pairs;
    p.row_pair_one_task = pairs && one_;
    p.residual = dres_;
    return p;
  }
  cudaError_t launch(Env& env) override {
    for (int v = 0; v < 2; ++v)
      if (const cudaError_t e = cuda::launch_mmvs(params(dy_[v], v == 1), env.stream()); e != cudaSuccess) return e;
    const auto refused = [&](cuda::MmvsParams p) { return cuda::launch_mmvs(p, env.stream()) == cudaErrorNotSupported; };
    auto p = params(dy_[1], true);
    p.n_rows = n_ - 1;
    refusals_ = refused(p);
    p = params(dy_[1], true);
    p.m = 3;
    refusals_ = refusals_ && refused(p);
    p = params(dy_[1], true);
    p.act_il = false;
    p.xq = dxq_;
    refusals_ = refusals_ && refused(p);
    p = params(dy_[1], true);
    p.act_il_q6k = t_ == QType::Q6_K;
    p.min_blocks = p.min_blocks_glu = t_ == QType::Q6_K ? cap_ : 8;
    refusals_ = refusals_ && refused(p);
    if (!res_) {  // (a GLU or extra segments with a residual are invalid, not unsupported)
      p = params(dy_[1], true);  // GELU pairs, and SiLU pairs with two tasks per row
      p.w2 = dw_.w, p.w2_d = dw_.w_d, p.w2_aux = dw_.w_aux, p.glu = 2;
      refusals_ = refusals_ && refused(p);
      p.glu = 1;
      p.row_pair_one_task = false;
      refusals_ = refusals_ && refused(p);
      if (!glu_) {  // (extra segments with a GLU are invalid, not unsupported)
        // An extra segment (the q/k/v pairs, kernels.mmvs_row_pairs_qkv) with an odd row count; one
        // with an even count is a supported q/k/v pair launch, uncapped only.
        p = params(dy_[1], true);
        p.n_extra = 1;
        p.extra[0] = {dw_.w, dw_.w_d, dw_.w_aux, n_ - 1, dy_[0], 0, false};
        refusals_ = refusals_ && refused(p);
        if (cap_ != 0) {
          p.extra[0].n_rows = n_;
          refusals_ = refusals_ && refused(p);
        }
      }
    }
    return cudaSuccess;
  }
  void reference(Env&) override {}
  Verdict compare(Env& env) override {
    if (!refusals_)
      return ref::fail("row_pairs with an odd row count, m = 3, a GELU or two-task GLU, the plain or Q6_K order, cap 8, "
                       "an odd extra segment or a capped even one was not refused");
    const auto a = env.download(dy_[0], (size_t)n_), b = env.download(dy_[1], (size_t)n_);
    return compare_bytes(b.data(), a.data(), (size_t)n_ * 4);
  }

 private:
  QType t_;
  int64_t n_, k_;
  int cap_;
  bool res_, one_, glu_;
  int min_tasks_;
  bool refusals_ = false;
  DeviceWeight dw_, dw2_;
  int8_t *dxq_ = nullptr, *dxq_il_ = nullptr;
  float* dxds_ = nullptr;
  float* dres_ = nullptr;
  float* dy_[2] = {};
};

// kernels.mmvs_row_pairs_qkv: the q/k/v launch (three matrices of one type, MmvsParams::extra) with
// row pairs, each matrix paired within itself, against the same launch without them (which
// cases_mmvs.cu's mmvs_x3 case holds byte-identical to three launches), byte for byte; with f64,
// also against the f64 reference on the bytes the GPU reads (the --perf rows; pairs = false: the
// unpaired launch timed, for the A/B). Refusals: a segment with an odd row count, a segment of a
// second weight type (the mixed launch), a cap (the q/k/v pairs have uncapped instances only).
class MmvsRowPairsX3Case : public Case {
 public:
  // quads (1 or 2, kernels.mmvs_qkv_quads): the launch under test as row quads with that many tasks
  // per row in flight instead of pairs; then a segment of a row count not a multiple of 4 and the quads
  // asked beside the pairs must be refused.
  MmvsRowPairsX3Case(QType t, int64_t k, int64_t r0, int64_t r1, int64_t r2, int cap, bool one_task, bool f64,
                     bool pairs = true, int quads = 0)
      : t_(t), k_(k), rows_{r0, r1, r2}, cap_(cap), one_(one_task), f64_(f64), pairs_(pairs), quads_(quads) {}
  void generate(Env& env) override {
    for (int i = 0; i < 3; ++i) {
      w_[i] = random_weight_bytes(env, t_, rows_[i], k_);
      dw_[i] = upload_split(env, t_, w_[i], rows_[i], k_, true);
      dy_[i] = env.alloc_output<float>((size_t)rows_[i]);
      dplain_[i] = env.alloc_output<float>((size_t)rows_[i]);
      if (!f64_) w_[i].clear();
    }
    x_ = random_q8s_input(env, 1, k_, &dxq_, &dxds_, &dxq_il_);
  }
  cuda::MmvsParams params(float* const (&y)[3], bool pairs) const {
    auto p = mmvs_params(t_, dw_[0], nullptr, rows_[0], k_, 1, dxq_il_, dxds_, y[0]);
    p.n_extra = 2;
    for (int i = 0; i < 2; ++i) p.extra[i] = segment_of(dw_[i + 1], rows_[i + 1], y[i + 1], false);
    p.split_max_warps = 2;
    p.min_blocks = cap_;
    p.act_il = true;
    p.row_pairs = pairs && !quads_;
    p.row_pair_one_task = pairs && !quads_ && one_;
    p.row_quads = pairs ? quads_ : 0;
    return p;
  }
  cudaError_t launch(Env& env) override { return cuda::launch_mmvs(params(dy_, pairs_), env.stream()); }
  void reference(Env& env) override {
    ref::check(cuda::launch_mmvs(params(dplain_, false), env.stream()), "the unpaired q/k/v launch");
    auto odd = params(dplain_, true);
    odd.extra[0].n_rows = rows_[1] - (quads_ ? 2 : 1);
    auto mixed = params(dplain_, true);
    mixed.extra[1].type2 = true;
    mixed.w_type2 = t_ == QType::Q4_K ? QType::Q6_K : QType::Q4_K;
    auto capped = params(dplain_, true);
    capped.min_blocks = 6;
    if (quads_) capped.row_pairs = true;  // (the quads read no cap: beside the pairs instead)
    // The mixed launch built here keeps the first type's planes in its second-type segment, after
    // 1286 rows (not a multiple of a CTA's rows at one warp per row): the launcher may reject those
    // planes or that split as invalid before it reaches the row-pair rule (H200, s36d: every type
    // but Q6_K / Q5_K / IQ4_XS at 5120 columns answered cudaErrorInvalidValue). Either answer
    // launches nothing, and a launch that ran would overwrite the unpaired rows compared below.
    const cudaError_t mixed_err = cuda::launch_mmvs(mixed, env.stream());
    refused_ = cuda::launch_mmvs(odd, env.stream()) == cudaErrorNotSupported &&
               (mixed_err == cudaErrorNotSupported || mixed_err == cudaErrorInvalidValue) &&
               cuda::launch_mmvs(capped, env.stream()) == cudaErrorNotSupported;
    if (!f64_) return;
    const auto xf = dequantize_rows(QType::Q8_1, x_, 1, k_);
    for (int i = 0; i < 3; ++i) {
      const auto r = matmul_f64(dequantize_rows(t_, w_[i], rows_[i], k_), xf, rows_[i], k_, 1);
      ref_.insert(ref_.end(), r.begin(), r.end());
      w_[i].clear();
    }
  }
  Verdict compare(Env& env) override {
    if (!refused_)
      return ref::fail(quads_ ? "row quads over q/k/v with a segment of 4 n + 2 rows, a second weight type or beside the pairs were not refused"
                              : "row pairs over q/k/v with an odd segment, a second weight type or a cap were not refused");
    return compare_segments(env, dy_, dplain_, rows_, 3, 1, f64_, ref_, "paired vs unpaired q/k/v launch bytes");
  }
  PerfCount perf_count() const override {
    double wb = 0;
    for (int i = 0; i < 3; ++i) wb += (double)*qtype_row_bytes(t_, k_) * (double)rows_[i];
    return {wb + (double)k_ * 1.25 + 4.0 * (double)(rows_[0] + rows_[1] + rows_[2]), 0};
  }

 private:
  QType t_;
  int64_t k_;
  int64_t rows_[3];
  int cap_;
  bool one_, f64_, pairs_;
  int quads_;
  bool refused_ = false;
  std::vector<uint8_t> w_[3], x_;
  std::vector<double> ref_;
  DeviceWeight dw_[3];
  int8_t *dxq_ = nullptr, *dxq_il_ = nullptr;
  float* dxds_ = nullptr;
  float* dy_[3] = {};
  float* dplain_[3] = {};
};

// kernels.mmvs_row_pairs_verify: the row pairs on verify rows (m = 2..8; launch_mmvs' m > 1 pair
// form: the plain activation order, uncapped, two tasks per row), one matrix (with and without the
// residual epilogue, y another buffer than the residual) or q/k/v segments of one type, against the
// unpaired launch at the same m, byte for byte (the reference launch runs in reference(), so --perf
// times the paired launch alone); with f64, also every row against the f64 product of the CPU-
// dequantized bytes. pairs = false: the unpaired launch timed (the A/B row). Refusals at m > 1: an
// odd row count, a cap, one task per row, the interleaved order, a GLU.
class MmvsRowPairsMnCase : public Case {
 public:
  MmvsRowPairsMnCase(QType t, int64_t n, int64_t k, int m, bool residual, bool qkv, bool f64, bool pairs = true)
      : t_(t), k_(k), m_(m), res_(residual && !qkv), qkv_(qkv), f64_(f64), pairs_(pairs) {
    rows_[0] = n;
    rows_[1] = rows_[2] = qkv ? n / 4 : 0;
  }
  int n_seg() const { return qkv_ ? 3 : 1; }
  void generate(Env& env) override {
    for (int i = 0; i < n_seg(); ++i) {
      w_[i] = random_weight_bytes(env, t_, rows_[i], k_);
      dw_[i] = upload_split(env, t_, w_[i], rows_[i], k_, true);
      dy_[i] = env.alloc_output<float>((size_t)(m_ * rows_[i]));
      dplain_[i] = env.alloc_output<float>((size_t)(m_ * rows_[i]));
      if (!f64_) w_[i].clear();
    }
    x_ = random_q8s_input(env, m_, k_, &dxq_, &dxds_);
    if (res_) {
      res_host_ = env.normal((size_t)(m_ * rows_[0]), 2.0f);
      dres_ = env.upload(res_host_);
    }
  }
  cuda::MmvsParams params(float* const (&y)[3], bool pairs) const {
    auto p = mmvs_params(t_, dw_[0], nullptr, rows_[0], k_, m_, dxq_, dxds_, y[0]);
    p.n_extra = n_seg() - 1;
    for (int i = 0; i + 1 < n_seg(); ++i) p.extra[i] = segment_of(dw_[i + 1], rows_[i + 1], y[i + 1], false);
    p.split_max_warps = 2;
    p.residual = dres_;
    p.row_pairs = pairs;
    return p;
  }
  cudaError_t launch(Env& env) override { return cuda::launch_mmvs(params(dy_, pairs_), env.stream()); }
  void reference(Env& env) override {
    ref::check(cuda::launch_mmvs(params(dplain_, false), env.stream()), "the unpaired launch at m rows");
    const auto refused = [&](cuda::MmvsParams p) { return cuda::launch_mmvs(p, env.stream()) == cudaErrorNotSupported; };
    float* const scratch[3] = {dplain_[0], dplain_[1], dplain_[2]};  // (a refused launch writes nothing)
    auto p = params(scratch, true);
    p.n_rows = rows_[0] - 1;
    refused_ = refused(p);
    p = params(scratch, true);
    p.min_blocks = 5;
    refused_ = refused_ && refused(p);
    p = params(scratch, true);
    p.row_pair_one_task = true;
    refused_ = refused_ && refused(p);
    p = params(scratch, true);
    p.act_il = true;
    refused_ = refused_ && refused(p);
    if (!qkv_) {
      p = params(scratch, true);
      p.residual = nullptr;
      p.w2 = dw_[0].w, p.w2_d = dw_[0].w_d, p.w2_aux = dw_[0].w_aux, p.glu = 1;
      p.row_pair_one_task = true;
      refused_ = refused_ && refused(p);
    }
    if (!f64_) return;
    const auto xf = dequantize_rows(QType::Q8_1, x_, m_, k_);
    for (int i = 0; i < n_seg(); ++i) {
      // [j][row], as the launch writes it
      const auto r = matmul_f64(dequantize_rows(t_, w_[i], rows_[i], k_), xf, rows_[i], k_, m_);
      for (int j = 0; j < m_; ++j)
        for (int64_t row = 0; row < rows_[i]; ++row) {
          double v = r[(size_t)(j * rows_[i] + row)];
          if (res_) v += (double)res_host_[(size_t)(j * rows_[i] + row)];
          ref_.push_back(v);
        }
      w_[i].clear();
    }
  }
  Verdict compare(Env& env) override {
    if (!refused_)
      return ref::fail("row pairs at m > 1 with an odd row count, a cap, one task per row, the interleaved order or a GLU were not refused");
    return compare_segments(env, dy_, dplain_, rows_, n_seg(), m_, f64_, ref_, "paired vs unpaired bytes at m rows");
  }
  PerfCount perf_count() const override {
    double wb = 0, rows = 0;
    for (int i = 0; i < n_seg(); ++i) {
      wb += (double)*qtype_row_bytes(t_, k_) * (double)rows_[i];
      rows += (double)rows_[i];
    }
    return {wb + (double)m_ * ((double)k_ * 1.25 + 4.0 * rows) + (res_ ? 4.0 * m_ * rows : 0.0), 0};
  }

 private:
  QType t_;
  int64_t k_;
  int m_;
  bool res_, qkv_, f64_, pairs_;
  int64_t rows_[3] = {};
  bool refused_ = false;
  std::vector<uint8_t> w_[3], x_;
  std::vector<float> res_host_;
  std::vector<double> ref_;
  DeviceWeight dw_[3];
  int8_t* dxq_ = nullptr;
  float* dxds_ = nullptr;
  float* dres_ = nullptr;
  float* dy_[3] = {};
  float* dplain_[3] = {};
};

void add_mmvs_pair_cases(Registry& r) {
  for (QType t : {QType::Q4_K, QType::Q6_K, QType::Q8_0, QType::Q4_0, QType::Q5_K, QType::IQ4_XS}) {
    const std::string tn(qtype_name(t));
    // kernels.mmvs_row_pairs_verify: the pairs on verify rows against the unpaired launch at the same
    // m (k = 2304: a partial lane group; 12288 / 14336: 2 warps per row; n / 2 odd: a partly empty
    // last CTA), with and without the residual, and the q/k/v launch (1024 + 256 + 256 rows); --perf
    // rows "mmvs_rpm/..." against f64 beside the unpaired "mmvs_rpm_off/..." on the qwen3-8b shapes.
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1030, 2304}, {4096, 4096}, {1030, 12288}, {1030, 14336}})
      for (int m : {2, 3, 5, 8})
        for (bool res : {false, true})
          r.add("mmvs_id", ref::cat("mmvs_rpm/", tn, "/", n, "x", k, "/m", m, res ? "/residual" : "", "/vs_unpaired_bytes"),
                [=] { return std::make_unique<MmvsRowPairsMnCase>(t, n, k, m, res, false, false); });
    for (int m : {2, 5, 8})
      r.add("mmvs_id", ref::cat("mmvs_rpm_x3/", tn, "/1024+256+256x4096/m", m, "/vs_unpaired_bytes"),
            [=] { return std::make_unique<MmvsRowPairsMnCase>(t, 1024, 4096, m, false, true, false); });
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {4096, 12288}})
      for (int m : {2, 3, 5, 8})
        for (bool pairs : {true, false})
          r.add("mmvs", ref::cat(pairs ? "mmvs_rpm/" : "mmvs_rpm_off/", tn, "/", n, "x", k, "/m", m),
                [=] { return std::make_unique<MmvsRowPairsMnCase>(t, n, k, m, false, false, true, pairs); });
    // kernels.mmvs_row_pairs: byte identity with the plain launch (k = 2304: 36 tasks, a partial
    // lane group; 5120 and 12288: 2 warps per row; 14336: 224 tasks; n / 2 odd: a partly empty last
    // CTA), with and without the residual, at its three caps; f64 reference and --perf rows
    // "mmvs_rp_cap{0,5}/..." beside "mmvs_ail_cap6/..." on the qwen3-8b shapes.
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1030, 2304}, {4096, 4096}, {1030, 5120}, {1030, 12288}, {1030, 14336}})
      for (int cap : {0, 5, 6})
        for (bool res : {false, true})
          r.add("mmvs_id", ref::cat("mmvs_rp/", tn, "/", n, "x", k, "/cap", cap, res ? "/residual" : "", "/vs_plain_bytes"),
                [=] { return std::make_unique<MmvsRowPairsIdCase>(t, n, k, cap, res); });
    // kernels.mmvs_row_pairs_one_task: the pairs with one task per row in flight.
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1030, 2304}, {4096, 4096}, {1030, 12288}, {1030, 14336}})
      for (int cap : {0, 6})
        for (bool res : {false, true})
          r.add("mmvs_id", ref::cat("mmvs_rp1/", tn, "/", n, "x", k, "/cap", cap, res ? "/residual" : "", "/vs_plain_bytes"),
                [=] { return std::make_unique<MmvsRowPairsIdCase>(t, n, k, cap, res, true); });
    // kernels.mmvs_glu_pairs: the SiLU GLU pairs against the GLU launch (1 or 2 warps per row, partial
    // lane groups, n / 2 odd), at the three caps; f64 reference and --perf rows "mmvs_gp_cap{0,5,6}/..."
    // beside "mmvs_ail_glu[_cap{5,6}]/..." (qwen3-8b and qwen3-32b gate/up shapes).
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1030, 2304}, {4096, 4096}, {1030, 5120}, {1030, 12288}, {1030, 14336}})
      for (int cap : {0, 5, 6})
        r.add("mmvs_id", ref::cat("mmvs_gp/", tn, "/", n, "x", k, "/cap", cap, "/vs_glu_bytes"),
              [=] { return std::make_unique<MmvsRowPairsIdCase>(t, n, k, cap, false, true, true); });
    // kernels.mmvs_split_min_k = 5184 (81 tasks): the pairs on 5120-weight rows at one warp per row.
    for (int cap : {0, 5})
      r.add("mmvs_id", ref::cat("mmvs_splitmin81_gp/", tn, "/1030x5120/cap", cap, "/vs_glu_bytes"),
            [=] { return std::make_unique<MmvsRowPairsIdCase>(t, 1030, 5120, cap, false, true, true, 81); });
    r.add("mmvs_id", ref::cat("mmvs_splitmin81_rp1/", tn, "/1030x5120/cap6/vs_plain_bytes"),
          [=] { return std::make_unique<MmvsRowPairsIdCase>(t, 1030, 5120, 6, false, true, false, 81); });
    for (auto [n, k] : {std::pair<int64_t, int64_t>{12288, 4096}, {25600, 5120}})
      for (int cap : {0, 5, 6})
        r.add("mmvs", ref::cat("mmvs_gp_cap", cap, "/", tn, "/", n, "x", k, "/m1"),
              [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 1, true, true, cap, true, 2, true, false, 2); });
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {1024, 4096}, {4096, 12288}, {151936, 4096}})
      for (int cap : {0, 5})
        r.add("mmvs", ref::cat("mmvs_rp_cap", cap, "/", tn, "/", n, "x", k, "/m1"),
              [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 0, true, true, cap, true, 2, true, false, 1); });
    // The qwen3-32b shapes (o 5120x8192, down 5120x25600, head 151936x5120; 2 warps per row) of
    // the three forms: the plain launch, the two-task pairs, the one-task pairs (--perf only).
    for (auto [n, k] : {std::pair<int64_t, int64_t>{5120, 8192}, {5120, 25600}, {151936, 5120}}) {
      r.add("mmvs", ref::cat("mmvs_ail_cap6/", tn, "/", n, "x", k, "/m1"),
            [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 0, true, true, 6, true, 2, true); });
      r.add("mmvs", ref::cat("mmvs_rp_cap0/", tn, "/", n, "x", k, "/m1"),
            [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 0, true, true, 0, true, 2, true, false, 1); });
    }
    // kernels.mmvs_row_pairs_qkv: the q/k/v launch paired (segments 1030 + 256 + 258: the last CTA
    // of the first matrix part empty at two warps per row) against the unpaired launch, uncapped (the
    // only instances), two and one task per row; the qwen3-8b / qwen3-32b shapes against f64 with
    // --perf rows beside the unpaired launch's (mmvs_x3_cap6: the default q/k/v launch).
    for (int64_t k : {int64_t{2304}, int64_t{4096}, int64_t{5120}})
      for (bool one : {false, true})
        r.add("mmvs_id", ref::cat("mmvs_rp_x3/", tn, "/1030+256+258x", k, one ? "/one" : "", "/vs_x3_bytes"),
              [=] { return std::make_unique<MmvsRowPairsX3Case>(t, k, 1030, 256, 258, 0, one, false); });
    // kernels.mmvs_qkv_quads: the q/k/v launch as row quads (segments 1036 + 256 + 260: partial last CTAs; the mixed refusal
    // with 323 first-type quarters, off a CTA boundary at 1 and 2 warps per row)
    // against the unpaired launch, one and two tasks per row, with --perf rows at the qwen3-8b / qwen3-32b
    // shapes (the types with quad instances in this build).
    if (cuda::mmvs_quads_compiled(t, t))
      for (int d : {1, 2}) {
        for (int64_t k : {int64_t{2304}, int64_t{4096}, int64_t{5120}})
          r.add("mmvs_id", ref::cat("mmvs_rq_x3/", tn, "/1036+256+260x", k, "/d", d, "/vs_x3_bytes"),
                [=] { return std::make_unique<MmvsRowPairsX3Case>(t, k, 1036, 256, 260, 0, false, false, true, d); });
        for (auto [q, kv, k] : {std::tuple<int64_t, int64_t, int64_t>{4096, 1024, 4096}, {8192, 1024, 5120}})
          r.add("mmvs", ref::cat("mmvs_rq_x3_d", d, "/", tn, "/", q, "+", kv, "+", kv, "x", k, "/m1"),
                [=] { return std::make_unique<MmvsRowPairsX3Case>(t, k, q, kv, kv, 0, false, true, true, d); });
      }
    for (auto [q, kv, k] : {std::tuple<int64_t, int64_t, int64_t>{4096, 1024, 4096}, {8192, 1024, 5120}}) {
      r.add("mmvs", ref::cat("mmvs_rp_x3_cap0/", tn, "/", q, "+", kv, "+", kv, "x", k, "/m1"),
            [=] { return std::make_unique<MmvsRowPairsX3Case>(t, k, q, kv, kv, 0, false, true); });
      r.add("mmvs", ref::cat("mmvs_rp1_x3_cap0/", tn, "/", q, "+", kv, "+", kv, "x", k, "/m1"),
            [=] { return std::make_unique<MmvsRowPairsX3Case>(t, k, q, kv, kv, 0, true, true); });
      r.add("mmvs", ref::cat("mmvs_x3_cap6/", tn, "/", q, "+", kv, "+", kv, "x", k, "/m1"),
            [=] { return std::make_unique<MmvsRowPairsX3Case>(t, k, q, kv, kv, 6, false, true, false); });
    }
    for (auto [n, k] : {std::pair<int64_t, int64_t>{4096, 4096}, {4096, 12288}, {151936, 4096},
                        {5120, 8192}, {5120, 25600}, {151936, 5120}})
      for (int cap : {0, 6})
        r.add("mmvs", ref::cat("mmvs_rp1_cap", cap, "/", tn, "/", n, "x", k, "/m1"),
              [=] { return std::make_unique<MmvsCase>(t, n, k, 1, 0, true, true, cap, true, 2, true, false, 2); });
  }
}

}  // namespace
MEMRA_KC_REGISTER(add_mmvs_pair_cases);
}  // namespace memra::kc
