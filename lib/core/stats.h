#pragma once
// Summary statistics for benchmark samples: we report medians with spread, keep all samples.
#include <algorithm>
#include <cmath>
#include <vector>

namespace memra {

struct SampleStats {
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0;
  size_t n = 0;
};

inline SampleStats summarize(std::vector<double> v) {
  SampleStats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / v.size();
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(ss / (v.size() - 1)) : 0.0;
  return s;
}

}  // namespace memra
