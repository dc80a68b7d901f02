#include "common/probe_timing.h"

#include "perfmodel/roofline.h"

namespace memra::app {

nlohmann::json probe_timing_json(const SampleStats& s, const std::vector<double>& samples_us, double bytes) {
  const double gbps = s.median > 0 ? bytes / (s.median * 1e-6) / 1e9 : 0;
  return {{"median_us", s.median}, {"min_us", s.min}, {"max_us", s.max},
          {"stddev_us", s.stddev}, {"n", s.n},        {"gbps", gbps},
          {"frac_of_4_8_tbps", gbps * 1e9 / perf::kH200BandwidthBytesPerS}, {"samples_us", samples_us}};
}

}  // namespace memra::app
