// Section "quant": activation quantization to q8_1 and weight dequantization, both claimed
// byte-identical to the CPU reference (lib/quant quantize_row / dequantize_row).
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "case_util.h"
#include "misc/misc_kernels.h"
#include "core/half.h"
#include "quant/quant.h"
#include "quant/quant_kernels.h"
#include "quant/weight_decode.cuh"

namespace memra::kc {
namespace {

class QuantizeQ8_1Case : public Case {
 public:
  QuantizeQ8_1Case(int64_t rows, int64_t n, int64_t ld) : rows_(rows), n_(n), ld_(ld) {}
  void generate(Env& env) override {
    // Per-block magnitudes spread over 1e-4..1e3, one all-zero block per row (the d = 0 path) and
    // exact ties of x/d at .5 are left to chance: the point is the same rounding on any input.
    x_ = env.normal((size_t)(rows_ * ld_));
    std::uniform_real_distribution<float> ex(-4.f, 3.f);
    for (int64_t r = 0; r < rows_; ++r) {
      for (int64_t b = 0; b < n_ / 32; ++b) {
        const float s = std::pow(10.f, ex(env.rng()));
        for (int e = 0; e < 32; ++e) x_[r * ld_ + b * 32 + e] *= s;
      }
      const int64_t zb = (r * 7) % (n_ / 32);
      for (int e = 0; e < 32; ++e) x_[r * ld_ + zb * 32 + e] = 0.f;
    }
    dx_ = env.upload(x_);
    bytes_ = (size_t)(rows_ * (n_ / 32) * 36);
    dy_ = env.alloc_output<uint8_t>(bytes_);
  }
  cudaError_t launch(Env& env) override {
    cuda::QuantizeQ8_1Params p;
    p.x = dx_;
    p.y = dy_;
    p.n = n_;
    p.rows = rows_;
    p.ld_x = ld_;
    return cuda::launch_quantize_q8_1(p, env.stream());
  }
  void reference(Env&) override {
    ref_.resize(bytes_);
    for (int64_t r = 0; r < rows_; ++r) quantize_row(QType::Q8_1, x_.data() + r * ld_, ref_.data() + r * (n_ / 32) * 36, n_);
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dy_, bytes_);
    return compare_bytes(got.data(), ref_.data(), bytes_);
  }
  PerfCount perf_count() const override { return {(double)(rows_ * n_ * 4) + (double)bytes_, 0}; }

 private:
  int64_t rows_, n_, ld_;
  std::vector<float> x_;
  std::vector<uint8_t> ref_;
  float* dx_ = nullptr;
  uint8_t* dy_ = nullptr;
  size_t bytes_ = 0;
};

class DequantizeCase : public Case {
 public:
  // ld_pad > 0: output rows ld = cols + ld_pad apart (the unaligned scalar path); the padding
  // must keep its poison, which proves nothing is written out of bounds.
  DequantizeCase(QType t, int64_t rows, int64_t cols, bool f16, bool realistic, int64_t ld_pad = 0)
      : t_(t), rows_(rows), cols_(cols), ld_(cols + ld_pad), f16_(f16), realistic_(realistic) {}
  void generate(Env& env) override {
    w_ = realistic_ ? quantized_weight_bytes(env, t_, rows_, cols_) : random_weight_bytes(env, t_, rows_, cols_);
    dw_ = env.upload(w_);
    const size_t n = (size_t)(rows_ * ld_);
    out_bytes_ = n * (f16_ ? 2 : 4);
    dout_ = env.alloc_output<uint8_t>(out_bytes_);
  }
  cudaError_t launch(Env& env) override {
    cuda::DequantizeParams p;
    p.type = t_;
    p.w = dw_;
    p.rows = rows_;
    p.cols = cols_;
    p.out = dout_;
    p.out_f16 = f16_;
    p.ld_out = ld_;
    return cuda::launch_dequantize(p, env.stream());
  }
  void reference(Env&) override {
    const auto f = dequantize_rows(t_, w_, rows_, cols_);
    ref_.assign(out_bytes_, 0xFF);
    const size_t es = f16_ ? 2 : 4;
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t c = 0; c < cols_; ++c) {
        const float v = f[r * cols_ + c];
        uint8_t* dst = &ref_[(size_t)(r * ld_ + c) * es];
        if (f16_) {
          const uint16_t h = f32_to_fp16(v);
          std::memcpy(dst, &h, 2);
        } else {
          std::memcpy(dst, &v, 4);
        }
      }
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dout_, out_bytes_);
    return compare_bytes(got.data(), ref_.data(), out_bytes_);
  }
  PerfCount perf_count() const override { return {(double)w_.size() + (double)out_bytes_, 0}; }

 private:
  QType t_;
  int64_t rows_, cols_, ld_;
  bool f16_, realistic_;
  std::vector<uint8_t> w_, ref_;
  uint8_t* dw_ = nullptr;
  uint8_t* dout_ = nullptr;
  size_t out_bytes_ = 0;
};

