// minimax-m3 (MiniMax-M3): a pre-norm decoder.
// - Attention: GQA with per-head q/k RMSNorm (one head_dim weight for every head), NeoX RoPE on the
//   first rope.dimension_count dims of each head, scale 1/sqrt(head_dim).
// - The leading leading_dense_block_count layers: dense attention and a dense SwiGLU-OAI FFN
//   (gate clamped at 7, up to [-7, 7], g * sigmoid(1.702 g) * (u + 1)).
// - The other layers: MiniMax Sparse Attention and a routed MoE plus a shared expert.
//   Sparse attention: an indexer projects the layer's normed input to attention.indexer.head_count
//   query heads (indexer.q_proj) and one key (indexer.k_proj) of attention.indexer.key_length dims,
//   each RMS-normed per head (indexer.q_norm / k_norm) and rotated like the attention's q/k; the
//   keys are cached per position (f32). Indexer head g picks, for each query, the key blocks
//   (attention.indexer.block_size positions) that kv head g attends to: the query's own block and
//   the local_blocks - 1 before it, and the best of the others by their largest unscaled
//   indexer score, top_k blocks in all (backend::BlockSparseParams).
//   MoE: sigmoid router (expert_gating_func 2), selection bias exp_probs_b, top expert_used_count,
//   weights renormalized when expert_weights_norm and times expert_weights_scale; every expert and
//   the shared expert (expert_shared_count x expert_feed_forward_length wide) a SwiGLU-OAI GLU.
// llama.cpp runs this architecture with flash attention on (its sparse path requires it): the
// dense layers' K/V are then rounded to f16, the sparse layers' are not. The CPU backend reproduces
// that with AttentionNumerics::GgmlFlashAttn (+ F32Order::Ggml for bit-identical inputs to it).
#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "model/layers.h"
#include "model/model.h"

namespace memra::model {

namespace {

using backend::View;

constexpr const char* kArch = "minimax-m3";

struct Indexer {
  const backend::Weight *wq = nullptr, *wk = nullptr, *q_norm = nullptr, *k_norm = nullptr;
};

struct M3Layer {
  AttentionWeights attn;
  AttnLayer al;
  bool sparse = false;  // sparse attention + MoE (else dense attention + dense FFN)
  Indexer idx;
  FfnWeights ffn;
  MoeLayerWeights moe;
};

class MinimaxM3Model final : public Model {
 public:
  MinimaxM3Model(std::shared_ptr<const gguf::File> file, backend::Backend& be, HParams hp, int n_dense,
                 backend::BlockSparseParams bp)
      : loader_(file, be, hp.arch), bp_(bp) {
    hp_ = std::move(hp);
    auto& ld = loader_;
    const int64_t e = hp_.n_embd;
    const EmbedOutput eo = load_embed_output(ld, hp_);
    tok_embd_ = eo.tok_embd;
    out_norm_ = eo.out_norm;
    output_ = eo.output;
    AttentionOptions ao;
    ao.qk_norm = true;
    for (int l = 0; l < hp_.n_layer; ++l) {
      M3Layer L;
      L.attn = load_attention(ld, hp_, l, ao);
      L.al = attn_layer(hp_, l, nullptr);
      L.sparse = l >= n_dense;
      if (L.sparse) {
        L.idx.wq = &ld.get(blk(l, "indexer.q_proj.weight"), {e, (int64_t)bp_.n_idx_head * bp_.idx_dim});
        L.idx.wk = &ld.get(blk(l, "indexer.k_proj.weight"), {e, bp_.idx_dim});
        L.idx.q_norm = &ld.get(blk(l, "indexer.q_norm.weight"), {bp_.idx_dim});
        L.idx.k_norm = &ld.get(blk(l, "indexer.k_norm.weight"), {bp_.idx_dim});
        MEMRA_CHECK(bp_.n_idx_head == L.al.g.n_head_kv,
                    "model '{}' ({}): '{}.attention.indexer.head_count' = {} must equal layer {}'s kv heads {} (one "
                    "indexer head per kv head)", file->path(), kArch, kArch, bp_.n_idx_head, l, L.al.g.n_head_kv);
        MEMRA_CHECK(L.al.rope.n_rot <= bp_.idx_dim,
                    "model '{}' ({}): rotary dims {} exceed the indexer key length {}", file->path(), kArch,
                    L.al.rope.n_rot, bp_.idx_dim);
        L.moe = load_moe(ld, hp_, l);
        L.moe.selection_bias = &ld.get(blk(l, "exp_probs_b.bias"), {hp_.n_expert});
        L.moe.shared = load_shared_expert(ld, hp_, l);
      } else {
        L.ffn = load_ffn(ld, hp_, l);
      }
      layers_.push_back(L);
    }
    moe_ = moe_params(hp_);
    moe_.act = backend::Activation::SwigluOai;
  }

