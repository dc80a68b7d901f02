#include "synth/plan.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace memra::synth {
namespace {

enum class Cat { TokenEmbd, Output, AttnQ, AttnK, AttnV, AttnOutput, FfnGate, FfnUp, FfnDown, Router, Norm };

struct Entry {
  TensorPlan t;
  Cat cat;
  int layer;  // -1 outside the blocks
};

const struct {
  Mix mix;
  std::string_view name;
  uint32_t file_type;
  QType default_type;
} kMixes[] = {
    {Mix::F16, "f16", 1, QType::F16},
    {Mix::Q8_0, "q8_0", 7, QType::Q8_0},
    {Mix::Q4_0, "q4_0", 2, QType::Q4_0},
    {Mix::Q4_K_M, "q4_k_m", 15, QType::Q4_K},
    {Mix::Q5_K_M, "q5_k_m", 17, QType::Q5_K},
    {Mix::Q6_K, "q6_k", 18, QType::Q6_K},
    {Mix::IQ4_XS, "iq4_xs", 30, QType::IQ4_XS},
    {Mix::NVFP4, "nvfp4", 39, QType::NVFP4},
    {Mix::FP8, "fp8", kFileTypeFp8, QType::FP8_E4M3},
};

const auto& mix_row(Mix m) {
  for (const auto& r : kMixes)
    if (r.mix == m) return r;
  MEMRA_FAIL("synth: unknown mix id {}", (int)m);
}

// llama.cpp's "use more bits" layer pattern (Q4_K_M/Q5_K_M): the first and last eighth of the
// layers and every third layer in between. With 36 layers it picks 0-3, 6, 9, ..., 30, 31-35:
// 18 attn_v + 18 ffn_down, which with output.weight gives the quantize log's 37 q6_K tensors.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// Type for a weight under the mix, following llama.cpp's llama_tensor_get_type for the ftypes
// we offer (no imatrix). Only rules that can fire for these mixes and archs are here.
QType weight_type(Mix mix, Cat cat, int layer, const Dims& d, uint64_t ne0) {
  const QType def = mix_row(mix).default_type;
  if (mix == Mix::F16 || mix == Mix::FP8) return def;  // not llama-quantize ftypes: no rules
  const int n_layer = (int)d.n_layer;
  const uint64_t gqa = d.n_head / d.n_head_kv;
  QType t = def;
  if (cat == Cat::Output || (cat == Cat::TokenEmbd && d.tied_output)) {
    if (mix == Mix::NVFP4) t = QType::Q8_0;  // llama.cpp keeps output off NVFP4
    else if (ne0 % qtype_traits(t).block_elems != 0) t = QType::Q8_0;
    else if (t != QType::Q8_0) t = QType::Q6_K;
    return t;
  }
  switch (cat) {
    case Cat::AttnV:
      if (mix == Mix::IQ4_XS && gqa >= 4) t = QType::Q5_K;
      else if ((mix == Mix::Q4_K_M || mix == Mix::Q5_K_M) && use_more_bits(layer, n_layer)) t = QType::Q6_K;
      if (d.n_expert == 8) t = QType::Q8_0;
      break;
    case Cat::AttnK:
      if (d.n_expert == 8) t = QType::Q8_0;
      break;
    case Cat::FfnDown:
      if ((mix == Mix::Q4_K_M || mix == Mix::Q5_K_M) && use_more_bits(layer, n_layer)) t = QType::Q6_K;
      else if (mix == Mix::IQ4_XS && layer < n_layer / 8) t = QType::Q5_K;
      break;
    case Cat::AttnOutput:
      if (d.n_expert == 8 && (mix == Mix::Q4_K_M || mix == Mix::IQ4_XS)) t = QType::Q5_K;
      break;
    default:
      break;
  }
  return t;
}

// llama.cpp's fallback when a row length is not a multiple of the chosen type's block.
QType fallback(QType t, uint64_t ne0, const std::string& name) {
  if (ne0 % qtype_traits(t).block_elems == 0) return t;
  QType f;
  switch (t) {
    case QType::IQ4_XS: f = QType::IQ4_NL; break;
    case QType::Q4_K: f = QType::Q5_0; break;
    case QType::Q5_K: f = QType::Q5_1; break;
    case QType::Q6_K: f = QType::Q8_0; break;
    default:
      MEMRA_FAIL("synth: tensor '{}' has rows of {} values, not a multiple of the {}-value block of {}, "
                 "and {} has no fallback type",
                 name, ne0, qtype_traits(t).block_elems, qtype_name(t), qtype_name(t));
  }
  if (ne0 % qtype_traits(f).block_elems != 0) f = QType::F16;
  return f;
}

int layer_of(const std::string& name) {
  int l = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &l) != 1) return -1;
  return l;
}

}  // namespace

std::string_view mix_name(Mix m) { return mix_row(m).name; }
uint32_t mix_file_type(Mix m) { return mix_row(m).file_type; }

const std::vector<Mix>& all_mixes() {
  static const std::vector<Mix> v = [] {
    std::vector<Mix> r;
    for (const auto& x : kMixes) r.push_back(x.mix);
    return r;
  }();
  return v;
}

Mix mix_from_name(std::string_view name) {
  std::string known;
  for (const auto& r : kMixes) {
    if (r.name == name) return r.mix;
    known += (known.empty() ? "" : ", ") + std::string(r.name);
  }
  MEMRA_FAIL("synth: unknown mix '{}' (known: {})", name, known);
}

uint64_t TensorPlan::n_elements() const {
  uint64_t n = 1;
  for (auto x : ne) n *= x;
  return n;
}

