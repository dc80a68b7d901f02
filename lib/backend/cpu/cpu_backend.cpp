// Memory, KV plumbing and the element-wise ops of the CPU backend.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_internal.h"
#include "core/error.h"
#include "core/half.h"

namespace memra::backend {

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& opts) {
  return std::make_unique<cpu::CpuBackend>(opts);
}

namespace cpu {

namespace {

void check_same_shape(const char* op, View a, View b) {
  MEMRA_CHECK(a.rows == b.rows && a.cols == b.cols, "{}: shape mismatch [{} x {}] vs [{} x {}]",
              op, a.rows, a.cols, b.rows, b.cols);
}

const float* f32_vector(const Weight* w, int64_t n, const char* what) {
  if (!w) return nullptr;
  MEMRA_CHECK(w->type == QType::F32 && w->ne[0] == n && w->n_rows() == 1,
              "{}: weight '{}' must be F32 [{}], got {} [{}, {}]", what, w->name, n,
              qtype_name(w->type), w->ne[0], w->n_rows());
  return static_cast<const float*>(w->data);
}

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}
// GeluNumerics::GgmlF16Table: the table entry of the argument's f16 value (the entry itself is
// the f32 GELU of that f16 value, rounded to f16), computed here instead of looked up.
inline float gelu_tanh_f16(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return fp16_to_f32(f32_to_fp16(gelu_tanh(fp16_to_f32(f32_to_fp16(x)))));
}
inline float apply_act(Activation a, bool f16_gelu, float x) {
  if (a == Activation::Silu) return silu(x);
  if (a == Activation::Sigmoid) return 1.0f / (1.0f + std::exp(-x));
  return f16_gelu ? gelu_tanh_f16(x) : gelu_tanh(x);
}
// gpt-oss's GLU (alpha 1.702, limit 7): the gate clamped from above, the up from both sides.
inline float swiglu_oai(float g, float u) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  const float x = std::min(g, kLimit);
  const float y = std::clamp(u, -kLimit, kLimit);
  return x / (1.0f + std::exp(-kAlpha * x)) * (y + 1.0f);
}

// RMS-normalizes one row: the sum of squares in f64, the scale in f32 like ggml's rms_norm.
void rms_row(const float* x, const float* w, float eps, int64_t n, float* out) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += (double)x[i] * x[i];
  const float mean = (float)(sum / (double)n);
  const float s = 1.0f / std::sqrt(mean + eps);
  if (w)
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * s) * w[i];
  else
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * s;
}

}  // namespace

Buffer CpuBackend::alloc(int64_t n_floats) {
  MEMRA_CHECK(n_floats >= 0, "alloc: negative size {}", n_floats);
  Buffer b;
  b.mem = std::shared_ptr<float>(new float[(size_t)std::max<int64_t>(n_floats, 1)](),
                                 std::default_delete<float[]>());
  b.size = n_floats;
  return b;
}

Weight CpuBackend::upload_weight(const std::string& name, QType type, std::span<const int64_t> ne,
                                 const void* host, std::shared_ptr<const void> keep_alive) {
  MEMRA_CHECK(!ne.empty() && ne.size() <= 4, "tensor '{}': {} dims not supported", name, ne.size());
  Weight w;
  w.name = name;
  w.type = type;
  w.n_dims = (int)ne.size();
  for (size_t i = 0; i < ne.size(); ++i) w.ne[i] = ne[i];
  auto rb = qtype_row_bytes(type, (uint64_t)w.ne[0]);
  MEMRA_CHECK(rb.has_value(), "tensor '{}': row length {} is not a multiple of the {} block size {}",
              name, w.ne[0], qtype_name(type), qtype_traits(type).block_elems);
  w.row_bytes = *rb;
  const size_t bytes = (size_t)w.row_bytes * (size_t)w.n_rows();
  if (keep_alive) {
    w.data = host;
    w.storage = std::move(keep_alive);
  } else {
    auto copy = std::shared_ptr<uint8_t>(new uint8_t[std::max<size_t>(bytes, 1)],
                                         std::default_delete<uint8_t[]>());
    std::memcpy(copy.get(), host, bytes);
    w.data = copy.get();
    w.storage = std::move(copy);
  }
  return w;
}

void CpuBackend::to_host(View src, float* dst) {
  for (int64_t r = 0; r < src.rows; ++r)
    std::memcpy(dst + r * src.cols, src.row(r), (size_t)src.cols * sizeof(float));
}

void CpuBackend::from_host(const float* src, View dst) {
  for (int64_t r = 0; r < dst.rows; ++r)
    std::memcpy(dst.row(r), src + r * dst.cols, (size_t)dst.cols * sizeof(float));
}

std::unique_ptr<KvStore> CpuBackend::create_kv(const kv::KvShape& shape, const kv::KvOptions& opts) {
  return std::make_unique<CpuKv>(shape, opts);
}

void CpuBackend::kv_write(KvStore& kvs, int layer, int pos0, View k, View v) {
  auto& c = dynamic_cast<CpuKv&>(kvs).cache;
  const auto& ls = c.shape().layers.at((size_t)layer);
  MEMRA_CHECK(k.cols == ls.k_row() && v.cols == ls.v_row() && k.rows == v.rows,
              "kv_write: layer {} expects K [n, {}] and V [n, {}], got [{}, {}] and [{}, {}]", layer,
              ls.k_row(), ls.v_row(), k.rows, k.cols, v.rows, v.cols);
  c.write(layer, pos0, (int)k.rows, k.data, k.ld, v.data, v.ld);
}

