#include "model/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace memra::model {

namespace {

// The value of a one-element F32 tensor, read on the host from the file; nullopt when absent.
std::optional<float> scalar_tensor(const gguf::File& f, const std::string& arch, const std::string& name) {
  const auto* t = f.find_tensor(name);
  if (!t) return std::nullopt;
  MEMRA_CHECK(t->type == QType::F32 && t->ne.size() == 1 && t->ne[0] == 1,
              "model '{}' ({}): tensor '{}' must be F32 [1], got {} [{}]", f.path(), arch, name,
              qtype_name(t->type), fmt::join(t->ne, ", "));
  float v;
  std::memcpy(&v, f.tensor_data(*t), sizeof v);
  return v;
}

}  // namespace

DecoderModel::DecoderModel(std::shared_ptr<const gguf::File> file, backend::Backend& be, HParams hp,
                           DecoderSpec spec)
    : spec_(spec), loader_(file, be, hp.arch) {
  hp_ = std::move(hp);
  auto& ld = loader_;
  const EmbedOutput eo = load_embed_output(ld, hp_);
  tok_embd_ = eo.tok_embd;
  out_norm_ = eo.out_norm;
  output_ = eo.output;
  // Sized by the largest rotary width of the layers it applies to.
  int ff_rot = 0;
  for (int l = 0; l < hp_.n_layer; ++l)
    if (!spec_.rope_freqs_full_only || !hp_.is_swa(l)) ff_rot = std::max(ff_rot, hp_.geom(l).n_rot);
  rope_freqs_ = ld.find("rope_freqs.weight", {ff_rot / 2});
  for (int l = 0; l < hp_.n_layer; ++l) {
    Layer L;
    L.attn = load_attention(ld, hp_, l, spec_.attn);
    L.is_moe = spec_.moe && l >= spec_.n_dense_lead;
    if (L.is_moe) {
      L.moe = load_moe(ld, hp_, l, spec_.moe_norm);
      if (spec_.shared_expert) L.moe.shared = load_shared_expert(ld, hp_, l);
    } else {
      L.ffn = load_ffn(ld, hp_, l);
    }
    if (spec_.post_norms) {
      L.post_attn_norm = &ld.get(blk(l, "post_attention_norm.weight"), {hp_.n_embd});
      L.post_ffn_norm = &ld.get(blk(l, "post_ffw_norm.weight"), {hp_.n_embd});
    }
    L.al = attn_layer(hp_, l, spec_.rope_freqs_full_only && hp_.is_swa(l) ? nullptr : rope_freqs_);
    if (spec_.layer_out_scale) L.out_scale = scalar_tensor(ld.file(), hp_.arch, blk(l, "layer_output_scale.weight"));
    layers_.push_back(L);
  }
  moe_ = moe_params(hp_);
  moe_.act = spec_.act;
}

kv::KvShape DecoderModel::kv_shape() const {
  kv::KvShape s;
  for (int l = 0; l < hp_.n_layer; ++l) {
    const LayerGeom& g = hp_.geom(l);
    kv::KvLayerShape ls{g.n_head_kv, g.head_dim_k, g.head_dim_v};
    ls.n_head = g.n_head;
    ls.sinks = layers_[(size_t)l].attn.sinks != nullptr;
    s.layers.push_back(ls);
  }
  return s;
}

void DecoderModel::forward(backend::Backend& be, backend::KvStore& kv, std::span<const int32_t> ids,
                           int pos0, bool all_logits, backend::View logits) {
  const int64_t n = (int64_t)ids.size();
  const int64_t n_out = check_forward(n, all_logits, logits);
  Scratch& s = scratch_;
  s.ensure(be, hp_, n);
  // A step whose experts the backend routes on the host is not captured into a graph (no owner).
  bool capturable = true;
  for (const Layer& L : layers_)
    if (L.is_moe && !moe_on_device(be, L.moe, moe_, n)) capturable = false;
  backend::StepScope step(be, {ids, pos0, &kv, capturable ? this : nullptr, s.buf.mem.get(), logits});
  if (step.replayed()) return step.finish();
  be.embed(*tok_embd_, ids, s.x);
  if (spec_.embd_scale) be.scale(s.x, std::sqrt((float)hp_.n_embd));
  // A sublayer's output is added to the stream fused with the next norm (add_rms_norm), or, where
  // the backend fuses the add into the projection (Backend::fuses_residual), already added (the
  // same bits): then the norm reads the stream alone.
  const auto norm = [&](bool added, backend::View delta, const backend::Weight* w) {
    if (added)  // s.h feeds only the next projections (Backend::rms_norm_into_matvecs)
      be.rms_norm_into_matvecs(s.x, w, hp_.rms_eps, s.h);
    else
      be.add_rms_norm(s.x, delta, w, hp_.rms_eps, s.h);
  };
  // Post-norms: the sublayer output is normed into s.post, which the next norm adds.
  const bool may_add = !spec_.post_norms;
  const auto post = [&](backend::View out, const backend::Weight* w) {
    if (!w) return out;
    be.rms_norm(out, w, hp_.rms_eps, s.post);
    return s.post;
  };
  bool d_added = true;  // layer 0: the embedding alone
  backend::View d = s.d;
  // The norm that follows a sublayer whose output the backend may add to the stream itself (its
  // next op then is norm(true, ...)): a hint, so that the backend may fold it into that launch.
  const auto expect_norm = [&](const backend::Weight* w) {
    if (may_add) be.expect_norm_after_residual(w, hp_.rms_eps, s.h);
  };
  for (int l = 0; l < hp_.n_layer; ++l) {
    const Layer& L = layers_[(size_t)l];
    norm(d_added, d, L.attn.norm);
    if (!L.is_moe) expect_norm(L.ffn.norm);
    const bool o_added = attention_forward(be, kv, hp_, L.attn, L.al, l, pos0, s, may_add);
    if (L.is_moe && o_added) {  // the FFN norm reads the stream alone: the backend may fuse it with the router
      d_added = moe_forward_normed(be, L.moe, moe_, s, L.moe.norm, hp_.rms_eps, may_add);
    } else if (L.is_moe) {
      norm(o_added, post(s.o, L.post_attn_norm), L.moe.norm);
      moe_forward(be, L.moe, moe_, s);
      d_added = false;
    } else {
      norm(o_added, o_added ? s.o : post(s.o, L.post_attn_norm), L.ffn.norm);
      if (!L.out_scale) expect_norm(l + 1 < hp_.n_layer ? layers_[(size_t)l + 1].attn.norm : out_norm_);
      d_added = ffn_forward(be, L.ffn, spec_.act, s, may_add);
    }
    d = d_added ? s.d : post(s.d, L.post_ffn_norm);
    if (L.out_scale) {  // the stream complete, then scaled; the next norm reads it alone
      if (!d_added) be.add(s.x, d);
      be.scale(s.x, *L.out_scale);
      d_added = true;
    }
  }
  norm(d_added, d, out_norm_);
  be.matmul(*output_, s.h.rows_slice(n - n_out, n_out), logits, nullptr);
  if (hp_.logit_softcap > 0.0f) be.softcap(logits, hp_.logit_softcap);
  step.finish();
}

}  // namespace memra::model