uint64_t TensorPlan::bytes() const {
  const auto rb = qtype_row_bytes(type, ne.empty() ? 0 : ne[0]);
  MEMRA_CHECK(rb.has_value(), "synth: tensor '{}' row of {} does not fit type {}", name, ne[0], qtype_name(type));
  return *rb * rows();
}

uint64_t Plan::tensor_bytes() const {
  uint64_t b = 0;
  for (const auto& t : tensors) b += t.bytes();
  return b;
}

uint64_t Plan::n_params() const {
  uint64_t n = 0;
  for (const auto& t : tensors)
    if (t.init != Init::ScaleGrid) n += t.n_elements();
  return n;
}

std::map<std::string, uint64_t> Plan::type_histogram() const {
  std::map<std::string, uint64_t> h;
  for (const auto& t : tensors) ++h[std::string(qtype_name(t.type))];
  return h;
}

Plan make_plan(const Dims& d, Mix mix) {
  validate(d);
  std::vector<Entry> es;
  auto add = [&](std::string name, std::vector<uint64_t> ne, Cat cat) {
    const int layer = layer_of(name);
    Entry e{{std::move(name), std::move(ne), QType::F32, Init::Weight}, cat, layer};
    es.push_back(std::move(e));
  };
  const uint64_t E = d.n_embd, q_dim = d.n_head * d.head_dim, kv_dim = d.n_head_kv * d.head_dim;
  add("token_embd.weight", {E, d.n_vocab}, Cat::TokenEmbd);
  add("output_norm.weight", {E}, Cat::Norm);
  if (!d.tied_output) add("output.weight", {E, d.n_vocab}, Cat::Output);
  for (uint64_t i = 0; i < d.n_layer; ++i) {
    const std::string b = fmt::format("blk.{}.", i);
    add(b + "attn_norm.weight", {E}, Cat::Norm);
    add(b + "attn_q.weight", {E, q_dim}, Cat::AttnQ);
    add(b + "attn_k.weight", {E, kv_dim}, Cat::AttnK);
    add(b + "attn_v.weight", {E, kv_dim}, Cat::AttnV);
    add(b + "attn_output.weight", {q_dim, E}, Cat::AttnOutput);
    if (d.qk_norm) {
      add(b + "attn_q_norm.weight", {d.head_dim}, Cat::Norm);
      add(b + "attn_k_norm.weight", {d.head_dim}, Cat::Norm);
    }
    add(b + "ffn_norm.weight", {E}, Cat::Norm);
    if (d.is_moe()) {
      add(b + "ffn_gate_inp.weight", {E, d.n_expert}, Cat::Router);
      add(b + "ffn_gate_exps.weight", {E, d.n_ff_exp, d.n_expert}, Cat::FfnGate);
      add(b + "ffn_up_exps.weight", {E, d.n_ff_exp, d.n_expert}, Cat::FfnUp);
      add(b + "ffn_down_exps.weight", {d.n_ff_exp, E, d.n_expert}, Cat::FfnDown);
    } else {
      add(b + "ffn_gate.weight", {E, d.n_ff}, Cat::FfnGate);
      add(b + "ffn_up.weight", {E, d.n_ff}, Cat::FfnUp);
      add(b + "ffn_down.weight", {d.n_ff, E}, Cat::FfnDown);
    }
  }

  Plan p;
  p.dims = d;
  p.mix = mix;
  for (auto& e : es) {
    TensorPlan& t = e.t;
    if (e.cat == Cat::Norm) {
      t.type = QType::F32;
      t.init = Init::Norm;
    } else if (e.cat == Cat::Router) {
      t.type = QType::F32;
      t.init = Init::Router;
    } else {
      t.type = fallback(weight_type(mix, e.cat, e.layer, d, t.ne[0]), t.ne[0], t.name);
    }
    p.tensors.push_back(t);
    if (t.type == QType::FP8_E4M3) {
      TensorPlan g;
      g.name = t.name + ".scale_grid";
      g.ne = {(t.ne[0] + kFp8Block - 1) / kFp8Block, (t.ne[1] + kFp8Block - 1) / kFp8Block};
      if (t.ne.size() == 3) g.ne.push_back(t.ne[2]);
      g.type = QType::F32;
      g.init = Init::ScaleGrid;
      p.tensors.push_back(std::move(g));
    }
  }
  // llama-quantize's order (the loader's weight-name order): tensors outside the blocks first, by
  // name, then block by block, by name within a block. A scale grid sorts right after its weight.
  std::stable_sort(p.tensors.begin(), p.tensors.end(), [](const TensorPlan& a, const TensorPlan& b) {
    const int la = layer_of(a.name), lb = layer_of(b.name);
    if (la != lb) return la < lb;
    return a.name < b.name;
  });
  return p;
}

std::string format_plan(const Plan& p) {
  std::string s;
  const size_t n = p.tensors.size();
  for (size_t i = 0; i < n; ++i) {
    const auto& t = p.tensors[i];
    std::string shape;
    for (size_t k = 0; k < 4; ++k) shape += fmt::format("{}{:6}", k ? ", " : "", k < t.ne.size() ? t.ne[k] : 1);
    s += fmt::format("[{:4}/{:4}] {:<40} - [{}], type = {:>8}, {:>13} bytes\n", i + 1, n, t.name, shape,
                     qtype_name(t.type), t.bytes());
  }
  s += "types:";
  for (const auto& [name, count] : p.type_histogram()) s += fmt::format(" {} x{}", name, count);
  const uint64_t b = p.tensor_bytes();
  s += fmt::format("\ntensors: {}, parameters: {}, tensor data: {} bytes ({:.2f} MiB, {:.3f} GiB, {:.2f} bits/param)\n",
                   n, p.n_params(), b, b / 1048576.0, b / 1073741824.0, 8.0 * b / (double)p.n_params());
  return s;
}

}  // namespace memra::synth
