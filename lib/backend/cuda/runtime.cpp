#include "backend/cuda/runtime.h"

#include <fmt/format.h>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace memra::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::unique_ptr<Context> Context::create(const ContextOptions& opt) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0) {
    cudaGetLastError();
    throw Error(fmt::format("no CUDA device: cudaGetDeviceCount reported {} device(s) ({}: {})", n,
                            cudaGetErrorName(err), cudaGetErrorString(err)));
  }
  MEMRA_CHECK(opt.device >= 0 && opt.device < n, "CUDA device {} requested but only {} visible",
              opt.device, n);
  std::unique_ptr<Context> c(new Context());
  MEMRA_CUDA_CHECK(cudaSetDevice(opt.device));
  cudaDeviceProp p{};
  MEMRA_CUDA_CHECK(cudaGetDeviceProperties(&p, opt.device));
  DeviceInfo& i = c->info_;
  i.id = opt.device;
  i.name = p.name;
  i.cc_major = p.major;
  i.cc_minor = p.minor;
  i.sm_count = p.multiProcessorCount;
  i.total_bytes = p.totalGlobalMem;
  i.l2_bytes = (size_t)p.l2CacheSize;
  i.smem_per_block_optin = p.sharedMemPerBlockOptin;
  MEMRA_CUDA_CHECK(cudaDriverGetVersion(&i.driver_version));
  MEMRA_CUDA_CHECK(cudaRuntimeGetVersion(&i.runtime_version));
  MEMRA_CUDA_CHECK(cudaStreamCreateWithFlags(&c->compute_, cudaStreamNonBlocking));
  MEMRA_CUDA_CHECK(cudaStreamCreateWithFlags(&c->copy_, cudaStreamNonBlocking));
  MEMRA_CUBLAS_CHECK(cublasLtCreate(&c->lt_));
  c->pool_ = std::make_unique<PoolAllocator>(opt.device);
  c->workspace_bytes_ = opt.cublas_workspace_bytes;
  if (c->workspace_bytes_) c->workspace_ = c->pool_->allocate(c->workspace_bytes_, "cuBLASLt workspace");
  return c;
}

Context::~Context() {
  if (compute_) cudaStreamSynchronize(compute_);
  if (copy_) cudaStreamSynchronize(copy_);
  if (workspace_ && pool_) pool_->deallocate(workspace_);
  pool_.reset();
  if (lt_) cublasLtDestroy(lt_);
  if (compute_) cudaStreamDestroy(compute_);
  if (copy_) cudaStreamDestroy(copy_);
}

void Context::require_free(size_t bytes, const std::string& what) const {
  size_t free_b = 0, total_b = 0;
  MEMRA_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  if (bytes > free_b)
    throw Error(fmt::format("{} needs {:.2f} GiB but only {:.2f} GiB of {:.2f} GiB are free on {}",
                            what, bytes / gib, free_b / gib, total_b / gib, info_.name));
}

size_t Context::free_bytes() const {
  size_t free_b = 0, total_b = 0;
  MEMRA_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

void Context::synchronize() const {
  MEMRA_CUDA_CHECK(cudaStreamSynchronize(compute_));
  MEMRA_CUDA_CHECK(cudaStreamSynchronize(copy_));
}

void DeviceBuffer::reset() noexcept {
  if (pool_ && ptr_) {
    try {
      pool_->deallocate(ptr_);
    } catch (...) {  // a foreign pointer is a bug caught by the pool's check elsewhere
    }
  }
  pool_ = nullptr;
  ptr_ = nullptr;
  bytes_ = 0;
}

void copy_h2d(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  MEMRA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
}
void copy_d2d(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  MEMRA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
}
void copy_d2h(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  MEMRA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
  MEMRA_CUDA_CHECK(cudaStreamSynchronize(s));
}
void fill_bytes(void* dst, int value, size_t bytes, cudaStream_t s) {
  MEMRA_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, s));
}
void stream_sync(cudaStream_t s) { MEMRA_CUDA_CHECK(cudaStreamSynchronize(s)); }

EventTimer::EventTimer() {
  MEMRA_CUDA_CHECK(cudaEventCreate(&a_));
  MEMRA_CUDA_CHECK(cudaEventCreate(&b_));
}
EventTimer::~EventTimer() {
  if (a_) cudaEventDestroy(a_);
  if (b_) cudaEventDestroy(b_);
}
void EventTimer::start(cudaStream_t s) { MEMRA_CUDA_CHECK(cudaEventRecord(a_, s)); }
void EventTimer::stop(cudaStream_t s) { MEMRA_CUDA_CHECK(cudaEventRecord(b_, s)); }
float EventTimer::elapsed_ms() {
  MEMRA_CUDA_CHECK(cudaEventSynchronize(b_));
  float ms = 0;
  MEMRA_CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
  return ms;
}

}  // namespace memra::cuda
