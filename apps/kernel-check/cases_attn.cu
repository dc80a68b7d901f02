// kernel-check section "attn": split-K decode attention, tiled (f32) and tensor-core (f16 mma)
// prefill attention over an f16 / q8_0 / q5_1 device cache, GQA (32/8, 9/3, 2/1), head dims
// 32/64/128/256, causal and sliding window, softcap, against an f64 reference computed from the
// CPU-dequantized cache (the values the kernel reads, bit for bit: kv section).
// Tolerance (FlashAttention-3's rule): normalized error <= 4 * e_naive + 1e-6, where e_naive is
// the error of a naive implementation of the kernel's precision class (sequential dot products,
// max-subtracted softmax, sequential weighted sum) against the same f64 reference on the same
// inputs: f32 for decode and the tiled prefill; for the tensor-core prefill, Q, K, V and the
// unnormalized probabilities rounded to f16 with f32 sums (what the mma kernel computes).
// Identity: a decode batch of n rows (a speculative verify) equals n single-row decodes with the
// same n_splits, byte for byte.
#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>

#include "attn/attn_kernels.h"
#include "attn/attn_prefill_f16.h"
#include "matvec/mmvs.h"
#include "case_util.h"
#include "cases_ref.h"
#include "core/half.h"
#include "quant/quant.h"

