#include "backend/cuda/device_query.h"

#include <cuda_runtime.h>

#include <string>

namespace memra::cuda {

std::optional<GpuInfo> query_device(int device) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n <= device) {
    cudaGetLastError();  // clear the sticky "no device" error
    return std::nullopt;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return std::nullopt;
  int drv = 0;
  cudaDriverGetVersion(&drv);
  GpuInfo g;
  g.name = p.name;
  g.driver = std::to_string(drv / 1000) + "." + std::to_string((drv % 1000) / 10);
  g.sm_count = p.multiProcessorCount;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.memory_bytes = p.totalGlobalMem;
  if (cudaDeviceGetAttribute(&g.memory_clock_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&g.bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess) {
    cudaGetLastError();
    g.memory_clock_khz = g.bus_width_bits = 0;
  }
  return g;
}

}  // namespace memra::cuda
