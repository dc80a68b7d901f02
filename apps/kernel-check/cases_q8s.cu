// Sections "mmvs" and "mmvs_id", the producers of the q8s activation planes that the mmvs matvec
// reads (kernels/matvec/mmvs.h): launch_quantize_q8s byte-identical to the CPU q8_1 quantizer
// (quantize_row(Q8_1)) converted to planes, in the plain order and in the interleaved orders of
// q8s_order.h (kernels.mmvs_act_il, kernels.mmvs_act_il_q6k); add_rms_norm / rms_norm emitting
// the planes of their output byte-identical to the plain norm followed by that quantizer (one
// block per row and split over 2..8 blocks).
#include <cstring>
#include <vector>

#include "case_util.h"
#include "cases_ref.h"
#include "matvec/mmvs.h"
#include "matvec/q8s_order.h"
#include "norm/norm_kernels.h"
#include "quant/quant.h"

namespace memra::kc {
namespace {

// launch_quantize_q8s vs the CPU q8_1 quantizer's bytes, converted to planes.
class QuantizeQ8sCase : public Case {
 public:
  // il: one row in the interleaved order (q8s_order.h) against the CPU planes put in that order
  // (the unused bytes of a short last group compared too: poisoned, they must stay untouched).
  // q6k: the Q6_K variant of the interleaved order (act_il_q6k); a row of n % 256 != 0 is refused.
  // bulk: QuantizeQ8sParams::bulk (kernels.quantize_bulk_load); the case also checks that the
  // bulk copy is taken exactly where quantize_q8s_bulk_applies should say so (one row, n % 256 == 0).
  QuantizeQ8sCase(int64_t rows, int64_t n, bool il = false, bool q6k = false, bool bulk = false)
      : rows_(rows), n_(n), il_(il), q6k_(q6k), bulk_(bulk) {}
  void generate(Env& env) override {
    x_ = env.normal((size_t)(rows_ * n_), 3.0f);
    for (size_t i = 0; i < x_.size(); i += 97) x_[i] = 0.0f;  // zeros inside blocks
    std::fill(x_.begin(), x_.begin() + 32, 0.0f);             // one all-zero block (d = 0)
    dx_ = env.upload(x_);
    dxq_ = env.alloc_output<int8_t>(xq_bytes());
    dxds_ = env.alloc_output<float>((size_t)(rows_ * n_ / 32) * 2);
  }
  cudaError_t launch(Env& env) override {
    cuda::QuantizeQ8sParams p;
    p.x = dx_;
    p.n = n_;
    p.rows = rows_;
    p.xq = dxq_;
    p.xds = dxds_;
    p.act_il = il_;
    p.act_il_q6k = q6k_;
    p.bulk = bulk_;
    bulk_taken_ = cuda::quantize_q8s_bulk_applies(p);
    if (q6k_) {  // a row that is not whole Q6_K superblocks is refused (before the launch)
      cuda::QuantizeQ8sParams bad = p;
      bad.n = n_ - 32;
      short_refused_ = cuda::launch_quantize_q8s(bad, env.stream()) == cudaErrorInvalidValue;
    }
    return cuda::launch_quantize_q8s(p, env.stream());
  }
  void reference(Env& env) override {
    std::vector<uint8_t> blocks((size_t)(rows_ * (n_ / 32)) * 36);
    for (int64_t r = 0; r < rows_; ++r)
      quantize_row(QType::Q8_1, x_.data() + r * n_, blocks.data() + (size_t)r * (n_ / 32) * 36, n_);
    q8_1_to_q8s(blocks, rows_, n_, xq_, xds_);
    if (il_) {  // the poison the output buffer was filled with stays where no quant goes
      std::vector<int8_t> il = env.download(dxq_, xq_bytes());
      cuda::q8s::to_interleaved(xq_.data(), n_, il.data(), q6k_ ? cuda::q8s::Order::il_q6k : cuda::q8s::Order::il);
      xq_ = std::move(il);
    }
  }
  Verdict compare(Env& env) override {
    const auto q = env.download(dxq_, xq_.size());
    const auto ds = env.download(dxds_, xds_.size());
    if (q6k_ && !short_refused_) return ref::fail(ref::cat("a Q6_K-order row of ", n_ - 32, " quants was not refused"));
    if (bulk_taken_ != (bulk_ && rows_ == 1 && n_ % 256 == 0))
      return ref::fail(ref::cat("bulk copy ", bulk_taken_ ? "taken" : "not taken", " for ", rows_, " x ", n_));
    Verdict v = ref::all_of({{"quants", compare_bytes(q.data(), xq_.data(), q.size())},
                             {"scales and sums", compare_bytes(ds.data(), xds_.data(), ds.size() * 4)}});
    if (bulk_) v.detail += bulk_taken_ ? "; bulk copy" : "; plain loads (bulk does not apply)";
    return v;
  }
  PerfCount perf_count() const override { return {(double)(rows_ * n_) * 5.25, 0}; }

