#pragma once
// Per-thread asynchronous copies global -> shared memory (cp.async, sm_80+): each thread's copies
// are grouped by commit(), and wait_all() / wait_group<N>() make the thread's own landed bytes
// visible to it (other threads' bytes need a barrier as well). The bytes land unchanged.
namespace memra::cuda::cpa {

// 16 bytes, cached in L2 only (.cg); both addresses 16-byte aligned.
__device__ __forceinline__ void copy16(void* smem, const void* gmem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
// 8 bytes (.ca); both addresses 8-byte aligned.
__device__ __forceinline__ void copy8(void* smem, const void* gmem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(s), "l"(gmem) : "memory");
}
// 4 bytes (.ca: the only cache mode for sizes below 16); both addresses 4-byte aligned.
__device__ __forceinline__ void copy4(void* smem, const void* gmem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
// All but the N most recent committed groups have landed.
template <int N>
__device__ __forceinline__ void wait_group() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

}  // namespace memra::cuda::cpa