  kv::KvShape kv_shape() const override {
    kv::KvShape s;
    for (int l = 0; l < hp_.n_layer; ++l) {
      const LayerGeom& g = hp_.geom(l);
      kv::KvLayerShape ls{g.n_head_kv, g.head_dim_k, g.head_dim_v};
      ls.n_head = g.n_head;
      if (layers_[(size_t)l].sparse) ls.idx_dim = bp_.idx_dim;
      s.layers.push_back(ls);
    }
    return s;
  }

  uint64_t weight_bytes() const override { return loader_.bytes(); }

  void forward(backend::Backend& be, backend::KvStore& kv, std::span<const int32_t> ids, int pos0, bool all_logits,
               View logits) override {
    const int64_t n = (int64_t)ids.size(), n_out = check_forward(n, all_logits, logits);
    Scratch& s = scratch_;
    s.ensure(be, hp_, n);
    ensure_indexer(be, n);
    be.embed(*tok_embd_, ids, s.x);
    for (int l = 0; l < hp_.n_layer; ++l) {
      const M3Layer& L = layers_[(size_t)l];
      be.rms_norm(s.x, L.attn.norm, hp_.rms_eps, s.h);
      if (L.sparse)
        sparse_attention(be, kv, L, l, pos0);
      else
        attention_forward(be, kv, hp_, L.attn, L.al, l, pos0, s, false);  // s.h -> s.o
      if (L.sparse) {
        be.add_rms_norm(s.x, s.o, L.moe.norm, hp_.rms_eps, s.h);
        moe_forward(be, L.moe, moe_, s);  // s.h -> s.d (s.o scratch)
      } else {
        be.add_rms_norm(s.x, s.o, L.ffn.norm, hp_.rms_eps, s.h);
        ffn_forward(be, L.ffn, backend::Activation::SwigluOai, s, false);  // s.h -> s.d
      }
      be.add(s.x, s.d);
    }
    const View last = s.h.rows_slice(n - n_out, n_out);
    be.rms_norm(s.x.rows_slice(n - n_out, n_out), out_norm_, hp_.rms_eps, last);
    be.matmul(*output_, last, logits, nullptr);
  }

 private:
  void ensure_indexer(backend::Backend& be, int64_t n) {
    const int64_t qd = (int64_t)bp_.n_idx_head * bp_.idx_dim, kd = bp_.idx_dim;
    if (n > idx_cap_) {
      idx_buf_ = be.alloc((qd + kd) * n);
      idx_cap_ = n;
    }
    iq_ = View{idx_buf_.mem.get(), n, qd, qd};
    ik_ = View{idx_buf_.mem.get() + qd * n, n, kd, kd};
  }

  // s.h -> s.o: the sparse attention layer.
  void sparse_attention(backend::Backend& be, backend::KvStore& kv, const M3Layer& L, int layer, int pos0) {
    Scratch& s = scratch_;
    const LayerGeom& g = L.al.g;
    const auto wd = attn_widths(g);
    const View q = packed(s.q, wd.q), k = packed(s.k, wd.k), v = packed(s.v, wd.v), attn = packed(s.attn, wd.o);
    const backend::MatmulOut outs[] = {{L.attn.wq, q, L.attn.bq},
                                       {L.attn.wk, k, L.attn.bk},
                                       {L.attn.wv, v, L.attn.bv},
                                       {L.idx.wq, iq_, nullptr},
                                       {L.idx.wk, ik_, nullptr}};
    be.matmul_n(s.h, outs);
    be.qk_norm_rope_kv(q, k, v, g.n_head, g.n_head_kv, L.attn.q_norm, L.attn.k_norm, hp_.rms_eps, pos0, L.al.rope, kv,
                       layer);
    // The indexer's q/k: the same RoPE (position, frequencies, rotated dims) on its head size.
    backend::RopeParams irope = L.al.rope;
    irope.head_dim = bp_.idx_dim;
    be.qk_norm_rope(iq_, ik_, bp_.n_idx_head, 1, L.idx.q_norm, L.idx.k_norm, hp_.rms_eps, pos0, irope);
    be.kv_write_index(kv, layer, pos0, ik_);
    backend::AttnParams ap;
    ap.n_head = g.n_head;
    ap.n_head_kv = g.n_head_kv;
    ap.head_dim_k = g.head_dim_k;
    ap.head_dim_v = g.head_dim_v;
    ap.scale = L.al.scale;
    be.block_sparse_attention(q, iq_, kv, layer, pos0, ap, bp_, attn);
    be.matmul(*L.attn.wo, attn, s.o, L.attn.bo);
  }

