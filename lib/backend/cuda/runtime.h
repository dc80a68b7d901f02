#pragma once
// The CUDA runtime of the engine: one device, one compute stream (all kernels), one copy stream
// (uploads that may overlap compute), a pooling allocator, a cuBLASLt handle and its workspace.
// Kernel launchers (kernels/<family>/) take raw pointers and a stream and never allocate: the
// objects here own the memory.
//
// Stream-ordering rule of the pool: a buffer freed while kernels on the compute stream may still
// use it can be handed out again at once; that is safe for work enqueued later on the compute
// stream, and only for it. Work on the copy stream must be synchronized before its buffers are
// freed.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

#include "backend/cuda/pool.h"

namespace memra::cuda {

struct DeviceInfo {
  int id = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t total_bytes = 0;
  size_t l2_bytes = 0;
  size_t smem_per_block_optin = 0;
  int driver_version = 0, runtime_version = 0;
  int cc() const { return cc_major * 10 + cc_minor; }
};

// Number of visible CUDA devices; 0 when there is no device or no driver (never throws).
int device_count();

struct ContextOptions {
  int device = 0;
  size_t cublas_workspace_bytes = 32u << 20;  // cuBLASLt's recommendation for Hopper
};

class Context {
 public:
  // Throws memra::Error "no CUDA device ..." when none is visible.
  static std::unique_ptr<Context> create(const ContextOptions& opt = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  cudaStream_t compute_stream() const { return compute_; }
  cudaStream_t copy_stream() const { return copy_; }
  cublasLtHandle_t cublaslt() const { return lt_; }
  void* cublas_workspace() const { return workspace_; }
  size_t cublas_workspace_bytes() const { return workspace_bytes_; }
  PoolAllocator& pool() { return *pool_; }

  // Throws a clear error when `bytes` (named by `what`) cannot fit in the device's free memory,
  // e.g. before uploading a model: "model weights need 18.2 GiB but 12.0 GiB are free".
  void require_free(size_t bytes, const std::string& what) const;
  size_t free_bytes() const;  // cudaMemGetInfo's free figure
  void synchronize() const;

 private:
  Context() = default;
  DeviceInfo info_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::unique_ptr<PoolAllocator> pool_;
};

// RAII device memory from a pool.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(PoolAllocator& pool, size_t bytes, const char* what = "buffer")
      : pool_(&pool), ptr_(pool.allocate(bytes, what)), bytes_(bytes) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = o.pool_;
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.pool_ = nullptr;
      o.ptr_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  void reset() noexcept;
  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  PoolAllocator* pool_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Copies and fills (throwing wrappers). d2h waits for the stream.
void copy_h2d(void* dst, const void* src, size_t bytes, cudaStream_t s);
void copy_d2h(void* dst, const void* src, size_t bytes, cudaStream_t s);
void copy_d2d(void* dst, const void* src, size_t bytes, cudaStream_t s);  // async on s
void fill_bytes(void* dst, int value, size_t bytes, cudaStream_t s);
void stream_sync(cudaStream_t s);

// Device-event timing: the one timing primitive (median of reps is the caller's job).
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t s);
  void stop(cudaStream_t s);
  // Waits for the stop event; milliseconds between start and stop.
  float elapsed_ms();

 private:
  cudaEvent_t a_ = nullptr, b_ = nullptr;
};

}  // namespace memra::cuda
