#pragma once
// Test inputs shared by the CPU backend and KV tests: seeded normal values and dense views.
#include <cstdint>
#include <random>
#include <vector>

#include "backend/backend.h"

namespace memra::testdata {

// n values of N(0, scale) from a fixed seed.
inline std::vector<float> randv(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// v as a dense [rows, cols] view.
inline backend::View view(std::vector<float>& v, int64_t rows, int64_t cols) {
  return {v.data(), rows, cols, cols};
}

}  // namespace memra::testdata