  WeightLoader loader_;
  backend::BlockSparseParams bp_;
  const backend::Weight *tok_embd_ = nullptr, *out_norm_ = nullptr, *output_ = nullptr;
  std::vector<M3Layer> layers_;
  backend::MoeParams moe_;
  Scratch scratch_;
  backend::Buffer idx_buf_;
  int64_t idx_cap_ = 0;
  View iq_, ik_;
};

std::string key(const char* k) { return fmt::format("{}.{}", kArch, k); }

}  // namespace

std::unique_ptr<Model> make_minimax_m3(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  HParams hp = read_common_hparams(*f, kArch);
  Meta m(*f, kArch);
  hp.rope_mode = backend::RopeMode::Neox;
  for (int l = 0; l < hp.n_layer; ++l)
    MEMRA_CHECK(hp.geom(l).n_head_kv == hp.n_head_kv && hp.geom(l).n_head == hp.n_head,
                "model '{}' ({}): per-layer head counts are not supported", f->path(), kArch);
  MEMRA_CHECK(!f->find(key("attention.sliding_window")), "model '{}' ({}): '{}' is set: sliding-window layers are "
              "not supported", f->path(), kArch, key("attention.sliding_window"));
  const int64_t nextn = m.opt_int("nextn_predict_layers", 0);
  MEMRA_CHECK(nextn == 0, "model '{}' ({}): '{}' = {}: multi-token-prediction layers are not supported", f->path(),
              kArch, key("nextn_predict_layers"), nextn);

  const int64_t n_dense = m.opt_int("leading_dense_block_count", 0);
  MEMRA_CHECK(n_dense >= 0 && n_dense <= hp.n_layer, "model '{}' ({}): '{}' = {} outside [0, {}]", f->path(), kArch,
              key("leading_dense_block_count"), n_dense, hp.n_layer);

  // Router: llama.cpp requires the gating function for this architecture; renormalization off and
  // a scale of 0 (absent) meaning 1 by default.
  const int64_t gating = m.req_int("expert_gating_func");
  MEMRA_CHECK(gating == 2, "model '{}' ({}): '{}' = {}: only the sigmoid router (2) is supported", f->path(), kArch,
              key("expert_gating_func"), gating);
  hp.expert_gating = backend::MoeGating::Sigmoid;
  hp.expert_weights_norm = m.opt_bool("expert_weights_norm", false);
  if (hp.expert_weights_scale == 0.0f) hp.expert_weights_scale = 1.0f;
  const int64_t n_shared = m.req_int("expert_shared_count");
  MEMRA_CHECK(n_shared >= 1, "model '{}' ({}): '{}' = {}: the MoE layers need a shared expert", f->path(), kArch,
              key("expert_shared_count"), n_shared);
  hp.n_ff_shexp = (int)(n_shared * hp.n_ff_exp);

  backend::BlockSparseParams bp;
  bp.n_idx_head = (int)m.req_int("attention.indexer.head_count");
  bp.idx_dim = (int)m.req_int("attention.indexer.key_length");
  bp.top_k = (int)m.req_int("attention.indexer.top_k");
  bp.block_size = (int)m.req_int("attention.indexer.block_size");
  bp.local_blocks = (int)m.req_int("attention.indexer.local_blocks");
  MEMRA_CHECK(bp.n_idx_head > 0 && bp.idx_dim > 0 && bp.block_size > 0,
              "model '{}' ({}): indexer head count {}, key length {} and block size {} must be positive", f->path(),
              kArch, bp.n_idx_head, bp.idx_dim, bp.block_size);
  // llama.cpp always keeps the local blocks by ranking them first; with none, or more of them than
  // top_k places, its choice is not one this op reproduces.
  MEMRA_CHECK(bp.local_blocks >= 1 && bp.top_k >= bp.local_blocks,
              "model '{}' ({}): '{}' = {} and '{}' = {}: needs top_k >= local_blocks >= 1", f->path(), kArch,
              key("attention.indexer.top_k"), bp.top_k, key("attention.indexer.local_blocks"), bp.local_blocks);
  return std::make_unique<MinimaxM3Model>(std::move(f), be, std::move(hp), (int)n_dense, bp);
}

}  // namespace memra::model