 private:
  size_t xq_bytes() const { return (size_t)(il_ ? cuda::q8s::il_row_bytes(n_) : rows_ * n_); }
  int64_t rows_, n_;
  bool il_, q6k_, bulk_;
  bool short_refused_ = false, bulk_taken_ = false;
  std::vector<float> x_;
  std::vector<int8_t> xq_;
  std::vector<float> xds_;
  float* dx_ = nullptr;
  int8_t* dxq_ = nullptr;
  float* dxds_ = nullptr;
};

// add_rms_norm / rms_norm emitting the q8s planes of their output (the norm feeding the next
// matvec) against the plain kernel followed by launch_quantize_q8s: identical bytes.
class NormQ8sEmitCase : public Case {
 public:
  // split > 1 (rms_norm only): that many blocks per row against the one-block launch with planes.
  // il: the planes in the interleaved order (one row), against launch_quantize_q8s in that order.
  // bulk (rms_norm only): RmsNormParams::bulk (kernels.norm_bulk_load) on the launch under test,
  // the reference launches without it; the case checks that it is taken exactly where
  // rms_norm_bulk_applies should say so (cols % 4 == 0, cols <= 8192).
  NormQ8sEmitCase(bool add, int rows, int cols, int split = 1, bool il = false, bool bulk = false)
      : add_(add), rows_(rows), cols_(cols), split_(split), il_(il), bulk_(bulk) {}
  void generate(Env& env) override {
    const size_t n = (size_t)rows_ * cols_;
    const size_t nq = il_ ? (size_t)cuda::q8s::il_row_bytes(cols_) : n;
    const auto res = env.normal(n, 2.0f), dl = env.normal(n), w = env.normal((size_t)cols_, 0.2f, 1.0f);
    dres_ = env.upload(res);
    dres2_ = env.upload(res);  // the residual is updated in place: one copy per run
    ddl_ = env.upload(dl);
    dw_ = env.upload(w);
    dout_ = env.alloc_output<float>(n);
    dxq_ = env.alloc_output<int8_t>(nq);
    dxds_ = env.alloc_output<float>(n / 16);
    dout2_ = env.alloc<float>(n);
    dxq2_ = env.alloc<int8_t>(nq);
    dxds2_ = env.alloc<float>(n / 16);
  }
  cudaError_t run(Env& env, float* res, float* out, int8_t* xq, float* xds, int split = 1, bool bulk = false) {
    if (add_) {
      cuda::AddRmsNormParams p;
      p.residual = res;
      p.ld_residual = cols_;
      p.delta = ddl_;
      p.ld_delta = cols_;
      p.residual_out = res;
      p.ld_residual_out = cols_;
      p.w = dw_;
      p.out = out;
      p.ld_out = cols_;
      p.rows = rows_;
      p.cols = cols_;
      p.q8s_xq = xq;
      p.q8s_xds = xds;
      p.q8s_il = il_ && xq;
      return cuda::launch_add_rms_norm(p, env.stream());
    }
    cuda::RmsNormParams p;
    p.x = res;
    p.ld_x = cols_;
    p.w = dw_;
    p.out = out;
    p.ld_out = cols_;
    p.rows = rows_;
    p.cols = cols_;
    p.q8s_xq = xq;
    p.q8s_xds = xds;
    p.q8s_il = il_ && xq;
    p.split = split;
    p.bulk = bulk;
    if (bulk) bulk_taken_ = cuda::rms_norm_bulk_applies(p);
    return cuda::launch_rms_norm(p, env.stream());
  }
  cudaError_t launch(Env& env) override { return run(env, dres_, dout_, dxq_, dxds_, split_, bulk_); }
  void reference(Env& env) override {
    if (split_ > 1) {  // the one-block launch, planes included
      ref::check(run(env, dres2_, dout2_, dxq2_, dxds2_, 1), "norm, one block per row");
      return;
    }
    ref::check(run(env, dres2_, dout2_, nullptr, nullptr), "norm without planes");
    cuda::QuantizeQ8sParams qp;
    qp.x = dout2_;
    qp.n = cols_;
    qp.rows = rows_;
    qp.xq = dxq2_;
    qp.xds = dxds2_;
    qp.act_il = il_;
    ref::check(cuda::launch_quantize_q8s(qp, env.stream()), "launch_quantize_q8s");
  }
  Verdict compare(Env& env) override {
    Verdict v = ref::compare_q8s_emit(env, dout_, dout2_, dxq_, dxq2_, dxds_, dxds2_, (size_t)rows_ * cols_, il_);
    if (bulk_ && bulk_taken_ != (cols_ % 4 == 0 && cols_ <= 8192))
      return ref::fail(ref::cat("bulk copy ", bulk_taken_ ? "taken" : "not taken", " for ", cols_, " columns"));
    if (bulk_) v.detail += bulk_taken_ ? "; bulk copy" : "; plain loads (bulk does not apply)";
    if (split_ > 1 && v.pass) {
      // The blocks of a row read all of x while others store: out over x is refused.
      const cudaError_t e = run(env, dres2_, dres2_, dxq2_, dxds2_, split_);
      if (e != cudaErrorInvalidValue)
        return ref::fail(ref::cat("split ", split_, " with out == x: expected cudaErrorInvalidValue, got ",
                                      cudaGetErrorName(e)));
      v.detail += "; out == x refused";
    }
    return v;
  }
  PerfCount perf_count() const override { return {(double)rows_ * cols_ * (add_ ? 12.0 : 8.0) + 4.0 * cols_, 0}; }

