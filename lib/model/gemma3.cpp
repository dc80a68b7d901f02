// gemma3: embeddings scaled by sqrt(n_embd), sandwich norms (each sublayer's output RMS-normed
// before the residual add), per-head q/k RMSNorm, NeoX RoPE, GELU (tanh) gated FFN, sliding-
// window layers (every sliding_window_pattern-th layer global, default 6) whose RoPE base is
// rope.freq_base_swa (default 10000) without the global layers' frequency scaling.
#include <cmath>

#include "model/decoder.h"

namespace memra::model {

std::unique_ptr<Model> make_gemma3(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  HParams hp = read_common_hparams(*f, "gemma3");
  hp.rope_mode = backend::RopeMode::Neox;
  read_swa(*f, hp, 6, 10000.0f, true);
  // The 27B model (62 layers) scales queries by 1/sqrt(n_embd / n_head) (its
  // query_pre_attn_scalar), the others by 1/sqrt(head_dim).
  if (hp.n_layer == 62) hp.attn_scale = 1.0f / std::sqrt((float)(hp.n_embd / hp.n_head));
  DecoderSpec spec;
  spec.attn.qk_norm = true;
  spec.act = backend::Activation::GeluTanh;
  spec.post_norms = true;
  spec.embd_scale = true;
  return std::make_unique<DecoderModel>(std::move(f), be, std::move(hp), spec);
}

}  // namespace memra::model
