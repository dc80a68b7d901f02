#pragma once
// Kernel launches of the decode path, optionally as programmatic dependent launches (PDL,
// config kernels.pdl): the next kernel in the stream may be scheduled while the previous one
// drains, and runs until its pdl_wait() (griddepcontrol.wait: the previous grid has completed
// and its writes are visible). A kernel launched through launch_kernel must therefore call
// pdl_wait() before it reads anything an earlier kernel wrote and before its first global
// write; what it may do before: read weights (never written during a step) and compute
// addresses. Without PDL the wait returns at once. Captured graphs keep the programmatic edges.
#include <cuda_runtime.h>

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

// Process-wide preferred shared-memory carveout of the kernels launched through launch_kernel, set by
// the CUDA backend from kernels.smem_carveout (percent of the SM's maximum shared memory; -1: the
// driver's choice per kernel). One value for every kernel of a step lets an SM hold the blocks of
// consecutive kernels at once without reconfiguring its L1 / shared split in between (measured: it
// loses against the driver's choice, co51 / co51b in bench/notes/norm-decode.md; the default is -1).
void set_smem_carveout(int percent);
int smem_carveout();
// Gives `kernel` the current carveout if it was given another one (or none) before.
cudaError_t apply_carveout(const void* kernel);

template <class... KArgs, class... Args>
cudaError_t launch_kernel(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                          Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  if (const cudaError_t err = apply_carveout(reinterpret_cast<const void*>(kernel)); err != cudaSuccess) return err;
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
