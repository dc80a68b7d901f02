#include "model/layers.h"

#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace memra::model {

using backend::View;

std::string blk(int layer, const char* suffix) { return fmt::format("blk.{}.{}", layer, suffix); }

EmbedOutput load_embed_output(WeightLoader& ld, const HParams& hp) {
  EmbedOutput eo;
  eo.tok_embd = &ld.get("token_embd.weight", {hp.n_embd, hp.n_vocab});
  eo.out_norm = &ld.get("output_norm.weight", {hp.n_embd});
  eo.output = ld.find("output.weight", {hp.n_embd, hp.n_vocab});
  if (!eo.output) eo.output = eo.tok_embd;
  return eo;
}

AttnWidths attn_widths(const LayerGeom& g) {
  return {(int64_t)g.n_head * g.head_dim_k, (int64_t)g.n_head_kv * g.head_dim_k, (int64_t)g.n_head_kv * g.head_dim_v,
          (int64_t)g.n_head * g.head_dim_v};
}

AttentionWeights load_attention(WeightLoader& ld, const HParams& hp, int l, const AttentionOptions& o) {
  const LayerGeom& g = hp.geom(l);
  const auto [qd, kd, vd, od] = attn_widths(g);
  const int64_t e = hp.n_embd;
  AttentionWeights w;
  w.norm = &ld.get(blk(l, "attn_norm.weight"), {e});
  w.wq = &ld.get(blk(l, "attn_q.weight"), {e, qd});
  w.wk = &ld.get(blk(l, "attn_k.weight"), {e, kd});
  const bool v_is_k = o.v_optional && !ld.has(blk(l, "attn_v.weight"));
  if (v_is_k)
    MEMRA_CHECK(g.head_dim_k == g.head_dim_v, "model '{}' ({}): layer {} has no '{}', so V = K, but head_dim_k {} != "
                "head_dim_v {}", ld.file().path(), hp.arch, l, blk(l, "attn_v.weight"), g.head_dim_k, g.head_dim_v);
  w.wv = v_is_k ? w.wk : &ld.get(blk(l, "attn_v.weight"), {e, vd});
  w.wo = &ld.get(blk(l, "attn_output.weight"), {od, e});
  if (o.qkv_bias) {
    w.bq = &ld.get(blk(l, "attn_q.bias"), {qd});
    w.bk = &ld.get(blk(l, "attn_k.bias"), {kd});
    if (!v_is_k) w.bv = &ld.get(blk(l, "attn_v.bias"), {vd});
  } else {
    // llama-family files may still carry biases (some conversions do); use them when present.
    w.bq = ld.find(blk(l, "attn_q.bias"), {qd});
    w.bk = ld.find(blk(l, "attn_k.bias"), {kd});
    if (!v_is_k) w.bv = ld.find(blk(l, "attn_v.bias"), {vd});
  }
  if (v_is_k) w.bv = w.bk;  // V is the whole K projection
  w.bo = o.out_bias ? &ld.get(blk(l, "attn_output.bias"), {e}) : ld.find(blk(l, "attn_output.bias"), {e});
  if (o.qk_norm) {
    w.q_norm = &ld.get(blk(l, "attn_q_norm.weight"), {g.head_dim_k});
    w.k_norm = &ld.get(blk(l, "attn_k_norm.weight"), {g.head_dim_k});
  }
  if (o.sinks) w.sinks = &ld.get(blk(l, "attn_sinks.weight"), {g.n_head});
  w.v_norm = o.v_norm;
  if (o.head_gate) {
    MEMRA_CHECK(g.n_head <= e, "model '{}' ({}): layer {}: attention gate over {} heads wider than n_embd {}",
                ld.file().path(), hp.arch, l, g.n_head, e);
    w.gate = &ld.get(blk(l, "attn_gate.weight"), {e, g.n_head});
  }
  return w;
}

