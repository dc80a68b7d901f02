#include "backend/cuda/pool.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace memra::cuda {

namespace {
constexpr size_t kSmallGranule = 512;
constexpr size_t kLargeGranule = 2u << 20;
constexpr size_t kSmallLimit = 1u << 20;
double mib(size_t b) { return (double)b / (1024.0 * 1024.0); }
}  // namespace

size_t PoolAllocator::round_size(size_t bytes) {
  if (bytes == 0) bytes = 1;
  const size_t g = bytes < kSmallLimit ? kSmallGranule : kLargeGranule;
  return (bytes + g - 1) / g * g;
}

PoolAllocator::~PoolAllocator() {
  // Destructors must not throw; errors at teardown (e.g. a dead context) are ignored.
  std::lock_guard lock(mu_);
  for (auto& [sz, p] : free_) cudaFree(p);
  for (auto& [p, sz] : in_use_) cudaFree(p);
}

void* PoolAllocator::allocate(size_t bytes, const char* what) {
  const size_t sz = round_size(bytes);
  std::lock_guard lock(mu_);
  // Reuse the smallest cached block that fits, unless it would waste more than half of itself.
  auto it = free_.lower_bound(sz);
  if (it != free_.end() && it->first <= 2 * sz) {
    void* p = it->second;
    const size_t got = it->first;
    free_.erase(it);
    in_use_[p] = got;
    stats_.used_bytes += got;
    stats_.peak_used_bytes = std::max(stats_.peak_used_bytes, stats_.used_bytes);
    return p;
  }
  MEMRA_CUDA_CHECK(cudaSetDevice(device_));
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, sz);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    release_cached_locked();
    err = cudaMalloc(&p, sz);
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw Error(fmt::format(
        "out of device memory: {} needs {:.1f} MiB but only {:.1f} MiB of {:.1f} MiB are free on "
        "device {} (this pool: {:.1f} MiB reserved, {:.1f} MiB in use); CUDA said: {}",
        what, mib(sz), mib(free_b), mib(total_b), device_, mib(stats_.reserved_bytes),
        mib(stats_.used_bytes), cudaGetErrorString(err)));
  }
  ++stats_.n_device_allocs;
  stats_.reserved_bytes += sz;
  stats_.used_bytes += sz;
  stats_.peak_used_bytes = std::max(stats_.peak_used_bytes, stats_.used_bytes);
  in_use_[p] = sz;
  return p;
}

void PoolAllocator::deallocate(void* p) {
  if (!p) return;
  std::lock_guard lock(mu_);
  auto it = in_use_.find(p);
  MEMRA_CHECK(it != in_use_.end(), "PoolAllocator::deallocate: {} was not allocated by this pool", p);
  stats_.used_bytes -= it->second;
  free_.emplace(it->second, p);
  in_use_.erase(it);
}

void PoolAllocator::release_cached() {
  std::lock_guard lock(mu_);
  release_cached_locked();
}

void PoolAllocator::release_cached_locked() {
  for (auto& [sz, p] : free_) {
    cudaFree(p);
    stats_.reserved_bytes -= sz;
  }
  free_.clear();
}

PoolStats PoolAllocator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace memra::cuda
