// Launcher and instances of the v2 decode matvec (matvec_v2.h).
#include <atomic>

#include "matvec/matvec_v2.cuh"

namespace memra::cuda {

namespace {

// Shared memory a CTA may take: 8 warps x 4368 B (Q8_0 windows) + the activation copy. Up to this
// size at least two CTAs fit an SM (228 KB); larger activations (k > ~70k) stay in global memory.
constexpr int kMaxSmemBytes = 112 * 1024;
constexpr int kDefaultSmemBytes = 48 * 1024;

template <QType T>
cudaError_t launch_v2(const MatvecParams& p, size_t row_bytes, cudaStream_t s) {
  using G = v2::Geom<T>;
  const int rpb = p.rows_per_block;
  const int n_chunks = (int)(p.n_cols / 32);
  const int win_bytes = rpb * G::kBufGranules * 16;
  const int x_bytes = (n_chunks * (int)sizeof(BlockQ8_1) + 15) / 16 * 16;
  const int x_smem = win_bytes + x_bytes <= kMaxSmemBytes ? x_bytes : 0;
  const int smem = win_bytes + x_smem;
  // The opt-in above 48 KB is raised once per instance (a per-process attribute of the current
  // device; a host call, so not repeated at every decode step or inside graph capture).
  static std::atomic<int> opted_in{kDefaultSmemBytes}, opted_in_routed{kDefaultSmemBytes};
  const bool routed = p.ids != nullptr;
  auto& opted = routed ? opted_in_routed : opted_in;
  if (smem > opted.load(std::memory_order_relaxed)) {
    const cudaError_t e = routed ? cudaFuncSetAttribute(v2::matvec_v2_kernel<T, true>,
                                                        cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmemBytes)
                                 : cudaFuncSetAttribute(v2::matvec_v2_kernel<T>,
                                                        cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmemBytes);
    if (e != cudaSuccess) return e;
    opted.store(kMaxSmemBytes, std::memory_order_relaxed);
  }
  const auto* w = static_cast<const uint8_t*>(p.w);
  // The bytes the loads may touch: one matrix, or (routed) the whole stack of experts.
  const size_t last_row = routed ? (size_t)(p.n_experts - 1) * p.expert_bytes + (size_t)(p.n_rows - 1) * row_bytes
                                 : (size_t)(p.n_rows - 1) * row_bytes;
  const uint8_t* w_hi = w + last_row + (size_t)(n_chunks / G::Tr::kSubs) * G::Tr::kBytes;
  const unsigned grid = (unsigned)((p.n_rows + rpb - 1) / rpb);
  const auto* x = static_cast<const uint8_t*>(p.x_q8_1);
  if (routed) {
    const MatvecRoute r{p.ids, p.n_experts, p.expert_bytes, p.x_slot_div};
    const int64_t ldy = p.ldy ? p.ldy : p.n_rows;
    v2::matvec_v2_kernel<T, true><<<dim3(grid, (unsigned)p.n_slots), 32 * rpb, smem, s>>>(
        w, row_bytes, p.n_rows, n_chunks, x, x_smem, p.y, w, w_hi, ldy, r);
    return cudaGetLastError();
  }
  v2::matvec_v2_kernel<T><<<grid, 32 * rpb, smem, s>>>(w, row_bytes, p.n_rows, n_chunks, x, x_smem, p.y, w, w_hi);
  return cudaGetLastError();
}

}  // namespace

bool matvec_v2_built(QType t) {
#ifdef MEMRA_REDUCED_INSTANCES
  return t == QType::Q4_K;
#else
  return t == QType::Q4_K || t == QType::Q6_K || t == QType::Q8_0 || t == QType::Q4_0;
#endif
}

cudaError_t launch_matvec_v2(const MatvecParams& p, cudaStream_t stream) {
  if (!p.w || !p.y || !p.x_q8_1 || p.n_rows <= 0 || p.n_cols <= 0) return cudaErrorInvalidValue;
  if (p.w2 || p.y2) return cudaErrorInvalidValue;  // the second matrix: launch_matvec's routed form only
  if (p.m != 1) return cudaErrorNotSupported;
  if (p.rows_per_block != 1 && p.rows_per_block != 2 && p.rows_per_block != 4 && p.rows_per_block != 8)
    return cudaErrorInvalidValue;
  if ((p.n_rows + p.rows_per_block - 1) / p.rows_per_block > 0x7fffffff) return cudaErrorInvalidConfiguration;
  if (!matvec_v2_built(p.w_type)) return cudaErrorNotSupported;
  const auto& tr = qtype_traits(p.w_type);
  if (p.n_cols % tr.block_elems || p.n_cols % 32 || p.n_cols / 32 > (1 << 24)) return cudaErrorInvalidValue;
  const size_t dense = (size_t)(p.n_cols / tr.block_elems) * tr.block_bytes;
  const size_t rb = p.w_row_bytes ? p.w_row_bytes : dense;
  // Row starts keep the block's natural alignment (the decoders read 2- or 4-byte words).
  const size_t align = p.w_type == QType::Q4_K ? 4 : 2;
  if (rb < dense || rb % align || reinterpret_cast<uintptr_t>(p.w) % align ||
      reinterpret_cast<uintptr_t>(p.x_q8_1) % 4)
    return cudaErrorInvalidValue;
  // The routed form (MatvecParams::ids): launch_matvec's rules, and every expert's rows aligned too.
  const int64_t ldy = p.ldy ? p.ldy : p.n_rows;
  if (p.ids && (p.n_slots < 1 || p.n_slots > 65535 || p.n_experts < 1 || p.x_slot_div < 1 || ldy < p.n_rows ||
                p.expert_bytes < (size_t)p.n_rows * rb || p.expert_bytes % align))
    return cudaErrorInvalidValue;
  switch (p.w_type) {
    case QType::Q4_K: return launch_v2<QType::Q4_K>(p, rb, stream);
#ifndef MEMRA_REDUCED_INSTANCES
    case QType::Q6_K: return launch_v2<QType::Q6_K>(p, rb, stream);
    case QType::Q8_0: return launch_v2<QType::Q8_0>(p, rb, stream);
    case QType::Q4_0: return launch_v2<QType::Q4_0>(p, rb, stream);
#endif
    default: return cudaErrorNotSupported;
  }
}

}  // namespace memra::cuda
