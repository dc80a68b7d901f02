// qwen2: llama layout plus q/k/v biases and NeoX RoPE (x[i], x[i+d/2]).
#include "model/decoder.h"

namespace memra::model {

std::unique_ptr<Model> make_qwen2(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  HParams hp = read_common_hparams(*f, "qwen2");
  hp.rope_mode = backend::RopeMode::Neox;
  DecoderSpec spec;
  spec.attn.qkv_bias = true;
  return std::make_unique<DecoderModel>(std::move(f), be, std::move(hp), spec);
}

}  // namespace memra::model
