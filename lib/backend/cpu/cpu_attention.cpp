// RoPE and attention over the KV cache.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"
#include "core/half.h"

namespace memra::backend::cpu {

namespace {

// YaRN: ramp between interpolated and extrapolated frequencies over the dims whose
// wavelength falls between beta_fast and beta_slow rotations of the original context.
float yarn_corr_dim(int n_rot, int n_ctx_orig, float n_rotations, float base) {
  return (float)n_rot * std::log((float)n_ctx_orig / (n_rotations * 2.0f * (float)M_PI)) /
         (2.0f * std::log(base));
}

struct RopeTable {
  std::vector<float> cos, sin;  // [n_rot / 2]
};

void rope_table(const RopeParams& p, int pos, RopeTable& t) {
  const int half = p.n_rot / 2;
  t.cos.resize((size_t)half);
  t.sin.resize((size_t)half);
  const float theta_scale = std::pow(p.freq_base, -2.0f / (float)p.n_rot);
  float corr0 = 0.0f, corr1 = 0.0f;
  if (p.ext_factor != 0.0f) {
    corr0 = std::max(0.0f, std::floor(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.freq_base)));
    corr1 = std::min((float)(p.n_rot - 1),
                     std::ceil(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.freq_base)));
  }
  const float* ff = p.freq_factors ? static_cast<const float*>(p.freq_factors->data) : nullptr;
  // Successive products like ggml (not pow per dim) so the angles round the same way.
  float theta_base = (float)pos;
  for (int i = 0; i < half; ++i) {
    const float theta_extrap = theta_base / (ff ? ff[i] : 1.0f);
    const float theta_interp = p.freq_scale * theta_extrap;
    float theta = theta_interp;
    float mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
      const float y = ((float)i - corr0) / std::max(0.001f, corr1 - corr0);
      const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
      theta = theta_interp * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
      mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    }
    t.cos[(size_t)i] = std::cos(theta) * mscale;
    t.sin[(size_t)i] = std::sin(theta) * mscale;
    theta_base *= theta_scale;
  }
}

}  // namespace

void cache_rows_f32(const kv::KvCache& c, int layer, int n_kv, CacheRows& out) {
  const auto& ls = c.shape().layers[(size_t)layer];
  out.K = c.k_f32(layer);
  out.V = c.v_f32(layer);
  if (!out.K) {
    out.kbuf.resize((size_t)(n_kv * ls.k_row()));
    c.read_k(layer, 0, n_kv, out.kbuf.data());
    out.K = out.kbuf.data();
  }
  if (!out.V) {
    out.vbuf.resize((size_t)(n_kv * ls.v_row()));
    c.read_v(layer, 0, n_kv, out.vbuf.data());
    out.V = out.vbuf.data();
  }
}

void CpuBackend::rope(View x, int n_head, int pos0, const RopeParams& p) {
  MEMRA_CHECK((int64_t)n_head * p.head_dim == x.cols, "rope: {} heads x head_dim {} != {} columns",
              n_head, p.head_dim, x.cols);
  MEMRA_CHECK(p.n_rot > 0 && p.n_rot <= p.head_dim && p.n_rot % 2 == 0,
              "rope: n_rot {} must be even and in (0, head_dim={}]", p.n_rot, p.head_dim);
  if (p.freq_factors)
    MEMRA_CHECK(p.freq_factors->type == QType::F32 && p.freq_factors->ne[0] >= p.n_rot / 2,
                "rope: freq factors '{}' must be F32 with >= {} entries", p.freq_factors->name,
                p.n_rot / 2);
  MEMRA_CHECK(p.ext_factor == 0.0f || p.n_ctx_orig > 0, "rope: YaRN needs n_ctx_orig > 0");
  RopeTable t;
  const int half = p.n_rot / 2;
  const bool fused = opts_.f32_order == F32Order::Ggml;
  for (int64_t r = 0; r < x.rows; ++r) {
    rope_table(p, pos0 + (int)r, t);
    for (int h = 0; h < n_head; ++h) {
      float* v = x.row(r) + (int64_t)h * p.head_dim;
      for (int i = 0; i < half; ++i) {
        const int a = p.mode == RopeMode::Normal ? 2 * i : i;
        const int b = p.mode == RopeMode::Normal ? 2 * i + 1 : i + half;
        const float x0 = v[a], x1 = v[b], c = t.cos[(size_t)i], sn = t.sin[(size_t)i];
        if (fused) {  // F32Order::Ggml: the first product of each line fused
          v[a] = std::fma(x0, c, -(x1 * sn));
          v[b] = std::fma(x0, sn, x1 * c);
        } else {
          v[a] = x0 * c - x1 * sn;
          v[b] = x0 * sn + x1 * c;
        }
      }
    }
  }
}

