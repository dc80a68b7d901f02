// Matmul, norms, activations and the MoE FFN against direct f64 math.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend_cpu/test_data.h"
#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/half.h"
#include "quant/quant.h"

namespace memra::backend {
namespace {

using testdata::randv;
using testdata::view;

// Encodes rows of an f32 matrix [out][in] into type t; returns the bytes and the decoded values
// (the reference multiplies by what the weight really holds).
std::vector<uint8_t> encode(QType t, const std::vector<float>& w, int64_t out, int64_t in,
                            std::vector<float>& decoded) {
  const uint64_t rb = *qtype_row_bytes(t, (uint64_t)in);
  std::vector<uint8_t> bytes((size_t)(rb * (uint64_t)out));
  decoded.resize(w.size());
  for (int64_t o = 0; o < out; ++o) {
    quantize_row(t, w.data() + o * in, bytes.data() + o * rb, in);
    dequantize_row(t, bytes.data() + o * rb, decoded.data() + o * in, in);
  }
  return bytes;
}

void check_matmul(QType t, bool quant_act, int64_t n, int64_t in, int64_t out, double rel_tol) {
  auto be = make_cpu_backend({2, quant_act});
  auto w = randv((size_t)(in * out), 1, 0.1f);
  std::vector<float> wd;
  auto bytes = encode(t, w, out, in, wd);
  Weight W = be->upload_weight("w", t, std::vector<int64_t>{in, out}, bytes.data(), nullptr);
  auto bias = randv((size_t)out, 4);
  Weight B = be->upload_weight("b", QType::F32, std::vector<int64_t>{out}, bias.data(), nullptr);
  auto x = randv((size_t)(n * in), 2);
  std::vector<float> y((size_t)(n * out));
  be->matmul(W, view(x, n, in), view(y, n, out), &B);
  double max_err = 0, max_ref = 0;
  for (int64_t t_ = 0; t_ < n; ++t_)
    for (int64_t o = 0; o < out; ++o) {
      double r = bias[(size_t)o];
      for (int64_t i = 0; i < in; ++i) r += (double)wd[(size_t)(o * in + i)] * x[(size_t)(t_ * in + i)];
      max_err = std::max(max_err, std::fabs(r - y[(size_t)(t_ * out + o)]));
      max_ref = std::max(max_ref, std::fabs(r));
    }
  EXPECT_LE(max_err / max_ref, rel_tol) << qtype_name(t) << " quant_act " << quant_act;
}

TEST(Matmul, F32MatchesF64) { check_matmul(QType::F32, false, 5, 96, 17, 1e-6); }
TEST(Matmul, F16MatchesF64) { check_matmul(QType::F16, false, 3, 64, 9, 1e-6); }
TEST(Matmul, Q8_0MatchesF64OnDecodedWeights) { check_matmul(QType::Q8_0, false, 4, 128, 13, 1e-6); }
TEST(Matmul, Q4_KMatchesF64OnDecodedWeights) { check_matmul(QType::Q4_K, false, 2, 512, 7, 1e-6); }
// Quantized activations: the error is the q8 rounding of x (~1/127 of a block's max per
// element, averaging out over the row): a bound of 1e-2 relative.
TEST(Matmul, Q8_0WithQuantizedActivations) { check_matmul(QType::Q8_0, true, 4, 128, 13, 1e-2); }
TEST(Matmul, Q4_1WithQuantizedActivations) { check_matmul(QType::Q4_1, true, 3, 256, 11, 1e-2); }
TEST(Matmul, Q6_KWithQuantizedActivations) { check_matmul(QType::Q6_K, true, 2, 512, 5, 1e-2); }
TEST(Matmul, F16WithF16Activations) { check_matmul(QType::F16, true, 3, 64, 9, 2e-3); }

TEST(Matmul, ResultDoesNotDependOnThreadCount) {
  auto w = randv(256 * 33, 9);
  auto x = randv(3 * 256, 10);
  std::vector<float> y1(3 * 33), y2(3 * 33);
  for (int threads : {1, 2}) {
    auto be = make_cpu_backend({threads, false});
    Weight W = be->upload_weight("w", QType::F32, std::vector<int64_t>{256, 33}, w.data(), nullptr);
    be->matmul(W, view(x, 3, 256), view(threads == 1 ? y1 : y2, 3, 33), nullptr);
  }
  EXPECT_EQ(y1, y2);
}

TEST(Matmul, ShapeMismatchIsAnError) {
  auto be = make_cpu_backend({1, false});
  auto w = randv(8 * 4, 1);
  Weight W = be->upload_weight("blk.0.attn_q.weight", QType::F32, std::vector<int64_t>{8, 4}, w.data(), nullptr);
  std::vector<float> x(7), y(4);
  try {
    be->matmul(W, view(x, 1, 7), view(y, 1, 4), nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.attn_q.weight"), std::string::npos) << e.what();
  }
}

TEST(Embed, RowsAndRangeCheck) {
  auto be = make_cpu_backend({1, false});
  std::vector<uint16_t> t(4 * 3);
  for (size_t i = 0; i < t.size(); ++i) t[i] = f32_to_fp16((float)i * 0.5f);
  Weight T = be->upload_weight("token_embd.weight", QType::F16, std::vector<int64_t>{4, 3}, t.data(), nullptr);
  std::vector<float> out(2 * 4);
  const std::vector<int32_t> ids = {2, 0};
  be->embed(T, ids, view(out, 2, 4));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out[(size_t)i], (8 + i) * 0.5f);
    EXPECT_EQ(out[(size_t)(4 + i)], i * 0.5f);
  }
  const std::vector<int32_t> bad = {3};
  std::vector<float> o1(4);
  EXPECT_THROW(be->embed(T, bad, view(o1, 1, 4)), Error);
}

// ---------------------------------------------------------------- norms and activations
TEST(Norm, RmsNormAndFusedResidual) {
  auto be = make_cpu_backend({1, false});
  const int n = 3, d = 10;
  auto x = randv(n * d, 1), delta = randv(n * d, 2), w = randv(d, 3);
  Weight W = be->upload_weight("norm", QType::F32, std::vector<int64_t>{d}, w.data(), nullptr);
  auto res = x;
  std::vector<float> out((size_t)(n * d));
  be->add_rms_norm(view(res, n, d), view(delta, n, d), &W, 1e-5f, view(out, n, d));
  for (int r = 0; r < n; ++r) {
    double ss = 0;
    for (int i = 0; i < d; ++i) {
      const double s = (double)x[(size_t)(r * d + i)] + delta[(size_t)(r * d + i)];
      EXPECT_NEAR(res[(size_t)(r * d + i)], s, 1e-6);
      ss += s * s;
    }
    const double inv = 1 / std::sqrt(ss / d + 1e-5);
    for (int i = 0; i < d; ++i)
      EXPECT_NEAR(out[(size_t)(r * d + i)], res[(size_t)(r * d + i)] * inv * w[(size_t)i], 1e-5);
  }
}

TEST(Norm, LayerNormWithWeightAndBias) {
  auto be = make_cpu_backend({1, false});
  const int n = 2, d = 12;
  auto x = randv(n * d, 7), w = randv(d, 8), b = randv(d, 9);
  Weight W = be->upload_weight("ln.w", QType::F32, std::vector<int64_t>{d}, w.data(), nullptr);
  Weight B = be->upload_weight("ln.b", QType::F32, std::vector<int64_t>{d}, b.data(), nullptr);
  std::vector<float> out((size_t)(n * d));
  be->layer_norm(view(x, n, d), &W, &B, 1e-5f, view(out, n, d));
  for (int r = 0; r < n; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < d; ++i) mean += x[(size_t)(r * d + i)];
    mean /= d;
    for (int i = 0; i < d; ++i) var += (x[(size_t)(r * d + i)] - mean) * (x[(size_t)(r * d + i)] - mean);
    var /= d;
    for (int i = 0; i < d; ++i)
      EXPECT_NEAR(out[(size_t)(r * d + i)],
                  (x[(size_t)(r * d + i)] - mean) / std::sqrt(var + 1e-5) * w[(size_t)i] + b[(size_t)i], 1e-5);
  }
}

