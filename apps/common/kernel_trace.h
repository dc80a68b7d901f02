#pragma once
// Per-kernel device timestamps of a stretch of GPU work (pp-bench --trace): CUPTI's concurrent
// kernel activity records (start/end of every kernel, graph nodes included), which neither
// serialize the kernels nor turn programmatic dependent launch off, unlike ncu. CUPTI is opened
// at run time (dlopen of libcupti.so.13, found through the executable's run path: the device
// pack carries it in lib/), so the tools do not depend on it unless --trace is given.
// Built only with CUPTI's headers (scripts/bootstrap.sh installs them under
// /opt/memra-deps/cupti); without them start() reports why and returns null.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memra::app {

struct KernelRecord {
  std::string name;  // demangled, namespaces and template arguments kept
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t stream = 0;
  uint64_t graph_node = 0;  // 0 outside a graph
  int grid = 0;             // blocks (x*y*z)
};

class KernelTrace {
 public:
  // Starts recording kernels; null (with *why) if CUPTI is unavailable.
  static std::unique_ptr<KernelTrace> start(std::string* why);
  // Flushes and stops; the kernels that started after start(), sorted by start time.
  std::vector<KernelRecord> stop();
  ~KernelTrace();

 private:
  KernelTrace() = default;
  bool active_ = false;
  uint64_t t0_ns_ = 0;  // CUPTI's clock at start()
};

// Summary of a traced run of `steps` equal steps (decode): per kernel name, calls per step, mean
// duration, and the time it is the only thing keeping the GPU busy along the timeline
// ("exposed": the part of its interval not covered by an earlier-started kernel), which is what
// removing it would save at best. Also the step's wall time and idle gaps.
struct TraceSummary {
  struct Kind {
    std::string name;
    double calls_per_step = 0, mean_us = 0, exposed_us_per_step = 0;
  };
  std::vector<Kind> kinds;  // by exposed time, descending
  double wall_us_per_step = 0, busy_us_per_step = 0, idle_us_per_step = 0;
  int kernels_per_step = 0;
};
// by_grid: one kind per (name, grid size), e.g. the same matvec kernel on different shapes.
TraceSummary summarize_trace(const std::vector<KernelRecord>& recs, int steps, bool by_grid = false);
// A shorter display name (the memra::cuda / anonymous namespace prefixes and the parameter list
// dropped).
std::string short_kernel_name(const std::string& demangled);

}  // namespace memra::app
