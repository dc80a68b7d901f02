#pragma once
// Helpers of the GPU tests: the fixtures directory (--shared DIR), backends, random data on
// either backend, and the error figure every comparison uses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/runtime.h"
#include "config/config.h"

namespace memra::gputest {

// Set by gpu_main.cpp from --shared DIR; "" when no directory with the fixtures was found.
const std::string& shared_dir();
// Set by gpu_main.cpp from --config FILE / --set KEY=VALUE: the defaults unless given.
const Config& base_config();

#define MEMRA_REQUIRE_GPU()                                                          \
  do {                                                                               \
    if (::memra::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device visible"; \
  } while (0)

#define MEMRA_REQUIRE_FIXTURES()                                                                  \
  do {                                                                                            \
    if (::memra::gputest::shared_dir().empty())                                                   \
      GTEST_SKIP() << "fixtures not found: pass --shared DIR (a copy of ../shared: models/...)"; \
  } while (0)

inline Config gpu_config(bool graphs = true) {
  Config c = base_config();
  c.kernels.cuda_graph = graphs;
  return c;
}

inline std::unique_ptr<backend::Backend> cpu_backend(bool quantize_activations = false) {
  backend::CpuBackendOptions o;
  o.quantize_activations = quantize_activations;
  return backend::make_cpu_backend(o);
}

inline std::vector<float> randn(size_t n, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// A dense [rows x cols] activation on a backend, filled from host data.
struct Act {
  backend::Buffer buf;
  backend::View v;
};
inline Act make_act(backend::Backend& be, int64_t rows, int64_t cols, const std::vector<float>& host) {
  Act a;
  a.buf = be.alloc(rows * cols);
  a.v = a.buf.view(rows, cols);
  be.from_host(host.data(), a.v);
  return a;
}
inline std::vector<float> read(backend::Backend& be, backend::View v) {
  std::vector<float> out((size_t)(v.rows * v.cols));
  be.to_host(v, out.data());
  return out;
}

// max |got - want| / max |want| (the normalized error of the op tests; a floor keeps all-zero
// references meaningful). NaN anywhere -> infinity.
inline double norm_err(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double mx = 1e-30, err = 0.0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) return INFINITY;
    mx = std::max(mx, (double)std::fabs(want[i]));
    err = std::max(err, (double)std::fabs(got[i] - want[i]));
  }
  return err / mx;
}

}  // namespace memra::gputest