void CpuBackend::attention(View q, const KvStore& kvs, int layer, int pos0, const AttnParams& p,
                           View out) {
  const auto& c = dynamic_cast<const CpuKv&>(kvs).cache;
  const auto& ls = c.shape().layers.at((size_t)layer);
  MEMRA_CHECK(p.n_head > 0 && p.n_head_kv > 0 && p.n_head % p.n_head_kv == 0,
              "attention: n_head {} is not a multiple of n_head_kv {}", p.n_head, p.n_head_kv);
  MEMRA_CHECK(ls.n_head_kv == p.n_head_kv && ls.head_dim_k == p.head_dim_k && ls.head_dim_v == p.head_dim_v,
              "attention: layer {} cache holds {} kv heads of {}/{} dims, op asks {} of {}/{}", layer,
              ls.n_head_kv, ls.head_dim_k, ls.head_dim_v, p.n_head_kv, p.head_dim_k, p.head_dim_v);
  MEMRA_CHECK(q.cols == (int64_t)p.n_head * p.head_dim_k && out.cols == (int64_t)p.n_head * p.head_dim_v &&
                  out.rows == q.rows,
              "attention: q [{} x {}] / out [{} x {}] do not match {} heads of {}/{}", q.rows, q.cols,
              out.rows, out.cols, p.n_head, p.head_dim_k, p.head_dim_v);
  const int n_kv = pos0 + (int)q.rows;
  MEMRA_CHECK(n_kv <= c.n_written(), "attention: positions up to {} requested, cache holds {}", n_kv,
              c.n_written());

  const int64_t kr = ls.k_row(), vr = ls.v_row();
  CacheRows rows;
  cache_rows_f32(c, layer, n_kv, rows);
  const float* K = rows.K;
  const float* V = rows.V;
  std::vector<float>& kbuf = rows.kbuf;
  std::vector<float>& vbuf = rows.vbuf;
  const QType tk = c.options().type_k, tv = c.options().type_v;
  const bool fa = opts_.attention_numerics != AttentionNumerics::Exact;
  const bool f32_cache = opts_.attention_numerics == AttentionNumerics::GgmlFlashAttnF32Cache;
  const bool ggml_numerics = fa && ((tk == QType::F16 && tv == QType::F16) ||
                                    (f32_cache && tk == QType::F32 && tv == QType::F32));
  if (ggml_numerics && tk == QType::F32) {
    // llama.cpp casts an F32 cache to F16 for flash attention.
    const auto to_f16 = [](const float* src, int64_t n, std::vector<float>& dst) {
      dst.resize((size_t)n);
      for (int64_t i = 0; i < n; ++i) dst[(size_t)i] = fp16_to_f32(f32_to_fp16(src[i]));
    };
    to_f16(K, n_kv * kr, kbuf);
    to_f16(V, n_kv * vr, vbuf);
    K = kbuf.data();
    V = vbuf.data();
  }
  const int group = p.n_head / p.n_head_kv;
  const float* sinks = nullptr;
  if (p.sinks) {
    MEMRA_CHECK(p.sinks->type == QType::F32 && p.sinks->ne[0] == p.n_head && p.sinks->n_rows() == 1,
                "attention: sinks '{}' must be F32 [{}]", p.sinks->name, p.n_head);
    sinks = static_cast<const float*>(p.sinks->data);
  }
  const size_t jobs = (size_t)q.rows * (size_t)p.n_head;
  const bool ggml_fa = ggml_numerics && q.rows < kGgmlFaTiledRows;
  if (ggml_fa) {
    pool_.parallel_for(jobs, [&](size_t b, size_t e) {
      for (size_t job = b; job < e; ++job) {
        const int64_t t = (int64_t)(job / (size_t)p.n_head);
        const int h = (int)(job % (size_t)p.n_head);
        const int g = h / group;
        const int pos = pos0 + (int)t;
        const int lo = p.window > 0 ? std::max(0, pos - p.window + 1) : 0;
        ggml_fa_f16_row(q.row(t) + (int64_t)h * p.head_dim_k, K + (int64_t)g * p.head_dim_k, kr,
                        V + (int64_t)g * p.head_dim_v, vr, lo, pos, p.head_dim_k, p.head_dim_v, p.scale,
                        p.softcap, sinks ? sinks + h : nullptr, out.row(t) + (int64_t)h * p.head_dim_v);
      }
    });
    return;
  }
  pool_.parallel_for(jobs, [&](size_t b, size_t e) {
    std::vector<float> score((size_t)n_kv);
    std::vector<double> acc((size_t)p.head_dim_v);
    for (size_t job = b; job < e; ++job) {
      const int64_t t = (int64_t)(job / (size_t)p.n_head);
      const int h = (int)(job % (size_t)p.n_head);
      const int g = h / group;
      const int pos = pos0 + (int)t;
      const int lo = p.window > 0 ? std::max(0, pos - p.window + 1) : 0;
      const float* qh = q.row(t) + (int64_t)h * p.head_dim_k;
      float mx = -INFINITY;
      for (int j = lo; j <= pos; ++j) {
        float s = dot_f32(qh, K + (int64_t)j * kr + (int64_t)g * p.head_dim_k, p.head_dim_k) * p.scale;
        if (p.softcap > 0.0f) s = p.softcap * std::tanh(s / p.softcap);
        score[(size_t)j] = s;
        mx = std::max(mx, s);
      }
      if (sinks) mx = std::max(mx, sinks[h]);
      double sum = sinks ? std::exp((double)sinks[h] - mx) : 0.0;
      for (int j = lo; j <= pos; ++j) sum += score[(size_t)j] = std::exp(score[(size_t)j] - mx);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int j = lo; j <= pos; ++j) {
        const float* vj = V + (int64_t)j * vr + (int64_t)g * p.head_dim_v;
        const double w = score[(size_t)j];
        for (int d = 0; d < p.head_dim_v; ++d) acc[(size_t)d] += w * vj[d];
      }
      float* o = out.row(t) + (int64_t)h * p.head_dim_v;
      for (int d = 0; d < p.head_dim_v; ++d) o[d] = (float)(acc[(size_t)d] / sum);
    }
  });
}

}  // namespace memra::backend::cpu
