// qwen3moe: qwen3 attention; every layer a routed MoE FFN with a softmax router over all
// experts, top-k selection and the selected weights renormalized to sum to 1 (llama.cpp
// always renormalizes for this architecture, whatever the metadata says).
#include "model/decoder.h"

namespace memra::model {

std::unique_ptr<Model> make_qwen3moe(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  HParams hp = read_common_hparams(*f, "qwen3moe");
  hp.rope_mode = backend::RopeMode::Neox;
  hp.expert_gating = backend::MoeGating::Softmax;
  hp.expert_weights_norm = true;
  DecoderSpec spec;
  spec.attn.qk_norm = true;
  spec.moe = true;
  return std::make_unique<DecoderModel>(std::move(f), be, std::move(hp), spec);
}

}  // namespace memra::model
