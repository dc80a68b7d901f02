// The float-weight decode matvec mmvf2 in the backend (kernels.mmvf_v2; kernels/matvec/mmvf.h): when a
// product takes it, and its launch. The callers (matmul, matmul_glu, matmul_residual) are in
// cuda_ops.cpp.
#include <fmt/format.h>

#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_internal.h"
#include "matvec/mmvf.h"

namespace memra::backend::cuda_impl {

bool CudaBackend::mmvf2_applies(const Weight& w, View x) {
  const auto a16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return cfg_.kernels.mmvf_v2 && x.rows >= 1 && x.rows <= cuda::kMmvfMaxM && x.cols == w.ne[0] && w.ne[0] % 8 == 0 &&
         w.row_bytes % 16 == 0 && a16(w.data) && a16(x.data) && x.ld % 4 == 0 &&
         matmul_variant(w, x.rows).kind == cuda::MatmulKind::kMatvecFloat;
}

void CudaBackend::launch_mmvf2(const Weight& w, const Weight* w2, int glu, View x, View y, bool residual) {
  settle_deferred_norm(x);  // reads x itself
  cuda::MmvfParams p;
  p.w_type = w.type;
  p.w = w.data;
  p.w2 = w2 ? w2->data : nullptr;
  p.glu = glu;
  p.row_bytes = w.row_bytes;
  p.n_rows = w.n_rows();
  p.n_cols = w.ne[0];
  p.m = (int)x.rows;
  p.x = x.data;
  p.ldx = x.ld;
  p.y = y.data;
  p.ldy = y.ld;
  if (residual) {
    p.residual = y.data;
    p.ld_residual = y.ld;
  }
  p.rows_per_warp = cfg_.kernels.mmvf_rows_per_warp;
  p.preload = cfg_.kernels.mmvs_preload;
  cuda::check_status(cuda::launch_mmvf(p, stream()), "launch_mmvf");
  note("matvec", fmt::format("mmvf2{}_r{}.{}", glu ? "_glu" : residual ? "+residual" : "", p.rows_per_warp, qtype_name(w.type)));
  if (glu) note("glu", glu == 1 ? "fused_swiglu" : "fused_geglu");
}

}  // namespace memra::backend::cuda_impl
