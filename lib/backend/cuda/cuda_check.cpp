#include "backend/cuda/cuda_check.h"

#include <fmt/format.h>

#include "core/error.h"

namespace memra::cuda {

void throw_cuda_error(cudaError_t err, const char* stmt, const char* file, int line) {
  // A sticky launch error stays; a plain API error is cleared so the next call is judged alone.
  cudaGetLastError();
  throw Error(fmt::format("CUDA error {} ({}: {}) in `{}` at {}:{}", (int)err, cudaGetErrorName(err),
                          cudaGetErrorString(err), stmt, file, line));
}

void throw_cublas_error(cublasStatus_t st, const char* stmt, const char* file, int line) {
  throw Error(fmt::format("cuBLASLt error {} ({}: {}) in `{}` at {}:{}", (int)st, cublasLtGetStatusName(st),
                          cublasLtGetStatusString(st), stmt, file, line));
}

void check_status(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  throw Error(fmt::format("CUDA error {} ({}: {}) from {}", (int)err, cudaGetErrorName(err),
                          cudaGetErrorString(err), what));
}

}  // namespace memra::cuda