FfnWeights load_ffn(WeightLoader& ld, const HParams& hp, int l, const char* norm) {
  MEMRA_CHECK(hp.n_ff > 0, "model '{}' ({}): missing metadata key '{}.feed_forward_length'",
              ld.file().path(), hp.arch, hp.arch);
  FfnWeights w;
  w.norm = &ld.get(blk(l, norm), {hp.n_embd});
  w.gate = &ld.get(blk(l, "ffn_gate.weight"), {hp.n_embd, hp.n_ff});
  w.up = &ld.get(blk(l, "ffn_up.weight"), {hp.n_embd, hp.n_ff});
  w.down = &ld.get(blk(l, "ffn_down.weight"), {hp.n_ff, hp.n_embd});
  return w;
}

MoeLayerWeights load_moe(WeightLoader& ld, const HParams& hp, int l, const char* norm) {
  MEMRA_CHECK(hp.n_expert > 0 && hp.n_expert_used > 0 && hp.n_ff_exp > 0,
              "model '{}' ({}): MoE needs '{}.expert_count', '{}.expert_used_count' and "
              "'{}.expert_feed_forward_length' (got {}, {}, {})", ld.file().path(), hp.arch, hp.arch,
              hp.arch, hp.arch, hp.n_expert, hp.n_expert_used, hp.n_ff_exp);
  MoeLayerWeights w;
  w.norm = &ld.get(blk(l, norm), {hp.n_embd});
  w.w.router = &ld.get(blk(l, "ffn_gate_inp.weight"), {hp.n_embd, hp.n_expert});
  w.w.gate_exps = &ld.get(blk(l, "ffn_gate_exps.weight"), {hp.n_embd, hp.n_ff_exp, hp.n_expert});
  w.w.up_exps = &ld.get(blk(l, "ffn_up_exps.weight"), {hp.n_embd, hp.n_ff_exp, hp.n_expert});
  w.w.down_exps = &ld.get(blk(l, "ffn_down_exps.weight"), {hp.n_ff_exp, hp.n_embd, hp.n_expert});
  w.w.router_bias = ld.find(blk(l, "ffn_gate_inp.bias"), {hp.n_expert});
  w.w.gate_bias = ld.find(blk(l, "ffn_gate_exps.bias"), {hp.n_ff_exp, hp.n_expert});
  w.w.up_bias = ld.find(blk(l, "ffn_up_exps.bias"), {hp.n_ff_exp, hp.n_expert});
  w.w.down_bias = ld.find(blk(l, "ffn_down_exps.bias"), {hp.n_embd, hp.n_expert});
  w.selection_bias = ld.find(blk(l, "exp_probs_b.bias"), {hp.n_expert});
  return w;
}

FfnWeights load_shared_expert(WeightLoader& ld, const HParams& hp, int l) {
  MEMRA_CHECK(hp.n_ff_shexp > 0, "model '{}' ({}): the shared expert needs '{}.expert_shared_feed_forward_length' > 0",
              ld.file().path(), hp.arch, hp.arch);
  FfnWeights w;
  w.gate = &ld.get(blk(l, "ffn_gate_shexp.weight"), {hp.n_embd, hp.n_ff_shexp});
  w.up = &ld.get(blk(l, "ffn_up_shexp.weight"), {hp.n_embd, hp.n_ff_shexp});
  w.down = &ld.get(blk(l, "ffn_down_shexp.weight"), {hp.n_ff_shexp, hp.n_embd});
  return w;
}

backend::RopeParams rope_params(const HParams& hp, const backend::Weight* freq_factors) {
  backend::RopeParams r;
  r.mode = hp.rope_mode;
  r.head_dim = hp.head_dim_k;
  r.n_rot = hp.n_rot;
  r.freq_base = hp.rope_base;
  r.freq_scale = hp.rope_freq_scale;
  r.freq_factors = freq_factors;
  r.ext_factor = hp.yarn_ext_factor;
  r.attn_factor = hp.yarn_attn_factor;
  r.beta_fast = hp.yarn_beta_fast;
  r.beta_slow = hp.yarn_beta_slow;
  r.n_ctx_orig = hp.n_ctx_orig;
  return r;
}

