// The CUDA backend's attention ops: the split-K decode settings shared by its forms (split count,
// workspace, q8s emission, combine, one-split rule, grid trim), the kv.planes decode form, and the
// attention entry points (attention, the folded q/k norm + RoPE + append + attention, attention_impl's
// choice of kernel), split from cuda_ops.cpp.
#include <fmt/format.h>

#include <string>

#include "attn/attn_i8_tile.h"
#include "attn/attn_kernels.h"
#include "attn/attn_prefill_f16.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_op_util.h"
#include "core/error.h"
#include "matvec/matvec.h"
#include "misc/misc_kernels.h"
#include "rope/rope_kernels.h"

namespace memra::backend::cuda_impl {

bool CudaBackend::decode_setup(cuda::AttnParams& p, const CudaKv& c, int pos0, View out) {
  const int n = p.n_tokens;
  p.n_splits = cuda::attn_decode_splits(c.n_ctx(), p.n_head, p.n_head_kv, ctx().info().sm_count,
                                        cfg_.kernels.attn_max_splits, p.min_split_keys, cfg_.kernels.attn_blocks_per_sm);
  p.workspace = static_cast<float*>(
      workspace(kAttn, sizeof(float) * cuda::attn_decode_workspace_floats(n, p.n_head, p.head_dim, p.n_splits)));
  const bool emit = emit_q8s_for(out);
  if (emit) {
    const Q8s q = q8s_planes(out.rows, out.cols);
    p.q8s_xq = const_cast<int8_t*>(q.xq);
    p.q8s_xds = const_cast<void*>(q.xds);
    p.q8s_il = q.il;
  }
  p.combine_direct = !cfg_.kernels.attn_combine_smem;
  p.combine_preload = cfg_.kernels.attn_combine_preload;
  p.one_split_direct = cfg_.kernels.attn_one_split_direct;
  p.rows_one_split = attn_one_split_at(pos0, n, p.n_splits);
  // kernels.attn_grid_round: no blocks past the longest row's used splits (rounded up), where the
  // partition is the 128-key one (the f16 tile form's shorter splits keep the full grid). The
  // step graph's key holds attn_grid_key_at, which fixes this for every layer.
  if (p.min_split_keys == cuda::kAttnMinSplitKeys)
    p.grid_splits = cuda::attn_decode_grid_splits(pos0 + n, p.n_splits, cfg_.kernels.attn_grid_round);
  return emit;
}

// Decode over split-plane rows (kv.planes): the int8 tile form, with the default decode path's
// split count, workspace, q8s emission, combine, one-split rule and grid trim (decode_setup).
void CudaBackend::attention_planes(cuda::AttnParams& p, const CudaKv& c, int pos0, View out) {
  const bool emit = decode_setup(p, c, pos0, out);
  p.planes_stages = cfg_.kernels.attn_planes_stages;
  const std::string& cp = cfg_.kernels.attn_planes_copy;
  p.planes_copy = cp == "tensor" ? cuda::PlanesCopy::TensorTiles : cuda::PlanesCopy::Async;
  p.kv_rows = c.n_ctx();  // (the constructor refused tensor copies with two stages)
  MEMRA_CHECK(cuda::attn_decode_planes_applies(p, c.n_ctx()),
              "kv.planes: the split-plane decode form needs head dim 128, 4 or 8 query heads per kv head and no softcap "
              "(this layer: head dim {}, {} query heads per kv head, softcap {}); set kv.planes = \"off\"",
              p.head_dim, p.n_head / p.n_head_kv, p.softcap);
  p.probe_delay_cycles = cfg_.kernels.probe_attn_delay_cycles;
  cuda::check_status(cuda::launch_attn_decode(p, stream()), "launch_attn_decode (split planes)");
  if (p.probe_delay_cycles > 0) note("probe_attn_delay_cycles", std::to_string(p.probe_delay_cycles));
  if (emit) hold_q8s(out);
  note("attn_decode", fmt::format("i8planes_s{}_hd{}{}{}{}{}{}{}", p.n_splits, p.head_dim,
                                  p.rope.on ? fmt::format("+rope{}", p.rope.loads_first ? "+lf" : "") : "",
                                  cuda::attn_decode_planes_head_split(p) ? (p.rope.head_split == 2 ? "+hs2" : "+hs") : "",
                                  p.planes_stages == 2 ? "+pd2" : p.planes_copy != cuda::PlanesCopy::Async ? "+" + cp : "",
                                  p.one_split_direct ? (p.rows_one_split ? "+direct1+nocombine" : "+direct1") : "",
                                  emit ? "+q8s" : "",
                                  p.grid_splits > 0 ? fmt::format("+trim{}", cfg_.kernels.attn_grid_round) : ""));
}

void CudaBackend::attention(View q, const KvStore& kvs, int layer, int pos0, const AttnParams& ap, View out) {
  attention_impl(q, kvs, layer, pos0, ap, out, nullptr);
}

void CudaBackend::qk_norm_rope_kv_attention(View q, View k, View v, int n_head, int n_head_kv, const Weight* q_norm,
                                            const Weight* k_norm, float eps, int pos0, const RopeParams& rp, KvStore& kvs,
                                            int layer, const AttnParams& ap, View out) {
  auto* c = dynamic_cast<CudaKv*>(&kvs);
  // The fold (kernels.attn_rope_fold): one decode token on the path of the fused q/k norm + RoPE
  // + append kernel, whose work the split attention kernel then does (attn_decode_rope_fold_applies
  // says whether the kernel instance exists for the cache types, head size and group).
  const bool candidate = cfg_.kernels.attn_rope_fold && cfg_.kernels.fuse_kv_append && c && q.rows == 1 && !ap.sinks &&
                         qk_norm_rope_fusable(q, k, n_head_kv, rp) && q.rows == v.rows && k.cols == v.cols &&
                         ap.head_dim_k == ap.head_dim_v && ap.head_dim_k == rp.head_dim && rp.n_rot == rp.head_dim &&
                         ap.n_head == n_head && ap.n_head_kv == n_head_kv && 1 < cfg_.kernels.gemm_min_batch;
  cuda::AttnParams::RopeFold rf;
  if (candidate) {
    const cuda::QkNormRopeParams qp = qk_norm_rope_params(q, k, n_head, n_head_kv, q_norm, k_norm, eps, pos0, rp);
    rf.on = true;
    rf.k_src = k.data;
    rf.v_src = v.data;
    rf.q_norm = qp.q_norm;
    rf.k_norm = qp.k_norm;
    rf.eps = eps;
    rf.neox = rp.mode != RopeMode::Normal;
    rf.ang = cuda::rope_angles(qp.rope);
    rf.prefetch = cfg_.kernels.attn_fold_prefetch;
    rf.stage_k = cfg_.kernels.attn_fold_k_stage;
    rf.loads_first = cfg_.kernels.attn_fold_loads_first;
    rf.softmax_interleave = cfg_.kernels.attn_softmax_interleave;
    rf.mma_scores = cfg_.kernels.attn_mma_scores;
    rf.head_split = attn_head_split_at(pos0, 1);
    // The pair form only for groups of at most kernels.attn_head_pair_max_group query heads: a
    // function of the step graph's key and the layer, so one graph holds one choice per layer.
    // Over split planes only with kernels.attn_planes_head_pairs (the tile form's group block measured faster there).
    if (rf.head_split == 2 && (n_head > cfg_.kernels.attn_head_pair_max_group * n_head_kv ||
                               (c->opts_.planes && !cfg_.kernels.attn_planes_head_pairs)))
      rf.head_split = 0;
    // Whether the kernel takes it: the parameters attention_impl builds, asked beforehand.
    MEMRA_CHECK(layer >= 0 && layer < (int)c->layers.size(), "attention: layer {} out of range [0, {})", layer,
                c->layers.size());
    cuda::AttnParams t = attn_params(q, *c, layer, qp.rope.pos0, ap, out);
    t.q8_scores = cuda::attn_q8_scores_applies(cfg_.kernels, ap.scale, ap.head_dim_k);
    t.v_stage = cfg_.kernels.attn_v_stage;
    t.pv_mma = cfg_.kernels.attn_pv_mma;
    t.rope = rf;
    rf.on = c->opts_.planes ? cuda::attn_decode_planes_fold_applies(t) : cuda::attn_decode_rope_fold_applies(t);
  }
  if (!rf.on)
    return Backend::qk_norm_rope_kv_attention(q, k, v, n_head, n_head_kv, q_norm, k_norm, eps, pos0, rp, kvs, layer, ap,
                                              out);
  forget_q8s();
  cuda::KvAppendParams kv[2];
  kv_append_params(kvs, layer, pos0, k, v, kv);  // throws on a bad layer / a full cache
  kv_appended(*c, pos0, 1, "in_attention_");
  attention_impl(q, kvs, layer, pos0, ap, out, &rf);
  note("qk_norm_rope", fmt::format("in_attention_{}{}", rp.mode == RopeMode::Normal ? "normal" : "neox",
                                    q_norm || k_norm ? "_norm" : ""));
}

namespace {
// The fields the split-K and the naive attention launches share (the same names in both parameter structs):
// q, the layer's cache rows and their types, out, the heads, the positions, scale and window.
template <class P>
void fill_attn_common(P& p, View q, const CudaKv& c, int layer, const int32_t* dpos, const AttnParams& ap, View out) {
  const auto& L = c.layers[(size_t)layer];
  p.q = q.data;
  p.ld_q = q.ld;
  p.k_cache = L.k.get();
  p.type_k = c.opts_.type_k;
  p.k_row_bytes = L.k_row_bytes;
  p.v_cache = L.v.get();
  p.type_v = c.opts_.type_v;
  p.v_row_bytes = L.v_row_bytes;
  p.out = out.data;
  p.ld_out = out.ld;
  p.n_tokens = (int)q.rows;
  p.n_head = ap.n_head;
  p.n_head_kv = ap.n_head_kv;
  p.pos0 = dpos;
  p.scale = ap.scale;
  p.window = ap.window;
}
}  // namespace

cuda::AttnParams CudaBackend::attn_params(View q, const CudaKv& c, int layer, const int32_t* dpos,
                                          const AttnParams& ap, View out) const {
  const auto& L = c.layers[(size_t)layer];
  cuda::AttnParams p;
  fill_attn_common(p, q, c, layer, dpos, ap, out);
  p.k_scale_plane = L.k_scale_plane;
  p.v_scale_plane = L.v_scale_plane;
  p.head_dim = ap.head_dim_k;
  p.softcap = ap.softcap;
  return p;
}

void CudaBackend::attention_impl(View q, const KvStore& kvs, int layer, int pos0, const AttnParams& ap, View out,
                                 const cuda::AttnParams::RopeFold* rf) {
  forget_q8s();
  const auto& c = dynamic_cast<const CudaKv&>(kvs);
  MEMRA_CHECK(layer >= 0 && layer < (int)c.layers.size(), "attention: layer {} out of range [0, {})", layer,
              c.layers.size());
  const auto& ls = c.shape_.layers[(size_t)layer];
  MEMRA_CHECK(ap.n_head > 0 && ap.n_head_kv > 0 && ap.n_head % ap.n_head_kv == 0,
              "attention: n_head {} is not a multiple of n_head_kv {}", ap.n_head, ap.n_head_kv);
  MEMRA_CHECK(ls.n_head_kv == ap.n_head_kv && ls.head_dim_k == ap.head_dim_k && ls.head_dim_v == ap.head_dim_v,
              "attention: layer {} cache holds {} kv heads of {}/{} dims, op asks {} of {}/{}", layer, ls.n_head_kv,
              ls.head_dim_k, ls.head_dim_v, ap.n_head_kv, ap.head_dim_k, ap.head_dim_v);
  MEMRA_CHECK(q.cols == (int64_t)ap.n_head * ap.head_dim_k && out.cols == (int64_t)ap.n_head * ap.head_dim_v &&
                  out.rows == q.rows,
              "attention: q [{} x {}] / out [{} x {}] do not match {} heads of {}/{}", q.rows, q.cols, out.rows,
              out.cols, ap.n_head, ap.head_dim_k, ap.head_dim_v);
  const int64_t n_kv = pos0 + q.rows;
  MEMRA_CHECK(n_kv <= c.n_written, "attention: positions up to {} requested, cache holds {}", n_kv, c.n_written);
  if (q.rows == 0) return;
  check_int(q.rows, "attention rows");
  const int32_t* dpos = device_pos(pos0);
  const int n = (int)q.rows;
  const bool same_dims = ap.head_dim_k == ap.head_dim_v;
  // Attention sinks (gpt-oss) only in the plain kernel so far.
  const bool fast = same_dims && cuda::attn_head_dim_supported(ap.head_dim_k) && !ap.sinks;
  // Decode and speculative-verify batches take the split-K kernel with n_splits fixed by the
  // cache capacity, so a row's result never depends on the batch (decode == verify).
  const bool decode = n < cfg_.kernels.gemm_min_batch && n <= cuda::kMatvecMaxM;
  MEMRA_CHECK(!rf || (decode && fast && n == 1), "internal: the RoPE fold outside the one-token decode path");
  MEMRA_CHECK(!c.opts_.planes || fast, "kv.planes: attention with head dims {}/{}{} has no kernel for split-plane rows "
              "(set kv.planes = false)", ap.head_dim_k, ap.head_dim_v, ap.sinks ? " and sinks" : "");
  if (!fast) {
    cuda::AttnNaiveParams p;
    fill_attn_common(p, q, c, layer, dpos, ap, out);
    p.head_dim_k = ap.head_dim_k;
    p.head_dim_v = ap.head_dim_v;
    p.softcap = ap.softcap;
    p.sinks = ap.sinks ? f32_vector(ap.sinks, ap.n_head, "attention sinks") : nullptr;
    cuda::check_status(cuda::launch_attn_naive(p, stream()), "launch_attn_naive");
    note(decode ? "attn_decode" : "attn_prefill", fmt::format("naive_hd{}{}", ap.head_dim_k, ap.sinks ? "_sinks" : ""));
    return;
  }
  cuda::AttnParams p = attn_params(q, c, layer, dpos, ap, out);
  if (decode && c.opts_.planes) {
    if (rf) p.rope = *rf;
    attention_planes(p, c, pos0, out);
    return;
  }
  if (decode) {
    p.f16_mma = cfg_.kernels.attn_f16_mma;
    // kernels.attn_f16_split_keys only where the f16 tile form is taken (launch_attn_decode refuses
    // shorter splits elsewhere).
    if (cuda::attn_decode_f16_mma(p)) p.min_split_keys = cfg_.kernels.attn_f16_split_keys;
    const bool emit = decode_setup(p, c, pos0, out);
    p.q8_scores = cuda::attn_q8_scores_applies(cfg_.kernels, ap.scale, ap.head_dim_k);
    p.v_stage = cfg_.kernels.attn_v_stage;
    p.pv_mma = cfg_.kernels.attn_pv_mma;
    if (rf) p.rope = *rf;
    cuda::check_status(cuda::launch_attn_decode(p, stream()), "launch_attn_decode");
    if (cfg_.kernels.probe_boundaries > 0) {
      cuda::check_status(cuda::launch_boundary_probe(cfg_.kernels.probe_boundaries, stream()), "launch_boundary_probe");
      note("probe_boundaries", std::to_string(cfg_.kernels.probe_boundaries));
    }
    if (emit) hold_q8s(out);
    note("attn_decode", fmt::format("splitk_s{}_hd{}{}{}{}{}", p.n_splits,
                                    ap.head_dim_k, cuda::attn_decode_word_loads(p) ? "+words" : "",
                                    cuda::attn_decode_q8_scores(p) ? "+q8i" : "",
                                    std::string(cuda::attn_decode_v_stage(p) ? "+vstage" : "") + (p.one_split_direct ? (p.rows_one_split ? "+direct1+nocombine" : "+direct1") : "") +
                                        (cuda::attn_decode_pv_mma(p) ? "+pv16" : "") + (cuda::attn_decode_f16_mma(p) ? "+f16mma" : "") + (p.min_split_keys != cuda::kAttnMinSplitKeys ? fmt::format("+sk{}", p.min_split_keys) : "") + (emit ? "+q8s" : ""),
                                    std::string(rf ? cuda::attn_decode_head_split(p) ? (rf->head_split == 2 ? "+rope+pre+ks+hs2" : "+rope+pre+ks+hs")
                                         : (rf->prefetch && cuda::attn_decode_pv_mma(p) && ap.n_head == 4 * ap.n_head_kv ? (rf->stage_k ? "+rope+pre+ks" : "+rope+pre") : "+rope")
                                       : "")) + (rf && cuda::attn_decode_softmax_interleave(p) ? "+si" : "") +
                                        (rf && cuda::attn_decode_mma_scores(p) ? "+tcs" : "") +
                                        (p.grid_splits > 0 ? fmt::format("+trim{}", cfg_.kernels.attn_grid_round) : ""));
  } else {
    const auto kind = cuda::attn_prefill_choose(ap.head_dim_k);
    if (kind == cuda::AttnPrefillKernel::Mma && cfg_.kernels.attn_prefill_staged &&
        cuda::attn_prefill_staged_supported(ap.head_dim_k)) {
      // The staged row range comes from the host pos0: never inside a captured step (n = 1 only).
      MEMRA_CHECK(!capturing_, "internal: staged prefill attention during graph capture");
      const size_t bytes = cuda::attn_prefill_stage_bytes(p, pos0);
      void* stage = workspace(kAttn, bytes);
      cuda::check_status(cuda::launch_attn_prefill_staged(p, pos0, stage, bytes, stream()),
                         "launch_attn_prefill_staged");
      note("attn_prefill", fmt::format("mma_staged_hd{}", ap.head_dim_k));
      return;
    }
    cuda::check_status(cuda::launch_attn_prefill(p, stream()), "launch_attn_prefill");
    note("attn_prefill", fmt::format("{}_hd{}", kind == cuda::AttnPrefillKernel::Mma ? "mma" : "tiled",
                                     ap.head_dim_k));
  }
}

}  // namespace memra::backend::cuda_impl
