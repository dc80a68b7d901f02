#pragma once
// CUDA/cuBLASLt status at the library boundary. Device code and launchers return a status
// (cudaError_t); host code that owns the call wraps it in MEMRA_CUDA_CHECK, which throws a
// memra::Error naming the failing statement, the CUDA error and file:line.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace memra::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* stmt, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* stmt, const char* file, int line);
// For launch statuses returned by launchers: throws with `what` (e.g. the launcher's name).
void check_status(cudaError_t err, const char* what);

}  // namespace memra::cuda

#define MEMRA_CUDA_CHECK(stmt)                                                \
  do {                                                                        \
    const cudaError_t memra_err_ = (stmt);                                    \
    if (memra_err_ != cudaSuccess) [[unlikely]]                               \
      ::memra::cuda::throw_cuda_error(memra_err_, #stmt, __FILE__, __LINE__); \
  } while (0)

#define MEMRA_CUBLAS_CHECK(stmt)                                               \
  do {                                                                         \
    const cublasStatus_t memra_st_ = (stmt);                                   \
    if (memra_st_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                       \
      ::memra::cuda::throw_cublas_error(memra_st_, #stmt, __FILE__, __LINE__); \
  } while (0)
