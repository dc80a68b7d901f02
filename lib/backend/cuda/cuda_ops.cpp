// The ops of the CUDA backend: each checks shapes on the host (the errors the CPU backend gives),
// then launches the kernels of kernels/<family> on the compute stream.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "act/act_kernels.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_op_util.h"
#include "core/error.h"
#include "gemm/gemm.h"
#include "matvec/matvec.h"
#include "matvec/matvec_v2.h"
#include "matvec/mmvs.h"
#include "matvec/q8s_order.h"
#include "matvec/split_layout.h"
#include "misc/misc_kernels.h"
#include "norm/norm_kernels.h"
#include "quant/block_q8_1.h"
#include "quant/quant_kernels.h"
#include "rope/rope_kernels.h"

namespace memra::backend::cuda_impl {

namespace {

// The activations the CUDA kernels implement; others (SwigluOai) are refused, never substituted.
cuda::ActKind act_kind(Activation a) {
  switch (a) {
    case Activation::Silu: return cuda::ActKind::Silu;
    case Activation::GeluTanh: return cuda::ActKind::GeluTanh;
    case Activation::Sigmoid: return cuda::ActKind::Sigmoid;
    case Activation::SwigluOai: return cuda::ActKind::SwigluOai;
  }
  MEMRA_FAIL("activation '{}' has no CUDA path yet: run this model with run.backend = cpu", activation_name(a));
}
// The fused matvec GLU's code: 1 SiLU, 2 GELU-tanh (the fused forms have no other activation).
int glu_code(Activation a) {
  MEMRA_CHECK(a == Activation::Silu || a == Activation::GeluTanh,
              "internal: the fused matvec GLU has no '{}' form", activation_name(a));
  return act_kind(a) == cuda::ActKind::Silu ? 1 : 2;
}

}  // namespace

const cuda::MatmulVariant& CudaBackend::matmul_variant(const Weight& w, int64_t m) {
  const auto key = std::make_tuple(w.data, (int)w.type, w.n_rows(), w.ne[0], m);
  auto it = matmul_variants_.find(key);
  if (it != matmul_variants_.end()) return it->second;
  const auto& info = ctx().info();
  cuda::MatmulShape shape{m, w.n_rows(), w.ne[0], w.type};
  const bool aligned = reinterpret_cast<uintptr_t>(w.data) % 16 == 0 && w.row_bytes % 16 == 0;
  shape.split_ready = w.decode_data != nullptr || (w.type == QType::Q4_K && aligned);
  auto v = cuda::choose_matmul_variant(info.cc(), info.sm_count, shape, cfg_.kernels);
  return matmul_variants_.emplace(key, std::move(v)).first->second;
}

void CudaBackend::embed(const Weight& table, std::span<const int32_t> ids, View out) {
  forget_q8s();
  const int64_t rows = table.n_rows();
  MEMRA_CHECK(out.rows == (int64_t)ids.size() && out.cols == table.ne[0],
              "embed: output [{} x {}] must be [{} x {}]", out.rows, out.cols, ids.size(), table.ne[0]);
  for (int32_t id : ids)
    MEMRA_CHECK(id >= 0 && id < rows, "embed: token id {} out of range [0, {}) of '{}'", id, rows, table.name);
  if (ids.empty()) return;
  if (capturing_) capture_id_limit_ = rows;
  cuda::EmbedParams p;
  p.type = table.type;
  p.table = table.data;
  p.row_bytes = table.row_bytes;
  p.table_rows = rows;
  p.cols = table.ne[0];
  p.ids = device_ids(ids);
  p.n_tokens = (int)ids.size();
  p.out = out.data;
  p.ld_out = out.ld;
  cuda::check_status(cuda::launch_embed(p, stream()), "launch_embed");
  note("embed", fmt::format("gather_{}", qtype_name(table.type)));
}

void CudaBackend::matmul(const Weight& w, View x, View y, const Weight* bias) {
  const int64_t k = w.ne[0], n = w.n_rows(), m = x.rows;
  MEMRA_CHECK(x.cols == k && y.cols == n && y.rows == m,
              "matmul '{}': x [{} x {}] * W^T [{} -> {}] does not give y [{} x {}]", w.name, x.rows, x.cols, k, n,
              y.rows, y.cols);
  const float* b = f32_vector(bias, n, "matmul bias");
  if (m == 0) return;
  check_int(m, "matmul rows");
  const auto& v = matmul_variant(w, m);
  if (v.kind != cuda::MatmulKind::kMatvecSplit) settle_deferred_norm(x);  // these read x itself
  switch (v.kind) {
    case cuda::MatmulKind::kMatvecSplit:
      launch_split_matvec(w, nullptr, 0, x, y);
      note("matvec", fmt::format("mmvs.{}", qtype_name(w.type)));
      break;
    case cuda::MatmulKind::kMatvecQ8_1:
    case cuda::MatmulKind::kMatvecQ8_1V2:
    case cuda::MatmulKind::kMatvecFloat: {
      if (!b && mmvf2_applies(w, x)) {
        launch_mmvf2(w, nullptr, 0, x, y);
        break;
      }
      cuda::MatvecParams p;
      p.w_type = w.type;
      p.w = w.data;
      p.w_row_bytes = w.row_bytes;
      p.n_rows = n;
      p.n_cols = k;
      p.m = (int)m;
      p.y = y.data;
      p.ldy = y.ld;
      p.rows_per_block = v.rows_per_block;
      if (v.kind != cuda::MatmulKind::kMatvecFloat) {
        MEMRA_CHECK(k % 32 == 0, "matmul '{}': k={} is not a multiple of 32 (q8_1 activations)", w.name, k);
        const size_t qbytes = (size_t)m * (size_t)(k / 32) * sizeof(cuda::BlockQ8_1);
        void* xq = workspace(kQ8Act, qbytes);
        cuda::QuantizeQ8_1Params qp;
        qp.x = x.data;
        qp.y = xq;
        qp.n = k;
        qp.rows = m;
        qp.ld_x = x.ld;
        cuda::check_status(cuda::launch_quantize_q8_1(qp, stream()), "launch_quantize_q8_1");
        p.x_q8_1 = xq;
      } else {
        p.x_f32 = x.data;
        p.ldx = x.ld;
      }
      if (v.kind == cuda::MatmulKind::kMatvecQ8_1V2)
        cuda::check_status(cuda::launch_matvec_v2(p, stream()), "launch_matvec_v2");
      else
        cuda::check_status(cuda::launch_matvec(p, stream()), "launch_matvec");
      note("matvec", fmt::format("{}.{}", v.name, qtype_name(w.type)));
      break;
    }
    default: {
      cuda::GemmParams p;
      p.w_type = w.type;
      p.w = w.data;
      p.w_row_bytes = w.row_bytes;
      if (w.gemm_data) {  // the f16 copy made at load: the same operand without the dequantization
        p.w_type = QType::F16;
        p.w = w.gemm_data;
        p.w_row_bytes = (uint64_t)k * 2;
      }
      p.n = n;
      p.k = k;
      p.m = m;
      p.x = x.data;
      p.ldx = x.ld;
      p.y = y.data;
      p.ldy = y.ld;
      p.scratch = workspace(kGemm, cuda::gemm_scratch_bytes(p.w_type, n, k, m));
      if (p.w_type != QType::F32 && cfg_.kernels.gemm_x_reuse)
        p.x_conv = gemm_x_input(x, cuda::gemm_x_operand_bf16(p.w_type));
      p.lt = ctx().cublaslt();
      p.workspace = ctx().cublas_workspace();
      p.workspace_bytes = ctx().cublas_workspace_bytes();
      const cudaError_t e = cuda::launch_gemm(p, stream());
      if (e != cudaSuccess)
        MEMRA_FAIL("matmul '{}' ({} [{} x {}], m={}): GEMM {} failed: {} ({})", w.name, qtype_name(w.type), n, k,
                   m, v.name, cudaGetErrorName(e), cuda::gemm_last_error());
      note("gemm", fmt::format("{}{}.{}", v.name, w.gemm_data ? "_f16copy" : "", qtype_name(w.type)));
      break;
    }
  }
  forget_q8s_if_overlaps(y);
  if (b) {
    cuda::EwiseParams e;
    e.op = cuda::EwiseOp::AddBias;
    e.x = y.data;
    e.ld_x = y.ld;
    e.y = b;
    e.rows = m;
    e.cols = n;
    cuda::check_status(cuda::launch_ewise(e, stream()), "launch_ewise(bias)");
  }
}

const void* CudaBackend::gemm_x_input(View x, bool bf16) {
  // Same view -> same m x k -> the slot is already that large and is not reallocated.
  void* buf = workspace(kX16, (size_t)x.rows * (size_t)x.cols * 2);
  const bool same = x16_src_.data == x.data && x16_src_.rows == x.rows && x16_src_.cols == x.cols &&
                    x16_src_.ld == x.ld && x16_bf16_ == bf16;
  note("gemm_x", same ? "reused" : "converted");
  if (same) return buf;
  cuda::ConvertParams cv;
  cv.x = x.data;
  cv.rows = x.rows;
  cv.cols = x.cols;
  cv.ld_x = x.ld;
  cv.out = buf;
  cv.to_bf16 = bf16;
  cuda::check_status(cuda::launch_convert_f32(cv, stream()), "launch_convert_f32");
  x16_src_ = x;
  x16_bf16_ = bf16;
  return buf;
}

CudaBackend::Q8s CudaBackend::q8s_planes(int64_t m, int64_t k, bool q6k, bool other) {
  // One-token rows in the interleaved order with kernels.mmvs_act_il (every producer and the mmvs
  // launch ask here, so they agree); verify batches (m > 1) keep the plain order.
  const bool il = cfg_.kernels.mmvs_act_il && m == 1;
  const size_t xq_bytes = il ? (size_t)cuda::q8s::il_row_bytes(k) : ((size_t)m * (size_t)k + 255) / 256 * 256;
  const size_t bytes = xq_bytes + (size_t)m * (size_t)(k / 32) * 8;
  auto* base = static_cast<uint8_t*>(workspace(other ? other_q8s_slot() : q8s_slot_, bytes));
  return {reinterpret_cast<const int8_t*>(base), base + xq_bytes, il, il && q6k};
}

bool CudaBackend::emit_q8s_for(View out) const {
  // Decode and verify batches only (the mmvs rows), and only when out is dense: the planes are
  // indexed as rows x cols.
  return cfg_.kernels.fuse && out.rows >= 1 && out.rows <= cuda::kMmvsMaxM && out.cols % 64 == 0 &&
         out.ld == out.cols;
}

CudaBackend::Q8s CudaBackend::q8s_input(View x, bool q6k) {
  const int64_t k = x.cols, m = x.rows;
  const auto held = [&] {
    return cfg_.kernels.fuse && q8s_src_.data == x.data && q8s_src_.rows == x.rows && q8s_src_.cols == x.cols &&
           q8s_src_.ld == x.ld && (q6k || !q8s_src_q6k_);
  };
  if (defer_.out.data && overlaps(x, defer_.out)) {  // kernels.norm_defer
    if (held() && defer_.live && q8s_src_.data == defer_.out.data) {
      Q8s q = q8s_planes(m, k, q8s_src_q6k_);
      q.norm_ss = defer_.ss;
      q.norm_ss_n = defer_.n_ss;
      q.norm_eps = defer_.eps;
      q.norm_ss_final = defer_.final;
      return q;
    }
    // Another view of the output (the last row of a batch for the head): the norm in full, then
    // x's planes as for any f32 input (reused only if they are x's own).
    settle_deferred_norm(x);
  }
  if (held()) return q8s_planes(m, k, q8s_src_q6k_);
  const Q8s q = q8s_planes(m, k, q6k && k % 256 == 0);
  cuda::QuantizeQ8sParams qp;
  qp.x = x.data;
  qp.n = k;
  qp.rows = m;
  qp.ld_x = x.ld;
  qp.xq = const_cast<int8_t*>(q.xq);
  qp.xds = const_cast<void*>(q.xds);
  qp.act_il = q.il;
  qp.act_il_q6k = q.q6k;
  qp.bulk = cfg_.kernels.quantize_bulk_load;
  cuda::check_status(cuda::launch_quantize_q8s(qp, stream()), "launch_quantize_q8s");
  note("quantize_q8s", cuda::quantize_q8s_bulk_applies(qp) ? "bulk" : "loads");
  hold_q8s(x, q.q6k);
  return q;
}

bool CudaBackend::launch_split_matvec(const Weight& w, const Weight* w2, int glu, View x, View y,
                                      std::span<const MatmulOut> extra, bool residual, const NormHint* next_norm) {
  const int64_t k = w.ne[0];
  MEMRA_CHECK(k % 64 == 0, "matmul '{}': k={} is not a multiple of 64 (mmvs)", w.name, k);
  // A launch of Q6_K rows only may read the Q6_K variant of the interleaved order.
  const Q8s q = q8s_input(x, cfg_.kernels.mmvs_act_il_q6k && w.type == QType::Q6_K && !w2 && extra.empty());
  // The split copy's planes (split_layout.h), or the GGUF rows of a Q4_K matrix without a copy
  // (blocked order in place).
  const bool il = w.decode_data != nullptr && cfg_.kernels.mmvs_interleave;
  const auto plane = [&](const Weight& wt) -> std::tuple<const void*, const void*, const void*> {
    MEMRA_CHECK((wt.decode_data != nullptr) == (w.decode_data != nullptr),
                "internal: mmvs matrices '{}' and '{}' of one launch differ in layout", w.name, wt.name);
    if (!wt.decode_data) return {wt.data, nullptr, nullptr};
    const auto L = cuda::sp::layout(wt.type, il);
    const auto pl = cuda::sp::plan(wt.type, wt.n_rows(), wt.ne[0], il);
    const auto* base = static_cast<const uint8_t*>(wt.decode_data);
    return {base, L.d_src >= 0 ? base + pl.d_offset : nullptr, L.aux_src >= 0 ? base + pl.aux_offset : nullptr};
  };
  cuda::MmvsParams p;
  p.w_type = w.type;
  p.interleaved = il;
  p.split_k = cfg_.kernels.mmvs_split_k;
  p.preload = cfg_.kernels.mmvs_preload && (!residual || cfg_.kernels.mmvs_preload_residual);
  p.split_max_warps = cfg_.kernels.mmvs_split_max_warps;
  p.split_min_tasks = split_min_tasks();
  const int64_t max_rows = cfg_.kernels.mmvs_cap_max_rows;
  // A launch with matrices of a second type (kernels.mmvs_mixed_types) takes the pair instance.
  const auto other_type = std::find_if(extra.begin(), extra.end(), [&](const MatmulOut& o) { return o.w->type != w.type; });
  const bool mixed = other_type != extra.end();
  p.min_blocks = max_rows > 0 && w.n_rows() > max_rows ? 0
                 : mixed                                  ? mmvs_pair_cap(w.type, other_type->w->type)
                 : q.q6k                                  ? mmvs_q6k_cap_
                                                          : mmvs_cap(w.type, 0);
  p.min_blocks_glu = mmvs_cap(w.type, glu);
  std::tie(p.w, p.w_d, p.w_aux) = plane(w);
  if (w2) std::tie(p.w2, p.w2_d, p.w2_aux) = plane(*w2);
  p.glu = glu;
  p.n_rows = w.n_rows();
  p.n_cols = k;
  p.m = (int)x.rows;
  p.xq = q.xq;
  p.xds = q.xds;
  p.act_il = q.il;
  p.act_il_q6k = q.q6k;
  p.y = y.data;
  p.ldy = y.ld;
  if (residual) {
    p.residual = y.data;
    p.ld_residual = y.ld;
  }
  MEMRA_CHECK(extra.size() <= 2, "internal: mmvs takes at most 3 matrices per launch");
  p.n_extra = (int)extra.size();
  for (size_t i = 0; i < extra.size(); ++i) {
    auto& e = p.extra[i];
    std::tie(e.w, e.w_d, e.w_aux) = plane(*extra[i].w);
    e.n_rows = extra[i].w->n_rows();
    e.y = extra[i].y.data;
    e.ldy = extra[i].y.ld;
    e.type2 = extra[i].w->type != w.type;
    if (e.type2) p.w_type2 = extra[i].w->type;
  }
  // kernels.mmvs_row_pairs: plain one-token launches of one matrix, or with kernels.mmvs_row_pairs_qkv
  // the q/k/v launches (launch_mmvs' conditions: every row count even; the mixed one only as its
  // compiled form, Q4_K rows two tasks and Q6_K rows one, uncapped, the Q6_K rows' half starting a CTA).
  const int ti = mmvs_type_index(w.type);
  const int64_t one_min_k = cfg_.kernels.mmvs_row_pairs_one_task_min_k;
  const auto one_task_of = [&](int t) { return mmvs_rp_one_[t] || (one_min_k > 0 && k >= one_min_k); };
  const bool extras_even =
      std::all_of(extra.begin(), extra.end(), [](const MatmulOut& o) { return o.w->n_rows() % 2 == 0; });
  const bool qkv_pairs = cfg_.kernels.mmvs_row_pairs_qkv && !extra.empty() && p.m == 1 && p.act_il && !p.act_il_q6k &&
                         p.n_rows % 2 == 0 && extras_even;
  if (qkv_pairs && mixed) {
    const int t2 = mmvs_type_index(p.w_type2);
    int64_t t1_rows = w.n_rows();
    for (const auto& o : extra) t1_rows += o.w->type == w.type ? o.w->n_rows() : 0;
    if (w.type == QType::Q4_K && p.w_type2 == QType::Q6_K && ti >= 0 && t2 >= 0 && mmvs_rp_[ti] && mmvs_rp_[t2] &&
        !one_task_of(ti) && one_task_of(t2) && mmvs_rp_cap_[ti][0] == 0 && mmvs_rp_cap_[t2][1] == 0 && (t1_rows / 2) % 4 == 0) {
      p.row_pairs = p.row_pair_one_task2 = true;
      p.min_blocks = 0;
    }
  }
  const bool pair_extra = extra.empty() || (qkv_pairs && !mixed);
  if (ti >= 0 && mmvs_rp_[ti] && p.m == 1 && glu == 0 && pair_extra && p.act_il && !p.act_il_q6k && p.n_rows % 2 == 0) {
    const bool one_task = one_task_of(ti);
    const int one = one_task ? 1 : 0;
    const int cap = max_rows > 0 && w.n_rows() > max_rows ? mmvs_rp_head_cap_[ti][one] : mmvs_rp_cap_[ti][one];
    if (extra.empty() || cap == 0) {  // the q/k/v pairs have uncapped instances only
      p.row_pairs = true;
      p.row_pair_one_task = one_task;
      p.min_blocks = cap;
    }
  }
  // kernels.mmvs_qkv_quads: the one-token q/k/v launches as row quads (in place of the pairs), where
  // launch_mmvs has them: every matrix's rows a multiple of 4, the mixed launch's Q6_K quarters starting a CTA.
  if (cfg_.kernels.mmvs_qkv_quads != 0 && !extra.empty() && p.m == 1 && glu == 0 && p.act_il && !p.act_il_q6k &&
      w.n_rows() % 4 == 0 && cuda::mmvs_quads_compiled(w.type, mixed ? p.w_type2 : w.type)) {
    int64_t t1_rows = w.n_rows();
    bool quarters = true;
    for (const auto& o : extra) {
      quarters = quarters && o.w->n_rows() % 4 == 0;
      t1_rows += o.w->type == w.type ? o.w->n_rows() : 0;
    }
    if (quarters && (!mixed || (t1_rows / 4) % 4 == 0)) {
      p.row_pairs = p.row_pair_one_task = p.row_pair_one_task2 = false;
      p.row_quads = cfg_.kernels.mmvs_qkv_quads;
      p.min_blocks = 0;
    }
  }
  // kernels.mmvs_row_pairs_verify: verify rows (m = 2..8) of the paired types, one matrix or one type's
  // q/k/v launch, uncapped, in the plain activation order (launch_mmvs' m > 1 pair form).
  if (ti >= 0 && mmvs_rp_[ti] && cfg_.kernels.mmvs_row_pairs_verify && p.m > 1 && glu == 0 && !mixed && !p.act_il &&
      p.n_rows % 2 == 0 && (extra.empty() || cfg_.kernels.mmvs_row_pairs_qkv) && extras_even) {
    p.row_pairs = true;
    p.min_blocks = 0;
  }
  // kernels.mmvs_glu_pairs: SiLU GLU one-token launches (one task per row and matrix) on rows of at
  // least kernels.mmvs_glu_pairs_min_k weights.
  if (ti >= 0 && mmvs_glu_pairs_[ti] && p.m == 1 && glu == 1 && extra.empty() && p.act_il && p.n_rows % 2 == 0 &&
      k >= cfg_.kernels.mmvs_glu_pairs_min_k) {
    p.row_pairs = p.row_pair_one_task = true;
    p.min_blocks_glu = mmvs_glu_pair_cap_[ti];
  }
  // kernels.mmvs_glu_one_task: the one-token GLU launches of the listed types, one task per matrix in
  // flight (the GLU row pairs above take precedence).
  if (ti >= 0 && mmvs_glu_one_[ti] && glu != 0 && !p.row_pairs && p.m == 1 && p.act_il) {
    p.glu_one_task = true;
    p.min_blocks_glu = mmvs_glu_one_cap_[ti][glu - 1];
  }
  // kernels.norm_defer: the planes of a deferred norm; a launch without scaled instances (a residual,
  // the Q6_K order, a one-token cap other than 0 / 5 / 6) gets the norm computed in full first (the
  // same slot). Verify batches (m > 1) take the uncapped scaled instances.
  if (q.norm_ss) {
    const int mb = glu ? p.min_blocks_glu : p.min_blocks;
    const bool one = p.m == 1 && p.act_il && !p.act_il_q6k && (mb == 0 || mb == 5 || mb == 6);
    if (!residual && (one || (p.m > 1 && !p.act_il))) {
      p.norm_ss = q.norm_ss;
      p.norm_ss_n = q.norm_ss_n;
      p.norm_eps = q.norm_eps;
      p.norm_ss_final = q.norm_ss_final;
    } else {
      settle_deferred_norm(x);
    }
  }
  if (next_norm && launch_emit_norm(p, y, *next_norm)) return true;
  if (glu != 0 && extra.empty() && launch_glu_emit(p, y)) return true;
  if (p.m == 1)  // the instance taken (receipts' variants: which caps the spill rule kept)
    note("mmvs_m1", fmt::format("{}{}{}{}_min_blocks{}{}{}{}{}{}{}{}{}", qtype_name(w.type), mixed ? "+" : "",
                                mixed ? qtype_name(p.w_type2) : "", glu ? "_glu" : "", glu ? p.min_blocks_glu : p.min_blocks,
                                p.split_max_warps == 4 ? "" : "_splitw2", split_min_note(), p.preload ? "" : "_nopreload", p.act_il ? "_actil" : "", p.act_il_q6k ? "_q6k" : "", p.row_pairs ? (glu ? "_gp" : p.row_pair_one_task ? "_rp1" : "_rp") : p.glu_one_task ? "_g1t" : p.row_quads ? (p.row_quads == 1 ? "_rq1" : "_rq") : "",
                                (p.row_pairs || p.row_quads) && p.n_extra ? "_qkv" : "", p.norm_ss ? "_ns" : ""));
  else  // the verify rows' form (m > 1)
    note("mmvs_mn", fmt::format("{}{}{}{}_m{}{}", qtype_name(w.type), mixed ? "+" : "", mixed ? qtype_name(p.w_type2) : "",
                                glu ? "_glu" : "", p.m, p.row_pairs ? (p.n_extra ? "_rp_qkv" : "_rp") : ""));
  cuda::check_status(cuda::launch_mmvs(p, stream()), "launch_mmvs");
  return false;
}

void CudaBackend::matmul_n(View x, std::span<const MatmulOut> outs) {
  if (!cfg_.kernels.fuse) return Backend::matmul_n(x, outs);
  const int64_t m = x.rows;
  // Runs of consecutive same-type, same-k, bias-free mmvs products share one launch.
  auto groupable = [&](const MatmulOut& o) {
    return o.w && !o.bias && m >= 1 && o.w->ne[0] == x.cols && o.y.rows == m && o.y.cols == o.w->n_rows() &&
           matmul_variant(*o.w, m).kind == cuda::MatmulKind::kMatvecSplit;
  };
  size_t i = 0;
  while (i < outs.size()) {
    if (!groupable(outs[i])) {
      matmul(*outs[i].w, x, outs[i].y, outs[i].bias);
      ++i;
      continue;
    }
    const auto same_layout = [&](size_t t) {
      return (outs[t].w->decode_data != nullptr) == (outs[i].w->decode_data != nullptr);
    };
    size_t j = i + 1;
    while (j < outs.size() && j - i < 3 && groupable(outs[j]) && outs[j].w->type == outs[i].w->type && same_layout(j))
      ++j;
    // kernels.mmvs_mixed_types: the products that follow in a second weight type join the launch
    // (one-token decode, the pairs mmvs_pair_ok accepts: q and k Q4_K, v Q6_K).
    size_t j2 = j;
    if (cfg_.kernels.mmvs_mixed_types && m == 1 && j < outs.size() && j - i < 3 && groupable(outs[j]) && same_layout(j)) {
      int64_t rows_before = 0;
      for (size_t t = i; t < j; ++t) rows_before += outs[t].w->n_rows();
      const QType t2 = outs[j].w->type;
      if (cuda::mmvs_pair_ok(outs[i].w->type, t2, x.cols, rows_before, 1, cfg_.kernels.mmvs_split_k,
                             cfg_.kernels.mmvs_split_max_warps, split_min_tasks()))
        while (j2 < outs.size() && j2 - i < 3 && groupable(outs[j2]) && outs[j2].w->type == t2 && same_layout(j2)) ++j2;
    }
    if (j2 == i + 1) {
      matmul(*outs[i].w, x, outs[i].y, nullptr);
    } else {
      launch_split_matvec(*outs[i].w, nullptr, 0, x, outs[i].y, outs.subspan(i + 1, j2 - i - 1));
      note("matvec", j2 == j ? fmt::format("mmvs_x{}.{}", j - i, qtype_name(outs[i].w->type))
                             : fmt::format("mmvs_x{}.{}+{}", j2 - i, qtype_name(outs[i].w->type), qtype_name(outs[j].w->type)));
      for (size_t t = i; t < j2; ++t) forget_q8s_if_overlaps(outs[t].y);
    }
    i = j2;
  }
}

void CudaBackend::matmul_glu(const Weight& gate, const Weight& up, View x, Activation act, View out, View up_tmp) {
  const int64_t m = x.rows;
  if (act != Activation::Silu && act != Activation::GeluTanh) return Backend::matmul_glu(gate, up, x, act, out, up_tmp);
  if (cfg_.kernels.fuse && gate.type == up.type && gate.ne[0] == up.ne[0] && gate.n_rows() == up.n_rows() &&
      up.row_bytes == gate.row_bytes && reinterpret_cast<uintptr_t>(up.data) % 16 == 0 && out.rows == m &&
      out.cols == gate.n_rows() && mmvf2_applies(gate, x)) {
    launch_mmvf2(gate, &up, glu_code(act), x, out);
    forget_q8s();  // as the mmvs GLU: out may be the memory cached planes came from
    return;
  }
  const bool fusable = cfg_.kernels.fuse && m >= 1 && gate.type == up.type && gate.ne[0] == up.ne[0] &&
                       gate.n_rows() == up.n_rows() && x.cols == gate.ne[0] && out.rows == m &&
                       (gate.decode_data != nullptr) == (up.decode_data != nullptr) &&
                       out.cols == gate.n_rows() &&
                       matmul_variant(gate, m).kind == cuda::MatmulKind::kMatvecSplit &&
                       matmul_variant(up, m).kind == cuda::MatmulKind::kMatvecSplit;
  if (!fusable) return Backend::matmul_glu(gate, up, x, act, out, up_tmp);
  // (forget_q8s: out may be the memory the planes came from; it is not, in the models; cheap)
  if (!launch_split_matvec(gate, &up, glu_code(act), x, out)) forget_q8s();
  note("matvec", fmt::format("mmvs_glu.{}", qtype_name(gate.type)));
  note("glu", act == Activation::Silu ? "fused_swiglu" : "fused_geglu");
}

bool CudaBackend::fuses_residual(const Weight& w, View x, const Weight* bias) {
  // The decode and verify rows (the mmvs path) of a bias-free product.
  if (!cfg_.kernels.fuse || !cfg_.kernels.fuse_residual || bias || x.rows < 1 || x.rows > cuda::kMmvsMaxM ||
      x.cols != w.ne[0])
    return false;
  return matmul_variant(w, x.rows).kind == cuda::MatmulKind::kMatvecSplit || mmvf2_applies(w, x);
}

void CudaBackend::matmul_residual(const Weight& w, View x, View residual) {
  norm_emitted_ = false;
  MEMRA_CHECK(fuses_residual(w, x, nullptr), "internal: matmul_residual('{}') where the add is not fused", w.name);
  MEMRA_CHECK(residual.rows == x.rows && residual.cols == w.n_rows(),
              "matmul_residual '{}': residual [{} x {}] must be [{} x {}]", w.name, residual.rows, residual.cols,
              x.rows, w.n_rows());
  if (matmul_variant(w, x.rows).kind != cuda::MatmulKind::kMatvecSplit) {  // mmvf2 (fuses_residual)
    launch_mmvf2(w, nullptr, 0, x, residual, /*residual=*/true);
    forget_q8s_if_overlaps(residual);
    return;
  }
  const NormHint hint = std::exchange(norm_hint_, {});
  launch_split_matvec(w, nullptr, 0, x, residual, {}, /*residual=*/true, hint.out.data ? &hint : nullptr);
  if (norm_emitted_) {  // the stream and the hinted norm's planes are written (launch_emit_norm)
    note("matvec", fmt::format("mmvs+residual+norm.{}", qtype_name(w.type)));
    return;
  }
  forget_q8s_if_overlaps(residual);
  note("matvec", fmt::format("mmvs+residual.{}", qtype_name(w.type)));
}

cuda::RopeParams CudaBackend::rope_params(View x, int n_head, int pos0, const RopeParams& rp) {
  MEMRA_CHECK((int64_t)n_head * rp.head_dim == x.cols, "rope: {} heads x head_dim {} != {} columns", n_head,
              rp.head_dim, x.cols);
  MEMRA_CHECK(rp.n_rot > 0 && rp.n_rot <= rp.head_dim && rp.n_rot % 2 == 0,
              "rope: n_rot {} must be even and in (0, head_dim={}]", rp.n_rot, rp.head_dim);
  if (rp.freq_factors)
    MEMRA_CHECK(rp.freq_factors->type == QType::F32 && rp.freq_factors->ne[0] >= rp.n_rot / 2,
                "rope: freq factors '{}' must be F32 with >= {} entries", rp.freq_factors->name, rp.n_rot / 2);
  MEMRA_CHECK(rp.ext_factor == 0.0f || rp.n_ctx_orig > 0, "rope: YaRN needs n_ctx_orig > 0");
  check_int(x.rows, "rope rows");
  cuda::RopeParams p;
  p.x = x.data;
  p.ld_x = x.ld;
  p.out = x.data;
  p.ld_out = x.ld;
  p.rows = (int)x.rows;
  p.n_head = n_head;
  p.head_dim = rp.head_dim;
  p.n_rot = rp.n_rot;
  p.kind = rp.mode == RopeMode::Normal ? cuda::RopeKind::Normal : cuda::RopeKind::Neox;
  p.pos0 = x.rows > 0 ? device_pos(pos0) : nullptr;
  p.freq_base = rp.freq_base;
  p.freq_scale = rp.freq_scale;
  p.freq_factors = rp.freq_factors ? static_cast<const float*>(rp.freq_factors->data) : nullptr;
  p.ext_factor = rp.ext_factor;
  p.attn_factor = rp.attn_factor;
  p.beta_fast = rp.beta_fast;
  p.beta_slow = rp.beta_slow;
  p.n_ctx_orig = rp.n_ctx_orig;
  return p;
}

void CudaBackend::rope(View x, int n_head, int pos0, const RopeParams& rp) {
  forget_q8s();
  const cuda::RopeParams p = rope_params(x, n_head, pos0, rp);
  if (x.rows == 0) return;
  cuda::check_status(cuda::launch_rope(p, stream()), "launch_rope");
  note("rope", rp.mode == RopeMode::Normal ? "normal" : "neox");
}

bool CudaBackend::qk_norm_rope_fusable(View q, View k, int n_head_kv, const RopeParams& rp) const {
  cuda::RopeParams shape;
  shape.head_dim = rp.head_dim;
  shape.n_rot = rp.n_rot;
  shape.kind = rp.mode == RopeMode::Normal ? cuda::RopeKind::Normal : cuda::RopeKind::Neox;
  return cfg_.kernels.fuse && cuda::qk_norm_rope_supported(shape, rp.head_dim) && q.rows == k.rows && q.rows >= 1 &&
         (int64_t)n_head_kv * rp.head_dim == k.cols;
}

cuda::QkNormRopeParams CudaBackend::qk_norm_rope_params(View q, View k, int n_head, int n_head_kv,
                                                        const Weight* q_norm, const Weight* k_norm, float eps,
                                                        int pos0, const RopeParams& rp) {
  cuda::QkNormRopeParams qp;
  qp.rope = rope_params(q, n_head, pos0, rp);
  qp.k = k.data;
  qp.ld_k = k.ld;
  qp.n_head_kv = n_head_kv;
  qp.q_norm = f32_vector(q_norm, rp.head_dim, "head_rms_norm");
  qp.k_norm = f32_vector(k_norm, rp.head_dim, "head_rms_norm");
  qp.eps = eps;
  return qp;
}

void CudaBackend::qk_norm_rope(View q, View k, int n_head, int n_head_kv, const Weight* q_norm,
                               const Weight* k_norm, float eps, int pos0, const RopeParams& rp) {
  forget_q8s();
  if (!qk_norm_rope_fusable(q, k, n_head_kv, rp))
    return Backend::qk_norm_rope(q, k, n_head, n_head_kv, q_norm, k_norm, eps, pos0, rp);
  const cuda::QkNormRopeParams qp = qk_norm_rope_params(q, k, n_head, n_head_kv, q_norm, k_norm, eps, pos0, rp);
  cuda::check_status(cuda::launch_qk_norm_rope(qp, stream()), "launch_qk_norm_rope");
  note("qk_norm_rope", fmt::format("fused_{}{}", rp.mode == RopeMode::Normal ? "normal" : "neox",
                                    q_norm || k_norm ? "_norm" : ""));
}

void CudaBackend::qk_norm_rope_kv(View q, View k, View v, int n_head, int n_head_kv, const Weight* q_norm,
                                  const Weight* k_norm, float eps, int pos0, const RopeParams& rp, KvStore& kvs,
                                  int layer) {
  auto* c = dynamic_cast<CudaKv*>(&kvs);
  const bool fusable = cfg_.kernels.fuse_kv_append && c && qk_norm_rope_fusable(q, k, n_head_kv, rp) &&
                       q.rows == v.rows && q.rows <= cuda::kMmvsMaxM && k.cols == v.cols;
  if (!fusable) return Backend::qk_norm_rope_kv(q, k, v, n_head, n_head_kv, q_norm, k_norm, eps, pos0, rp, kvs, layer);
  forget_q8s();
  cuda::KvAppendParams kv[2];
  kv_append_params(kvs, layer, pos0, k, v, kv);  // throws on a bad layer / a full cache
  cuda::QkNormRopeParams qp = qk_norm_rope_params(q, k, n_head, n_head_kv, q_norm, k_norm, eps, pos0, rp);
  qp.kv_k = kv[0];
  qp.kv_v = kv[1];
  cuda::check_status(cuda::launch_qk_norm_rope(qp, stream()), "launch_qk_norm_rope (+kv append)");
  note("qk_norm_rope", fmt::format("fused_{}{}+kv", rp.mode == RopeMode::Normal ? "normal" : "neox",
                                    q_norm || k_norm ? "_norm" : ""));
  kv_appended(*c, pos0, (int)k.rows, "in_qk_norm_rope_");
}

void CudaBackend::glu(View gate, View up, Activation act, View out) {
  forget_q8s();
  check_same_shape("glu", gate, up);
  check_same_shape("glu", gate, out);
  if (gate.rows == 0) return;
  check_int(gate.rows, "glu rows");
  cuda::GluParams p;
  p.gate = gate.data;
  p.ld_gate = gate.ld;
  p.up = up.data;
  p.ld_up = up.ld;
  p.out = out.data;
  p.ld_out = out.ld;
  p.rows = (int)gate.rows;
  p.cols = (int)gate.cols;
  p.act = act_kind(act);
  // Prefill: the f16 rounding of out for the down projection's GEMM in the same pass
  // (kernels.gemm_x_reuse; picked up by gemm_x_input, same bytes as converting out there).
  const bool f16 = (p.act == cuda::ActKind::Silu || p.act == cuda::ActKind::GeluTanh) && prefill_f16_copy(gate.rows) &&
                   cuda::glu_f16_copy_supported(p);
  if (f16) p.out_f16 = workspace(kX16, (size_t)out.rows * (size_t)out.cols * 2);
  cuda::check_status(cuda::launch_glu(p, stream()), "launch_glu");
  if (f16) set_x16_src(out);
  note("glu", std::string(act == Activation::Silu ? "swiglu" : act == Activation::GeluTanh ? "geglu" : activation_name(act)) +
                  (f16 ? "+f16" : ""));
}

void CudaBackend::activate(View x, Activation act) {
  MEMRA_CHECK(act != Activation::SwigluOai, "activate: {} exists only as a GLU", activation_name(act));
  forget_q8s();
  if (x.rows == 0) return;
  check_int(x.rows, "activate rows");
  cuda::ActParams p;
  p.x = x.data;
  p.ld_x = x.ld;
  p.out = x.data;
  p.ld_out = x.ld;
  p.rows = (int)x.rows;
  p.cols = (int)x.cols;
  p.act = act_kind(act);
  cuda::check_status(cuda::launch_activate(p, stream()), "launch_activate");
  note("act", activation_name(act));
}

void CudaBackend::add(View a, View b) {
  forget_q8s();
  check_same_shape("add", a, b);
  cuda::EwiseParams p;
  p.op = cuda::EwiseOp::Add;
  p.x = a.data;
  p.ld_x = a.ld;
  p.y = b.data;
  p.ld_y = b.ld;
  p.rows = a.rows;
  p.cols = a.cols;
  cuda::check_status(cuda::launch_ewise(p, stream()), "launch_ewise(add)");
  note("ewise", "add");
}

void CudaBackend::scale(View x, float s) {
  forget_q8s();
  cuda::EwiseParams p;
  p.op = cuda::EwiseOp::Scale;
  p.x = x.data;
  p.ld_x = x.ld;
  p.rows = x.rows;
  p.cols = x.cols;
  p.s = s;
  cuda::check_status(cuda::launch_ewise(p, stream()), "launch_ewise(scale)");
  note("ewise", "scale");
}

void CudaBackend::softcap(View x, float cap) {
  forget_q8s();
  MEMRA_CHECK(cap > 0.0f, "softcap: cap must be positive, got {}", cap);
  cuda::EwiseParams p;
  p.op = cuda::EwiseOp::Softcap;
  p.x = x.data;
  p.ld_x = x.ld;
  p.rows = x.rows;
  p.cols = x.cols;
  p.s = cap;
  cuda::check_status(cuda::launch_ewise(p, stream()), "launch_ewise(softcap)");
  note("ewise", "softcap");
}

}  // namespace memra::backend::cuda_impl