TEST(Norm, HeadRmsNormPerHead) {
  auto be = make_cpu_backend({1, false});
  const int heads = 3, hd = 4;
  auto x = randv(2 * heads * hd, 5), w = randv(hd, 6), orig = x;
  Weight W = be->upload_weight("q_norm", QType::F32, std::vector<int64_t>{hd}, w.data(), nullptr);
  be->head_rms_norm(view(x, 2, heads * hd), heads, hd, &W, 1e-6f);
  for (int r = 0; r < 2 * heads; ++r) {
    double ss = 0;
    for (int i = 0; i < hd; ++i) ss += (double)orig[(size_t)(r * hd + i)] * orig[(size_t)(r * hd + i)];
    const double inv = 1 / std::sqrt(ss / hd + 1e-6);
    for (int i = 0; i < hd; ++i)
      EXPECT_NEAR(x[(size_t)(r * hd + i)], orig[(size_t)(r * hd + i)] * inv * w[(size_t)i], 1e-5);
  }
}

// GeluNumerics::GgmlF16Table: llama.cpp's CPU GELU. Properties from its definition (not from our
// own output): results are f16 values; every argument in one f16 rounding bucket gives one
// result; within [-10, 10] the result is the f64 GELU of the argument's f16 value to within half
// an f16 step of the result (plus the f32 evaluation's error); outside, 0 and the identity.
TEST(Activation, GeluGgmlF16Table) {
  CpuBackendOptions o;
  o.threads = 1;
  o.gelu_numerics = GeluNumerics::GgmlF16Table;
  auto be = make_cpu_backend(o);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-12.0f, 12.0f);
  std::vector<float> x(4096), y, xh(4096);
  for (auto& v : x) v = d(rng);
  x[0] = -10.0f, x[1] = 10.0f, x[2] = -10.5f, x[3] = 11.0f, x[4] = 0.0f;
  for (size_t i = 0; i < x.size(); ++i) xh[i] = fp16_to_f32(f32_to_fp16(x[i]));
  y = x;
  std::vector<float> yh = xh;
  be->activate(view(y, 64, 64), Activation::GeluTanh);
  be->activate(view(yh, 64, 64), Activation::GeluTanh);
  int inside = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double a = x[i];
    if (a <= -10.0) {
      EXPECT_EQ(y[i], 0.0f) << a;
    } else if (a >= 10.0) {
      EXPECT_EQ(y[i], x[i]) << a;
    } else {
      ++inside;
      EXPECT_EQ(fp16_to_f32(f32_to_fp16(y[i])), y[i]) << "not an f16 value at " << a;
      if (xh[i] > -10.0f && xh[i] < 10.0f) {
        EXPECT_EQ(y[i], yh[i]) << "bucket of " << a;
      }
      const double h = xh[i];
      const double g = 0.5 * h * (1 + std::tanh(std::sqrt(2 / M_PI) * (h + 0.044715 * h * h * h)));
      EXPECT_NEAR(y[i], g, std::abs(g) * (1.0 / 2048) + 1e-6) << a;
    }
  }
  EXPECT_GT(inside, 3000);
}

