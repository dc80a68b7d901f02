// Every op of the CUDA backend against the CPU backend (the oracle) on seeded random inputs with
// odd shapes. Tolerances are normalized errors (max |cuda - cpu| / max |cpu|), by numeric class:
//   exact f32 paths (f32/f16 weights in the f32 matvec, f32 GEMM, norms, element-wise): 1e-5
//   x rounded to f16 for the GEMM (f16 / dequantized weights through cuBLASLt): 5e-3
//   x quantized to q8_1 for the int8 matvec: 1.5e-2 (8-bit activations, ~0.4% per element)
//   attention: split-K decode / tiled / naive in f32: 2e-3; tensor-core prefill (Q,K,V,P in f16): 1e-2
// embed is bit-identical (both sides run lib/quant's dequantizer arithmetic).
#include <gtest/gtest.h>

#include <cstring>

#include "backend_cuda/gpu_util.h"
#include "core/error.h"
#include "quant/quant.h"

using namespace memra;
using namespace memra::gputest;
using backend::View;

namespace {

struct Pair {
  std::unique_ptr<backend::Backend> cpu = cpu_backend();
  std::unique_ptr<backend::Backend> gpu = backend::make_cuda_backend(gpu_config());
};

std::vector<uint8_t> quantized_rows(QType t, int64_t rows, int64_t cols, uint64_t seed) {
  const auto f = randn((size_t)(rows * cols), seed, 0.5f);
  const size_t rb = *qtype_row_bytes(t, (uint64_t)cols);
  std::vector<uint8_t> out(rb * (size_t)rows);
  for (int64_t r = 0; r < rows; ++r) quantize_row(t, f.data() + r * cols, out.data() + r * rb, cols);
  return out;
}

backend::Weight upload(backend::Backend& be, const std::string& name, QType t, std::vector<int64_t> ne,
                       const std::vector<uint8_t>& host) {
  return be.upload_weight(name, t, ne, host.data(), nullptr);
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

double matmul_err(QType t, int64_t m, int64_t n, int64_t k, bool bias, std::string* variant) {
  Pair p;
  const auto wb = quantized_rows(t, n, k, 11 + (uint64_t)t);
  const auto x = randn((size_t)(m * k), 7);
  const auto bb = f32_bytes(randn((size_t)n, 5));
  std::vector<float> out[2];
  int i = 0;
  for (auto* be : {p.cpu.get(), p.gpu.get()}) {
    auto w = upload(*be, "w", t, {k, n}, wb);
    auto b = upload(*be, "b", QType::F32, {n}, bb);
    auto xa = make_act(*be, m, k, x);
    auto ya = make_act(*be, m, n, std::vector<float>((size_t)(m * n), -777.0f));  // poisoned
    be->matmul(w, xa.v, ya.v, bias ? &b : nullptr);
    out[i++] = read(*be, ya.v);
  }
  const auto vars = p.gpu->variants();
  *variant = vars.count("matvec") ? vars.at("matvec") : vars.count("gemm") ? vars.at("gemm") : "?";
  return norm_err(out[1], out[0]);
}

}  // namespace

TEST(CudaOps, MatmulEveryTypeAndPath) {
  MEMRA_REQUIRE_GPU();
  const QType types[] = {QType::F32, QType::F16, QType::BF16, QType::Q4_0, QType::Q4_1, QType::Q5_0,
                         QType::Q5_1, QType::Q8_0, QType::Q2_K, QType::Q3_K, QType::Q4_K, QType::Q5_K,
                         QType::Q6_K, QType::IQ4_NL, QType::IQ4_XS};
  int tested = 0;
  for (QType t : types) {
    if (!has_quantizer(t)) continue;
    const bool fl = t == QType::F32 || t == QType::F16 || t == QType::BF16;
    for (int64_t m : {1, 3, 8, 17, 33}) {
      const bool gemm = m >= 9;
      double tol = 1.5e-2;
      if (fl && !gemm) tol = 1e-5;
      if (gemm) tol = t == QType::F32 ? 1e-5 : 5e-3;
      std::string var;
      const double e = matmul_err(t, m, 301, 512, m == 3, &var);
      EXPECT_LE(e, tol) << qtype_name(t) << " m=" << m << " variant " << var;
      printf("matmul %-7s m=%2ld %-28s err %.3g (tol %.1g)\n", std::string(qtype_name(t)).c_str(), (long)m, var.c_str(), e, tol);
      ++tested;
    }
  }
  EXPECT_GE(tested, 5 * 10);
}

TEST(CudaOps, Norms) {
  MEMRA_REQUIRE_GPU();
  Pair p;
  const int64_t rows = 5, cols = 1000;
  const auto x = randn((size_t)(rows * cols), 1), d = randn((size_t)(rows * cols), 2);
  const auto wv = f32_bytes(randn((size_t)cols, 3));
  const auto hw = f32_bytes(randn(40, 4));
  std::vector<float> r[2][4];
  int i = 0;
  for (auto* be : {p.cpu.get(), p.gpu.get()}) {
    auto w = upload(*be, "w", QType::F32, {cols}, wv);
    auto h = upload(*be, "hw", QType::F32, {40}, hw);
    auto xa = make_act(*be, rows, cols, x), da = make_act(*be, rows, cols, d), oa = make_act(*be, rows, cols, d);
    be->rms_norm(xa.v, &w, 1e-6f, oa.v);
    r[i][0] = read(*be, oa.v);
    be->add_rms_norm(xa.v, da.v, &w, 1e-5f, oa.v);
    r[i][1] = read(*be, oa.v);
    r[i][2] = read(*be, xa.v);  // the residual after the add
    be->head_rms_norm(xa.v, 25, 40, &h, 1e-6f);
    r[i][3] = read(*be, xa.v);
    ++i;
  }
  for (int k = 0; k < 4; ++k) EXPECT_LE(norm_err(r[1][k], r[0][k]), 1e-5) << "case " << k;
}

TEST(CudaOps, RopeModesPartialRotationFreqFactorsYarn) {
  MEMRA_REQUIRE_GPU();
  for (auto mode : {backend::RopeMode::Normal, backend::RopeMode::Neox})
    for (int n_rot : {64, 32})
      for (bool yarn : {false, true}) {
        Pair p;
        const int64_t rows = 3, n_head = 6, hd = 64;
        const auto x = randn((size_t)(rows * n_head * hd), 9);
        std::vector<float> ff((size_t)n_rot / 2);
        for (size_t j = 0; j < ff.size(); ++j) ff[j] = 1.0f + 0.25f * (float)j;
        std::vector<float> r[2];
        int i = 0;
        for (auto* be : {p.cpu.get(), p.gpu.get()}) {
          auto f = upload(*be, "ff", QType::F32, {n_rot / 2}, f32_bytes(ff));
          backend::RopeParams rp;
          rp.mode = mode;
          rp.head_dim = (int)hd;
          rp.n_rot = n_rot;
          rp.freq_base = 500000.0f;
          rp.freq_factors = &f;
          if (yarn) rp.freq_scale = 0.25f, rp.ext_factor = 1.0f, rp.n_ctx_orig = 4096;
          auto xa = make_act(*be, rows, n_head * hd, x);
          be->rope(xa.v, (int)n_head, 1234, rp);
          r[i++] = read(*be, xa.v);
        }
        EXPECT_LE(norm_err(r[1], r[0]), 1e-4) << "mode " << (int)mode << " n_rot " << n_rot << " yarn " << yarn;
      }
}

TEST(CudaOps, ElementwiseAndGlu) {
  MEMRA_REQUIRE_GPU();
  Pair p;
  const int64_t rows = 7, cols = 333;
  const auto a = randn((size_t)(rows * cols), 1, 3.0f), b = randn((size_t)(rows * cols), 2, 3.0f);
  std::vector<float> r[2][6];
  int i = 0;
  for (auto* be : {p.cpu.get(), p.gpu.get()}) {
    auto x = make_act(*be, rows, cols, a), y = make_act(*be, rows, cols, b), o = make_act(*be, rows, cols, b);
    be->glu(x.v, y.v, backend::Activation::Silu, o.v);
    r[i][0] = read(*be, o.v);
    be->glu(x.v, y.v, backend::Activation::GeluTanh, o.v);
    r[i][1] = read(*be, o.v);
    be->activate(o.v, backend::Activation::Silu);
    r[i][2] = read(*be, o.v);
    be->add(x.v, y.v);
    r[i][3] = read(*be, x.v);
    be->scale(x.v, 0.37f);
    r[i][4] = read(*be, x.v);
    be->softcap(y.v, 2.5f);
    r[i][5] = read(*be, y.v);
    ++i;
  }
  for (int k = 0; k < 6; ++k) EXPECT_LE(norm_err(r[1][k], r[0][k]), 1e-5) << "case " << k;
}

TEST(CudaOps, EmbedIsBitIdentical) {
  MEMRA_REQUIRE_GPU();
  for (QType t : {QType::F32, QType::F16, QType::Q8_0, QType::Q4_K, QType::Q6_K}) {
    Pair p;
    const int64_t rows = 97, cols = 512;
    const auto tb = quantized_rows(t, rows, cols, 3);
    const std::vector<int32_t> ids = {0, 96, 5, 5, 42};
    std::vector<float> r[2];
    int i = 0;
    for (auto* be : {p.cpu.get(), p.gpu.get()}) {
      auto w = upload(*be, "tok", t, {cols, rows}, tb);
      auto o = make_act(*be, (int64_t)ids.size(), cols, std::vector<float>(ids.size() * cols, -1.0f));
      be->embed(w, ids, o.v);
      r[i++] = read(*be, o.v);
      EXPECT_THROW(be->embed(w, std::vector<int32_t>{97}, o.v.rows_slice(0, 1)), Error);
    }
    EXPECT_EQ(0, std::memcmp(r[0].data(), r[1].data(), r[0].size() * 4)) << qtype_name(t);
  }
}

namespace {

struct AttnCase {
  int n_head, n_head_kv, head_dim;
  QType tk, tv;
  const char* expect;  // variant family the prefill is expected to take
};

// Prefill 70 rows, then one decode row, then a verify batch of 4: each stage's output against the
// CPU backend with the same cache types.
void attention_case(const AttnCase& c) {
  Pair p;
  const int n_ctx = 300, hd = c.head_dim;
  kv::KvShape shape;
  shape.layers.assign(2, kv::KvLayerShape{c.n_head_kv, hd, hd});
  kv::KvOptions o{n_ctx, c.tk, c.tv};
  backend::AttnParams ap;
  ap.n_head = c.n_head;
  ap.n_head_kv = c.n_head_kv;
  ap.head_dim_k = ap.head_dim_v = hd;
  ap.scale = 1.0f / std::sqrt((float)hd);
  const int qd = c.n_head * hd, kd = c.n_head_kv * hd;
  struct Stage {
    int pos0, n;
  } stages[] = {{0, 70}, {70, 1}, {71, 4}};
  std::vector<float> r[2][3];
  int i = 0;
  for (auto* be : {p.cpu.get(), p.gpu.get()}) {
    auto kvs = be->create_kv(shape, o);
    int s = 0;
    for (const auto& st : stages) {
      const uint64_t seed = 100 + (uint64_t)st.pos0;
      auto q = make_act(*be, st.n, qd, randn((size_t)st.n * qd, seed));
      auto k = make_act(*be, st.n, kd, randn((size_t)st.n * kd, seed + 1));
      auto v = make_act(*be, st.n, kd, randn((size_t)st.n * kd, seed + 2));
      auto out = make_act(*be, st.n, qd, std::vector<float>((size_t)st.n * qd, -5.0f));
      be->kv_write(*kvs, 1, st.pos0, k.v, v.v);
      be->attention(q.v, *kvs, 1, st.pos0, ap, out.v);
      r[i][s++] = read(*be, out.v);
    }
    ++i;
  }
  const auto vars = p.gpu->variants();
  const std::string pre = vars.count("attn_prefill") ? vars.at("attn_prefill") : "";
  const std::string dec = vars.count("attn_decode") ? vars.at("attn_decode") : "";
  EXPECT_NE(pre.find(c.expect), std::string::npos) << pre;
  const double tol_pre = pre.find("mma") != std::string::npos ? 1e-2 : 2e-3;
  const double e0 = norm_err(r[1][0], r[0][0]), e1 = norm_err(r[1][1], r[0][1]), e2 = norm_err(r[1][2], r[0][2]);
  printf("attn hd%d %d/%d K %s V %s: prefill %s %.3g, decode %s %.3g, verify %.3g\n", hd, c.n_head, c.n_head_kv,
         std::string(qtype_name(c.tk)).c_str(), std::string(qtype_name(c.tv)).c_str(), pre.c_str(), e0, dec.c_str(), e1, e2);
  // Decode/verify in f32 scores: 2e-3. With int8 scores (kernels.attn_q8_scores on a q8_0 K
  // cache, "+q8i") q is quantized per 32 elements (error up to amax/254 per element, ~8x coarser
  // than the f16 rounding of the mma prefill class, which has 1e-2): 1e-2 too. A wrong scale, key
  // or block gives ~1e-1. The kernel-level gate of that class against its naive twin is
  // kernel-check attn_decode_q8i/*.
  const double tol_dec = dec.find("q8i") != std::string::npos ? 1e-2 : 2e-3;
  EXPECT_LE(e0, tol_pre);
  EXPECT_LE(e1, tol_dec);
  EXPECT_LE(e2, tol_dec);
}

}  // namespace

TEST(CudaOps, AttentionF16Cache) {
  MEMRA_REQUIRE_GPU();
  attention_case({8, 2, 64, QType::F16, QType::F16, "_hd64"});
}
TEST(CudaOps, AttentionQuantizedCacheHd128) {
  MEMRA_REQUIRE_GPU();
  attention_case({16, 4, 128, QType::Q8_0, QType::Q5_1, "_hd128"});
}
TEST(CudaOps, AttentionSmallHeadDimTakesNaiveKernel) {
  MEMRA_REQUIRE_GPU();
  attention_case({8, 4, 8, QType::F32, QType::Q8_0, "naive_hd8"});
}

TEST(CudaOps, ClearErrors) {
  MEMRA_REQUIRE_GPU();
  auto be = backend::make_cuda_backend(gpu_config());
  auto w = upload(*be, "w", QType::Q8_0, {64, 10}, quantized_rows(QType::Q8_0, 10, 64, 1));
  auto x = make_act(*be, 2, 63, std::vector<float>(126, 1.0f));
  auto y = make_act(*be, 2, 10, std::vector<float>(20, 0.0f));
  EXPECT_THROW(be->matmul(w, x.v, y.v, nullptr), Error);
  kv::KvShape shape;
  shape.layers.assign(1, kv::KvLayerShape{2, 64, 64});
  auto kvs = be->create_kv(shape, {8, QType::F16, QType::F16});
  auto k = make_act(*be, 2, 128, std::vector<float>(256, 1.0f));
  try {
    be->kv_write(*kvs, 0, 7, k.v, k.v);
    ADD_FAILURE() << "writing past n_ctx must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n_ctx=8"), std::string::npos) << e.what();
  }
  try {
    be->moe_ffn(x.v, {}, {}, y.v);
    ADD_FAILURE() << "moe_ffn without weights must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("moe_ffn: missing weights"), std::string::npos) << e.what();
  }
  // A weight far larger than the device: the error names what was needed and what is free.
  try {
    std::vector<int64_t> ne = {1LL << 20, 1LL << 20};  // 4 TiB of F32, never read
    be->upload_weight("huge", QType::F32, ne, nullptr, nullptr);
    ADD_FAILURE() << "a 4 TiB tensor must not fit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("are free"), std::string::npos) << e.what();
  }
}
