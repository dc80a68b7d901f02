#pragma once
// Helpers shared by the norm/rope/act/kv/attn/sample case files: f64 references, error figures,
// verdict combination. No fmt here: fmt 9's consteval format strings do not compile under nvcc's
// front end, and these files are .cu (the registry wants CUDA types).
#include <cmath>
#include <cstdio>
#include <sstream>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "matvec/q8s_order.h"
#include "registry.h"

namespace memra::kc::ref {

// compare_norm on vectors (nvcc's front end does not convert vector -> span implicitly).
inline Verdict norm(const std::vector<float>& got, const std::vector<double>& ref, double tol) {
  return compare_norm(std::span<const float>(got.data(), got.size()),
                      std::span<const double>(ref.data(), ref.size()), tol);
}

// ||a - ref|| / ||ref|| (the figure compare_norm reports), for a CPU implementation's own error.
inline double norm_err(const std::vector<float>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double e = (double)a[i] - ref[i];
    num += e * e;
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// The first failing verdict, its detail prefixed with its label; else the last one, with every
// label's figure in the detail.
inline Verdict all_of(std::initializer_list<std::pair<const char*, Verdict>> vs) {
  std::string summary;
  Verdict last;
  for (const auto& [label, v] : vs) {
    if (!v.pass) {
      Verdict f = v;
      f.detail = std::string(label) + ": " + v.detail;
      return f;
    }
    summary += (summary.empty() ? "" : "; ") + std::string(label) + ": " + v.detail;
    last = v;
  }
  last.detail = summary;
  return last;
}

// "a/b/c" names: cat("rmsnorm/f32/", rows, "x", cols).
template <class... T>
std::string cat(const T&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

// A failed verdict of a check that is neither a norm nor a byte comparison (a refused launch).
inline Verdict fail(std::string why) {
  Verdict v;
  v.kind = "check";
  v.error = 1;
  v.detail = std::move(why);
  return v;
}

// A Verdict from a launcher status of a chain the reference runs on the device.
inline void check(cudaError_t e, const char* what) { cuda::check_status(e, what); }

// An op that emits the q8s planes of its f32 output (n values) next to the plain op followed by
// launch_quantize_q8s: f32 outputs, quants (n bytes) and {d, sum} pairs (n/32) byte-identical.
// il: both quant planes one row in the interleaved order (q8s_order.h), compared quant by quant.
inline Verdict compare_q8s_emit(Env& env, const float* out, const float* out_plain, const int8_t* xq,
                                const int8_t* xq_plain, const float* xds, const float* xds_plain, size_t n,
                                bool il = false) {
  const auto o1 = env.download(out, n), o2 = env.download(out_plain, n);
  const auto quants = [&](const int8_t* d) {
    if (!il) return env.download(d, n);
    const auto raw = env.download(d, (size_t)cuda::q8s::il_row_bytes((int64_t)n));
    std::vector<int8_t> q(n);
    cuda::q8s::from_interleaved(raw.data(), (int64_t)n, q.data());
    return q;
  };
  const auto q1 = quants(xq), q2 = quants(xq_plain);
  const auto d1 = env.download(xds, n / 16), d2 = env.download(xds_plain, n / 16);
  return all_of({{"f32 out", compare_bytes(o1.data(), o2.data(), n * 4)},
                 {"quants", compare_bytes(q1.data(), q2.data(), n)},
                 {"scales and sums", compare_bytes(d1.data(), d2.data(), d1.size() * 4)}});
}

}  // namespace memra::kc::ref
