// qwen35 (Qwen3.5 dense): a hybrid of Gated DeltaNet layers (linear attention with a recurrent
// state, backend::Backend::gated_delta_net) and gated full-attention layers; every
// full_attention_interval-th layer (default 4) is full attention. Per layer:
//   x += mixer(rmsnorm(x, attn_norm));  x += ffn(rmsnorm(x, post_attention_norm))
// Full attention: attn_q yields per head [query | output gate] (uploaded with the query rows first,
// so both are column ranges of one product); per-head q/k RMSNorm, NeoX RoPE on the first
// rope.dimension_count dims (the multi-section RoPE of text tokens: every section sees the same
// position), softmax attention, then the output times sigmoid(gate), then attn_output.
// Gated DeltaNet: attn_qkv -> conv + delta rule (backend op) -> per-head RMSNorm(ssm_norm) times
// SiLU(attn_gate x) -> ssm_out.
// qwen35moe (make_qwen35moe below): the same layers with a routed MoE FFN and a gated shared expert.
#include <cmath>

#include "core/error.h"
#include "model/layers.h"
#include "model/model.h"

namespace memra::model {

namespace {

using backend::View;

struct Qwen35Layer {
  bool recurrent = false;
  const backend::Weight* attn_norm = nullptr;
  // Full attention (q rows: all heads' queries, then all heads' gates).
  AttentionWeights attn;
  AttnLayer al;
  // Gated DeltaNet.
  const backend::Weight *wqkv = nullptr, *wz = nullptr, *w_alpha = nullptr, *w_beta = nullptr, *ssm_norm = nullptr,
                        *ssm_out = nullptr;
  backend::DeltaNetWeights dn;
  FfnWeights ffn;  // norm = post_attention_norm (dense layers)
  MoeLayerWeights moe;  // qwen35moe: routed experts + the sigmoid-gated shared expert
};

class Qwen35Model final : public Model {
 public:
  Qwen35Model(std::shared_ptr<const gguf::File> file, backend::Backend& be, HParams hp)
      : loader_(file, be, hp.arch) {
    hp_ = std::move(hp);
    const Meta m(*file, hp_.arch);
    dn_.d_conv = (int)m.req_int("ssm.conv_kernel");
    dn_.head_k_dim = dn_.head_v_dim = (int)m.req_int("ssm.state_size");
    dn_.n_k_heads = (int)m.req_int("ssm.group_count");
    dn_.n_v_heads = (int)m.req_int("ssm.time_step_rank");
    dn_.eps = hp_.rms_eps;
    const int64_t d_inner = m.req_int("ssm.inner_size");
    MEMRA_CHECK(dn_.d_conv > 0 && dn_.head_k_dim > 0 && dn_.n_k_heads > 0 && dn_.n_v_heads > 0 &&
                    dn_.n_v_heads % dn_.n_k_heads == 0 && d_inner == (int64_t)dn_.n_v_heads * dn_.head_v_dim,
                "model '{}' ({}): inconsistent ssm metadata (conv {}, state {}, groups {}, time_step_rank {}, "
                "inner {})", file->path(), hp_.arch, dn_.d_conv, dn_.head_k_dim, dn_.n_k_heads, dn_.n_v_heads,
                d_inner);
    const int interval = (int)m.opt_int("full_attention_interval", 4);
    MEMRA_CHECK(interval > 0, "model '{}': '{}.full_attention_interval' must be positive", file->path(), hp_.arch);

    auto& ld = loader_;
    const int64_t e = hp_.n_embd;
    const EmbedOutput eo = load_embed_output(ld, hp_);
    tok_embd_ = eo.tok_embd;
    out_norm_ = eo.out_norm;
    output_ = eo.output;
    const int64_t C = dn_.channels(), vd = (int64_t)dn_.n_v_heads * dn_.head_v_dim;
    for (int l = 0; l < hp_.n_layer; ++l) {
      Qwen35Layer L;
      L.recurrent = (l + 1) % interval != 0;
      L.attn_norm = &ld.get(blk(l, "attn_norm.weight"), {e});
      if (L.recurrent) {
        L.wqkv = &ld.get(blk(l, "attn_qkv.weight"), {e, C});
        L.wz = &ld.get(blk(l, "attn_gate.weight"), {e, vd});
        L.dn.conv = &ld.get(blk(l, "ssm_conv1d.weight"), {dn_.d_conv, C});
        L.dn.dt_bias = &ld.get(blk(l, "ssm_dt.bias"), {dn_.n_v_heads});
        L.dn.a = &ld.get(blk(l, "ssm_a"), {dn_.n_v_heads});
        L.w_beta = &ld.get(blk(l, "ssm_beta.weight"), {e, dn_.n_v_heads});
        L.w_alpha = &ld.get(blk(l, "ssm_alpha.weight"), {e, dn_.n_v_heads});
        L.ssm_norm = &ld.get(blk(l, "ssm_norm.weight"), {dn_.head_v_dim});
        L.ssm_out = &ld.get(blk(l, "ssm_out.weight"), {vd, e});
      } else {
        const LayerGeom& g = hp_.geom(l);
        const int64_t hd = g.head_dim_k;
        MEMRA_CHECK(g.head_dim_k == g.head_dim_v, "model '{}': qwen35 attention needs key_length == value_length",
                    file->path());
        // Source rows of head h: [2h hd, 2h hd + hd) query, then hd rows of gate.
        std::vector<int64_t> rows;
        for (int part = 0; part < 2; ++part)
          for (int h = 0; h < g.n_head; ++h)
            for (int64_t i = 0; i < hd; ++i) rows.push_back((2 * h + part) * hd + i);
        L.attn.wq = &ld.get_rows_permuted(blk(l, "attn_q.weight"), {e, 2 * g.n_head * hd}, rows);
        L.attn.wk = &ld.get(blk(l, "attn_k.weight"), {e, (int64_t)g.n_head_kv * hd});
        L.attn.wv = &ld.get(blk(l, "attn_v.weight"), {e, (int64_t)g.n_head_kv * hd});
        L.attn.wo = &ld.get(blk(l, "attn_output.weight"), {(int64_t)g.n_head * hd, e});
        L.attn.q_norm = &ld.get(blk(l, "attn_q_norm.weight"), {hd});
        L.attn.k_norm = &ld.get(blk(l, "attn_k_norm.weight"), {hd});
        L.al = attn_layer(hp_, l, nullptr);
      }
      if (hp_.n_expert > 0) {
        L.moe = load_moe(ld, hp_, l, "post_attention_norm.weight");
        L.moe.shared = load_shared_expert(ld, hp_, l);
        L.moe.shared_gate = &ld.get(blk(l, "ffn_gate_inp_shexp.weight"), {e});
      } else {
        L.ffn = load_ffn(ld, hp_, l, "post_attention_norm.weight");
      }
      layers_.push_back(L);
    }
    moe_ = moe_params(hp_);
  }