void CpuBackend::rms_norm(View x, const Weight* w, float eps, View out) {
  check_same_shape("rms_norm", x, out);
  const float* wd = f32_vector(w, x.cols, "rms_norm");
  pool_.parallel_for((size_t)x.rows, [&](size_t b, size_t e) {
    for (size_t r = b; r < e; ++r) rms_row(x.row((int64_t)r), wd, eps, x.cols, out.row((int64_t)r));
  });
}

void CpuBackend::add_rms_norm(View residual, View delta, const Weight* w, float eps, View out) {
  check_same_shape("add_rms_norm", residual, delta);
  check_same_shape("add_rms_norm", residual, out);
  const float* wd = f32_vector(w, residual.cols, "add_rms_norm");
  for (int64_t r = 0; r < residual.rows; ++r) {
    float* x = residual.row(r);
    const float* d = delta.row(r);
    for (int64_t i = 0; i < residual.cols; ++i) x[i] += d[i];
    rms_row(x, wd, eps, residual.cols, out.row(r));
  }
}

void CpuBackend::layer_norm(View x, const Weight* w, const Weight* b, float eps, View out) {
  check_same_shape("layer_norm", x, out);
  const float* wd = f32_vector(w, x.cols, "layer_norm");
  const float* bd = f32_vector(b, x.cols, "layer_norm");
  const int64_t n = x.cols;
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* xi = x.row(r);
    float* o = out.row(r);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += xi[i];
    const float mean = (float)(sum / (double)n);
    double var = 0.0;
    for (int64_t i = 0; i < n; ++i) var += (double)(xi[i] - mean) * (xi[i] - mean);
    const float s = 1.0f / std::sqrt((float)(var / (double)n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      float v = (xi[i] - mean) * s;
      if (wd) v *= wd[i];
      if (bd) v += bd[i];
      o[i] = v;
    }
  }
}

void CpuBackend::head_rms_norm(View x, int n_head, int head_dim, const Weight* w, float eps) {
  MEMRA_CHECK((int64_t)n_head * head_dim == x.cols, "head_rms_norm: {} heads x {} != {} columns",
              n_head, head_dim, x.cols);
  const float* wd = f32_vector(w, head_dim, "head_rms_norm");
  for (int64_t r = 0; r < x.rows; ++r)
    for (int h = 0; h < n_head; ++h) {
      float* p = x.row(r) + (int64_t)h * head_dim;
      rms_row(p, wd, eps, head_dim, p);
    }
}

void CpuBackend::glu(View gate, View up, Activation act, View out) {
  check_same_shape("glu", gate, up);
  check_same_shape("glu", gate, out);
  const bool f16_gelu = opts_.gelu_numerics == GeluNumerics::GgmlF16Table;
  for (int64_t r = 0; r < gate.rows; ++r) {
    const float* g = gate.row(r);
    const float* u = up.row(r);
    float* o = out.row(r);
    if (act == Activation::SwigluOai)
      for (int64_t i = 0; i < gate.cols; ++i) o[i] = swiglu_oai(g[i], u[i]);
    else
      for (int64_t i = 0; i < gate.cols; ++i) o[i] = apply_act(act, f16_gelu, g[i]) * u[i];
  }
}

void CpuBackend::activate(View x, Activation act) {
  MEMRA_CHECK(act != Activation::SwigluOai, "activate: {} exists only as a GLU", activation_name(act));
  const bool f16_gelu = opts_.gelu_numerics == GeluNumerics::GgmlF16Table;
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t i = 0; i < x.cols; ++i) x.row(r)[i] = apply_act(act, f16_gelu, x.row(r)[i]);
}

void CpuBackend::add(View a, View b) {
  check_same_shape("add", a, b);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t i = 0; i < a.cols; ++i) a.row(r)[i] += b.row(r)[i];
}

void CpuBackend::scale(View x, float s) {
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t i = 0; i < x.cols; ++i) x.row(r)[i] *= s;
}

void CpuBackend::softcap(View x, float cap) {
  MEMRA_CHECK(cap > 0.0f, "softcap: cap must be positive, got {}", cap);
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t i = 0; i < x.cols; ++i) x.row(r)[i] = cap * std::tanh(x.row(r)[i] / cap);
}

void CpuBackend::sigmoid_head_gate(View x, int n_head, int head_dim, View gate) {
  MEMRA_CHECK(n_head > 0 && head_dim > 0 && (int64_t)n_head * head_dim == x.cols,
              "sigmoid_head_gate: {} heads x {} != {} columns", n_head, head_dim, x.cols);
  MEMRA_CHECK(gate.rows == x.rows && gate.cols == n_head, "sigmoid_head_gate: gate [{} x {}] must be [{} x {}]",
              gate.rows, gate.cols, x.rows, n_head);
  for (int64_t r = 0; r < x.rows; ++r)
    for (int h = 0; h < n_head; ++h) {
      // f32 like ggml's sigmoid, then an f32 product per element
      const float s = 1.0f / (1.0f + std::exp(-gate.row(r)[h]));
      float* p = x.row(r) + (int64_t)h * head_dim;
      for (int i = 0; i < head_dim; ++i) p[i] *= s;
    }
}

}  // namespace cpu
}  // namespace memra::backend