TEST(Activation, SwiGluGegluSoftcap) {
  auto be = make_cpu_backend({1, false});
  std::vector<float> g = {-3.0f, -0.5f, 0.0f, 0.7f, 4.0f}, u = {1.0f, 2.0f, 3.0f, -1.0f, 0.5f};
  std::vector<float> o(5), o2(5);
  be->glu(view(g, 1, 5), view(u, 1, 5), Activation::Silu, view(o, 1, 5));
  be->glu(view(g, 1, 5), view(u, 1, 5), Activation::GeluTanh, view(o2, 1, 5));
  for (int i = 0; i < 5; ++i) {
    const double x = g[(size_t)i];
    EXPECT_NEAR(o[(size_t)i], x / (1 + std::exp(-x)) * u[(size_t)i], 1e-6);
    const double gelu = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(o2[(size_t)i], gelu * u[(size_t)i], 1e-6);
  }
  std::vector<float> l = {-100.0f, -1.0f, 0.0f, 25.0f};
  be->softcap(view(l, 1, 4), 30.0f);
  for (int i = 0; i < 4; ++i) {
    const double in[] = {-100, -1, 0, 25};
    EXPECT_NEAR(l[(size_t)i], 30 * std::tanh(in[i] / 30), 1e-5);
  }
}

TEST(Activation, SigmoidHeadGateScalesEachHead) {
  auto be = make_cpu_backend({1, false});
  const int rows = 3, n_head = 4, hd = 5;
  auto x = randv((size_t)(rows * n_head * hd), 11), gate = randv((size_t)(rows * n_head), 12, 2.0f);
  const auto x0 = x;
  be->sigmoid_head_gate(view(x, rows, n_head * hd), n_head, hd, view(gate, rows, n_head));
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < n_head; ++h) {
      const double s = 1 / (1 + std::exp(-(double)gate[(size_t)(r * n_head + h)]));
      for (int i = 0; i < hd; ++i) {
        const size_t k = (size_t)((r * n_head + h) * hd + i);
        EXPECT_NEAR(x[k], x0[k] * s, 1e-6 * (1 + std::abs(x0[k])));
      }
    }
  // The gate must be [rows, n_head].
  EXPECT_THROW(be->sigmoid_head_gate(view(x, rows, n_head * hd), n_head, hd, view(gate, rows, n_head - 1)),
               Error);
}

