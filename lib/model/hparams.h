#pragma once
// Hyper-parameters of a decoder-only transformer, read from the GGUF metadata
// (`<arch>.<key>`). Missing required keys are errors naming the key and the file.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gguf/gguf.h"

namespace memra::model {

// One layer's attention geometry (gemma4 and step35 vary it per layer).
struct LayerGeom {
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int n_rot = 0;
};

struct HParams {
  std::string arch;
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int n_ff = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;
  float rms_eps = 1e-5f;

  backend::RopeMode rope_mode = backend::RopeMode::Normal;
  int n_rot = 0;
  float rope_base = 10000.0f;
  float rope_freq_scale = 1.0f;
  // YaRN (rope.scaling.type = "yarn"); ext_factor 0 = off.
  float yarn_ext_factor = 0.0f;
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  int n_ctx_orig = 0;

  // Mixture of experts (n_expert == 0: dense FFN).
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;
  int n_ff_shexp = 0;  // the shared expert's FFN width (expert_shared_feed_forward_length), 0: none
  backend::MoeGating expert_gating = backend::MoeGating::Softmax;
  bool expert_weights_norm = true;
  float expert_weights_scale = 1.0f;

  float logit_softcap = 0.0f;

  // Attention scale; 0 = 1 / sqrt(head_dim_k).
  float attn_scale = 0.0f;

  // Sliding-window attention: layers with swa_layer[l] set see the last n_swa positions
  // (key j visible from position p iff p - j < n_swa) and use the *_swa RoPE settings.
  int n_swa = 0;
  std::vector<bool> swa_layer;  // n_layer entries, or empty (no SWA layer)
  float rope_base_swa = 10000.0f;
  float rope_freq_scale_swa = 1.0f;
  bool is_swa(int layer) const { return !swa_layer.empty() && swa_layer[(size_t)layer]; }

  // Per-layer attention geometry, n_layer entries (read_common_hparams fills it; arch files may
  // change entries and then call fit_geometry). The scalars n_head ... n_rot above are the
  // largest over the layers (scratch sizes); layer code reads geom(l).
  std::vector<LayerGeom> layer_geom;
  const LayerGeom& geom(int layer) const { return layer_geom[(size_t)layer]; }
  // Checks every layer's geometry and sets the scalars to the maxima.
  void fit_geometry(const std::string& path);
};

// Typed metadata access with `<arch>.` prefixed keys and errors naming the key and the file.
class Meta {
 public:
  Meta(const gguf::File& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
  const std::string& arch() const { return arch_; }
  int64_t req_int(const std::string& key) const;       // "<arch>.<key>", required
  int64_t opt_int(const std::string& key, int64_t def) const;
  double req_float(const std::string& key) const;
  double opt_float(const std::string& key, double def) const;
  bool opt_bool(const std::string& key, bool def) const;
  std::string opt_string(const std::string& key, const std::string& def) const;
  // A per-layer integer: an array of n_layer entries, or one scalar for every layer, or def.
  std::vector<int64_t> per_layer_int(const std::string& key, int n_layer, std::optional<int64_t> def) const;

 private:
  std::string full(const std::string& key) const { return arch_ + "." + key; }
  const gguf::File& f_;
  std::string arch_;
};

// The keys every decoder shares: sizes, norm eps, RoPE and its scaling, MoE counts when
// present. n_vocab comes from token_embd.weight.
HParams read_common_hparams(const gguf::File& f, const std::string& arch);

// Sliding-window layers from '<arch>.attention.sliding_window' (0 or absent: none) and
// '<arch>.attention.sliding_window_pattern': an array of one bool per layer, or an integer p
// (layer l slides iff l % p < p - 1, every p-th layer global), or absent (default_pattern).
// The SWA layers' RoPE base is '<arch>.rope.freq_base_swa' (default_base_swa when absent, or the
// full layers' base when that is 0); their frequency scale is the full layers' unless
// unscaled_swa (gemma3: the linear scaling applies to the global layers only).
void read_swa(const gguf::File& f, HParams& hp, int default_pattern, float default_base_swa, bool unscaled_swa);

}  // namespace memra::model