  kv::KvShape kv_shape() const override {
    kv::KvShape s;
    for (int l = 0; l < hp_.n_layer; ++l) {
      if (layers_[(size_t)l].recurrent) {
        kv::KvLayerShape ls;
        ls.state_floats = dn_.state_floats();
        s.layers.push_back(ls);
      } else {
        const LayerGeom& g = hp_.geom(l);
        kv::KvLayerShape ls{g.n_head_kv, g.head_dim_k, g.head_dim_v};
        ls.n_head = g.n_head;
        s.layers.push_back(ls);
      }
    }
    return s;
  }

  uint64_t weight_bytes() const override { return loader_.bytes(); }

  void forward(backend::Backend& be, backend::KvStore& kv, std::span<const int32_t> ids, int pos0, bool all_logits,
               View logits) override {
    const int64_t n = (int64_t)ids.size(), n_out = check_forward(n, all_logits, logits);
    ensure(be, n);
    // One-token steps may be captured and replayed as a graph (the DeltaNet state lives at fixed
    // addresses in the KV store); a step whose experts the backend routes on the host is not (no owner).
    bool capturable = true;
    for (const Qwen35Layer& L : layers_)
      if (hp_.n_expert > 0 && !moe_on_device(be, L.moe, moe_, n)) capturable = false;
    backend::StepScope step(be, {ids, pos0, &kv, capturable ? this : nullptr, buf_.mem.get(), logits});
    if (step.replayed()) return step.finish();
    be.embed(*tok_embd_, ids, x_);
    for (int l = 0; l < hp_.n_layer; ++l) {
      const Qwen35Layer& L = layers_[(size_t)l];
      be.rms_norm(x_, L.attn_norm, hp_.rms_eps, h_);
      if (L.recurrent)
        delta_net(be, kv, L, l, pos0);
      else
        gated_attention(be, kv, L, l, pos0);
      if (hp_.n_expert > 0) {
        be.add_rms_norm(x_, o_, L.moe.norm, hp_.rms_eps, h_);  // x += mixer; h = norm(x)
        moe_forward(be, L.moe, moe_, h_, g_, u_, o_, d_);
        be.add(x_, d_);
        continue;
      }
      be.add_rms_norm(x_, o_, L.ffn.norm, hp_.rms_eps, h_);
      View g = packed(g_, L.ffn.gate->ne[1]), u = packed(u_, L.ffn.gate->ne[1]);
      be.matmul_glu(*L.ffn.gate, *L.ffn.up, h_, backend::Activation::Silu, g, u);
      be.matmul(*L.ffn.down, g, o_, nullptr);
      be.add(x_, o_);
    }
    be.rms_norm(x_.rows_slice(n - n_out, n_out), out_norm_, hp_.rms_eps, h_.rows_slice(0, n_out));
    be.matmul(*output_, h_.rows_slice(0, n_out), logits, nullptr);
    step.finish();
  }

