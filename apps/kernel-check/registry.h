#pragma once
// kernel-check case registry: every CUDA kernel against a CPU reference, one small case per
// (kernel, shape), in the manner of an op test suite.
//
// HOW TO ADD CASES (another family, without editing this framework):
//   1. Create apps/kernel-check/cases_<family>.cu (it is globbed into the kernel-check binary).
//   2. Derive from memra::kc::Case and implement the four phases:
//        generate(env)  - seeded inputs: draw them from env.rng() (fresh per case and --seed), keep
//                         host copies in members, put device copies in env.alloc<T>(n) buffers and
//                         the outputs in env.alloc_output<T>(n) (poisoned with 0xFF bytes before
//                         every launch, so an unwritten float/half reads back as NaN);
//        launch(env)    - enqueue ONLY the kernel(s) under test on env.stream() and return their
//                         cudaError_t (the launcher's status); --perf replays exactly this call;
//        reference(env) - the CPU reference into host memory (f64 accumulation where it matters);
//        compare(env)   - env.download(...) the outputs and return a Verdict, normally from
//                         compare_norm(...) (stated tolerance) or compare_bytes(...) (identity).
//      perf_count() returns the bytes a launch must move and its FLOPs (for GB/s, TFLOP/s).
//   3. Register them with a function and MEMRA_KC_REGISTER at namespace scope:
//        static void add_norm_cases(memra::kc::Registry& r) {
//          r.add("norm", "rmsnorm/f32/4096", [] { return std::make_unique<RmsNormCase>(4096); });
//        }
//        MEMRA_KC_REGISTER(add_norm_cases);
//      Names are "<kernel>/<type>/<shape>" by convention and must be unique (checked at start).
// Rules for case code: do not call the CUDA runtime directly (no cudaMalloc/cudaMemcpy/<<<>>>):
// libmemra.so and this executable each hold a private static copy of cudart; go through env
// (buffers, copies, stream) and the library's launchers, so every CUDA call happens in
// libmemra.so's runtime. Never allocate inside launch(): --perf times it.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backend/cuda/runtime.h"

namespace memra::kc {

// The outcome of one case. kind: "bytes" (identity claimed) or "norm_err" (tolerance).
struct Verdict {
  bool pass = false;
  std::string kind;
  double error = 0;      // norm_err: ||got-ref||_2/||ref||_2; bytes: number of differing bytes
  double tolerance = 0;  // norm_err: the stated bound; bytes: 0
  double max_abs = 0;    // largest |got-ref| (norm_err)
  int64_t bad = 0;       // NaN/Inf outputs (norm_err) or first differing byte index (bytes)
  std::string detail;    // human-readable, e.g. "first mismatch at byte 1234: 0x12 vs 0x34"
};

// What one launch must move and compute: the floor for --perf.
struct PerfCount {
  double bytes = 0;  // bytes that must move through device memory (inputs once, outputs once)
  double flops = 0;  // 2*m*n*k for a matrix product, 0 when memory-bound
};

class Env {
 public:
  Env(cuda::Context& ctx, uint64_t seed) : ctx_(ctx), rng_(seed) {}
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  std::mt19937_64& rng() { return rng_; }
  // Fresh random values (never zeros: they hide unwritten outputs and bad indexing).
  std::vector<float> normal(size_t n, float stddev = 1.0f, float mean = 0.0f);
  std::vector<float> uniform(size_t n, float lo, float hi);
  std::vector<uint8_t> random_bytes(size_t n);

  cuda::Context& ctx() { return ctx_; }
  cudaStream_t stream() const { return ctx_.compute_stream(); }

  // Device buffers freed when the case ends. alloc_output marks the buffer for poisoning.
  void* alloc_bytes(size_t bytes);
  void* alloc_output_bytes(size_t bytes);
  template <class T>
  T* alloc(size_t n) { return static_cast<T*>(alloc_bytes(n * sizeof(T))); }
  template <class T>
  T* alloc_output(size_t n) { return static_cast<T*>(alloc_output_bytes(n * sizeof(T))); }

  // Copies on the compute stream; download waits for it.
  void upload_bytes(void* dst, const void* src, size_t bytes);
  void download_bytes(void* dst, const void* src, size_t bytes);
  template <class T>
  T* upload(const std::vector<T>& v) {
    T* d = alloc<T>(v.size());
    upload_bytes(d, v.data(), v.size() * sizeof(T));
    return d;
  }
  template <class T>
  std::vector<T> download(const T* d, size_t n) {
    std::vector<T> v(n);
    download_bytes(v.data(), d, n * sizeof(T));
    return v;
  }

  // Framework use: fill every output with 0xFF bytes (on the stream).
  void poison_outputs();

 private:
  cuda::Context& ctx_;
  std::mt19937_64 rng_;
  std::vector<cuda::DeviceBuffer> buffers_;
  std::vector<std::pair<void*, size_t>> outputs_;
};

class Case {
 public:
  virtual ~Case() = default;
  virtual void generate(Env& env) = 0;
  virtual cudaError_t launch(Env& env) = 0;
  virtual void reference(Env& env) = 0;
  virtual Verdict compare(Env& env) = 0;
  virtual PerfCount perf_count() const { return {}; }
};

struct CaseInfo {
  std::string section;
  std::string name;
  std::function<std::unique_ptr<Case>()> make;
};

class Registry {
 public:
  static Registry& instance();
  void add(std::string section, std::string name, std::function<std::unique_ptr<Case>()> make);
  const std::vector<CaseInfo>& cases() const { return cases_; }

 private:
  std::vector<CaseInfo> cases_;
};

struct Registrar {
  explicit Registrar(void (*fn)(Registry&)) { fn(Registry::instance()); }
};
#define MEMRA_KC_REGISTER(fn) static const ::memra::kc::Registrar memra_kc_registrar_##fn{&fn}

// ---------------------------------------------------------------- comparison helpers
// Normalized L2 error ||got-ref|| / ||ref|| (ref in f64); any NaN/Inf in got fails.
Verdict compare_norm(std::span<const float> got, std::span<const double> ref, double tolerance);
// Byte identity; detail names the first differing byte.
Verdict compare_bytes(const void* got, const void* ref, size_t bytes);

}  // namespace memra::kc
