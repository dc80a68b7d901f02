// qwen3: no biases, per-head RMSNorm of q and k before RoPE, NeoX RoPE.
#include "model/decoder.h"

namespace memra::model {

std::unique_ptr<Model> make_qwen3(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  HParams hp = read_common_hparams(*f, "qwen3");
  hp.rope_mode = backend::RopeMode::Neox;
  DecoderSpec spec;
  spec.attn.qk_norm = true;
  return std::make_unique<DecoderModel>(std::move(f), be, std::move(hp), spec);
}

}  // namespace memra::model