// ---------------------------------------------------------------- MoE FFN
TEST(MoeFfn, MatchesRoutedSumOfExperts) {
  auto be = make_cpu_backend({2, false});
  const int n = 5, e = 16, ff = 8, ne = 4, k = 2;
  auto router = randv((size_t)(e * ne), 1), gate = randv((size_t)(e * ff * ne), 2, 0.3f),
       up = randv((size_t)(e * ff * ne), 3, 0.3f), down = randv((size_t)(ff * e * ne), 4, 0.3f);
  Weight R = be->upload_weight("r", QType::F32, std::vector<int64_t>{e, ne}, router.data(), nullptr);
  Weight G = be->upload_weight("g", QType::F32, std::vector<int64_t>{e, ff, ne}, gate.data(), nullptr);
  Weight U = be->upload_weight("u", QType::F32, std::vector<int64_t>{e, ff, ne}, up.data(), nullptr);
  Weight D = be->upload_weight("d", QType::F32, std::vector<int64_t>{ff, e, ne}, down.data(), nullptr);
  MoeParams p;
  p.n_expert = ne;
  p.n_expert_used = k;
  auto x = randv((size_t)(n * e), 5);
  std::vector<float> out((size_t)(n * e));
  be->moe_ffn(view(x, n, e), {&R, &G, &U, &D}, p, view(out, n, e));
  for (int t = 0; t < n; ++t) {
    const float* xt = &x[(size_t)(t * e)];
    // Router logits and softmax top-2 with renormalization, in f64.
    std::vector<double> lg(ne);
    for (int j = 0; j < ne; ++j) {
      double s = 0;
      for (int i = 0; i < e; ++i) s += (double)router[(size_t)(j * e + i)] * xt[i];
      lg[(size_t)j] = s;
    }
    std::vector<int> order = {0, 1, 2, 3};
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return lg[(size_t)a] > lg[(size_t)b]; });
    const double w0 = 1 / (1 + std::exp(lg[(size_t)order[1]] - lg[(size_t)order[0]])), w1 = 1 - w0;
    std::vector<double> ref(e, 0.0);
    for (int s = 0; s < k; ++s) {
      const int ex = order[(size_t)s];
      std::vector<double> h(ff);
      for (int f = 0; f < ff; ++f) {
        double gg = 0, uu = 0;
        for (int i = 0; i < e; ++i) {
          gg += (double)gate[(size_t)((ex * ff + f) * e + i)] * xt[i];
          uu += (double)up[(size_t)((ex * ff + f) * e + i)] * xt[i];
        }
        h[(size_t)f] = gg / (1 + std::exp(-gg)) * uu;
      }
      for (int o = 0; o < e; ++o) {
        double d = 0;
        for (int f = 0; f < ff; ++f) d += (double)down[(size_t)((ex * e + o) * ff + f)] * h[(size_t)f];
        ref[(size_t)o] += (s == 0 ? w0 : w1) * d;
      }
    }
    for (int o = 0; o < e; ++o) EXPECT_NEAR(out[(size_t)(t * e + o)], ref[(size_t)o], 1e-5) << t << "," << o;
  }
}

}  // namespace
}  // namespace memra::backend

namespace memra::backend {
namespace {

// The decode path (1-2 rows, fused block decode) must give exactly the prefill path's values
// (dequantized row + the same 32-lane dot): decode == verify for the spec loop.
TEST(Matmul, DecodePathBitIdenticalToBatchPath) {
  for (QType t : {QType::Q4_0, QType::Q4_1, QType::Q8_0, QType::Q4_K, QType::F16}) {
    auto be = make_cpu_backend({2, false});
    const int64_t in = 256, out = 19, n = 4;
    auto w = randv((size_t)(in * out), 3, 0.2f);
    std::vector<float> wd;
    auto bytes = encode(t, w, out, in, wd);
    Weight W = be->upload_weight("w", t, std::vector<int64_t>{in, out}, bytes.data(), nullptr);
    auto x = randv((size_t)(n * in), 4);
    std::vector<float> batch((size_t)(n * out)), single((size_t)out);
    be->matmul(W, view(x, n, in), view(batch, n, out), nullptr);
    for (int64_t r = 0; r < n; ++r) {
      std::vector<float> xr(x.begin() + r * in, x.begin() + (r + 1) * in);
      be->matmul(W, view(xr, 1, in), view(single, 1, out), nullptr);
      for (int64_t o = 0; o < out; ++o)
        EXPECT_EQ(single[(size_t)o], batch[(size_t)(r * out + o)]) << qtype_name(t) << " row " << r << " out " << o;
    }
  }
}

}  // namespace
}  // namespace memra::backend
