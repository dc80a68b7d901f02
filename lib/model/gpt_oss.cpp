// gpt-oss: q/k/v/o biases, per-head attention sinks, NeoX RoPE with YaRN, sliding-window and
// full attention alternating (layer 0 slides; sliding_window_pattern overrides), every layer a
// routed MoE FFN whose input norm is post_attention_norm: the top k experts by router logit
// (router bias added), weighted by the softmax of those k logits, each expert a SwiGLU-OAI GLU
// (gate clamped at 7, up to [-7, 7], g * sigmoid(1.702 g) * (u + 1)) with gate/up/down biases.
#include "model/decoder.h"

namespace memra::model {

std::unique_ptr<Model> make_gpt_oss(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  HParams hp = read_common_hparams(*f, "gpt-oss");
  hp.rope_mode = backend::RopeMode::Neox;
  hp.expert_gating = backend::MoeGating::SoftmaxWeight;
  read_swa(*f, hp, 2, 0.0f, false);
  DecoderSpec spec;
  spec.attn.qkv_bias = true;
  spec.attn.out_bias = true;
  spec.attn.sinks = true;
  spec.moe = true;
  spec.moe_norm = "post_attention_norm.weight";
  spec.act = backend::Activation::SwigluOai;
  return std::make_unique<DecoderModel>(std::move(f), be, std::move(hp), spec);
}

}  // namespace memra::model
