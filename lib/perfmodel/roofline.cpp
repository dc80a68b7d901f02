#include "perfmodel/roofline.h"

#include <string_view>

#include "core/error.h"
#include "gguf/gguf.h"

namespace memra::perf {
namespace {

bool ends_with(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}
bool is_expert(const TensorDesc& t) { return t.name.find("_exps.") != std::string::npos; }
bool has_output(const std::vector<TensorDesc>& ts) {
  for (const auto& t : ts)
    if (t.name == "output.weight") return true;
  return false;
}
// A matrix that a matmul multiplies by (2-D or 3-D weight; norms, biases and the router's
// f32 vectors are 1-D except ffn_gate_inp, which is a real matmul).
bool is_matmul_weight(const TensorDesc& t) { return t.ne.size() >= 2 && ends_with(t.name, ".weight"); }

}  // namespace

uint64_t TensorDesc::elements() const {
  uint64_t n = 1;
  for (auto d : ne) n *= d;
  return ne.empty() ? 0 : n;
}

double kv_row_bytes(QType t, int dim) {
  const auto& tr = qtype_traits(t);
  const uint64_t blocks = ((uint64_t)dim + tr.block_elems - 1) / tr.block_elems;
  return (double)(blocks * tr.block_bytes);
}

DecodeBytes decode_bytes(const std::vector<TensorDesc>& tensors, const ModelShape& s, const KvTypes& kv,
                         int64_t depth) {
  DecodeBytes b;
  const bool tied = !has_output(tensors);
  for (const auto& t : tensors) {
    if (t.name == "token_embd.weight" && !tied) continue;
    double bytes = (double)t.bytes;
    if (is_expert(t)) {
      MEMRA_CHECK(s.n_expert > 0 && s.n_expert_used > 0, "expert tensor '{}' but no expert counts", t.name);
      bytes = bytes * s.n_expert_used / s.n_expert;
    }
    b.weights += bytes;
  }
  const double row = kv_row_bytes(kv.k, s.n_head_kv * s.head_dim_k) + kv_row_bytes(kv.v, s.n_head_kv * s.head_dim_v);
  b.kv = (double)depth * s.n_layer * row;
  return b;
}

double prefill_flops(const std::vector<TensorDesc>& tensors, const ModelShape& s, int64_t n, int64_t depth) {
  const bool tied = !has_output(tensors);
  double per_token = 0;
  for (const auto& t : tensors) {
    if (!is_matmul_weight(t)) continue;
    if (t.name == "token_embd.weight" && !tied) continue;  // a lookup, not a matmul
    double el = (double)t.elements();
    if (is_expert(t)) el = el * s.n_expert_used / s.n_expert;
    per_token += 2.0 * el;
  }
  // Attention: QK^T and PV, 2 FLOPs per multiply-add, over the keys each token sees.
  const double keys = (double)n * depth + (double)n * (n + 1) / 2.0;
  const double attn = 2.0 * s.n_layer * (double)s.n_head * (s.head_dim_k + s.head_dim_v) * keys;
  return per_token * (double)n + attn;
}

std::vector<TensorDesc> tensors_of(const gguf::File& f) {
  std::vector<TensorDesc> v;
  for (const auto& t : f.tensors()) v.push_back({t.name, t.type, t.ne, t.n_bytes});
  return v;
}

ModelShape shape_of(const gguf::File& f) {
  const std::string arch = f.get_string("general.architecture");
  auto key = [&](const char* k) { return arch + "." + k; };
  ModelShape s;
  s.n_layer = (int)f.get_int(key("block_count"));
  s.n_head = (int)f.get_int(key("attention.head_count"));
  s.n_head_kv = (int)f.find_int(key("attention.head_count_kv")).value_or(s.n_head);
  const int n_embd = (int)f.get_int(key("embedding_length"));
  MEMRA_CHECK(s.n_head > 0, "{}: {} must be > 0", f.path(), key("attention.head_count"));
  s.head_dim_k = (int)f.find_int(key("attention.key_length")).value_or(n_embd / s.n_head);
  s.head_dim_v = (int)f.find_int(key("attention.value_length")).value_or(n_embd / s.n_head);
  s.n_expert = (int)f.find_int(key("expert_count")).value_or(0);
  s.n_expert_used = (int)f.find_int(key("expert_used_count")).value_or(0);
  return s;
}

}  // namespace memra::perf
