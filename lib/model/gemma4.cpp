// gemma4 (dense): gemma3's layout (embeddings scaled by sqrt(n_embd), sandwich norms, per-head q/k
// RMSNorm, NeoX RoPE, GELU-tanh gated FFN) with
// - sliding-window layers given by an array of one bool per layer (attention.sliding_window_pattern)
//   and their own head sizes and rotary width (attention.key_length_swa / value_length_swa,
//   rope.dimension_count_swa), RoPE base rope.freq_base_swa (default: the global base);
// - per-layer kv head counts;
// - attention scale 1 (q and k are RMS-normed; no 1/sqrt(head_dim));
// - V RMS-normed per head without a weight; a layer without attn_v.weight uses its K projection
//   (before the K norm) as V;
// - rope_freqs.weight (proportional RoPE: frequency divisors, huge for the pairs left unrotated) on
//   the global layers only;
// - blk.<l>.layer_output_scale.weight: the stream after layer l multiplied by it;
// - final logit softcapping (final_logit_softcapping).
// Not supported (refused with an error): per-layer token embeddings, KV sharing between layers, MoE
// layers.
#include "core/error.h"
#include "model/decoder.h"

namespace memra::model {

std::unique_ptr<Model> make_gemma4(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  const std::string arch = "gemma4";
  HParams hp = read_common_hparams(*f, arch);
  Meta m(*f, arch);
  hp.rope_mode = backend::RopeMode::Neox;

  const int64_t per_layer_embd = m.opt_int("embedding_length_per_layer_input", 0);
  MEMRA_CHECK(per_layer_embd == 0,
              "model '{}' ({}): per-layer token embeddings ('{}.embedding_length_per_layer_input' = {}) are not "
              "supported", f->path(), arch, arch, per_layer_embd);
  const int64_t shared_kv = m.opt_int("attention.shared_kv_layers", 0);
  MEMRA_CHECK(shared_kv == 0,
              "model '{}' ({}): KV sharing between layers ('{}.attention.shared_kv_layers' = {}) is not supported",
              f->path(), arch, arch, shared_kv);
  for (int l = 0; l < hp.n_layer; ++l) {
    const std::string router = "blk." + std::to_string(l) + ".ffn_gate_inp.weight";
    MEMRA_CHECK(!f->find_tensor(router), "model '{}' ({}): MoE layers ('{}') are not supported", f->path(), arch,
                router);
  }

  // Sliding-window layers: both keys required, the pattern one bool per layer.
  m.req_int("attention.sliding_window");
  const std::string pattern_key = arch + ".attention.sliding_window_pattern";
  const gguf::Value* pattern = f->find(pattern_key);
  MEMRA_CHECK(pattern && pattern->type == gguf::ValueType::ARRAY,
              "model '{}' ({}): metadata key '{}' must be an array of one bool per layer{}", f->path(), arch,
              pattern_key, pattern ? "" : " (missing)");
  read_swa(*f, hp, 0, 0.0f, false);

  // The sliding-window layers' head sizes and rotary width.
  const int n_rot_full = hp.geom(0).n_rot;  // read_common_hparams: the same for every layer
  const int hk_swa = (int)m.req_int("attention.key_length_swa");
  const int hv_swa = (int)m.req_int("attention.value_length_swa");
  const int rot_swa = (int)m.opt_int("rope.dimension_count_swa", n_rot_full);
  for (int l = 0; l < hp.n_layer; ++l) {
    LayerGeom& g = hp.layer_geom[(size_t)l];
    if (hp.is_swa(l)) {
      g.head_dim_k = hk_swa;
      g.head_dim_v = hv_swa;
      g.n_rot = rot_swa;
    }
    MEMRA_CHECK(g.head_dim_k == g.head_dim_v, "model '{}' ({}): layer {}: key length {} != value length {}",
                f->path(), arch, l, g.head_dim_k, g.head_dim_v);
  }
  hp.fit_geometry(f->path());
  hp.attn_scale = 1.0f;

  bool any_full = false;
  for (int l = 0; l < hp.n_layer; ++l) any_full = any_full || !hp.is_swa(l);
  MEMRA_CHECK(!any_full || f->find_tensor("rope_freqs.weight"),
              "model '{}' ({}): missing tensor 'rope_freqs.weight' (the global layers' RoPE frequency factors)",
              f->path(), arch);

  DecoderSpec spec;
  spec.attn.qk_norm = true;
  spec.attn.v_optional = true;
  spec.attn.v_norm = true;
  spec.act = backend::Activation::GeluTanh;
  spec.post_norms = true;
  spec.embd_scale = true;
  spec.rope_freqs_full_only = true;
  spec.layer_out_scale = true;
  return std::make_unique<DecoderModel>(std::move(f), be, std::move(hp), spec);
}

}  // namespace memra::model
