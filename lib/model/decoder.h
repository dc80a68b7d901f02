#pragma once
// The pre-norm decoder-only transformer the llama family shares:
//   x = embed(ids); per layer: x += attn(norm(x)); x += ffn_or_moe(norm(x));
//   logits = output(norm(x)).
// Architecture files fill a DecoderSpec (which pieces, which RoPE layout) and the HParams.
#include <memory>
#include <optional>
#include <vector>

#include "model/layers.h"
#include "model/model.h"

namespace memra::model {

struct DecoderSpec {
  AttentionOptions attn;
  bool moe = false;  // routed MoE FFN layers (from layer n_dense_lead on; else dense gated FFN)
  backend::Activation act = backend::Activation::Silu;
  // Sandwich norms (gemma): each sublayer's output is RMS-normed (post_attention_norm,
  // post_ffw_norm) before it is added to the stream.
  bool post_norms = false;
  // The embedding rows scaled by sqrt(n_embd) (gemma).
  bool embd_scale = false;
  // The MoE FFN's input norm tensor (per layer; gpt-oss names it post_attention_norm).
  const char* moe_norm = "ffn_norm.weight";
  // rope_freqs.weight (per-pair frequency divisors) on the full-attention layers only (gemma4's
  // proportional RoPE); else on every layer.
  bool rope_freqs_full_only = false;
  // Per-layer output scale (gemma4): where blk.<l>.layer_output_scale.weight (F32 [1]) exists,
  // the stream after layer l (both residual adds done) is multiplied by it.
  bool layer_out_scale = false;
  // MoE models: the first n_dense_lead layers have a dense gated FFN (step35).
  int n_dense_lead = 0;
  // MoE layers add an always-on shared expert (ffn_*_shexp) to the routed experts (step35).
  bool shared_expert = false;
};

class DecoderModel final : public Model {
 public:
  DecoderModel(std::shared_ptr<const gguf::File> file, backend::Backend& be, HParams hp,
               DecoderSpec spec);
  kv::KvShape kv_shape() const override;
  void forward(backend::Backend& be, backend::KvStore& kv, std::span<const int32_t> ids, int pos0,
               bool all_logits, backend::View logits) override;
  uint64_t weight_bytes() const override { return loader_.bytes(); }

 private:
  struct Layer {
    AttentionWeights attn;
    FfnWeights ffn;
    MoeLayerWeights moe;
    const backend::Weight *post_attn_norm = nullptr, *post_ffn_norm = nullptr;
    AttnLayer al;
    std::optional<float> out_scale;  // DecoderSpec::layer_out_scale
    bool is_moe = false;
  };
  DecoderSpec spec_;
  WeightLoader loader_;
  const backend::Weight* tok_embd_ = nullptr;
  const backend::Weight* out_norm_ = nullptr;
  const backend::Weight* output_ = nullptr;
  const backend::Weight* rope_freqs_ = nullptr;
  std::vector<Layer> layers_;
  backend::MoeParams moe_;
  Scratch scratch_;
};

}  // namespace memra::model
