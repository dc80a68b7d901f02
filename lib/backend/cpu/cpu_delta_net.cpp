// The Gated DeltaNet layer (backend.h, DeltaNetParams) on the CPU: the plain token-by-token
// recurrence, dot products in f64.
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"

namespace memra::backend::cpu {

namespace {

const float* f32_param(const Weight* w, int64_t n, const char* what) {
  MEMRA_CHECK(w && w->type == QType::F32 && w->ne[0] == n && w->n_rows() == 1,
              "gated_delta_net: {} must be an F32 vector of {} elements{}", what, n,
              w ? fmt::format(" ('{}' is {} [{}, {}])", w->name, qtype_name(w->type), w->ne[0], w->n_rows()) : "");
  return static_cast<const float*>(w->data);
}

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

// x / max(|x|, eps) in place.
void l2_normalize(float* x, int n, float eps) {
  double ss = 0.0;
  for (int i = 0; i < n; ++i) ss += (double)x[i] * x[i];
  const float s = 1.0f / std::max((float)std::sqrt(ss), eps);
  for (int i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace

void CpuBackend::gated_delta_net(View qkv, View alpha, View beta, const DeltaNetWeights& w, const DeltaNetParams& p,
                                 KvStore& kvs, int layer, int pos0, View out) {
  const int64_t C = p.channels(), n = qkv.rows;
  const int nk = p.n_k_heads, nv = p.n_v_heads, dk = p.head_k_dim, dv = p.head_v_dim, dc = p.d_conv;
  MEMRA_CHECK(nk > 0 && nv > 0 && dk > 0 && dv > 0 && dc > 0 && nv % nk == 0,
              "gated_delta_net: bad geometry ({} key heads, {} value heads, dims {}/{}, conv {})", nk, nv, dk, dv, dc);
  MEMRA_CHECK(qkv.cols == C && alpha.rows == n && beta.rows == n && alpha.cols == nv && beta.cols == nv &&
                  out.rows == n && out.cols == (int64_t)nv * dv,
              "gated_delta_net: shapes qkv [{} x {}], alpha [{} x {}], beta [{} x {}], out [{} x {}] do not match {} "
              "channels, {} value heads of {}", qkv.rows, qkv.cols, alpha.rows, alpha.cols, beta.rows, beta.cols,
              out.rows, out.cols, C, nv, dv);
  MEMRA_CHECK(w.conv && w.conv->type == QType::F32 && w.conv->ne[0] == dc && w.conv->n_rows() == C,
              "gated_delta_net: conv kernel must be F32 [{}, {}]", dc, C);
  const float* conv_w = static_cast<const float*>(w.conv->data);
  const float* dt_bias = f32_param(w.dt_bias, nv, "dt bias");
  const float* a = f32_param(w.a, nv, "A");
  auto& cache = dynamic_cast<CpuKv&>(kvs).cache;
  MEMRA_CHECK(layer >= 0 && layer < cache.n_layer() &&
                  cache.shape().layers[(size_t)layer].state_floats == p.state_floats(),
              "gated_delta_net: layer {} of the cache does not hold a state of {} floats", layer, p.state_floats());
  MEMRA_CHECK(cache.state_pos(layer) == pos0, "gated_delta_net: layer {} state has consumed {} tokens, asked to "
              "continue at position {}", layer, cache.state_pos(layer), pos0);
  float* conv_state = cache.state(layer);                // [(dc - 1) x C], oldest first
  float* S_all = conv_state + (int64_t)(dc - 1) * C;     // per value head [dv x dk]
  std::vector<float> x((size_t)C);
  std::vector<double> d((size_t)dv);
  const double inv_sqrt_dk = 1.0 / std::sqrt((double)dk);
  for (int64_t t = 0; t < n; ++t) {
    const float* in = qkv.row(t);
    // Causal depthwise convolution over (state rows, this input), then SiLU.
    for (int64_t c = 0; c < C; ++c) {
      const float* wc = conv_w + c * dc;
      double acc = 0.0;
      for (int j = 0; j < dc - 1; ++j) acc += (double)conv_state[(int64_t)j * C + c] * wc[j];
      acc += (double)in[c] * wc[dc - 1];
      const float y = (float)acc;
      x[(size_t)c] = y / (1.0f + std::exp(-y));
    }
    for (int j = 0; j + 1 < dc - 1; ++j)
      for (int64_t c = 0; c < C; ++c) conv_state[(int64_t)j * C + c] = conv_state[(int64_t)(j + 1) * C + c];
    if (dc > 1)
      for (int64_t c = 0; c < C; ++c) conv_state[(int64_t)(dc - 2) * C + c] = in[c];
    float* q = x.data();
    float* k = q + (int64_t)nk * dk;
    const float* v = k + (int64_t)nk * dk;
    for (int h = 0; h < nk; ++h) {
      l2_normalize(q + (int64_t)h * dk, dk, p.eps);
      l2_normalize(k + (int64_t)h * dk, dk, p.eps);
    }
    float* o = out.row(t);
    for (int h = 0; h < nv; ++h) {
      const float* qh = q + (int64_t)(h % nk) * dk;
      const float* kh = k + (int64_t)(h % nk) * dk;
      const float* vh = v + (int64_t)h * dv;
      const float decay = (float)std::exp(softplus((double)alpha.row(t)[h] + dt_bias[h]) * a[h]);
      const double b = 1.0 / (1.0 + std::exp(-(double)beta.row(t)[h]));
      float* S = S_all + (int64_t)h * dv * dk;
      for (int64_t i = 0; i < (int64_t)dv * dk; ++i) S[i] *= decay;
      for (int j = 0; j < dv; ++j) {
        double sk = 0.0;
        for (int i = 0; i < dk; ++i) sk += (double)S[(int64_t)j * dk + i] * kh[i];
        d[(size_t)j] = ((double)vh[j] - sk) * b;
      }
      for (int j = 0; j < dv; ++j)
        for (int i = 0; i < dk; ++i) S[(int64_t)j * dk + i] += (float)(kh[i] * d[(size_t)j]);
      for (int j = 0; j < dv; ++j) {
        double sq = 0.0;
        for (int i = 0; i < dk; ++i) sq += (double)S[(int64_t)j * dk + i] * qh[i];
        o[(int64_t)h * dv + j] = (float)(sq * inv_sqrt_dk);
      }
    }
  }
  cache.advance(layer, pos0 + (int)n);
}

}  // namespace memra::backend::cpu