AttnLayer attn_layer(const HParams& hp, int layer, const backend::Weight* freq_factors) {
  AttnLayer a;
  a.g = hp.geom(layer);
  a.rope = rope_params(hp, freq_factors);
  a.rope.head_dim = a.g.head_dim_k;
  a.rope.n_rot = a.g.n_rot;
  a.scale = hp.attn_scale > 0.0f ? hp.attn_scale : 1.0f / std::sqrt((float)a.g.head_dim_k);
  if (hp.is_swa(layer)) {
    a.window = hp.n_swa;
    a.rope.freq_base = hp.rope_base_swa;
    a.rope.freq_scale = hp.rope_freq_scale_swa;
  }
  return a;
}

backend::MoeParams moe_params(const HParams& hp) {
  backend::MoeParams p;
  p.n_expert = hp.n_expert;
  p.n_expert_used = hp.n_expert_used;
  p.gating = hp.expert_gating;
  p.norm_topk = hp.expert_weights_norm;
  p.weights_scale = hp.expert_weights_scale;
  return p;
}

void Scratch::ensure(backend::Backend& be, const HParams& hp, int64_t n) {
  const int64_t e = hp.n_embd, qd = (int64_t)hp.n_head * hp.head_dim_k,
                kd = (int64_t)hp.n_head_kv * hp.head_dim_k, vd = (int64_t)hp.n_head_kv * hp.head_dim_v,
                od = (int64_t)hp.n_head * hp.head_dim_v,
                ff = std::max<int64_t>({hp.n_ff, hp.n_ff_exp, hp.n_ff_shexp, 1});
  if (n > cap) {
    const int64_t per_tok = 5 * e + qd + kd + vd + od + 2 * ff;
    buf = be.alloc(per_tok * n);
    cap = n;
  }
  ViewCarver c{buf.mem.get(), n};
  x = c.take(e); h = c.take(e); o = c.take(e); d = c.take(e); post = c.take(e);
  q = c.take(qd); k = c.take(kd); v = c.take(vd); attn = c.take(od);
  g = c.take(ff); u = c.take(ff);
}

bool attention_forward(backend::Backend& be, backend::KvStore& kv, const HParams& hp,
                       const AttentionWeights& w, const AttnLayer& al, int layer, int pos0, Scratch& s,
                       bool may_add) {
  // This layer's widths, packed at the front of the scratch slots (ld = cols).
  const LayerGeom& g = al.g;
  const auto wd = attn_widths(g);
  const View q = packed(s.q, wd.q), k = packed(s.k, wd.k), v = packed(s.v, wd.v), attn = packed(s.attn, wd.o);
  const backend::MatmulOut qkv[] = {{w.wq, q, w.bq}, {w.wk, k, w.bk}, {w.wv, v, w.bv}};
  be.matmul_n(s.h, qkv);  // V = K: the same product twice (the same bits)
  if (w.v_norm) be.head_rms_norm(v, g.n_head_kv, g.head_dim_v, nullptr, hp.rms_eps);
  backend::AttnParams ap;
  ap.n_head = g.n_head;
  ap.n_head_kv = g.n_head_kv;
  ap.head_dim_k = g.head_dim_k;
  ap.head_dim_v = g.head_dim_v;
  ap.scale = al.scale;
  ap.window = al.window;
  ap.sinks = w.sinks;
  be.qk_norm_rope_kv_attention(q, k, v, g.n_head, g.n_head_kv, w.q_norm, w.k_norm, hp.rms_eps, pos0, al.rope, kv,
                               layer, ap, attn);
  if (w.gate) {
    // The per-head gate logits go to the front of s.o, which the output projection writes next.
    const View gl = packed(s.o, g.n_head);
    be.matmul(*w.gate, s.h, gl, nullptr);
    be.sigmoid_head_gate(attn, g.n_head, g.head_dim_v, gl);
  }
  if (may_add && be.fuses_residual(*w.wo, attn, w.bo)) {
    be.matmul_residual(*w.wo, attn, s.x);
    return true;
  }
  be.matmul(*w.wo, attn, s.o, w.bo);
  return false;
}