// wq::iq4_dot8 (the IQ4_XS matvec's sign-mode permute lookup, inline prmt.b32) on the device: every
// 16-bit pattern of the first four indices (thread i: w = i | random << 16, the last four random),
// random activation bytes and accumulator; reference: the sum of kIq4Codebook[index] x byte in
// 64-bit integers on the host (the format's table, not the kernel's). Byte identity of the ints.
__global__ void iq4_dot8_kernel(const uint32_t* w, const int2* x, const int* acc, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = cuda::wq::iq4_dot8(w[i], x[i].x, x[i].y, acc[i]);
}

class Iq4Dot8Case : public Case {
 public:
  void generate(Env& env) override {
    std::uniform_int_distribution<uint32_t> u;
    w_.resize(kN);
    x_.resize(kN);
    acc_.resize(kN);
    for (int i = 0; i < kN; ++i) {
      w_[i] = (uint32_t)i | (u(env.rng()) << 16);
      x_[i] = int2{(int)u(env.rng()), (int)u(env.rng())};
      acc_[i] = (int)(u(env.rng()) % 2000001u) - 1000000;
    }
    dw_ = env.upload(w_);
    dx_ = env.upload(x_);
    dacc_ = env.upload(acc_);
    dout_ = env.alloc_output<int>(kN);
  }
  cudaError_t launch(Env& env) override {
    iq4_dot8_kernel<<<kN / 256, 256, 0, env.stream()>>>(dw_, dx_, dacc_, dout_, kN);
    return cudaGetLastError();
  }
  void reference(Env&) override {
    ref_.resize(kN);
    for (int i = 0; i < kN; ++i) {
      int64_t s = acc_[i];
      for (int e = 0; e < 8; ++e) {
        const uint32_t xw = (uint32_t)(e < 4 ? x_[i].x : x_[i].y);
        s += (int64_t)cuda::wq::kIq4Codebook[(w_[i] >> (4 * e)) & 0xFu] * (int64_t)(int8_t)(xw >> (8 * (e & 3)));
      }
      ref_[i] = (int)s;
    }
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dout_, (size_t)kN);
    return compare_bytes(reinterpret_cast<const uint8_t*>(got.data()), reinterpret_cast<const uint8_t*>(ref_.data()),
                         sizeof(int) * (size_t)kN);
  }
  PerfCount perf_count() const override { return {(double)kN * 16, 0}; }

 private:
  static constexpr int kN = 65536;
  std::vector<uint32_t> w_;
  std::vector<int2> x_;
  std::vector<int> acc_, ref_;
  uint32_t* dw_ = nullptr;
  int2* dx_ = nullptr;
  int* dacc_ = nullptr;
  int* dout_ = nullptr;
};

