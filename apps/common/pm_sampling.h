#pragma once
// GPU performance-monitor counters sampled at a fixed time interval while work runs (pp-bench
// --pm-sample): CUPTI's PM sampling (cupti_pmsampling.h with the profiler host API for the
// metric configuration and evaluation), which, like the kernel trace, neither serializes kernels
// nor turns programmatic dependent launch off. Its use here: DRAM throughput along a decode step,
// to see where the memory idles between and inside launches (bench/notes/decode-trace.md). CUPTI
// is opened at run time (libcupti.so.13; the profiler also loads libnvperf_host.so and
// libnvperf_target.so from the same run path: a "trace" device pack carries them).
// Built only with CUPTI's headers; without them start() reports why and returns null.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memra::app {

struct PmSample {
  uint64_t start_ns = 0, end_ns = 0;  // GPU timestamps (the kernel trace's time base)
  std::vector<double> values;         // one per metric, in the order given to start()
};

class PmSampler {
 public:
  // Starts sampling `metrics` (e.g. "dram__bytes_read.sum") on CUDA device `device` every
  // `interval_ns`, up to `max_samples`; null (with *why) where CUPTI, the metric or the device
  // does not allow it.
  static std::unique_ptr<PmSampler> start(int device, const std::vector<std::string>& metrics, uint64_t interval_ns,
                                          uint32_t max_samples, std::string* why);
  // Stops and evaluates every completed sample, in time order; empty with *why on failure.
  std::vector<PmSample> stop(std::string* why);
  ~PmSampler();

 private:
  PmSampler() = default;
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace memra::app
