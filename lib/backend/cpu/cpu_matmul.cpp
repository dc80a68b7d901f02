// Matmul (f32 on dequantized rows, or llama.cpp's quantized-activation class), embedding
// lookup and the routed MoE FFN.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"
#include "core/half.h"
#include "quant/quant.h"

namespace memra::backend::cpu {

// x86-64-v3 (AVX2+FMA) clone where the CPU has it; the default build targets plain x86-64.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MEMRA_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MEMRA_HOT
#endif

MEMRA_HOT float dot_f32(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 32;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  double s = 0.0;
  for (; i < n; ++i) s += (double)a[i] * b[i];
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  return (float)s;
}

MEMRA_HOT float dot_f32_tinyblas(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 8;
  float acc[kLanes] = {};
  for (int64_t i = 0; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] = std::fma(a[i + l], b[i + l], acc[l]);
  // 256-bit halves added, then the 128-bit movehl and movehdup steps.
  float h[4];
  for (int l = 0; l < 4; ++l) h[l] = acc[l + 4] + acc[l];
  const float h02 = h[0] + h[2], h13 = h[1] + h[3];
  return h02 + h13;
}

void dequant_row(QType t, const void* src, float* dst, int64_t n) {
  if (t == QType::F32) {
    std::memcpy(dst, src, (size_t)n * sizeof(float));
    return;
  }
  ::memra::dequantize_row(t, src, dst, n);
}

void CpuBackend::embed(const Weight& table, std::span<const int32_t> ids, View out) {
  MEMRA_CHECK(out.rows == (int64_t)ids.size() && out.cols == table.ne[0],
              "embed: output [{} x {}] does not match {} ids x n_embd {}", out.rows, out.cols,
              ids.size(), table.ne[0]);
  for (size_t i = 0; i < ids.size(); ++i) {
    MEMRA_CHECK(ids[i] >= 0 && ids[i] < table.n_rows(), "token id {} out of range [0, {}) of '{}'",
                ids[i], table.n_rows(), table.name);
    dequant_row(table.type, table.row_ptr(ids[i]), out.row((int64_t)i), table.ne[0]);
  }
}

void CpuBackend::matmul(const Weight& w, View x, View y, const Weight* bias) {
  MEMRA_CHECK(w.ne[2] == 1 && w.ne[3] == 1, "matmul: '{}' is not a 2-D weight", w.name);
  matmul_rows(w, 0, w.ne[1], x, y, bias);
}

void CpuBackend::matmul_rows(const Weight& w, int64_t row0, int64_t n_out, View x, View y,
                             const Weight* bias) {
  const int64_t in = w.ne[0];
  MEMRA_CHECK(x.cols == in && y.cols == n_out && x.rows == y.rows,
              "matmul '{}': weight [{}, {}] needs x [n, {}] -> y [n, {}], got x [{}, {}] y [{}, {}]",
              w.name, in, n_out, in, n_out, x.rows, x.cols, y.rows, y.cols);
  const float* bd = nullptr;
  if (bias) {
    MEMRA_CHECK(bias->type == QType::F32 && bias->ne[0] == n_out && bias->n_rows() == 1,
                "matmul '{}': bias '{}' must be F32 [{}]", w.name, bias->name, n_out);
    bd = static_cast<const float*>(bias->data);
  }
  const int64_t n = x.rows;

  // Activation quantization: each x row once, before the row-parallel loop.
  const bool float_weight = w.type == QType::F32 || w.type == QType::F16 || w.type == QType::BF16;
  const bool quant_act = opts_.quantize_activations && w.type != QType::F32 &&
                         (float_weight || ::memra::has_vec_dot(w.type));
  std::vector<float> xr;              // x rounded to the weight's float type (F16/BF16)
  std::vector<uint8_t> xq;            // x quantized to vec_dot_type
  uint64_t xq_row = 0;
  QType act_type = QType::F32;
  if (quant_act && float_weight) {
    xr.resize((size_t)(n * in));
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < in; ++i) {
        const float v = x.row(t)[i];
        xr[(size_t)(t * in + i)] = w.type == QType::F16 ? fp16_to_f32(f32_to_fp16(v))
                                                         : bf16_to_f32(f32_to_bf16(v));
      }
  } else if (quant_act) {
    act_type = ::memra::vec_dot_type(w.type);
    auto rb = qtype_row_bytes(act_type, (uint64_t)in);
    MEMRA_CHECK(rb.has_value(), "matmul '{}': row length {} does not fit {} activation blocks",
                w.name, in, qtype_name(act_type));
    xq_row = *rb;
    xq.resize((size_t)(xq_row * (uint64_t)n));
    for (int64_t t = 0; t < n; ++t) ::memra::quantize_activation_row(act_type, x.row(t), xq.data() + t * xq_row, in);
  }

