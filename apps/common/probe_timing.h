#pragma once
// The timing record of a kernel probe (rp-q4-probe, moe-devq8-check): per-launch microseconds
// (median and spread of the samples) and the bandwidth the given bytes per launch imply, as a
// fraction of the H200 datasheet's 4.8 TB/s.
#include <nlohmann/json.hpp>

#include <vector>

#include "core/stats.h"

namespace memra::app {

nlohmann::json probe_timing_json(const SampleStats& s, const std::vector<double>& samples_us, double bytes);

}  // namespace memra::app
