#pragma once
// Kernel launches of the decode path, optionally as programmatic dependent launches (PDL,
// config kernels.pdl): the next kernel in the stream may be scheduled while the previous one
// drains, and runs until its pdl_wait() (griddepcontrol.wait: the previous grid has completed
// and its writes are visible). A kernel launched through launch_kernel must therefore call
// pdl_wait() before it reads anything an earlier kernel wrote and before its first global
// write; what it may do before: read weights (never written during a step) and compute
// addresses. Without PDL the wait returns at once. Captured graphs keep the programmatic edges.
#include <cuda_runtime.h>

#include <cstdint>

#include <utility>

namespace memra::cuda {

// Process-wide launch policy, set by the CUDA backend from kernels.pdl (default off elsewhere:
// kernel-check launches one kernel at a time).
void set_pdl(bool on);
bool pdl_enabled();

// Also lets the next kernel launch now (griddepcontrol.launch_dependents) instead of when this
// grid's last block exits: its blocks take free SM slots and run their pre-wait part (mmvs: the
// first weight loads) while this grid works. Safe anywhere: the dependent's own pdl_wait still
// waits for this grid's completion and memory flush, and the trigger fires only once every block
// of this grid has started, so waiting dependents never hold slots this grid needs.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// kernels.early_params: reads the given kernel parameters and stores a fold of them to shared
// memory (one thread), so that the immediate-constant-cache lines holding them are fetched here,
// before pdl_wait(), instead of at their first use after it. Why: ncu's stall sampling of the d0
// decode attention (receipts/h200/logs/ncu-stalls-d0-small-kernels-abf8b2d-20261202.txt) has
// immediate-constant misses as its largest stall reason (3.5 of ~19 cycles per issued
// instruction), and the quantize kernel 1.4 of ~15: every block of those small grids meets its
// parameters cold. No value is changed: the same bits.
#ifdef __CUDACC__
__device__ __forceinline__ uint32_t param_word(const void* p) {
  const auto u = reinterpret_cast<uintptr_t>(p);
  return (uint32_t)u ^ (uint32_t)((uint64_t)u >> 32);
}
__device__ __forceinline__ uint32_t param_word(int64_t v) { return (uint32_t)v ^ (uint32_t)((uint64_t)v >> 32); }
__device__ __forceinline__ uint32_t param_word(int v) { return (uint32_t)v; }
__device__ __forceinline__ uint32_t param_word(bool v) { return v ? 1u : 0u; }
__device__ __forceinline__ uint32_t param_word(float v) { return __float_as_uint(v); }
template <class... T>
__device__ __forceinline__ void touch_params(const T&... v) {
  __shared__ volatile uint32_t sink;
  uint32_t x = 0;
  ((x ^= param_word(v)), ...);
  if (threadIdx.x == 0) sink = x;
}
#endif

template <class... KArgs, class... Args>
cudaError_t launch_kernel(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                          Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  if (pdl_enabled()) {
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace memra::cuda
