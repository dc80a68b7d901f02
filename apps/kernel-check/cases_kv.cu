// kernel-check section "kv": device KV-cache append (quantize on write) byte-for-byte against
// lib/quant's CPU quantize_row (the host cache's quantizer) for every cache type, rows outside
// the written range left untouched, rows past n_ctx skipped; and dequantize-on-read byte-for-byte
// against the CPU dequantize_row. The q8_0 split-plane rows (kv.planes, ".../planes/..."): the same
// blocks' quants first and their f16 scales after them, byte for byte the CPU's quantize_row output
// reordered; their reads (f32, and f16 for the staged prefill) byte for byte dequantize_row.
#include <cstring>
#include <memory>

#include "case_util.h"
#include "cases_ref.h"
#include "core/half.h"
#include "kv/kv_kernels.h"
#include "quant/quant.h"

namespace memra::kc {
namespace {

const char* kv_name(QType t) {
  switch (t) {
    case QType::F32: return "f32";
    case QType::F16: return "f16";
    case QType::Q8_0: return "q8_0";
    case QType::Q5_1: return "q5_1";
    case QType::Q5_0: return "q5_0";
    case QType::Q4_0: return "q4_0";
    case QType::Q4_1: return "q4_1";
    default: return "?";
  }
}

// Inputs that hit the quantizers' tie and zero rules: per 32-block, pattern b % 6 picks
// random / all zero / +-max tie (first occurrence decides the q4_0/q5_0 sign) / constant (d = 0
// for q4_1/q5_1) / negative zeros with one small value / random with large range.
void plant_edges(std::vector<float>& x, int row_elems, int n_rows) {
  for (int r = 0; r < n_rows; ++r)
    for (int b = 0; b < row_elems / 32; ++b) {
      float* p = x.data() + (size_t)r * row_elems + b * 32;
      switch ((r + b) % 6) {
        case 1: std::fill(p, p + 32, 0.0f); break;
        case 2: p[3] = -2.5f; p[20] = 2.5f; for (int j = 0; j < 32; ++j) if (j != 3 && j != 20) p[j] = std::fmod(p[j], 2.4f); break;
        case 3: std::fill(p, p + 32, 0.75f); break;
        case 4: std::fill(p, p + 32, -0.0f); p[7] = 1e-3f; break;
        case 5: for (int j = 0; j < 32; ++j) p[j] *= 100.0f; break;
        default: break;
      }
    }
}

class KvAppendCase : public Case {
 public:
  // Cache of n_ctx rows; rows [pos0, pos0 + n_tokens) are written (those < n_ctx).
  KvAppendCase(QType t, int n_tokens, int row_elems, int pos0, int n_ctx, bool edges, bool planes = false)
      : t_(t), n_(n_tokens), re_(row_elems), pos0_(pos0), n_ctx_(n_ctx), edges_(edges), planes_(planes) {}
  void generate(Env& env) override {
    rb_ = (int64_t)*qtype_row_bytes(t_, re_);
    ld_ = re_ + 32;
    src_ = env.normal((size_t)n_ * ld_, 1.3f);
    if (edges_) {
      std::vector<float> packed((size_t)n_ * re_);
      for (int i = 0; i < n_; ++i) std::memcpy(&packed[(size_t)i * re_], &src_[(size_t)i * ld_], re_ * 4);
      plant_edges(packed, re_, n_);
      for (int i = 0; i < n_; ++i) std::memcpy(&src_[(size_t)i * ld_], &packed[(size_t)i * re_], re_ * 4);
    }
    dsrc_ = env.upload(src_);
    dpos_ = env.upload(std::vector<int32_t>{pos0_});
    dcache_ = env.alloc_output<uint8_t>((size_t)n_ctx_ * rb_);
  }
  cudaError_t launch(Env& env) override {
    cuda::KvAppendParams p;
    p.src = dsrc_;
    p.ld_src = ld_;
    p.n_tokens = n_;
    p.row_elems = re_;
    p.cache = dcache_;
    p.type = t_;
    p.row_bytes = rb_;
    p.pos0 = dpos_;
    p.n_ctx = n_ctx_;
    p.scale_plane = planes_ ? re_ : 0;
    return cuda::launch_kv_append(p, env.stream());
  }
  void reference(Env&) override {
    want_.assign((size_t)n_ctx_ * rb_, 0xFF);  // the poison stays where nothing is written
    for (int i = 0; i < n_; ++i) {
      const int pos = pos0_ + i;
      if (pos >= n_ctx_) continue;
      quantize_row(t_, src_.data() + (size_t)i * ld_, want_.data() + (size_t)pos * rb_, re_);
      if (planes_) {
        const std::vector<uint8_t> blocks(want_.begin() + (size_t)pos * rb_, want_.begin() + (size_t)(pos + 1) * rb_);
        q8_0_blocks_to_planes(blocks.data(), re_, want_.data() + (size_t)pos * rb_);
      }
    }
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dcache_, want_.size());
    return compare_bytes(got.data(), want_.data(), got.size());
  }
  PerfCount perf_count() const override { return {(double)n_ * re_ * 4 + (double)n_ * rb_, 0}; }