// The embedding gather (launch_embed): rows ids[i] of a table of type t dequantized, byte-identical
// to lib/quant's dequantize_row; ids outside [0, table_rows) give a row of NaN (0x7fc00000). Tokens of
// one decode row (4096 / 5120 columns) and a prefill batch with a leading dimension past the row.
class EmbedCase : public Case {
 public:
  EmbedCase(QType t, int n_tokens, int64_t cols, int64_t ld_pad) : t_(t), n_(n_tokens), cols_(cols), ld_(cols + ld_pad) {}
  void generate(Env& env) override {
    const bool q = qtype_traits(t_).quantized;
    table_ = q ? quantized_weight_bytes(env, t_, kRows, cols_) : random_weight_bytes(env, t_, kRows, cols_);
    std::uniform_int_distribution<int32_t> pick(0, (int32_t)kRows - 1);
    ids_.resize((size_t)n_);
    for (auto& i : ids_) i = pick(env.rng());
    if (n_ > 2) {  // out of range on both sides
      ids_[1] = -1;
      ids_[(size_t)n_ - 1] = (int32_t)kRows;
    }
    dtable_ = env.upload(table_);
    dids_ = env.upload(ids_);
    dout_ = env.alloc_output<float>((size_t)n_ * (size_t)ld_);
  }
  cudaError_t launch(Env& env) override {
    cuda::EmbedParams p;
    p.type = t_;
    p.table = dtable_;
    p.row_bytes = table_.size() / kRows;
    p.table_rows = kRows;
    p.cols = cols_;
    p.ids = dids_;
    p.n_tokens = n_;
    p.out = dout_;
    p.ld_out = ld_;
    return cuda::launch_embed(p, env.stream());
  }
  void reference(Env&) override {
    const auto f = dequantize_rows(t_, table_, kRows, cols_);
    ref_.assign((size_t)n_ * (size_t)ld_, 0u);
    std::memset(ref_.data(), 0xFF, ref_.size() * 4);  // the padding keeps its poison
    for (int i = 0; i < n_; ++i) {
      const int32_t id = ids_[(size_t)i];
      for (int64_t c = 0; c < cols_; ++c) {
        const float v = id >= 0 && id < kRows ? f[(size_t)(id * cols_ + c)] : std::bit_cast<float>(0x7fc00000u);
        std::memcpy(&ref_[(size_t)(i * ld_ + c)], &v, 4);
      }
    }
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(reinterpret_cast<uint32_t*>(dout_), ref_.size());
    return compare_bytes(reinterpret_cast<const uint8_t*>(got.data()), reinterpret_cast<const uint8_t*>(ref_.data()),
                         ref_.size() * 4);
  }
  PerfCount perf_count() const override {
    return {(double)n_ * ((double)table_.size() / kRows + (double)cols_ * 4), 0};
  }

 private:
  static constexpr int64_t kRows = 50;
  QType t_;
  int n_;
  int64_t cols_, ld_;
  std::vector<uint8_t> table_;
  std::vector<int32_t> ids_;
  std::vector<uint32_t> ref_;
  uint8_t* dtable_ = nullptr;
  int32_t* dids_ = nullptr;
  float* dout_ = nullptr;
};

// The GEMM input rounding (launch_convert_f32): f32 -> f16 / bf16, round to nearest even, against
// core/half.h byte for byte; the 8-wide path (cols % 8 == 0, ld % 4 == 0) and the scalar one.
class ConvertCase : public Case {
 public:
  ConvertCase(int64_t rows, int64_t cols, int64_t ld, bool bf16) : rows_(rows), cols_(cols), ld_(ld), bf16_(bf16) {}
  void generate(Env& env) override {
    x_ = env.normal((size_t)(rows_ * ld_));
    // Magnitudes from f16 subnormals to past the f16 range (inf), and exact f16 ties.
    std::uniform_real_distribution<float> ex(-9.f, 5.5f);
    for (auto& v : x_) v *= std::pow(10.f, ex(env.rng()));
    for (int64_t i = 0; i < rows_ * ld_; i += 97) x_[(size_t)i] = 1.0f + 1.0f / 2048.0f;  // halfway in f16
    dx_ = env.upload(x_);
    dy_ = env.alloc_output<uint16_t>((size_t)(rows_ * cols_));
  }
  cudaError_t launch(Env& env) override {
    cuda::ConvertParams p;
    p.x = dx_;
    p.rows = rows_;
    p.cols = cols_;
    p.ld_x = ld_;
    p.out = dy_;
    p.to_bf16 = bf16_;
    return cuda::launch_convert_f32(p, env.stream());
  }
  void reference(Env&) override {
    ref_.resize((size_t)(rows_ * cols_));
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t c = 0; c < cols_; ++c) {
        const float v = x_[(size_t)(r * ld_ + c)];
        ref_[(size_t)(r * cols_ + c)] = bf16_ ? f32_to_bf16(v) : f32_to_fp16(v);
      }
  }
  Verdict compare(Env& env) override {
    const auto got = env.download(dy_, ref_.size());
    return compare_bytes(reinterpret_cast<const uint8_t*>(got.data()), reinterpret_cast<const uint8_t*>(ref_.data()),
                         ref_.size() * 2);
  }
  PerfCount perf_count() const override { return {(double)(rows_ * cols_) * 6, 0}; }

 private:
  int64_t rows_, cols_, ld_;
  bool bf16_;
  std::vector<float> x_;
  std::vector<uint16_t> ref_;
  float* dx_ = nullptr;
  uint16_t* dy_ = nullptr;
};

