#pragma once
// Hyper-parameters of a decoder-only transformer, read from the GGUF metadata
// (`<arch>.<key>`). Missing required keys are errors naming the key and the file.
#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "gguf/gguf.h"

namespace memra::model {

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
  backend::MoeGating expert_gating = backend::MoeGating::Softmax;
  bool expert_weights_norm = true;
  float expert_weights_scale = 1.0f;

  float logit_softcap = 0.0f;
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

 private:
  std::string full(const std::string& key) const { return arch_ + "." + key; }
  const gguf::File& f_;
  std::string arch_;
};

// The keys every decoder shares: sizes, norm eps, RoPE and its scaling, MoE counts when
// present. n_vocab comes from token_embd.weight.
HParams read_common_hparams(const gguf::File& f, const std::string& arch);

}  // namespace memra::model