 private:
  void ensure(backend::Backend& be, int64_t n) {
    const int64_t e = hp_.n_embd, qd = (int64_t)hp_.n_head * hp_.head_dim_k,
                  kd = (int64_t)hp_.n_head_kv * hp_.head_dim_k, C = dn_.channels(),
                  vd = (int64_t)dn_.n_v_heads * dn_.head_v_dim, nv = dn_.n_v_heads,
                  ff = std::max<int64_t>({hp_.n_ff, hp_.n_ff_exp, hp_.n_ff_shexp, 1}),
                  wide = std::max<int64_t>(2 * qd, C);
    const int64_t per_tok = 4 * e + wide + 2 * kd + std::max(qd, vd) * 2 + 2 * nv + 2 * ff;
    if (n > cap_) {
      buf_ = be.alloc(per_tok * n);
      cap_ = n;
    }
    ViewCarver c{buf_.mem.get(), n};
    x_ = c.take(e); h_ = c.take(e); o_ = c.take(e); d_ = c.take(e);
    wide_ = c.take(wide); k_ = c.take(kd); v_ = c.take(kd);
    a_ = c.take(std::max(qd, vd)); z_ = c.take(std::max(qd, vd));
    alpha_ = c.take(nv); beta_ = c.take(nv);
    g_ = c.take(ff); u_ = c.take(ff);
  }