namespace memra::kc {
namespace {

const char* tname(QType t) {
  switch (t) {
    case QType::F16: return "f16";
    case QType::Q8_0: return "q8_0";
    case QType::Q5_1: return "q5_1";
    case QType::F32: return "f32";
    default: return "?";
  }
}

enum class Kern { Decode, Tiled, Mma, Staged };
bool is_decode(Kern k) { return k == Kern::Decode; }

float to_f16(float x) { return fp16_to_f32(f32_to_fp16(x)); }

struct AttnCfg {
  Kern kern;
  int n_tokens, pos0, n_head, n_head_kv, head_dim;
  QType tk, tv;
  int window;
  float softcap;
  bool q8i = false;  // decode: AttnParams::q8_scores (int8 q . k per block; q8_0 K only)
  bool pv = false;   // decode: AttnParams::pv_mma (P and V rounded to f16, f32 sums; with q8i)
  int max_splits = 64;  // decode: attn_decode_splits' cap (kernels.attn_max_splits)
  int extra_ctx = 0;    // cache rows past the last row's position + 3 (decode: more splits for short rows)
  bool f16mma = false;  // decode: AttnParams::f16_mma (f16 K/V: q and P rounded to f16, f32 sums)
  bool preload = false;  // decode: AttnParams::combine_preload (the default config's combine)
  int split_keys = 128;  // decode: AttnParams::min_split_keys (kernels.attn_f16_split_keys; f16mma only)
  int bps = 4;           // decode: attn_decode_splits' blocks per SM (kernels.attn_blocks_per_sm)
};

class AttnCase : public Case {
 public:
  explicit AttnCase(AttnCfg c) : c_(c) {}
  void generate(Env& env) override {
    n_ctx_ = c_.pos0 + c_.n_tokens + 3 + c_.extra_ctx;
    kv_row_ = c_.n_head_kv * c_.head_dim;
    rbk_ = (int64_t)*qtype_row_bytes(c_.tk, kv_row_);
    rbv_ = (int64_t)*qtype_row_bytes(c_.tv, kv_row_);
    const std::vector<float> k = env.normal((size_t)n_ctx_ * kv_row_, 1.0f);
    const std::vector<float> v = env.normal((size_t)n_ctx_ * kv_row_, 1.0f);
    std::vector<uint8_t> kc((size_t)n_ctx_ * rbk_), vc((size_t)n_ctx_ * rbv_);
    kf_.resize(k.size());
    vf_.resize(v.size());
    for (int j = 0; j < n_ctx_; ++j) {
      const size_t o = (size_t)j * kv_row_;
      quantize_row(c_.tk, k.data() + o, kc.data() + (size_t)j * rbk_, kv_row_);
      quantize_row(c_.tv, v.data() + o, vc.data() + (size_t)j * rbv_, kv_row_);
      dequantize_row(c_.tk, kc.data() + (size_t)j * rbk_, kf_.data() + o, kv_row_);
      dequantize_row(c_.tv, vc.data() + (size_t)j * rbv_, vf_.data() + o, kv_row_);
    }
    if (c_.q8i) kc_ = kc;  // the naive twin reads the int8 quants and scales
    q_width_ = (int64_t)c_.n_head * c_.head_dim;
    q_ = env.normal((size_t)c_.n_tokens * q_width_, 1.5f);  // sharper than N(0,1): peakier softmax
    dk_ = env.upload(kc);
    dv_ = env.upload(vc);
    dq_ = env.upload(q_);
    dpos_ = env.upload(std::vector<int32_t>{c_.pos0});
    dout_ = env.alloc_output<float>((size_t)c_.n_tokens * q_width_);
    if (is_decode(c_.kern)) {
      splits_ = cuda::attn_decode_splits(n_ctx_, c_.n_head, c_.n_head_kv, env.ctx().info().sm_count, c_.max_splits,
                                         c_.split_keys, c_.bps);
      dws_ = env.alloc<float>(cuda::attn_decode_workspace_floats(c_.n_tokens, c_.n_head, c_.head_dim, splits_));
    }
    if (c_.kern == Kern::Staged) {
      stage_bytes_ = cuda::attn_prefill_stage_bytes(params(), c_.pos0);
      dstage_ = env.alloc<uint8_t>(stage_bytes_);
    }
  }
  cuda::AttnParams params() const {
    cuda::AttnParams p;
    p.q = dq_;
    p.ld_q = q_width_;
    p.k_cache = dk_;
    p.type_k = c_.tk;
    p.k_row_bytes = rbk_;
    p.v_cache = dv_;
    p.type_v = c_.tv;
    p.v_row_bytes = rbv_;
    p.out = dout_;
    p.ld_out = q_width_;
    p.n_tokens = c_.n_tokens;
    p.n_head = c_.n_head;
    p.n_head_kv = c_.n_head_kv;
    p.head_dim = c_.head_dim;
    p.pos0 = dpos_;
    p.scale = 1.0f / std::sqrt((float)c_.head_dim);
    p.window = c_.window;
    p.softcap = c_.softcap;
    p.n_splits = splits_;
    p.workspace = dws_;
    p.q8_scores = c_.q8i;
    p.pv_mma = c_.pv;
    if (c_.pv) p.v_stage = true;
    p.f16_mma = c_.f16mma;
    p.combine_preload = c_.preload;
    p.min_split_keys = c_.split_keys;
    return p;
  }
  cudaError_t launch(Env& env) override {
    switch (c_.kern) {
      case Kern::Tiled: return cuda::launch_attn_prefill_tiled(params(), env.stream());
      case Kern::Mma: return cuda::launch_attn_prefill_mma(params(), env.stream());
      case Kern::Staged:
        return cuda::launch_attn_prefill_staged(params(), c_.pos0, dstage_, stage_bytes_, env.stream());
      default: return cuda::launch_attn_decode(params(), env.stream());
    }
  }
  void reference(Env&) override {
    const int D = c_.head_dim, G = c_.n_head / c_.n_head_kv;
    const float scale = 1.0f / std::sqrt((float)D);
    const bool h16 = c_.kern == Kern::Mma || c_.kern == Kern::Staged;  // the naive twin rounds what the kernel rounds
    // f16mma: q (the cache is f16) and P rounded, as the tensor-core decode form computes.
    auto rn = [h16, this](float x) { return h16 || c_.f16mma ? to_f16(x) : x; };
    auto rnv = [h16, this](float x) { return h16 || c_.pv || c_.f16mma ? to_f16(x) : x; };  // P and V (pv: only those)
    ref_.assign((size_t)c_.n_tokens * q_width_, 0.0);
    naive_.assign(ref_.size(), 0.0f);
    // One (row, head) per work item, on all cores: every item writes only its own outputs.
    ref_pool().parallel_for((size_t)c_.n_tokens * (size_t)c_.n_head, [&](size_t w0, size_t w1) {
    std::vector<double> s64;
    std::vector<float> s32;
    for (size_t w = w0; w < w1; ++w) {
      const int i = (int)(w / (size_t)c_.n_head), h = (int)(w % (size_t)c_.n_head);
      const int pos = c_.pos0 + i;
      const int hi = pos + 1, lo = c_.window > 0 ? std::max(0, pos - c_.window + 1) : 0;
      {
        const float* q = q_.data() + (size_t)i * q_width_ + (size_t)h * D;
        const size_t koff = (size_t)(h / G) * D;
        // q8i: q quantized per 32 elements as the kernel does (d = amax / 127, rn(x * (1 / d))).
        std::vector<int> qi;
        std::vector<float> qd;
        if (c_.q8i) {
          qi.resize((size_t)D);
          qd.resize((size_t)D / 32);
          for (int b = 0; b < D / 32; ++b) {
            float amax = 0.0f;
            for (int t = 0; t < 32; ++t) amax = std::max(amax, std::fabs(q[b * 32 + t]));
            const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
            qd[(size_t)b] = d;
            for (int t = 0; t < 32; ++t) qi[(size_t)(b * 32 + t)] = (int)std::nearbyint(q[b * 32 + t] * id);
          }
        }
        s64.assign(hi - lo, 0.0);
        s32.assign(hi - lo, 0.0f);
        double m64 = -INFINITY;
        float m32 = -INFINITY;
        for (int j = lo; j < hi; ++j) {
          const float* k = kf_.data() + (size_t)j * kv_row_ + koff;
          double d64 = 0;
          float d32 = 0;
          for (int d = 0; d < D; ++d) {
            d64 += (double)q[d] * k[d];
            if (!c_.q8i) d32 += rn(q[d]) * rn(k[d]);
          }
          if (c_.q8i) {  // exact int8 sums per block, scaled by d_k * d_q, summed in order
            const uint8_t* kb = kc_.data() + (size_t)j * rbk_ + (size_t)(h / G) * (D / 32) * 34;
            for (int b = 0; b < D / 32; ++b) {
              const uint8_t* blk = kb + b * 34;
              const float dk = fp16_to_f32((uint16_t)(blk[0] | (blk[1] << 8)));
              int isum = 0;
              for (int t = 0; t < 32; ++t) isum += qi[(size_t)(b * 32 + t)] * (int)(int8_t)blk[2 + t];
              d32 += (float)isum * (dk * qd[(size_t)b]);
            }
          }
          double x64 = d64 * scale;
          float x32 = d32 * scale;
          if (c_.softcap > 0) {
            x64 = c_.softcap * std::tanh(x64 / c_.softcap);
            x32 = c_.softcap * std::tanh(x32 / c_.softcap);
          }
          s64[j - lo] = x64;
          s32[j - lo] = x32;
          m64 = std::max(m64, x64);
          m32 = std::max(m32, x32);
        }
        double l64 = 0;
        float l32 = 0;
        for (int j = 0; j < hi - lo; ++j) {
          s64[j] = std::exp(s64[j] - m64);
          s32[j] = std::exp(s32[j] - m32);
          l64 += s64[j];
          l32 += s32[j];
        }
        double* o64 = ref_.data() + (size_t)i * q_width_ + (size_t)h * D;
        float* o32 = naive_.data() + (size_t)i * q_width_ + (size_t)h * D;
        for (int j = lo; j < hi; ++j) {
          const float* v = vf_.data() + (size_t)j * kv_row_ + koff;
          const float p32 = rnv(s32[j - lo]);
          for (int d = 0; d < D; ++d) {
            o64[d] += s64[j - lo] * v[d];
            o32[d] += p32 * rnv(v[d]);
          }
        }
        for (int d = 0; d < D; ++d) {
          o64[d] /= l64;
          o32[d] /= l32;
        }
      }
    }
    });
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dout_, (size_t)c_.n_tokens * q_width_);
    const double e_naive = ref::norm_err(naive_, ref_);
    Verdict v = ref::norm(got, ref_, 4 * e_naive + 1e-6);
    v.detail += ref::cat(" (naive ", c_.q8i ? "q8 scores" : c_.f16mma ? "f16 q, K" : "f32", c_.pv || c_.f16mma ? " + f16 P, V" : "", " error ", e_naive,
                         ", splits ", splits_, ")");
    if (c_.q8i && !cuda::attn_decode_q8_scores(params())) {
      v.pass = false;
      v.detail += " (the int8 score path was not taken)";
    }
    if (c_.f16mma != cuda::attn_decode_f16_mma(params())) {  // off: the old f16 path, not this one
      v.pass = false;
      v.detail += c_.f16mma ? " (the f16 tensor-core path was not taken)" : " (the f16 tensor-core path was taken)";
    }
    if (c_.pv && !cuda::attn_decode_pv_mma(params())) {
      v.pass = false;
      v.detail += " (the tensor-core P x V path was not taken)";
    }
    return v;
  }
  PerfCount perf_count() const override {
    const double keys = (double)c_.pos0 + c_.n_tokens;
    const double kv = keys * (rbk_ + rbv_);
    const bool pre = !is_decode(c_.kern);
    const double flops = 4.0 * c_.n_head * c_.head_dim * (pre ? keys * c_.n_tokens / 2 : keys * c_.n_tokens);
    return {kv + 8.0 * c_.n_tokens * q_width_, pre ? flops : 0.0};
  }

