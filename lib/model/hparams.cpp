#include "model/hparams.h"

#include <algorithm>

#include "core/error.h"

namespace memra::model {

int64_t Meta::req_int(const std::string& key) const {
  const std::string k = full(key);
  auto v = f_.find_int(k);
  MEMRA_CHECK(v.has_value(), "model '{}' ({}): missing metadata key '{}'", f_.path(), arch_, k);
  return *v;
}

int64_t Meta::opt_int(const std::string& key, int64_t def) const {
  auto v = f_.find_int(full(key));
  return v ? *v : def;
}

double Meta::req_float(const std::string& key) const {
  const std::string k = full(key);
  auto v = f_.find_float(k);
  MEMRA_CHECK(v.has_value(), "model '{}' ({}): missing metadata key '{}'", f_.path(), arch_, k);
  return *v;
}

double Meta::opt_float(const std::string& key, double def) const {
  auto v = f_.find_float(full(key));
  return v ? *v : def;
}

bool Meta::opt_bool(const std::string& key, bool def) const {
  auto v = f_.find_bool(full(key));
  return v ? *v : def;
}

std::string Meta::opt_string(const std::string& key, const std::string& def) const {
  auto v = f_.find_string(full(key));
  return v ? *v : def;
}

std::vector<int64_t> Meta::per_layer_int(const std::string& key, int n_layer, std::optional<int64_t> def) const {
  const std::string k = full(key);
  const gguf::Value* v = f_.find(k);
  if (!v) {
    MEMRA_CHECK(def.has_value(), "model '{}' ({}): missing metadata key '{}'", f_.path(), arch_, k);
    return std::vector<int64_t>((size_t)n_layer, *def);
  }
  if (v->type != gguf::ValueType::ARRAY) return std::vector<int64_t>((size_t)n_layer, v->as_int());
  const auto& a = v->as_array();
  MEMRA_CHECK(a.items.size() == (size_t)n_layer, "model '{}': '{}' has {} entries for {} layers", f_.path(), k,
              a.items.size(), n_layer);
  std::vector<int64_t> out;
  for (const auto& x : a.items) out.push_back(x.as_int());
  return out;
}

void HParams::fit_geometry(const std::string& path) {
  MEMRA_CHECK(layer_geom.size() == (size_t)n_layer, "model '{}': {} layer geometries for {} layers", path,
              layer_geom.size(), n_layer);
  n_head = n_head_kv = head_dim_k = head_dim_v = n_rot = 0;
  for (int l = 0; l < n_layer; ++l) {
    const LayerGeom& g = layer_geom[(size_t)l];
    MEMRA_CHECK(g.n_head > 0 && g.n_head_kv > 0 && g.head_dim_k > 0 && g.head_dim_v > 0,
                "model '{}': layer {}: non-positive attention size in metadata (n_head {}, n_head_kv {}, head "
                "dims {}/{})", path, l, g.n_head, g.n_head_kv, g.head_dim_k, g.head_dim_v);
    MEMRA_CHECK(g.n_head % g.n_head_kv == 0, "model '{}': layer {}: n_head {} is not a multiple of n_head_kv {}",
                path, l, g.n_head, g.n_head_kv);
    MEMRA_CHECK(g.n_rot >= 0 && g.n_rot <= g.head_dim_k && g.n_rot % 2 == 0,
                "model '{}': layer {}: rope dimension count {} must be even and <= head_dim {}", path, l, g.n_rot,
                g.head_dim_k);
    n_head = std::max(n_head, g.n_head);
    n_head_kv = std::max(n_head_kv, g.n_head_kv);
    head_dim_k = std::max(head_dim_k, g.head_dim_k);
    head_dim_v = std::max(head_dim_v, g.head_dim_v);
    n_rot = std::max(n_rot, g.n_rot);
  }
}

HParams read_common_hparams(const gguf::File& f, const std::string& arch) {
  Meta m(f, arch);
  HParams hp;
  hp.arch = arch;
  hp.n_embd = (int)m.req_int("embedding_length");
  hp.n_layer = (int)m.req_int("block_count");
  MEMRA_CHECK(hp.n_embd > 0 && hp.n_layer > 0, "model '{}': non-positive size in metadata (n_embd {}, n_layer {})",
              f.path(), hp.n_embd, hp.n_layer);
  // Head counts: one value, or one per layer (gemma4, step35).
  const auto heads = m.per_layer_int("attention.head_count", hp.n_layer, std::nullopt);
  hp.n_ff = (int)m.opt_int("feed_forward_length", 0);
  hp.n_ctx_train = (int)m.opt_int("context_length", 0);
  hp.rms_eps = (float)m.req_float("attention.layer_norm_rms_epsilon");
  hp.layer_geom.resize((size_t)hp.n_layer);
  for (int l = 0; l < hp.n_layer; ++l) {
    MEMRA_CHECK(heads[(size_t)l] > 0, "model '{}': non-positive '{}.attention.head_count' {} (layer {})", f.path(),
                arch, heads[(size_t)l], l);
    hp.layer_geom[(size_t)l].n_head = (int)heads[(size_t)l];
  }
  // No head_count_kv: every layer's kv heads = its query heads.
  const auto heads_kv = f.find(arch + ".attention.head_count_kv")
                            ? m.per_layer_int("attention.head_count_kv", hp.n_layer, std::nullopt)
                            : heads;
  const int64_t def_hd = hp.n_embd / heads[0];
  const int head_dim_k = (int)m.opt_int("attention.key_length", def_hd);
  const int head_dim_v = (int)m.opt_int("attention.value_length", def_hd);
  const int n_rot = (int)m.opt_int("rope.dimension_count", head_dim_k);
  for (int l = 0; l < hp.n_layer; ++l) {
    LayerGeom& g = hp.layer_geom[(size_t)l];
    g.n_head_kv = (int)heads_kv[(size_t)l];
    g.head_dim_k = head_dim_k;
    g.head_dim_v = head_dim_v;
    g.n_rot = n_rot;
  }
  hp.fit_geometry(f.path());
  hp.rope_base = (float)m.opt_float("rope.freq_base", 10000.0);

  const std::string scaling = m.opt_string("rope.scaling.type", "none");
  const double factor = m.opt_float("rope.scaling.factor", 0.0);
  if (scaling == "linear" || scaling == "yarn") {
    MEMRA_CHECK(factor > 0.0, "model '{}': rope.scaling.type {} needs '{}.rope.scaling.factor' > 0",
                f.path(), scaling, arch);
    hp.rope_freq_scale = (float)(1.0 / factor);
  } else {
    MEMRA_CHECK(scaling == "none", "model '{}': unsupported '{}.rope.scaling.type' = '{}'", f.path(),
                arch, scaling);
  }
  hp.n_ctx_orig = (int)m.opt_int("rope.scaling.original_context_length", hp.n_ctx_train);
  if (scaling == "yarn") {
    // llama.cpp's default: a negative (absent) ext_factor means a full ramp for YaRN.
    const double ext = m.opt_float("rope.scaling.yarn_ext_factor", -1.0);
    hp.yarn_ext_factor = ext < 0.0 ? 1.0f : (float)ext;
    hp.yarn_attn_factor = (float)m.opt_float("rope.scaling.yarn_attn_factor", 1.0);
    hp.yarn_beta_fast = (float)m.opt_float("rope.scaling.yarn_beta_fast", 32.0);
    hp.yarn_beta_slow = (float)m.opt_float("rope.scaling.yarn_beta_slow", 1.0);
  }

  hp.n_expert = (int)m.opt_int("expert_count", 0);
  hp.n_expert_used = (int)m.opt_int("expert_used_count", 0);
  hp.n_ff_exp = (int)m.opt_int("expert_feed_forward_length", 0);
  hp.n_ff_shexp = (int)m.opt_int("expert_shared_feed_forward_length", 0);
  const int64_t gating = m.opt_int("expert_gating_func", 1);
  MEMRA_CHECK(gating == 1 || gating == 2, "model '{}': unsupported '{}.expert_gating_func' = {}",
              f.path(), arch, gating);
  hp.expert_gating = gating == 2 ? backend::MoeGating::Sigmoid : backend::MoeGating::Softmax;
  hp.expert_weights_norm = m.opt_bool("expert_weights_norm", true);
  hp.expert_weights_scale = (float)m.opt_float("expert_weights_scale", 1.0);
  hp.logit_softcap = (float)m.opt_float("final_logit_softcapping", 0.0);
  hp.rope_base_swa = hp.rope_base;
  hp.rope_freq_scale_swa = hp.rope_freq_scale;

  const auto* emb = f.find_tensor("token_embd.weight");
  MEMRA_CHECK(emb && emb->ne.size() == 2, "model '{}': missing tensor 'token_embd.weight' (2-D)",
              f.path());
  hp.n_vocab = (int)emb->ne[1];
  return hp;
}

void read_swa(const gguf::File& f, HParams& hp, int default_pattern, float default_base_swa, bool unscaled_swa) {
  Meta m(f, hp.arch);
  hp.n_swa = (int)m.opt_int("attention.sliding_window", 0);
  MEMRA_CHECK(hp.n_swa >= 0, "model '{}': negative '{}.attention.sliding_window' = {}", f.path(), hp.arch,
              hp.n_swa);
  hp.swa_layer.clear();
  if (hp.n_swa == 0) return;
  hp.swa_layer.assign((size_t)hp.n_layer, false);
  const std::string key = hp.arch + ".attention.sliding_window_pattern";
  const gguf::Value* v = f.find(key);
  if (v && v->type == gguf::ValueType::ARRAY) {
    const auto& a = v->as_array();
    MEMRA_CHECK(a.items.size() == (size_t)hp.n_layer, "model '{}': '{}' has {} entries for {} layers",
                f.path(), key, a.items.size(), hp.n_layer);
    for (size_t l = 0; l < a.items.size(); ++l) hp.swa_layer[l] = a.items[l].as_bool();
  } else {
    const int64_t p = v ? v->as_int() : default_pattern;
    MEMRA_CHECK(p >= 0, "model '{}': negative '{}' = {}", f.path(), key, p);
    // p == 0: every layer slides (llama.cpp's convention); p == 1: none does.
    for (int l = 0; l < hp.n_layer; ++l) hp.swa_layer[(size_t)l] = p == 0 || (l % p) < (p - 1);
  }
  const double base = m.opt_float("rope.freq_base_swa", default_base_swa);
  hp.rope_base_swa = base > 0.0 ? (float)base : hp.rope_base;
  if (unscaled_swa) hp.rope_freq_scale_swa = 1.0f;
}

}  // namespace memra::model