  // h_ -> o_ (the gated attention's output projection).
  void gated_attention(backend::Backend& be, backend::KvStore& kv, const Qwen35Layer& L, int layer, int pos0) {
    const LayerGeom& g = L.al.g;
    const int64_t qd = (int64_t)g.n_head * g.head_dim_k, kd = (int64_t)g.n_head_kv * g.head_dim_k;
    const View qg = packed(wide_, 2 * qd), q = qg.cols_slice(0, qd), gate = qg.cols_slice(qd, qd);
    const View k = packed(k_, kd), v = packed(v_, kd), attn = packed(a_, qd);
    const backend::MatmulOut outs[] = {{L.attn.wq, qg, nullptr}, {L.attn.wk, k, nullptr}, {L.attn.wv, v, nullptr}};
    be.matmul_n(h_, outs);
    backend::AttnParams ap;
    ap.n_head = g.n_head;
    ap.n_head_kv = g.n_head_kv;
    ap.head_dim_k = g.head_dim_k;
    ap.head_dim_v = g.head_dim_v;
    ap.scale = L.al.scale;
    be.qk_norm_rope_kv_attention(q, k, v, g.n_head, g.n_head_kv, L.attn.q_norm, L.attn.k_norm, hp_.rms_eps, pos0,
                                 L.al.rope, kv, layer, ap, attn);
    be.glu(gate, attn, backend::Activation::Sigmoid, attn);  // attn *= sigmoid(gate)
    be.matmul(*L.attn.wo, attn, o_, nullptr);
  }

  // h_ -> o_ (the DeltaNet's output projection).
  void delta_net(backend::Backend& be, backend::KvStore& kv, const Qwen35Layer& L, int layer, int pos0) {
    const int64_t C = dn_.channels(), vd = (int64_t)dn_.n_v_heads * dn_.head_v_dim;
    const View qkv = packed(wide_, C), z = packed(z_, vd), core = packed(a_, vd);
    const View alpha = packed(alpha_, dn_.n_v_heads), beta = packed(beta_, dn_.n_v_heads);
    const backend::MatmulOut outs[] = {
        {L.wqkv, qkv, nullptr}, {L.wz, z, nullptr}, {L.w_beta, beta, nullptr}, {L.w_alpha, alpha, nullptr}};
    be.matmul_n(h_, outs);
    be.gated_delta_net(qkv, alpha, beta, L.dn, dn_, kv, layer, pos0, core);
    be.head_rms_norm(core, dn_.n_v_heads, dn_.head_v_dim, L.ssm_norm, hp_.rms_eps);
    be.glu(z, core, backend::Activation::Silu, core);  // norm(core) * silu(z)
    be.matmul(*L.ssm_out, core, o_, nullptr);
  }

  WeightLoader loader_;
  backend::DeltaNetParams dn_;
  const backend::Weight *tok_embd_ = nullptr, *out_norm_ = nullptr, *output_ = nullptr;
  std::vector<Qwen35Layer> layers_;
  backend::Buffer buf_;
  int64_t cap_ = 0;
  backend::MoeParams moe_;
  View x_, h_, o_, d_, wide_, k_, v_, a_, z_, alpha_, beta_, g_, u_;
};

}  // namespace

std::unique_ptr<Model> make_qwen35(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  HParams hp = read_common_hparams(*f, "qwen35");
  hp.rope_mode = backend::RopeMode::Neox;
  MEMRA_CHECK(hp.n_expert == 0, "model '{}': qwen35 with experts (use the qwen35moe architecture)", f->path());
  return std::make_unique<Qwen35Model>(std::move(f), be, std::move(hp));
}

// qwen35moe: qwen35 with every FFN a softmax-routed MoE (top k, renormalized) plus a shared expert
// whose output is scaled by sigmoid(h . ffn_gate_inp_shexp) per token.
std::unique_ptr<Model> make_qwen35moe(std::shared_ptr<const gguf::File> f, backend::Backend& be) {
  HParams hp = read_common_hparams(*f, "qwen35moe");
  hp.rope_mode = backend::RopeMode::Neox;
  hp.expert_gating = backend::MoeGating::Softmax;
  MEMRA_CHECK(hp.n_expert > 0 && hp.n_expert_used > 0 && hp.n_ff_exp > 0 && hp.n_ff_shexp > 0,
              "model '{}' (qwen35moe): needs expert_count, expert_used_count, expert_feed_forward_length and "
              "expert_shared_feed_forward_length", f->path());
  return std::make_unique<Qwen35Model>(std::move(f), be, std::move(hp));
}

}  // namespace memra::model