void add_quant_cases(Registry& r) {
  struct CShape { int64_t rows, cols, ld; };
  for (const CShape s : {CShape{512, 4096, 4096}, CShape{37, 12288, 12288}, CShape{9, 1536, 1540}, CShape{5, 1001, 1001},
                         CShape{3, 64, 66}})
    for (bool bf16 : {false, true})
      r.add("quant", fmt::format("convert_f32/{}/{}x{}/ld{}", bf16 ? "bf16" : "f16", s.rows, s.cols, s.ld),
            [s, bf16] { return std::make_unique<ConvertCase>(s.rows, s.cols, s.ld, bf16); });
  struct Shape { int64_t rows, n, ld; };
  for (const Shape s : {Shape{1, 4096, 4096}, Shape{7, 1536, 1536}, Shape{3, 14336, 14336}, Shape{519, 4096, 4096},
                        Shape{5, 1536, 1600}}) {
    r.add("quant", fmt::format("quantize_q8_1/f32/{}x{}{}", s.rows, s.n, s.ld != s.n ? fmt::format("/ld{}", s.ld) : ""),
          [s] { return std::make_unique<QuantizeQ8_1Case>(s.rows, s.n, s.ld); });
  }
  {
    const QType et[] = {
#define MEMRA_T(N) QType::N,
        MEMRA_CUDA_WTYPES(MEMRA_T)
#undef MEMRA_T
            QType::F16, QType::BF16, QType::F32};
    struct EShape { int n; int64_t cols, ld_pad; };
    for (QType t : et)
      for (const EShape e : {EShape{1, 4096, 0}, EShape{1, 5120, 0}, EShape{7, 2048, 32}})
        r.add("quant", fmt::format("embed/{}/{}x{}{}", qtype_name(t), e.n, e.cols, e.ld_pad ? fmt::format("/ld{}", e.cols + e.ld_pad) : ""),
              [t, e] { return std::make_unique<EmbedCase>(t, e.n, e.cols, e.ld_pad); });
  }
  const QType types[] = {
#define MEMRA_T(N) QType::N,
      MEMRA_CUDA_WTYPES(MEMRA_T)
#undef MEMRA_T
          QType::F16, QType::BF16, QType::F32};
  for (QType t : types) {
    const bool q = qtype_traits(t).quantized;
    const std::string tn(qtype_name(t));
    for (bool f16 : {false, true}) {
      const char* o = f16 ? "f16" : "f32";
      r.add("quant", fmt::format("dequant/{}/{}/33x1536/random_bits", tn, o),
            [t, f16] { return std::make_unique<DequantizeCase>(t, 33, 1536, f16, false); });
      if (q)
        r.add("quant", fmt::format("dequant/{}/{}/17x4096/quantized", tn, o),
              [t, f16] { return std::make_unique<DequantizeCase>(t, 17, 4096, f16, true); });
    }
  }
  for (QType t : {QType::Q4_0, QType::Q5_1, QType::Q3_K, QType::IQ4_XS})
    for (bool f16 : {false, true})
      r.add("quant", fmt::format("dequant/{}/{}/9x512/ld515", qtype_name(t), f16 ? "f16" : "f32"),
            [t, f16] { return std::make_unique<DequantizeCase>(t, 9, 512, f16, false, 3); });
  r.add("quant", "iq4_dot8/exhaustive16", [] { return std::make_unique<Iq4Dot8Case>(); });
  r.add("quant", "dequant/Q4_K/f16/14336x4096/random_bits",
        [] { return std::make_unique<DequantizeCase>(QType::Q4_K, 14336, 4096, true, false); });
}

}  // namespace
MEMRA_KC_REGISTER(add_quant_cases);
}  // namespace memra::kc
