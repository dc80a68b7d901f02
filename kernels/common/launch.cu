#include <atomic>
#include <mutex>
#include <unordered_map>

#include "common/launch.cuh"

namespace memra::cuda {
namespace {
std::atomic<bool> g_pdl{false};
std::atomic<int> g_carveout{-1};
}  // namespace
void set_pdl(bool on) { g_pdl.store(on, std::memory_order_relaxed); }
bool pdl_enabled() { return g_pdl.load(std::memory_order_relaxed); }
void set_smem_carveout(int percent) { g_carveout.store(percent, std::memory_order_relaxed); }
int smem_carveout() { return g_carveout.load(std::memory_order_relaxed); }

cudaError_t apply_carveout(const void* kernel) {
  static std::mutex mu;
  static std::unordered_map<const void*, int> applied;  // what each kernel was last given (absent: never: -1)
  static std::atomic<bool> any{false};                 // whether any kernel was ever given a value
  const int want = smem_carveout();
  // (the default: no kernel was given a carveout, none is wanted; every launch takes this path, lock-free)
  if (want == -1 && !any.load(std::memory_order_acquire)) return cudaSuccess;
  std::lock_guard<std::mutex> lock(mu);
  any.store(true, std::memory_order_release);
  const auto it = applied.find(kernel);
  if ((it == applied.end() ? -1 : it->second) == want) return cudaSuccess;
  const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, want);
  if (err == cudaSuccess) applied[kernel] = want;
  return err;
}
}  // namespace memra::cuda
