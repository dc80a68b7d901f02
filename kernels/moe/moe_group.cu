// launch_moe_group (moe_kernels.h): one block. Counts per expert (shared atomics: counts only, no
// order), the groups' first indices by a serial scan, then one thread per expert (the bad ids' list
// last) walks the ids in slot order, staged through shared memory a tile at a time, and writes its
// groups: the same groups for the same ids on every run.
#include <algorithm>

#include "moe/moe_kernels.h"

namespace memra::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kTile = 4096;  // ids per shared-memory tile

__global__ void __launch_bounds__(kThreads) moe_group_kernel(MoeGroupParams p) {
  __shared__ int count[kMoeRouteMaxExperts + 1];
  __shared__ int first[kMoeRouteMaxExperts + 1];
  __shared__ int tile[kTile];
  const int E = p.n_expert, lists = E + 1;  // list E: the out-of-range ids
  for (int e = threadIdx.x; e < lists; e += blockDim.x) count[e] = 0;
  __syncthreads();
  for (int s = threadIdx.x; s < p.n_slots; s += blockDim.x) {
    const int32_t e = p.ids[s];
    atomicAdd(&count[e >= 0 && e < E ? e : E], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int g = 0;
    for (int e = 0; e < lists; ++e) {
      first[e] = g;
      g += (count[e] + kMoeGroupSlots - 1) / kMoeGroupSlots;
    }
  }
  for (int i = threadIdx.x; i < p.n_groups * kMoeGroupStride; i += blockDim.x) p.groups[i] = -1;
  __syncthreads();  // (global writes of the block, then read and overwritten by its threads below)
  int filled[(kMoeRouteMaxExperts + 1 + kThreads - 1) / kThreads] = {};
  for (int t0 = 0; t0 < p.n_slots; t0 += kTile) {
    const int nt = min(kTile, p.n_slots - t0);
    for (int i = threadIdx.x; i < nt; i += blockDim.x) {
      const int32_t e = p.ids[t0 + i];
      tile[i] = e >= 0 && e < E ? e : E;
    }
    __syncthreads();
    for (int e = threadIdx.x, r = 0; e < lists; e += blockDim.x, ++r) {
      for (int i = 0; i < nt; ++i) {
        if (tile[i] != e) continue;
        const int c = filled[r]++;
        int32_t* g = p.groups + (int64_t)(first[e] + c / kMoeGroupSlots) * kMoeGroupStride;
        if (c % kMoeGroupSlots == 0) g[0] = e;
        g[1 + c % kMoeGroupSlots] = t0 + i;
      }
    }
    __syncthreads();  // the tile is read by every thread before the next one lands
  }
}

}  // namespace

cudaError_t launch_moe_group(const MoeGroupParams& p, cudaStream_t s) {
  if (!p.ids || !p.groups || p.n_slots < 0 || p.n_expert < 1 || p.n_expert > kMoeRouteMaxExperts ||
      p.n_groups < moe_group_capacity(p.n_slots, p.n_expert) || p.n_groups > 65535)
    return cudaErrorInvalidValue;
  moe_group_kernel<<<1, kThreads, 0, s>>>(p);
  return cudaGetLastError();
}

}  // namespace memra::cuda
