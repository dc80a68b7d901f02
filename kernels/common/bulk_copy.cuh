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

// Several copies on one barrier: one thread expects their total (one arrival), then any threads of the
// CTA request them (no arrival each). Constant global memory (weights) needs no proxy fence.
__device__ __forceinline__ void expect_bytes(uint64_t* bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void copy_async(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
#endif
}

// One thread: expect `bytes` on bar and request them (src and dst 16-byte aligned, bytes a
// multiple of 16). Global memory written by earlier kernels: ordered for the copy engine's
// (async proxy) reads by the fence.
__device__ __forceinline__ void copy_to_shared(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.global;" ::: "memory");
#endif
  expect_bytes(bar, bytes);
  copy_async(dst, src, bytes, bar);
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