 private:
  QType t_;
  int n_, re_, pos0_, n_ctx_;
  bool edges_, planes_;
  int64_t rb_ = 0, ld_ = 0;
  std::vector<float> src_;
  std::vector<uint8_t> want_;
  float* dsrc_ = nullptr;
  int32_t* dpos_ = nullptr;
  uint8_t* dcache_ = nullptr;
};

class KvReadCase : public Case {
 public:
  // planes: the q8_0 split-plane rows; f16: the values rounded to f16 (KvReadParams::dst_f16).
  KvReadCase(QType t, int n_rows, int row_elems, bool planes = false, bool f16 = false)
      : t_(t), n_(n_rows), re_(row_elems), planes_(planes), f16_(f16) {}
  void generate(Env& env) override {
    rb_ = (int64_t)*qtype_row_bytes(t_, re_);
    const int total = n_ + 5;  // read rows [5, 5 + n)
    std::vector<float> x = env.normal((size_t)total * re_, 2.0f);
    plant_edges(x, re_, total);
    cache_.assign((size_t)total * rb_, 0);
    for (int i = 0; i < total; ++i) quantize_row(t_, x.data() + (size_t)i * re_, cache_.data() + (size_t)i * rb_, re_);
    dcache_ = env.upload(cache_);
    if (planes_) {  // the device copy in the split-plane order; cache_ keeps the blocks for the reference
      std::vector<uint8_t> pl(cache_.size());
      for (int i = 0; i < total; ++i) q8_0_blocks_to_planes(cache_.data() + (size_t)i * rb_, re_, pl.data() + (size_t)i * rb_);
      dcache_ = env.upload(pl);
    }
    if (f16_)
      dout16_ = env.alloc_output<uint16_t>((size_t)n_ * re_);
    else
      dout_ = env.alloc_output<float>((size_t)n_ * re_);
  }
  cudaError_t launch(Env& env) override {
    cuda::KvReadParams p;
    p.cache = dcache_;
    p.type = t_;
    p.row_bytes = rb_;
    p.row_elems = re_;
    p.pos_begin = 5;
    p.n_rows = n_;
    p.dst = dout_;
    p.dst_f16 = dout16_;
    p.ld_dst = re_;
    p.scale_plane = planes_ ? re_ : 0;
    return cuda::launch_kv_read(p, env.stream());
  }
  void reference(Env&) override {
    want_.assign((size_t)n_ * re_, 0.0f);
    for (int i = 0; i < n_; ++i)
      dequantize_row(t_, cache_.data() + (size_t)(5 + i) * rb_, want_.data() + (size_t)i * re_, re_);
  }
  Verdict compare(Env& env) override {
    if (f16_) {
      std::vector<uint16_t> want(want_.size());
      for (size_t i = 0; i < want.size(); ++i) want[i] = f32_to_fp16(want_[i]);
      const auto got = env.download(dout16_, want.size());
      return compare_bytes(got.data(), want.data(), got.size() * 2);
    }
    const auto got = env.download(dout_, want_.size());
    return compare_bytes(got.data(), want_.data(), got.size() * 4);
  }
  PerfCount perf_count() const override { return {(double)n_ * rb_ + (double)n_ * re_ * (f16_ ? 2 : 4), 0}; }