 protected:
  AttnCfg c_;
  int n_ctx_ = 0, kv_row_ = 0, splits_ = 1;
  int64_t rbk_ = 0, rbv_ = 0, q_width_ = 0;
  std::vector<float> kf_, vf_, q_, naive_;
  std::vector<uint8_t> kc_;
  std::vector<double> ref_;
  uint8_t *dk_ = nullptr, *dv_ = nullptr, *dstage_ = nullptr;
  size_t stage_bytes_ = 0;
  float *dq_ = nullptr, *dout_ = nullptr, *dws_ = nullptr;
  int32_t* dpos_ = nullptr;
};

// A decode batch (speculative verify) against the same rows decoded one at a time: identical bytes.
class AttnVerifyIdentityCase : public AttnCase {
 public:
  using AttnCase::AttnCase;
  void generate(Env& env) override {
    AttnCase::generate(env);
    dsingle_ = env.alloc<float>((size_t)c_.n_tokens * q_width_);
    std::vector<int32_t> pos(c_.n_tokens);
    for (int i = 0; i < c_.n_tokens; ++i) pos[i] = c_.pos0 + i;
    dposs_ = env.upload(pos);
  }
  void reference(Env& env) override {
    for (int i = 0; i < c_.n_tokens; ++i) {
      cuda::AttnParams p = params();
      p.q = dq_ + (size_t)i * q_width_;
      p.out = dsingle_ + (size_t)i * q_width_;
      p.n_tokens = 1;
      p.pos0 = dposs_ + i;
      ref::check(cuda::launch_attn_decode(p, env.stream()), "launch_attn_decode (single row)");
    }
    single_ = env.download(dsingle_, (size_t)c_.n_tokens * q_width_);
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dout_, (size_t)c_.n_tokens * q_width_);
    return compare_bytes(got.data(), single_.data(), got.size() * 4);
  }

 private:
  float* dsingle_ = nullptr;
  int32_t* dposs_ = nullptr;
  std::vector<float> single_;
};

// Two paths of the decode kernel that must give the same bytes: the launch with `alt` applied
// against the one with `base` applied, plus a check that the alternative path was really taken.
//  - word loads: the aligned word loads of the cache (the default where it is aligned) vs
//    AttnParams::byte_loads;
//  - V staging: AttnParams::v_stage (V tiles through shared memory) vs the direct loads;
//  - combine: the default shared-memory combine vs AttnParams::combine_direct;
//  - combine preload: the shared-memory combine with AttnParams::combine_preload vs combine_direct;
//  - one-split direct: AttnParams::one_split_direct (one-split rows written by the split kernel)
//    vs every row through the combine;
//  - no combine: one_split_direct with AttnParams::rows_one_split (rows of at most 128 keys: no
//    combine kernel launched, the output poisoned before) vs every row through the combine;
//  - grid trim: AttnParams::grid_splits at attn_decode_grid_splits of the launch's longest row
//    (round = grid_round_: 1 exact, more rounds up) vs the grid of all n_splits.
class AttnPathPairCase : public AttnCase {
 public:
  enum Pair { kWordLoads, kVStage, kCombine, kCombinePreload, kOneSplitDirect, kNoCombine, kGridTrim };
  AttnPathPairCase(AttnCfg c, Pair pair, int grid_round = 0) : AttnCase(c), pair_(pair), grid_round_(grid_round) {}
  void generate(Env& env) override {
    AttnCase::generate(env);
    dbase_ = env.alloc<float>((size_t)c_.n_tokens * q_width_);
  }
  cudaError_t launch(Env& env) override { return cuda::launch_attn_decode(alt(), env.stream()); }
  void reference(Env& env) override {
    cuda::AttnParams p = params();
    p.out = dbase_;
    if (pair_ == kWordLoads) p.byte_loads = true;
    if (pair_ == kCombine || pair_ == kCombinePreload) p.combine_direct = true;
    ref::check(cuda::launch_attn_decode(p, env.stream()), "launch_attn_decode (the base path of the pair)");
    base_ = env.download(dbase_, (size_t)c_.n_tokens * q_width_);
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dout_, (size_t)c_.n_tokens * q_width_);
    Verdict v = compare_bytes(got.data(), base_.data(), got.size() * 4);
    const bool taken = pair_ == kWordLoads ? cuda::attn_decode_word_loads(alt())
                       : pair_ == kVStage  ? cuda::attn_decode_v_stage(alt())
                       : pair_ == kCombine ? !alt().combine_direct
                       : pair_ == kOneSplitDirect ? alt().one_split_direct
                       : pair_ == kNoCombine ? alt().one_split_direct && alt().rows_one_split
                       : pair_ == kGridTrim ? alt().grid_splits > 0 && alt().grid_splits < alt().n_splits
                                           : alt().combine_preload && !alt().combine_direct;
    if (!taken) {  // else both launches ran the same path
      v.pass = false;
      v.detail += " (the alternative path was not taken)";
    }
    return v;
  }

 private:
  cuda::AttnParams alt() const {
    cuda::AttnParams p = params();
    if (pair_ == kVStage) p.v_stage = true;
    if (pair_ == kCombinePreload) p.combine_preload = true;
    if (pair_ == kOneSplitDirect || pair_ == kNoCombine) p.one_split_direct = true;
    if (pair_ == kNoCombine) p.rows_one_split = true;
    if (pair_ == kGridTrim) p.grid_splits = cuda::attn_decode_grid_splits(c_.pos0 + c_.n_tokens, p.n_splits, grid_round_);
    return p;
  }
  Pair pair_;
  int grid_round_ = 0;
  float* dbase_ = nullptr;
  std::vector<float> base_;
};

