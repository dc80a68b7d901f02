#pragma once
// One-shot bulk copies global -> shared memory through the tensor memory accelerator
// (cp.async.bulk, sm_90), completed on a shared-memory mbarrier. Used where a short kernel's
// input is read right after its PDL wait while the next kernel's blocks, already resident beside
// it, have their weight requests in flight (kernels.norm_bulk_load, kernels.quantize_bulk_load).
// The copy engine issues the request as one bulk transfer instead of one load instruction per
// thread. The bytes land unchanged, so every consumer computes the same values.
#include <cstdint>

namespace memra::cuda::bulk {

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// One thread: an mbarrier for one arrival, made visible to the copy engine.
__device__ __forceinline__ void init_barrier(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// One thread: expect `bytes` on bar and request them (src and dst 16-byte aligned, bytes a
// multiple of 16). Global memory written by earlier kernels: ordered for the copy engine's
// (async proxy) reads by the fence.
__device__ __forceinline__ void copy_to_shared(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.global;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
#endif
}

// Every thread: wait until the copy of phase `parity` has landed.
__device__ __forceinline__ void wait_barrier(uint64_t* bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "BULK_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra BULK_WAIT;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
#endif
}

}  // namespace memra::cuda::bulk

namespace memra::cuda::dsmem {

// Thread-block clusters (sm_90): this CTA's rank, the cluster-wide barrier, and a 4-byte store into
// the shared memory of the cluster's CTA `rank` that completes on an mbarrier there.
__device__ __forceinline__ uint32_t cta_rank() {
  uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
  return r;
}
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
// bar: an mbarrier of this CTA's shared memory, set up for one arrival and `bytes` of transactions.
__device__ __forceinline__ void init_tx_barrier(uint64_t* bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t b = bulk::smem_addr(bar);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
// v into dst (a shared-memory address of this CTA's layout) of CTA `rank`, counted on that CTA's bar.
__device__ __forceinline__ void store_remote(const float* dst, float v, const uint64_t* bar, uint32_t rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t rd, rb;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rd) : "r"(bulk::smem_addr(dst)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(bulk::smem_addr(bar)), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(rd), "r"(__float_as_uint(v)),
               "r"(rb)
               : "memory");
#endif
}
// Wait (cluster-scope acquire) for phase 0 of bar: every store counted on it has landed.
__device__ __forceinline__ void wait_remote(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "DSMEM_WAIT:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], 0;\n"
      "@!p bra DSMEM_WAIT;\n"
      "}\n" ::"r"(bulk::smem_addr(bar))
      : "memory");
#endif
}

}  // namespace memra::cuda::dsmem