 private:
  QType t_;
  int n_, re_;
  bool planes_, f16_;
  int64_t rb_ = 0;
  std::vector<uint8_t> cache_;
  std::vector<float> want_;
  uint8_t* dcache_ = nullptr;
  float* dout_ = nullptr;
  uint16_t* dout16_ = nullptr;
};

void add_kv_cases(Registry& r) {
  const QType kTypes[] = {QType::F16, QType::F32, QType::Q8_0, QType::Q5_1, QType::Q5_0, QType::Q4_0, QType::Q4_1};
  struct Shape {
    int n_head_kv, head_dim;
  };
  const Shape kShapes[] = {{8, 128}, {3, 64}, {1, 256}};
  for (QType t : kTypes) {
    for (Shape s : kShapes)
      for (int n : {1, 17, 33}) {
        const int re = s.n_head_kv * s.head_dim;
        r.add("kv", ref::cat("kv_append/", kv_name(t), "/", n, "x", re, "@7"),
              [=] { return std::make_unique<KvAppendCase>(t, n, re, 7, 7 + n + 9, false); });
      }
    r.add("kv", ref::cat("kv_append/", kv_name(t), "/edges/33x1024@0"),
          [=] { return std::make_unique<KvAppendCase>(t, 33, 1024, 0, 40, true); });
    // The last 3 rows fall past n_ctx and must be skipped.
    r.add("kv", ref::cat("kv_append/", kv_name(t), "/overflow/17x192@4000"),
          [=] { return std::make_unique<KvAppendCase>(t, 17, 192, 4000, 4014, false); });
    r.add("kv", ref::cat("kv_read/", kv_name(t), "/4097x1024"),
          [=] { return std::make_unique<KvReadCase>(t, 4097, 1024); });
    r.add("kv", ref::cat("kv_read/", kv_name(t), "/17x192"), [=] { return std::make_unique<KvReadCase>(t, 17, 192); });
  }
  // The q8_0 split-plane rows (kv.planes).
  for (int n : {1, 17, 33})
    r.add("kv", ref::cat("kv_append/q8_0/planes/", n, "x1024@7"),
          [=] { return std::make_unique<KvAppendCase>(QType::Q8_0, n, 1024, 7, 7 + n + 9, false, true); });
  r.add("kv", "kv_append/q8_0/planes/edges/33x1024@0",
        [] { return std::make_unique<KvAppendCase>(QType::Q8_0, 33, 1024, 0, 40, true, true); });
  r.add("kv", "kv_append/q8_0/planes/overflow/17x192@4000",
        [] { return std::make_unique<KvAppendCase>(QType::Q8_0, 17, 192, 4000, 4014, false, true); });
  for (bool f16 : {false, true}) {
    r.add("kv", ref::cat("kv_read/q8_0/planes/4097x1024", f16 ? "/f16" : ""),
          [=] { return std::make_unique<KvReadCase>(QType::Q8_0, 4097, 1024, true, f16); });
    r.add("kv", ref::cat("kv_read/q8_0/planes/17x192", f16 ? "/f16" : ""),
          [=] { return std::make_unique<KvReadCase>(QType::Q8_0, 17, 192, true, f16); });
  }
  r.add("kv", "kv_read/q8_0/4097x1024/f16", [] { return std::make_unique<KvReadCase>(QType::Q8_0, 4097, 1024, false, true); });
}
MEMRA_KC_REGISTER(add_kv_cases);

}  // namespace
}  // namespace memra::kc