// The q8s planes the decode kernel emits for the next mmvs matvec (AttnParams::q8s_xq) against
// launch_quantize_q8s of its own f32 output: identical bytes (and the f32 output identical to a
// launch without the planes). il: one token's planes in the interleaved order (AttnParams::q8s_il,
// kernels.mmvs_act_il) against the quantizer in that order.
class AttnQ8sEmitCase : public AttnCase {
 public:
  AttnQ8sEmitCase(const AttnCfg& c, bool il = false) : AttnCase(c), il_(il) {}
  void generate(Env& env) override {
    AttnCase::generate(env);
    const size_t n = (size_t)c_.n_tokens * q_width_;
    const size_t nq = il_ ? (size_t)cuda::q8s::il_row_bytes((int64_t)n) : n;
    dxq_ = env.alloc_output<int8_t>(nq);
    dxds_ = env.alloc_output<float>(n / 32 * 2);
    dplain_ = env.alloc<float>(n);
    dxq2_ = env.alloc<int8_t>(nq);
    dxds2_ = env.alloc<float>(n / 32 * 2);
  }
  cudaError_t launch(Env& env) override {
    cuda::AttnParams p = params();
    p.q8s_xq = dxq_;
    p.q8s_xds = dxds_;
    p.q8s_il = il_;
    return cuda::launch_attn_decode(p, env.stream());
  }
  void reference(Env& env) override {
    cuda::AttnParams p = params();
    p.out = dplain_;
    ref::check(cuda::launch_attn_decode(p, env.stream()), "launch_attn_decode (no planes)");
    cuda::QuantizeQ8sParams qp;
    qp.x = dplain_;
    qp.n = q_width_;
    qp.rows = c_.n_tokens;
    qp.xq = dxq2_;
    qp.xds = dxds2_;
    qp.act_il = il_;
    ref::check(cuda::launch_quantize_q8s(qp, env.stream()), "launch_quantize_q8s");
  }
  Verdict compare(Env& env) override {
    return ref::compare_q8s_emit(env, dout_, dplain_, dxq_, dxq2_, dxds_, dxds2_, (size_t)c_.n_tokens * q_width_, il_);
  }

 private:
  bool il_;
  int8_t *dxq_ = nullptr, *dxq2_ = nullptr;
  float *dxds_ = nullptr, *dxds2_ = nullptr, *dplain_ = nullptr;
};

// The prefill kernels over q8_0 split-plane cache rows (kv.planes: each row's quants, then its
// blocks' f16 scales; AttnParams::k_scale_plane) against the same kernel over the same values in
// GGUF blocks: identical bytes (the same values reach the same arithmetic; the staged form
// stages planes through launch_kv_read's f16 output, blocks through launch_dequantize's).
class AttnPlanesPrefillCase : public AttnCase {
 public:
  using AttnCase::AttnCase;
  void generate(Env& env) override {
    AttnCase::generate(env);
    for (int c = 0; c < 2; ++c) {
      const int64_t rb = c ? rbv_ : rbk_;
      const auto blocks = env.download(c ? dv_ : dk_, (size_t)(rb * n_ctx_));
      std::vector<uint8_t> planes(blocks.size());
      for (int j = 0; j < n_ctx_; ++j)
        q8_0_blocks_to_planes(blocks.data() + (size_t)j * rb, kv_row_, planes.data() + (size_t)j * rb);
      (c ? dvp_ : dkp_) = env.upload(planes);
    }
    dbase_ = env.alloc<float>((size_t)c_.n_tokens * q_width_);
  }
  cudaError_t launch(Env& env) override {
    cuda::AttnParams p = params();
    p.k_cache = dkp_;
    p.v_cache = dvp_;
    p.k_scale_plane = p.v_scale_plane = kv_row_;
    return run(p, env);
  }
  void reference(Env& env) override {
    cuda::AttnParams p = params();
    p.out = dbase_;
    ref::check(run(p, env), "the prefill over GGUF blocks");
  }
  Verdict compare(Env& env) override {
    const size_t n = (size_t)c_.n_tokens * q_width_;
    const auto got = env.download(dout_, n), want = env.download(dbase_, n);
    return compare_bytes(got.data(), want.data(), n * 4);
  }

 private:
  cudaError_t run(const cuda::AttnParams& p, Env& env) {
    switch (c_.kern) {
      case Kern::Tiled: return cuda::launch_attn_prefill_tiled(p, env.stream());
      case Kern::Mma: return cuda::launch_attn_prefill_mma(p, env.stream());
      default: return cuda::launch_attn_prefill_staged(p, c_.pos0, dstage_, stage_bytes_, env.stream());
    }
  }
  uint8_t *dkp_ = nullptr, *dvp_ = nullptr;
  float* dbase_ = nullptr;
};

