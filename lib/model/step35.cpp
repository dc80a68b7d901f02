// step35 (Step-3.5): a pre-norm decoder whose layers differ in attention geometry.
// - Attention: per-layer head counts (head_count / head_count_kv arrays), per-head q/k RMSNorm,
//   NeoX RoPE, scale 1/sqrt(head_dim). Layers marked in sliding_window_pattern (one bool per
//   layer, required) attend to the last sliding_window positions, rotate rope.dimension_count_swa
//   dims (default rope.dimension_count) with rope.freq_base_swa and without rope_freqs; the other
//   (full-attention) layers rotate only half of rope.dimension_count.
// - A head-wise attention gate on every layer: each head's attention output times the sigmoid of
//   that head's entry of attn_gate(h), h the attention's normed input, before attn_output.
// - FFN: the leading layers (those without ffn_gate_inp; leading_dense_block_count) a dense SwiGLU;
//   the rest a routed MoE (sigmoid router by default, selection bias exp_probs_b, top k, weights
//   renormalized when expert_weights_norm, default off, then times expert_weights_scale) plus an
//   always-on, ungated SwiGLU shared expert whose output is added to the routed sum.
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "model/decoder.h"

namespace memra::model {

namespace {

constexpr const char* kArch = "step35";

std::string key(const char* k) { return fmt::format("{}.{}", kArch, k); }

// Features of real Step-3.5 files this implementation does not run: refused by name rather than
// computed differently.
void refuse_unsupported(const gguf::File& f, const HParams& hp) {
  Meta m(f, kArch);
  const int64_t nextn = m.opt_int("nextn_predict_layers", 0);
  MEMRA_CHECK(nextn == 0, "model '{}' ({}): '{}' = {}: multi-token-prediction layers are not supported", f.path(),
              kArch, key("nextn_predict_layers"), nextn);
  // SwiGLU clamps (llama.cpp clamps the expert / shared-expert GLU inputs where a limit > 1e-6).
  for (const char* k : {"swiglu_clamp_exp", "swiglu_clamp_shexp"}) {
    const gguf::Value* v = f.find(key(k));
    if (!v) continue;
    std::vector<double> limits;
    if (v->type == gguf::ValueType::ARRAY)
      for (const auto& x : v->as_array().items) limits.push_back(x.as_float());
    else
      limits.push_back(v->as_float());
    for (double lim : limits)
      MEMRA_CHECK(lim <= 1e-6, "model '{}' ({}): '{}' sets a SwiGLU clamp ({}), which is not supported", f.path(),
                  kArch, key(k), lim);
  }
  // Separate head sizes for the sliding-window layers.
  const std::pair<const char*, int> swa_dims[] = {{"attention.key_length_swa", hp.head_dim_k},
                                                  {"attention.value_length_swa", hp.head_dim_v}};
  for (const auto& [k, full] : swa_dims) {
    const auto v = f.find_int(key(k));
    MEMRA_CHECK(!v || *v == full, "model '{}' ({}): '{}' = {} differs from the full layers' {}: not supported",
                f.path(), kArch, key(k), v.value_or(0), full);
  }
}

}  // namespace

std::unique_ptr<Model> make_step35(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  HParams hp = read_common_hparams(*f, kArch);
  Meta m(*f, kArch);
  hp.rope_mode = backend::RopeMode::Neox;
  refuse_unsupported(*f, hp);

  // Sliding-window layers: both keys required, the pattern as one bool per layer.
  MEMRA_CHECK(f->find(key("attention.sliding_window")), "model '{}' ({}): missing metadata key '{}'", f->path(),
              kArch, key("attention.sliding_window"));
  const gguf::Value* pattern = f->find(key("attention.sliding_window_pattern"));
  MEMRA_CHECK(pattern && pattern->type == gguf::ValueType::ARRAY,
              "model '{}' ({}): metadata key '{}' must be an array of one bool per layer", f->path(), kArch,
              key("attention.sliding_window_pattern"));
  read_swa(*f, hp, 0, 0.0f, false);
  MEMRA_CHECK(hp.n_swa > 0, "model '{}' ({}): '{}' must be positive", f->path(), kArch,
              key("attention.sliding_window"));

  // Rotary dims per layer: the full-attention layers rotate half of rope.dimension_count.
  const int n_rot_full = hp.geom(0).n_rot;  // rope.dimension_count (default: the head size)
  const int n_rot_swa = (int)m.opt_int("rope.dimension_count_swa", n_rot_full);
  for (int l = 0; l < hp.n_layer; ++l) hp.layer_geom[(size_t)l].n_rot = hp.is_swa(l) ? n_rot_swa : n_rot_full / 2;
  hp.fit_geometry(f->path());

  // Dense layers lead; the layers with a router are MoE.
  const auto has_router = [&](int l) { return f->find_tensor(blk(l, "ffn_gate_inp.weight")) != nullptr; };
  int n_dense = 0;
  while (n_dense < hp.n_layer && !has_router(n_dense)) ++n_dense;
  for (int l = n_dense; l < hp.n_layer; ++l)
    MEMRA_CHECK(has_router(l), "model '{}' ({}): layer {} has no tensor '{}' but layer {} has one: dense FFN layers "
                "must lead", f->path(), kArch, l, blk(l, "ffn_gate_inp.weight"), n_dense);
  const int64_t lead = m.opt_int("leading_dense_block_count", n_dense);
  MEMRA_CHECK(lead == n_dense, "model '{}' ({}): '{}' = {}, but the first {} layers have no router", f->path(),
              kArch, key("leading_dense_block_count"), lead, n_dense);

  // Router defaults (llama.cpp's for this architecture): sigmoid gating, no renormalization, a
  // weights scale of 0 or absent meaning 1.
  if (!f->find(key("expert_gating_func"))) hp.expert_gating = backend::MoeGating::Sigmoid;
  hp.expert_weights_norm = m.opt_bool("expert_weights_norm", false);
  if (hp.expert_weights_scale == 0.0f) hp.expert_weights_scale = 1.0f;

  DecoderSpec spec;
  spec.attn.qk_norm = true;
  spec.attn.head_gate = true;
  spec.moe = n_dense < hp.n_layer;
  spec.n_dense_lead = n_dense;
  spec.shared_expert = true;
  spec.rope_freqs_full_only = true;
  return std::make_unique<DecoderModel>(std::move(f), be, std::move(hp), spec);
}

}  // namespace memra::model