  // Few rows: decode each weight block in registers; more rows: dequantize once, reuse the row.
  const bool fused = n <= 2 && has_fused_dot(w.type);
  const bool tinyblas = opts_.f32_order == F32Order::Ggml && w.type == QType::F32 && in % 8 == 0;
  pool_.parallel_for((size_t)n_out, [&](size_t b, size_t e) {
    std::vector<float> wrow(w.type == QType::F32 ? 0 : (size_t)in);
    for (size_t o = b; o < e; ++o) {
      const uint8_t* src = w.row_ptr(row0 + (int64_t)o);
      const float add = bd ? bd[o] : 0.0f;
      if (!xq.empty()) {
        for (int64_t t = 0; t < n; ++t)
          y.row(t)[o] = ::memra::vec_dot(w.type, in, src, xq.data() + t * xq_row) + add;
        continue;
      }
      if (fused && xr.empty()) {
        for (int64_t t = 0; t < n; ++t) y.row(t)[o] = fused_dot(w.type, src, x.row(t), in) + add;
        continue;
      }
      const float* wr = reinterpret_cast<const float*>(src);
      if (w.type != QType::F32) {
        dequant_row(w.type, src, wrow.data(), in);
        wr = wrow.data();
      }
      for (int64_t t = 0; t < n; ++t) {
        const float* xv = xr.empty() ? x.row(t) : xr.data() + t * in;
        y.row(t)[o] = (tinyblas ? dot_f32_tinyblas(wr, xv, in) : dot_f32(wr, xv, in)) + add;
      }
    }
  }, 4);
}

void CpuBackend::moe_ffn(View x, const MoeWeights& w, const MoeParams& p, View out) {
  MEMRA_CHECK(w.router && w.gate_exps && w.up_exps && w.down_exps, "moe_ffn: missing weights");
  const int64_t n = x.rows, n_embd = x.cols, n_ff = w.gate_exps->ne[1];
  const int k_used = p.n_expert_used;
  MEMRA_CHECK(out.rows == n && out.cols == n_embd, "moe_ffn: output shape mismatch");

  // Optional F32 biases: one row per expert (router: one row of n_expert).
  const auto bias_rows = [&](const Weight* b, int64_t len, const char* what) -> const float* {
    if (!b) return nullptr;
    MEMRA_CHECK(b->type == QType::F32 && b->ne[0] == len && b->n_rows() == (b == w.router_bias ? 1 : p.n_expert),
                "moe_ffn: {} bias '{}' must be F32 [{}{}]", what, b->name, len,
                b == w.router_bias ? "" : fmt::format(", {}", p.n_expert));
    return static_cast<const float*>(b->data);
  };
  const float* br = bias_rows(w.router_bias, p.n_expert, "router");
  const float* bg = bias_rows(w.gate_bias, n_ff, "gate");
  const float* bu = bias_rows(w.up_bias, n_ff, "up");
  const float* bd = bias_rows(w.down_bias, n_embd, "down");
  const auto add_row = [](View v, const float* b) {
    if (!b) return;
    for (int64_t r = 0; r < v.rows; ++r)
      for (int64_t c = 0; c < v.cols; ++c) v.row(r)[c] += b[c];
  };

  std::vector<float> logits((size_t)(n * p.n_expert));
  matmul(*w.router, x, View{logits.data(), n, p.n_expert, p.n_expert}, nullptr);
  add_row(View{logits.data(), n, p.n_expert, p.n_expert}, br);
  std::vector<int32_t> ids((size_t)(n * k_used));
  std::vector<float> wts((size_t)(n * k_used));
  for (int64_t t = 0; t < n; ++t)
    moe_route(logits.data() + t * p.n_expert, p, ids.data() + t * k_used, wts.data() + t * k_used);

  // Per (token, slot) expert outputs, summed in slot order so the result does not depend on
  // how tokens were grouped by expert.
  std::vector<float> slot((size_t)(n * k_used * n_embd), 0.0f);
  for (int e = 0; e < p.n_expert; ++e) {
    std::vector<int64_t> members;  // index t * k_used + k
    for (int64_t i = 0; i < n * k_used; ++i)
      if (ids[(size_t)i] == e) members.push_back(i);
    if (members.empty()) continue;
    const int64_t m = (int64_t)members.size();
    std::vector<float> xs((size_t)(m * n_embd)), g((size_t)(m * n_ff)), u((size_t)(m * n_ff)),
        d((size_t)(m * n_embd));
    for (int64_t j = 0; j < m; ++j)
      std::memcpy(&xs[(size_t)(j * n_embd)], x.row(members[(size_t)j] / k_used),
                  (size_t)n_embd * sizeof(float));
    View xv{xs.data(), m, n_embd, n_embd}, gv{g.data(), m, n_ff, n_ff}, uv{u.data(), m, n_ff, n_ff},
        dv{d.data(), m, n_embd, n_embd};
    matmul_rows(*w.gate_exps, (int64_t)e * n_ff, n_ff, xv, gv, nullptr);
    matmul_rows(*w.up_exps, (int64_t)e * n_ff, n_ff, xv, uv, nullptr);
    add_row(gv, bg ? bg + e * n_ff : nullptr);
    add_row(uv, bu ? bu + e * n_ff : nullptr);
    glu(gv, uv, p.act, gv);
    matmul_rows(*w.down_exps, (int64_t)e * n_embd, n_embd, gv, dv, nullptr);
    add_row(dv, bd ? bd + e * n_embd : nullptr);
    for (int64_t j = 0; j < m; ++j) {
      const int64_t i = members[(size_t)j];
      const float wk = wts[(size_t)i];
      float* s = &slot[(size_t)(i * n_embd)];
      for (int64_t c = 0; c < n_embd; ++c) s[c] = wk * d[(size_t)(j * n_embd + c)];
    }
  }
  for (int64_t t = 0; t < n; ++t) {
    float* o = out.row(t);
    for (int64_t c = 0; c < n_embd; ++c) {
      float acc = 0.0f;
      for (int k = 0; k < k_used; ++k) acc += slot[(size_t)((t * k_used + k) * n_embd + c)];
      o[c] = acc;
    }
  }
}

}  // namespace memra::backend::cpu
