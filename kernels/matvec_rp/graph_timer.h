#pragma once
// Event-timed replays of a captured batch of launches, for probes of kernels that run for about
// a microsecond: launched one by one from the host (~3.5 us each, ../shared/DEVICE.md) they
// would time the host, not the kernel; inside a graph the gap is ~1.2 us, as in a decode step.
// It lives here, not in the app, because the graph must be built by the same CUDA runtime copy
// that launches the kernels (libmemra.so links cudart statically).
#include <cuda_runtime_api.h>

#include <functional>

namespace memra::cuda {

class GraphBatchTimer {
 public:
  GraphBatchTimer() = default;
  ~GraphBatchTimer();
  GraphBatchTimer(const GraphBatchTimer&) = delete;
  GraphBatchTimer& operator=(const GraphBatchTimer&) = delete;

  // Captures launch(0), ..., launch(batch-1) on `stream` (a non-default stream) into one graph.
  // A failing launch status ends the capture and is returned.
  cudaError_t capture(cudaStream_t stream, int batch, const std::function<cudaError_t(int)>& launch);
  // One replay between two events; waits for it. ms: the whole batch.
  cudaError_t replay_timed(cudaStream_t stream, float& ms);
  int batch() const { return batch_; }

 private:
  void release();
  cudaGraphExec_t exec_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  int batch_ = 0;
};

}  // namespace memra::cuda