bool ffn_forward(backend::Backend& be, const FfnWeights& w, backend::Activation act, Scratch& s, bool may_add) {
  const int64_t ff = w.gate->ne[1];
  View g = s.g.cols_slice(0, ff), u = s.u.cols_slice(0, ff);
  g.ld = u.ld = ff;  // packed [n, ff] in the front of the scratch slot
  be.matmul_glu(*w.gate, *w.up, s.h, act, g, u);
  if (may_add && be.fuses_residual(*w.down, g, nullptr)) {
    be.matmul_residual(*w.down, g, s.x);
    return true;
  }
  be.matmul(*w.down, g, s.d, nullptr);
  return false;
}

namespace {

// The layer's routing parameters: the model's, with the layer's selection bias.
backend::MoeParams layer_moe_params(const MoeLayerWeights& w, const backend::MoeParams& p) {
  backend::MoeParams lp = p;
  if (w.selection_bias) lp.selection_bias = w.selection_bias;
  return lp;
}

}  // namespace

bool moe_on_device(const backend::Backend& be, const MoeLayerWeights& w, const backend::MoeParams& p, int64_t n) {
  return be.moe_on_device(w.w, layer_moe_params(w, p), n);
}

void moe_forward(backend::Backend& be, const MoeLayerWeights& w, const backend::MoeParams& p,
                 Scratch& s) {
  moe_forward(be, w, p, s.h, s.g, s.u, s.o, s.d);
}

namespace {

// The shared expert of a MoE layer (w.shared), added to the routed output d.
void shared_expert_forward(backend::Backend& be, const MoeLayerWeights& w, const backend::MoeParams& p, View h,
                           View g_buf, View u_buf, View o, View d) {
  if (w.shared.gate) {
    const int64_t ff = w.shared.gate->ne[1];
    View g = g_buf.cols_slice(0, ff), u = u_buf.cols_slice(0, ff);
    g.ld = u.ld = ff;
    be.matmul_glu(*w.shared.gate, *w.shared.up, h, p.act, g, u);
    be.matmul(*w.shared.down, g, o, nullptr);
    if (w.shared_gate) {
      View gl = g_buf.cols_slice(0, 1);
      gl.ld = 1;
      be.matmul(*w.shared_gate, h, gl, nullptr);
      be.sigmoid_head_gate(o, 1, o.cols, gl);
    }
    be.add(d, o);  // routed + shared, then the caller adds the sum to the stream
  }
}

}  // namespace

void moe_forward(backend::Backend& be, const MoeLayerWeights& w, const backend::MoeParams& p, View h, View g_buf,
                 View u_buf, View o, View d) {
  be.moe_ffn(h, w.w, layer_moe_params(w, p), d);
  shared_expert_forward(be, w, p, h, g_buf, u_buf, o, d);
}

bool moe_forward_normed(backend::Backend& be, const MoeLayerWeights& w, const backend::MoeParams& p, Scratch& s,
                        const backend::Weight* norm, float eps, bool may_add) {
  // A shared expert's output joins the routed one before the stream's add (the oracle's order).
  const bool added = be.rms_norm_moe_ffn(s.x, norm, eps, s.h, w.w, layer_moe_params(w, p), s.d,
                                         may_add && !w.shared.gate);
  if (!added) shared_expert_forward(be, w, p, s.h, s.g, s.u, s.o, s.d);
  return added;
}

}  // namespace memra::model