 private:
  bool add_;
  int rows_, cols_, split_;
  bool il_, bulk_;
  bool bulk_taken_ = false;
  float *dres_ = nullptr, *dres2_ = nullptr, *ddl_ = nullptr, *dw_ = nullptr, *dout_ = nullptr, *dout2_ = nullptr;
  int8_t *dxq_ = nullptr, *dxq2_ = nullptr;
  float *dxds_ = nullptr, *dxds2_ = nullptr;
};

void add_q8s_cases(Registry& r) {
  for (auto [rows, cols] : {std::pair<int, int>{1, 4096}, {3, 5120}, {8, 4160}, {2, 16384}}) {
    r.add("mmvs_id", ref::cat("add_rms_norm_q8s/", rows, "x", cols, "/vs_norm_then_quantize_bytes"),
          [=] { return std::make_unique<NormQ8sEmitCase>(true, rows, cols); });
    r.add("mmvs_id", ref::cat("rms_norm_q8s/", rows, "x", cols, "/vs_norm_then_quantize_bytes"),
          [=] { return std::make_unique<NormQ8sEmitCase>(false, rows, cols); });
    // kernels.norm_split: 2..8 blocks per row, byte-identical to one (rows past 32 x 256
    // columns take the re-read path too: 16384).
    for (int split : {2, 3, 4, 8})
      r.add("mmvs_id", ref::cat("rms_norm_q8s_split", split, "/", rows, "x", cols, "/vs_one_block_bytes"),
            [=] { return std::make_unique<NormQ8sEmitCase>(false, rows, cols, split); });
  }
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 4096}, {3, 14336}, {8, 5120}})
    r.add("mmvs", ref::cat("quantize_q8s/", rows, "x", n, "/bytes_vs_cpu_q8_1"),
          [=] { return std::make_unique<QuantizeQ8sCase>(rows, n); });
  // kernels.mmvs_act_il: every producer of the one-token planes in the interleaved order. The
  // quantizer against the CPU planes put in that order (short last groups: 2304, 5120, 25600, 160);
  // the norms (one block and split) against norm + that quantizer.
  for (int64_t n : {4096, 2304, 5120, 25600, 160})
    r.add("mmvs", ref::cat("quantize_q8s_il/1x", n, "/bytes_vs_cpu_q8_1"),
          [=] { return std::make_unique<QuantizeQ8sCase>(1, n, true); });
  // kernels.mmvs_act_il_q6k: the quantizer writing the Q6_K variant (before a Q6_K-only launch).
  for (int64_t n : {12288, 2304, 5120, 25600, 256})
    r.add("mmvs", ref::cat("quantize_q8s_il_q6k/1x", n, "/bytes_vs_cpu_q8_1"),
          [=] { return std::make_unique<QuantizeQ8sCase>(1, n, true, true); });
  // kernels.norm_bulk_load / kernels.quantize_bulk_load: the row (the block's values) by one bulk
  // copy into shared memory; the same bytes as the plain loads. 4160: a row that ends inside a
  // thread's last chunk group; 16384 / 3 rows x 14336 / 160: where the copy does not apply.
  for (auto [rows, cols] : {std::pair<int, int>{1, 4096}, {3, 5120}, {1, 4160}, {1, 8192}, {2, 16384}})
    for (int split : {1, 8})
      r.add("mmvs_id", ref::cat("rms_norm_q8s_bulk", split > 1 ? ref::cat("_split", split) : "", "/", rows, "x", cols,
                                split > 1 ? "/vs_one_block_bytes" : "/vs_norm_then_quantize_bytes"),
            [=] { return std::make_unique<NormQ8sEmitCase>(false, rows, cols, split, false, true); });
  for (int cols : {4096, 5120})
    r.add("mmvs_id", ref::cat("rms_norm_q8s_il_bulk_split8/1x", cols, "/vs_one_block_bytes"),
          [=] { return std::make_unique<NormQ8sEmitCase>(false, 1, cols, 8, true, true); });
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 12288}, {1, 4096}, {3, 14336}, {1, 160}})
    r.add("mmvs", ref::cat("quantize_q8s_bulk/", rows, "x", n, "/bytes_vs_cpu_q8_1"),
          [=] { return std::make_unique<QuantizeQ8sCase>(rows, n, false, false, true); });
  for (int64_t n : {12288, 25600, 2304})
    r.add("mmvs", ref::cat("quantize_q8s_il_bulk/1x", n, "/bytes_vs_cpu_q8_1"),
          [=] { return std::make_unique<QuantizeQ8sCase>(1, n, true, false, true); });
  r.add("mmvs", "quantize_q8s_il_q6k_bulk/1x12288/bytes_vs_cpu_q8_1",
        [=] { return std::make_unique<QuantizeQ8sCase>(1, 12288, true, true, true); });
  for (int cols : {4096, 5120, 2304, 16384}) {
    r.add("mmvs_id", ref::cat("add_rms_norm_q8s_il/1x", cols, "/vs_norm_then_quantize_bytes"),
          [=] { return std::make_unique<NormQ8sEmitCase>(true, 1, cols, 1, true); });
    for (int split : {1, 8})
      r.add("mmvs_id", ref::cat("rms_norm_q8s_il", split > 1 ? ref::cat("_split", split) : "", "/1x", cols,
                                split > 1 ? "/vs_one_block_bytes" : "/vs_norm_then_quantize_bytes"),
            [=] { return std::make_unique<NormQ8sEmitCase>(false, 1, cols, split, true); });
  }
}

}  // namespace
MEMRA_KC_REGISTER(add_q8s_cases);
}  // namespace memra::kc
