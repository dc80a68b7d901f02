#pragma once
// Shared layer pieces the architecture files compose: the attention block (optional q/k/v/o
// biases, per-head q/k RMSNorm, RoPE, GQA over the KV cache), the dense gated FFN and the routed
// MoE FFN. Each piece = a weights struct, its loader (shapes checked) and its forward.
#include <string>

#include "backend/backend.h"
#include "model/hparams.h"
#include "model/loader.h"

namespace memra::model {

struct AttentionOptions {
  bool qkv_bias = false;
  bool out_bias = false;
  bool qk_norm = false;
  bool sinks = false;  // attn_sinks.weight [n_head] (gpt-oss)
  // attn_v.weight optional: where a layer has none, V is its K projection (before the K norm;
  // needs head_dim_k == head_dim_v) (gemma4).
  bool v_optional = false;
  bool v_norm = false;  // V RMS-normed per head without a weight before the cache (gemma4)
  // attn_gate.weight [n_embd, n_head] (step35): each head's attention output times
  // sigmoid(h * gate^T) of its head, h the attention's normed input, before the output projection.
  bool head_gate = false;
};

struct AttentionWeights {
  const backend::Weight* norm = nullptr;
  const backend::Weight *wq = nullptr, *wk = nullptr, *wv = nullptr, *wo = nullptr;
  const backend::Weight *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;
  const backend::Weight *q_norm = nullptr, *k_norm = nullptr;
  const backend::Weight* sinks = nullptr;
  bool v_norm = false;  // AttentionOptions::v_norm
  const backend::Weight* gate = nullptr;
};

struct FfnWeights {
  const backend::Weight* norm = nullptr;
  const backend::Weight *gate = nullptr, *up = nullptr, *down = nullptr;
};

struct MoeLayerWeights {
  const backend::Weight* norm = nullptr;
  backend::MoeWeights w;
  // exp_probs_b.bias [n_expert] when present: added to the router probabilities for the selection.
  const backend::Weight* selection_bias = nullptr;
  // An always-on shared expert (gate null: none), its output added to the routed experts' sum.
  FfnWeights shared;
  // ffn_gate_inp_shexp.weight [n_embd] or null: the shared expert's output times
  // sigmoid(h . w) per token (qwen35moe).
  const backend::Weight* shared_gate = nullptr;
};

std::string blk(int layer, const char* suffix);  // "blk.<layer>.<suffix>"

// token_embd, output_norm and the output matrix (tied to token_embd when output.weight is absent).
struct EmbedOutput {
  const backend::Weight *tok_embd = nullptr, *out_norm = nullptr, *output = nullptr;
};
EmbedOutput load_embed_output(WeightLoader& ld, const HParams& hp);

AttentionWeights load_attention(WeightLoader& ld, const HParams& hp, int layer,
                                const AttentionOptions& o);
// The q, k, v and attention-output widths of one layer.
struct AttnWidths {
  int64_t q, k, v, o;
};
AttnWidths attn_widths(const LayerGeom& g);
FfnWeights load_ffn(WeightLoader& ld, const HParams& hp, int layer, const char* norm = "ffn_norm.weight");
// norm: the tensor suffix of the FFN's input norm (gpt-oss: "post_attention_norm.weight"). The
// router and expert biases are loaded when present.
MoeLayerWeights load_moe(WeightLoader& ld, const HParams& hp, int layer, const char* norm = "ffn_norm.weight");
// ffn_{gate,up,down}_shexp.weight of width hp.n_ff_shexp (norm left null: the MoE input is normed).
FfnWeights load_shared_expert(WeightLoader& ld, const HParams& hp, int layer);

backend::RopeParams rope_params(const HParams& hp, const backend::Weight* freq_factors);

// One layer's attention: its window, scale and position encoding (sliding-window layers take the
// *_swa RoPE settings).
struct AttnLayer {
  LayerGeom g;
  int window = 0;
  float scale = 1.0f;
  backend::RopeParams rope;
};
AttnLayer attn_layer(const HParams& hp, int layer, const backend::Weight* freq_factors);
backend::MoeParams moe_params(const HParams& hp);

// The first cols columns of a scratch slot as a dense [rows, cols] view (ld = cols): a layer's
// width packed at the front of a slot sized for the widest layer.
inline backend::View packed(backend::View v, int64_t cols) {
  backend::View p = v.cols_slice(0, cols);
  p.ld = cols;
  return p;
}

// Consecutive dense [n, cols] views carved from one allocation.
struct ViewCarver {
  float* p;
  int64_t n;
  backend::View take(int64_t cols) {
    backend::View v{p, n, cols, cols};
    p += n * cols;
    return v;
  }
};

// Activations of one batch of n tokens; regrown when a larger batch comes.
struct Scratch {
  backend::Buffer buf;
  int64_t cap = 0;  // tokens
  backend::View x, h, q, k, v, attn, o, g, u, d, post;  // post: a normed sublayer output (post-norms)
  void ensure(backend::Backend& be, const HParams& hp, int64_t n);
};

// s.h (normed input, [n, n_embd]) -> s.o (attention output projected, [n, n_embd]); or, where
// may_add and the backend fuses the residual add (Backend::fuses_residual), added to s.x in
// place: returns true.
bool attention_forward(backend::Backend& be, backend::KvStore& kv, const HParams& hp,
                       const AttentionWeights& w, const AttnLayer& al, int layer, int pos0, Scratch& s,
                       bool may_add = true);
// s.h -> s.d: down(act(gate h) * up h); or added to s.x in place as above (returns true).
bool ffn_forward(backend::Backend& be, const FfnWeights& w, backend::Activation act, Scratch& s,
                 bool may_add = true);
// Whether the backend runs this layer's routed experts for n tokens without a host round trip
// (Backend::moe_on_device), so that the step may be captured.
bool moe_on_device(const backend::Backend& be, const MoeLayerWeights& w, const backend::MoeParams& p, int64_t n);
// s.h -> s.d: routed experts, plus the shared expert where w.shared is set (its down projection
// goes through s.o, which the caller has consumed by then).
void moe_forward(backend::Backend& be, const MoeLayerWeights& w, const backend::MoeParams& p,
                 Scratch& s);
// The same on explicit views: h [n, n_embd] -> d [n, n_embd]; g, u [n, >= the shared expert's
// width] and o [n, n_embd] are scratch.
void moe_forward(backend::Backend& be, const MoeLayerWeights& w, const backend::MoeParams& p, backend::View h,
                 backend::View g, backend::View u, backend::View o, backend::View d);
// The layer's FFN norm and its experts: s.h = rms_norm(s.x) * norm, then moe_forward (the routed
// part through Backend::rms_norm_moe_ffn, which may fuse the norm with the router) into s.d.
// may_add: without a shared expert, the backend may add the routed output to s.x itself (returns
// true; s.d unused), as in attention_forward / ffn_forward.
bool moe_forward_normed(backend::Backend& be, const MoeLayerWeights& w, const backend::MoeParams& p, Scratch& s,
                        const backend::Weight* norm, float eps, bool may_add = true);

}  // namespace memra::model