void add_attn_cases(Registry& r) {
  struct Heads {
    int n_head, n_head_kv;
  };
  struct Types {
    QType k, v;
  };
  const Types kTypes[] = {{QType::F16, QType::F16}, {QType::Q8_0, QType::Q5_1}};
  auto name = [](const AttnCfg& c) {
    return ref::cat(c.kern == Kern::Decode ? (c.f16mma ? "attn_decode_f16mma/" : c.pv ? "attn_decode_pv16/" : c.q8i ? "attn_decode_q8i/" : "attn_decode/") : c.kern == Kern::Tiled ? "attn_prefill_tiled/" : c.kern == Kern::Mma ? "attn_prefill_mma/" : "attn_prefill_staged/", tname(c.tk), "-", tname(c.tv), "/", c.n_head, "-",
                    c.n_head_kv, "x", c.head_dim, "/n", c.n_tokens, "@", c.pos0, c.window ? ref::cat("/win", c.window) : "",
                    c.softcap > 0 ? "/softcap" : "", c.max_splits != 64 ? ref::cat("/max_splits", c.max_splits) : "",
                    c.preload ? "/preload" : "", c.split_keys != 128 ? ref::cat("/sk", c.split_keys) : "",
                    c.bps != 4 ? ref::cat("/bps", c.bps) : "");
  };
  auto add = [&](const AttnCfg& c) {
    if (!cuda::attn_head_dim_supported(c.head_dim)) return;
    if (c.kern == Kern::Mma && !cuda::attn_prefill_mma_supported(c.head_dim)) return;
    if (c.kern == Kern::Staged && !cuda::attn_prefill_staged_supported(c.head_dim)) return;
    r.add("attn", name(c), [=] { return std::make_unique<AttnCase>(c); });
  };
  // Decode: sequence lengths 1, 17, 33, 4097 (pos0 = length - 1).
  for (Types t : kTypes)
    for (int hd : {64, 128, 256})
      for (Heads h : {Heads{32, 8}, Heads{9, 3}})
        for (int len : {1, 17, 33, 4097}) add({Kern::Decode, 1, len - 1, h.n_head, h.n_head_kv, hd, t.k, t.v, 0, 0.0f});
  add({Kern::Decode, 1, 4096, 32, 8, 128, QType::Q8_0, QType::Q5_1, 1000, 0.0f});
  add({Kern::Decode, 1, 600, 16, 8, 256, QType::F16, QType::F16, 0, 50.0f});
  add({Kern::Decode, 4, 900, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f});
  add({Kern::Decode, 5, 32, 9, 3, 64, QType::Q8_0, QType::Q8_0, 0, 0.0f});
  // Prefill: causal over a fresh cache (pos0 0) and a continuation chunk (pos0 > 0).
  for (Kern k : {Kern::Tiled, Kern::Mma, Kern::Staged}) {
    for (Types t : kTypes)
      for (int hd : {64, 128, 256})
        for (Heads h : {Heads{32, 8}, Heads{9, 3}})
          for (int n : {1, 17, 33}) add({k, n, 0, h.n_head, h.n_head_kv, hd, t.k, t.v, 0, 0.0f});
    add({k, 33, 100, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f});
    add({k, 200, 300, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f});
    add({k, 4097, 0, 2, 1, 64, QType::F16, QType::F16, 0, 0.0f});
    add({k, 4097, 0, 2, 1, 128, QType::Q8_0, QType::Q5_1, 256, 0.0f});
    add({k, 129, 7, 8, 4, 256, QType::F16, QType::F16, 50, 30.0f});
  }
  // Prefill at the qwen3-8b shape (32/8 x 128, q8_0 K / q5_1 V): a fresh 512-token pass and a
  // 256-token chunk over 768 cached positions, both tensor-core forms (--perf compares them).
  for (Kern k : {Kern::Mma, Kern::Staged}) {
    add({k, 512, 0, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f});
    add({k, 256, 768, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f});
  }
  add({Kern::Staged, 300, 700, 32, 8, 128, QType::Q8_0, QType::Q5_1, 128, 0.0f});  // window: staged rows from 573
  add({Kern::Tiled, 17, 0, 4, 2, 32, QType::F16, QType::F16, 0, 0.0f});
  add({Kern::Decode, 1, 100, 4, 2, 32, QType::Q8_0, QType::Q8_0, 0, 0.0f});
  add({Kern::Decode, 1, 16383, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f});
  // Prefill over the q8_0 split-plane rows (kv.planes) against the same kernel over GGUF blocks, at
  // groups of 4 and (a chunk over cached rows) 8 query heads per kv head.
  for (Kern k : {Kern::Tiled, Kern::Mma, Kern::Staged})
    for (auto [nh, n, pos0] : {std::tuple<int, int, int>{32, 17, 0}, {32, 200, 300}, {64, 200, 300}}) {
      const AttnCfg c{k, n, pos0, nh, 8, 128, QType::Q8_0, QType::Q8_0, 0, 0.0f};
      if (k == Kern::Mma && !cuda::attn_prefill_mma_supported(128)) continue;
      r.add("attn", ref::cat(name(c).substr(0, name(c).find('/') + 1), "q8_0-q8_0/planes/", nh, "-8x128/n", n, "@", pos0,
                             "/vs_blocks_bytes"),
            [=] { return std::make_unique<AttnPlanesPrefillCase>(c); });
    }
  // The q8s planes for the next matvec.
  for (int n : {1, 3}) {
    const AttnCfg c{Kern::Decode, n, 700, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f};
    r.add("attn", ref::cat("attn_decode/q8s_emit_vs_quantize/q8_0-q5_1/32-8x128/n", n, "@700"),
          [=] { return std::make_unique<AttnQ8sEmitCase>(c); });
  }
  // kernels.mmvs_act_il: one token's planes in the interleaved order (4096 and 5120 columns, the
  // latter with a short last group).
  for (int heads : {32, 40}) {
    const AttnCfg c{Kern::Decode, 1, 700, heads, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f};
    r.add("attn", ref::cat("attn_decode/q8s_il_emit_vs_quantize/q8_0-q5_1/", heads, "-8x128/n1@700"),
          [=] { return std::make_unique<AttnQ8sEmitCase>(c, true); });
  }
  // Word loads == byte loads (bytes), every K/V type pair the word path specializes.
  for (Types t : {Types{QType::F16, QType::F16}, Types{QType::Q8_0, QType::Q5_1}, Types{QType::Q8_0, QType::Q8_0}})
    for (int hd : {64, 128, 256})
      for (int len : {33, 4097}) {
        if (!cuda::attn_head_dim_supported(hd)) continue;
        const AttnCfg c{Kern::Decode, len == 33 ? 3 : 1, len - 1, 32, 8, hd, t.k, t.v, 0, 0.0f};
        r.add("attn", ref::cat("attn_decode/word_loads_vs_bytes/", tname(t.k), "-", tname(t.v), "/32-8x", hd, "/n",
                               c.n_tokens, "@", len - 1),
              [=] { return std::make_unique<AttnPathPairCase>(c, AttnPathPairCase::kWordLoads); });
      }
  // The int8 score path (AttnParams::q8_scores) on every q8_0-K decode shape above, with its
  // naive twin's tolerance; and its decode == verify identity.
  for (int hd : {64, 128, 256})
    for (Heads h : {Heads{32, 8}, Heads{9, 3}})
      for (int len : {1, 17, 33, 4097})
        add({Kern::Decode, 1, len - 1, h.n_head, h.n_head_kv, hd, QType::Q8_0, QType::Q5_1, 0, 0.0f, true});
  add({Kern::Decode, 1, 4096, 32, 8, 128, QType::Q8_0, QType::Q5_1, 1000, 0.0f, true});
  add({Kern::Decode, 4, 900, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true});
  add({Kern::Decode, 5, 32, 9, 3, 64, QType::Q8_0, QType::Q8_0, 0, 0.0f, true});
  add({Kern::Decode, 1, 600, 16, 8, 128, QType::Q8_0, QType::Q5_1, 0, 50.0f, true});
  add({Kern::Decode, 1, 16383, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true});
  for (int hd : {64, 128})
    if (cuda::attn_head_dim_supported(hd)) {
      const AttnCfg c{Kern::Decode, 5, 2000, 32, 8, hd, QType::Q8_0, QType::Q5_1, 0, 0.0f, true};
      r.add("attn", ref::cat("attn_decode_q8i/verify_identity/q8_0-q5_1/32-8x", hd, "/n5@2000"),
            [=] { return std::make_unique<AttnVerifyIdentityCase>(c); });
    }
  // P x V on tensor cores (AttnParams::pv_mma: f16 P and V, f32 sums) with its naive twin's
  // tolerance: G = 4 and 8, one and several tiles and splits (partial last tiles at 17, 33, 4097,
  // 16383 keys), a window, softcap, a verify batch; and its decode == verify identity.
  const bool g8 = cuda::attn_head_dim_supported(64);  // reduced builds: G = 4 only
  for (Heads h : {Heads{32, 8}, Heads{64, 8}})
    if (h.n_head == 32 || g8) {
      for (int len : {1, 17, 33, 129, 4097})
        add({Kern::Decode, 1, len - 1, h.n_head, h.n_head_kv, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true, true});
      // 16384 keys, named as the other paths' case (n1@16383) so --perf --filter compares them
      add({Kern::Decode, 1, 16383, h.n_head, h.n_head_kv, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true, true});
    }
  add({Kern::Decode, 1, 4096, 32, 8, 128, QType::Q8_0, QType::Q5_1, 1000, 0.0f, true, true});
  add({Kern::Decode, 1, 600, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 50.0f, true, true});
  // More splits than 64 (kernels.attn_max_splits; 66 at 8 kv heads on the H200's 132 SMs, 128
  // with 4 / 1 heads, past the combine's 96 preloaded values): depths past 16384 keys.
  for (int len : {16513, 16897, 30001}) {
    add({Kern::Decode, 1, len - 1, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true, true, 96});
    add({Kern::Decode, 1, len - 1, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true, true, 64});
  }
  add({Kern::Decode, 1, 16512, 4, 1, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true, true, 128});
  add({Kern::Decode, 3, 20000, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true, true, 96});
  add({Kern::Decode, 4, 900, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true, true});
  if (g8) add({Kern::Decode, 3, 2000, 64, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true, true});
  for (Heads h : {Heads{32, 8}, Heads{64, 8}}) {
    if (h.n_head != 32 && !g8) continue;
    const AttnCfg c{Kern::Decode, 5, 2000, h.n_head, h.n_head_kv, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true, true};
    r.add("attn", ref::cat("attn_decode_pv16/verify_identity/q8_0-q5_1/", h.n_head, "-", h.n_head_kv, "x128/n5@2000"),
          [=] { return std::make_unique<AttnVerifyIdentityCase>(c); });
  }
  // Scores and P x V on tensor cores over an f16 cache (AttnParams::f16_mma: q and P rounded to
  // f16, f32 sums) with its naive twin's tolerance: groups 1 to 8 (4 in reduced builds), one and
  // several tiles and splits (partial last tiles at 17, 33, 4097, 16383 keys, 16-key tiles), a
  // window, softcap, verify batches, more than 64 splits; and its decode == verify identity.
  // The f16 cases above keep the path off (the old f32 form, still the one past these shapes).
  for (Heads h : {Heads{32, 8}, Heads{64, 8}, Heads{8, 8}, Heads{16, 8}, Heads{9, 3}, Heads{40, 8}, Heads{56, 8}})
    if (h.n_head == 32 || g8) {
      AttnCfg c{Kern::Decode, 1, 0, h.n_head, h.n_head_kv, 128, QType::F16, QType::F16, 0, 0.0f};
      c.f16mma = true;
      for (int len : {1, 17, 33, 129, 4097, 16384}) {
        c.pos0 = len - 1;
        add(c);
      }
    }
  for (auto [n, pos, win, cap, ms] : {std::tuple<int, int, int, float, int>{1, 4096, 1000, 0.0f, 64}, {1, 600, 0, 50.0f, 64},
                                      {4, 900, 0, 0.0f, 64}, {3, 20000, 0, 0.0f, 96}, {1, 16512, 0, 0.0f, 96}}) {
    AttnCfg c{Kern::Decode, n, pos, 32, 8, 128, QType::F16, QType::F16, win, cap};
    c.f16mma = true;
    c.max_splits = ms;
    add(c);
  }
  for (Heads h : {Heads{32, 8}, Heads{64, 8}}) {
    if (h.n_head != 32 && !g8) continue;
    AttnCfg c{Kern::Decode, 5, 2000, h.n_head, h.n_head_kv, 128, QType::F16, QType::F16, 0, 0.0f};
    c.f16mma = true;
    r.add("attn", ref::cat("attn_decode_f16mma/verify_identity/f16-f16/", h.n_head, "-", h.n_head_kv, "x128/n5@2000"),
          [=] { return std::make_unique<AttnVerifyIdentityCase>(c); });
  }
  // Shorter splits in the f16 tile form (AttnParams::min_split_keys 64: kernels.attn_f16_split_keys)
  // and more blocks per SM (kernels.attn_blocks_per_sm 8: 128 splits at 16384 keys, past the
  // combine's 96 preloaded ones): rows of 1 split (<= 128 keys) and of 2 to 128 splits with partial
  // tiles, a window, a verify batch, groups 4 / 8 / 3, the preload; and the decode == verify identity.
  // The 16384-key rows with 8 blocks per SM are the perf cases below (gated the same way).
  for (auto [n, len, nh, kv, win, sk, bps] :
       {std::tuple<int, int, int, int, int, int, int>{1, 129, 32, 8, 0, 64, 4}, {1, 200, 32, 8, 0, 64, 4},
        {1, 1000, 32, 8, 0, 32, 4}, {1, 4096, 32, 8, 0, 64, 4},
        {3, 2001, 32, 8, 0, 64, 4}, {1, 5000, 32, 8, 1000, 64, 4}, {1, 4096, 64, 8, 0, 64, 4}, {1, 3001, 9, 3, 0, 64, 8}}) {
    if (nh / kv != 4 && !g8) continue;
    AttnCfg c{Kern::Decode, n, len - n, nh, kv, 128, QType::F16, QType::F16, win, 0.0f};
    c.f16mma = true;
    c.max_splits = 1024;
    c.preload = true;
    c.split_keys = sk;
    c.bps = bps;
    add(c);
  }
  {
    AttnCfg c{Kern::Decode, 5, 2000, 32, 8, 128, QType::F16, QType::F16, 0, 0.0f};
    c.f16mma = true;
    c.split_keys = 64;
    r.add("attn", "attn_decode_f16mma/verify_identity/f16-f16/32-8x128/n5@2000/sk64",
          [=] { return std::make_unique<AttnVerifyIdentityCase>(c); });
  }
  // The decode forms at 16384 keys as the default config runs them (the combine's preload; the split
  // cap 96, 66 splits at 8 kv heads on the H200), for kernel-check --perf: the cases above run the
  // combine without its preload, which at 64+ splits is a chain of dependent loads (12.3 us of a
  // ~33 us pair in ncu, first27). Gated against the naive twin like the others.
  // The f16 tile form also with shorter splits and more blocks per SM (above), at 16384 and 4096
  // keys.
  for (auto [len, sk, bps, ms] : {std::tuple<int, int, int, int>{16384, 128, 4, 96}, {16384, 64, 4, 96}, {16384, 128, 8, 1024},
                                  {16384, 64, 8, 1024}, {4096, 128, 4, 96}, {4096, 64, 4, 96}}) {
    AttnCfg c{Kern::Decode, 1, len - 1, 32, 8, 128, QType::F16, QType::F16, 0, 0.0f};
    c.f16mma = true;
    c.max_splits = ms;
    c.preload = true;
    c.split_keys = sk;
    c.bps = bps;
    add(c);
  }
  {
    AttnCfg c{Kern::Decode, 1, 16383, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, true, true};
    c.max_splits = 96;
    c.preload = true;
    add(c);
  }
  // The old f16 path at 16384 keys (named as the tensor-core case, so --perf --filter compares them).
  add({Kern::Decode, 1, 16383, 32, 8, 128, QType::F16, QType::F16, 0, 0.0f});
  // V staged through shared memory == direct loads (bytes), f32 and int8 scores, partial tiles
  // (17, 33 keys), several tiles per warp (4097, 16383), a verify batch.
  for (bool q8i : {false, true})
    for (auto [n, len] : {std::pair<int, int>{1, 17}, {3, 33}, {1, 4097}, {5, 2001}, {1, 16383}}) {
      AttnCfg c{Kern::Decode, n, len - 1, 32, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, q8i};
      r.add("attn", ref::cat("attn_decode", q8i ? "_q8i" : "", "/v_stage_vs_direct/q8_0-q5_1/32-8x128/n", n, "@", len - 1),
            [=] { return std::make_unique<AttnPathPairCase>(c, AttnPathPairCase::kVStage); });
    }
  {
    AttnCfg c{Kern::Decode, 1, 4096, 64, 8, 128, QType::Q8_0, QType::Q5_1, 0, 0.0f, false};  // G = 8
    r.add("attn", "attn_decode/v_stage_vs_direct/q8_0-q5_1/64-8x128/n1@4096",
          [=] { return std::make_unique<AttnPathPairCase>(c, AttnPathPairCase::kVStage); });
  }
  // The shared-memory combine == the old combine (bytes): 1, 2, 33 and 64 splits, head dims 32
  // (fewer threads than splits) to 256, a verify batch, the q8s emit.
  // Past 64 splits (kernels.attn_max_splits): 66 at 32 / 8 heads on the H200, and 128 with 4 / 1
  // heads (one block per split), past the 96 values the preload requests.
  for (auto [hd, n, len, nh, kv, ms] :
       {std::tuple<int, int, int, int, int, int>{128, 1, 17, 32, 8, 64}, {128, 1, 300, 32, 8, 64},
        {128, 3, 4097, 32, 8, 64}, {128, 1, 16383, 32, 8, 64}, {64, 5, 2001, 32, 8, 64}, {256, 1, 8191, 32, 8, 64},
        {32, 1, 9000, 32, 8, 64}, {128, 1, 16513, 32, 8, 96}, {128, 2, 30001, 32, 8, 96}, {128, 1, 16513, 4, 1, 128}}) {
    if (!cuda::attn_head_dim_supported(hd)) continue;
    AttnCfg c{Kern::Decode, n, len - 1, nh, kv, hd, QType::Q8_0, QType::Q5_1, 0, 0.0f, false};
    c.max_splits = ms;
    const std::string tail = ref::cat("/q8_0-q5_1/", nh, "-", kv, "x", hd, "/n", n, "@", len - 1,
                                      ms != 64 ? ref::cat("/max_splits", ms) : "");
    r.add("attn", ref::cat("attn_decode/combine_smem_vs_direct", tail),
          [=] { return std::make_unique<AttnPathPairCase>(c, AttnPathPairCase::kCombine); });
    // The combine with the first 96 splits' values requested at once (AttnParams::combine_preload)
    // == the old combine (bytes): the same shapes (1 to 128 splits).
    r.add("attn", ref::cat("attn_decode/combine_preload_vs_direct", tail),
          [=] { return std::make_unique<AttnPathPairCase>(c, AttnPathPairCase::kCombinePreload); });
  }
  // One-split rows written by the split kernel (AttnParams::one_split_direct) == every row through
  // the combine (bytes): one split (1, 17, 128 keys), two (129: the flag on, not used), many
  // (4097), a verify batch whose last row opens a second split (126 .. 128 -> 127 .. 129 keys),
  // groups of 4, 8, 3 and 16 (the per-query-head kernel), head dims 64 to 256, f16 and q8_0 K.
  for (auto [hd, n, len, nh, kv, tk] :
       {std::tuple<int, int, int, int, int, QType>{128, 1, 1, 32, 8, QType::Q8_0}, {128, 1, 17, 32, 8, QType::Q8_0},
        {128, 1, 128, 32, 8, QType::Q8_0}, {128, 1, 129, 32, 8, QType::Q8_0}, {128, 1, 4097, 32, 8, QType::Q8_0},
        {128, 3, 129, 32, 8, QType::Q8_0}, {128, 1, 100, 64, 8, QType::Q8_0}, {64, 1, 77, 9, 3, QType::F16},
        {256, 1, 120, 16, 1, QType::F16}, {128, 2, 50, 16, 1, QType::Q8_0}}) {
    if (!cuda::attn_head_dim_supported(hd) || (nh / kv != 4 && !cuda::attn_head_dim_supported(64))) continue;
    AttnCfg c{Kern::Decode, n, len - n, nh, kv, hd, tk, QType::Q5_1, 0, 0.0f, false};
    r.add("attn", ref::cat("attn_decode/one_split_direct_vs_combine/", tname(tk), "-q5_1/", nh, "-", kv, "x", hd, "/n", n,
                           "@", len - n),
          [=] { return std::make_unique<AttnPathPairCase>(c, AttnPathPairCase::kOneSplitDirect); });
    // The same rows with no combine kernel at all (AttnParams::rows_one_split) where every row of
    // the launch has at most 128 keys.
    AttnCfg cl = c;
    cl.extra_ctx = 1000;  // a cache of several splits (8 at 32 / 8 heads), rows of one split each
    if (len <= cuda::kAttnMinSplitKeys)
      r.add("attn", ref::cat("attn_decode/no_combine_vs_combine/", tname(tk), "-q5_1/", nh, "-", kv, "x", hd, "/n", n,
                             "@", len - n),
            [=] { return std::make_unique<AttnPathPairCase>(cl, AttnPathPairCase::kNoCombine); });
  }
  // The trimmed grid (AttnParams::grid_splits, kernels.attn_grid_round) == the grid of all n_splits
  // (bytes, output poisoned): one split (1, 128 keys), two (129, 200), 33 of 66 (4097: rounds 1 and
  // 8), a verify batch opening a third split (254 .. 256 -> 255 .. 257 keys), groups of 4 (the GQA
  // block; the one-token head-split forms are the fused cases'), 8 and 16 (the per-query-head
  // kernel), f16 K, int8 scores with V staged and P x V on tensor cores; caches of 66 splits (the
  // H200's count at 32 / 8 heads) so that every row leaves blocks out.
  for (auto [hd, n, len, nh, kv, tk, q8, round] :
       {std::tuple<int, int, int, int, int, QType, bool, int>{128, 1, 1, 32, 8, QType::Q8_0, false, 1},
        {128, 1, 128, 32, 8, QType::Q8_0, true, 1}, {128, 1, 129, 32, 8, QType::Q8_0, true, 1},
        {128, 1, 200, 32, 8, QType::Q8_0, false, 3}, {128, 1, 4097, 32, 8, QType::Q8_0, true, 1},
        {128, 1, 4097, 32, 8, QType::Q8_0, true, 8}, {128, 3, 257, 32, 8, QType::Q8_0, true, 1},
        {128, 1, 1000, 64, 8, QType::Q8_0, true, 2}, {128, 2, 700, 16, 1, QType::Q8_0, false, 1},
        {64, 1, 300, 32, 8, QType::F16, false, 1}}) {
    if (!cuda::attn_head_dim_supported(hd)) continue;
    AttnCfg c{Kern::Decode, n, len - n, nh, kv, hd, tk, tk == QType::F16 ? QType::F16 : QType::Q5_1, 0, 0.0f, q8};
    c.pv = q8;
    c.max_splits = 96;
    c.extra_ctx = 66 * 128 + 200 - len;  // n_ctx >= 66 x 128: 66 splits at 32 / 8 heads on 132 SMs
    r.add("attn", ref::cat("attn_decode/grid_trim_vs_full/", tname(tk), q8 ? "-q5_1-q8i-pv16/" : "/", nh, "-", kv, "x",
                           hd, "/n", n, "@", len - n, "/round", round),
          [=] { return std::make_unique<AttnPathPairCase>(c, AttnPathPairCase::kGridTrim, round); });
  }
  // Decode == verify identity.
  for (int hd : {64, 128})
    if (cuda::attn_head_dim_supported(hd)) {
      const AttnCfg c{Kern::Decode, 5, 2000, 32, 8, hd, QType::Q8_0, QType::Q5_1, 0, 0.0f};
      r.add("attn", ref::cat("attn_decode/verify_identity/q8_0-q5_1/32-8x", hd, "/n5@2000"),
            [=] { return std::make_unique<AttnVerifyIdentityCase>(c); });
    }
}
MEMRA_KC_REGISTER(add_attn_cases);

}  // namespace
}  // namespace memra::kc
