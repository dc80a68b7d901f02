#pragma once
// The kernel-check runner as seen from main.cpp (no CUDA types, so main compiles as plain C++).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace memra::kc {

struct RunOptions {
  std::vector<std::string> sections = {"all"};  // section names, or "all"
  std::string filter;                           // substring of the case name ("" = every case)
  uint64_t seed = 1;
  bool perf = false;
  int warmup = 3;
  int reps = 20;
  bool flush_l2 = false;  // overwrite a 2x-L2 buffer before each timed rep
  // --perf-kernels: a second pass of reps under CUPTI's kernel activity (device timestamps of the case's own
  // kernels: no launch latency, no event overhead in the figure).
  bool perf_kernels = false;
};

struct CaseReport {
  std::string section, name;
  std::string status;  // "pass" | "fail" | "error"
  std::string kind;    // "bytes" | "norm_err"
  double error = 0, tolerance = 0, max_abs = 0;
  int64_t bad = 0;
  std::string detail;
  // --perf
  bool timed = false;
  double median_us = 0, min_us = 0, max_us = 0;
  std::vector<double> samples_us;
  double bytes = 0, flops = 0;
  double gbps = 0, frac_bw = 0, tflops = 0, frac_peak = 0;
  double frac_card_bw = 0;  // of this card's peak bandwidth (memory clock x bus width; 0: not reported)
  // --perf-kernels: per rep, the first kernel's start to the last kernel's end of the launch (device timestamps);
  // its median, and the kernels of one launch. Empty where CUPTI was unavailable (kernels_note says why).
  std::vector<double> kernel_samples_us;
  double kernels_median_us = 0;
  // Per rep, the union of the kernels' own intervals (a gap between them, e.g. a PDL launch held back, left out);
  // its median; and the last counted rep's kernels (short name, duration, start after the first kernel's).
  std::vector<double> kernel_busy_samples_us;
  double kernels_busy_median_us = 0;
  struct KernelSeen {
    std::string name;
    double us, at_us;
  };
  std::vector<KernelSeen> kernel_last;
  int kernels_per_launch = 0;
  std::string kernels_note;
};

struct RunSummary {
  std::vector<CaseReport> cases;
  std::string device;  // name, cc, SMs
  int n_pass = 0, n_fail = 0, n_error = 0;
};

// H200 floors for the perf fractions (datasheet figures, the stricter targets).
inline constexpr double kFloorBandwidth = 4.8e12;     // bytes/s
inline constexpr double kFloorTensorF16 = 989.4e12;   // dense f16/bf16 FLOP/s

// (section, name) of every registered case matching the options, in run order.
std::vector<std::pair<std::string, std::string>> list_cases(const RunOptions& o);
// Runs the selected cases; throws memra::Error ("no CUDA device ...") before any case when no
// device is visible, and when the selection is empty. Failures of single cases are reported.
RunSummary run_cases(const RunOptions& o);

}  // namespace memra::kc
