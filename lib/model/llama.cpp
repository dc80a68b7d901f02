// llama: RMSNorm, GQA, RoPE on adjacent pairs (x[2i], x[2i+1]), SwiGLU, optional rope_freqs
// (llama3 frequency factors), output tied to token_embd when output.weight is absent.
#include "model/decoder.h"

namespace memra::model {

std::unique_ptr<Model> make_llama(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  HParams hp = read_common_hparams(*f, "llama");
  hp.rope_mode = backend::RopeMode::Normal;
  return std::make_unique<DecoderModel>(std::move(f), be, std::move(hp), DecoderSpec{});
}

}  // namespace memra::model
