// The CUDA backend's split-K decode attention settings shared by its forms (split count,
// workspace, q8s emission, combine, one-split rule, grid trim) and the kv.planes decode form (split
// from cuda_ops.cpp, whose attention_impl calls them).
#include <fmt/format.h>

#include "attn/attn_i8_tile.h"
#include "attn/attn_kernels.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_op_util.h"
#include "core/error.h"

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
  cuda::check_status(cuda::launch_attn_decode(p, stream()), "launch_attn_decode (split planes)");
  if (emit) hold_q8s(out);
  note("attn_decode", fmt::format("i8planes_s{}_hd{}{}{}{}{}{}{}", p.n_splits, p.head_dim,
                                  p.rope.on ? fmt::format("+rope{}{}", p.rope.loads_first ? "+lf" : "", p.rope.q_regs ? "+qr" : "") : "",
                                  cuda::attn_decode_planes_head_split(p) ? (p.rope.head_split == 2 ? "+hs2" : "+hs") : "",
                                  p.planes_stages == 2 ? "+pd2" : p.planes_copy != cuda::PlanesCopy::Async ? "+" + cp : "",
                                  p.one_split_direct ? (p.rows_one_split ? "+direct1+nocombine" : "+direct1") : "",
                                  emit ? "+q8s" : "",
                                  p.grid_splits > 0 ? fmt::format("+trim{}", cfg_.kernels.attn_grid_round) : ""));
}

}  // namespace memra::backend::cuda_impl
