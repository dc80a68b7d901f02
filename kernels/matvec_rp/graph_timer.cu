#include "matvec_rp/graph_timer.h"

namespace memra::cuda {

GraphBatchTimer::~GraphBatchTimer() { release(); }

void GraphBatchTimer::release() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  exec_ = nullptr;
  start_ = stop_ = nullptr;
  batch_ = 0;
}

cudaError_t GraphBatchTimer::capture(cudaStream_t stream, int batch, const std::function<cudaError_t(int)>& launch) {
  release();
  if (batch < 1 || !stream) return cudaErrorInvalidValue;
  cudaError_t e = cudaEventCreate(&start_);
  if (e == cudaSuccess) e = cudaEventCreate(&stop_);
  if (e != cudaSuccess) return e;
  e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) return e;
  cudaError_t launch_err = cudaSuccess;
  for (int i = 0; i < batch && launch_err == cudaSuccess; ++i) launch_err = launch(i);
  cudaGraph_t graph = nullptr;
  e = cudaStreamEndCapture(stream, &graph);
  if (launch_err != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    return launch_err;
  }
  if (e != cudaSuccess) return e;
  e = cudaGraphInstantiate(&exec_, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) return e;
  batch_ = batch;
  return cudaSuccess;
}

cudaError_t GraphBatchTimer::replay_timed(cudaStream_t stream, float& ms) {
  if (!exec_) return cudaErrorInvalidResourceHandle;
  cudaError_t e = cudaEventRecord(start_, stream);
  if (e == cudaSuccess) e = cudaGraphLaunch(exec_, stream);
  if (e == cudaSuccess) e = cudaEventRecord(stop_, stream);
  if (e == cudaSuccess) e = cudaEventSynchronize(stop_);
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start_, stop_);
  return e;
}

}  // namespace memra::cuda
