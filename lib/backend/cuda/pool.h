#pragma once
// Pooling device allocator. cudaMalloc/cudaFree synchronize the device and cost tens of
// microseconds, so freed blocks are kept in a size-keyed free list and reused. Reports reserved
// (held from the driver) vs used (handed out) bytes. When the driver refuses an allocation the
// cached blocks are released and the allocation retried once; a second refusal throws a
// memra::Error saying how much was needed and how much is free.
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace memra::cuda {

struct PoolStats {
  size_t reserved_bytes = 0;   // obtained from cudaMalloc and not yet returned
  size_t used_bytes = 0;       // handed out to callers (rounded sizes)
  size_t peak_used_bytes = 0;
  size_t n_device_allocs = 0;  // cudaMalloc calls so far
};

class PoolAllocator {
 public:
  explicit PoolAllocator(int device) : device_(device) {}
  ~PoolAllocator();
  PoolAllocator(const PoolAllocator&) = delete;
  PoolAllocator& operator=(const PoolAllocator&) = delete;

  // `what` names the allocation in the out-of-memory error ("weights", "kv cache", ...).
  void* allocate(size_t bytes, const char* what = "buffer");
  void deallocate(void* p);
  // Returns every cached (free) block to the driver.
  void release_cached();
  PoolStats stats() const;

  // Size classes: 512-byte granules below 1 MiB, 2 MiB granules above (the driver's own large
  // page), so a freed block fits later requests of nearly the same size.
  static size_t round_size(size_t bytes);

 private:
  void release_cached_locked();
  int device_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;          // size -> block
  std::unordered_map<void*, size_t> in_use_;   // block -> size
  PoolStats stats_;
};

}  // namespace memra::cuda
