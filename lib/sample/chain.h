#pragma once
// The sampling chain's arithmetic, shared verbatim by the CPU sampler (lib/sample/sampler.cpp) and
// the device sampler (kernels/sample), so that the two pick the same token by construction. Every
// function here is plain C++ that nvcc also compiles for the device.
//
// Chain order (the order llama.cpp's default chain uses):
//   1. penalties (repetition, frequency, presence) over the recent-token window, in float;
//   2. greedy (temperature <= 0): the largest penalized logit, ties to the smallest token id;
//   3. candidates sorted by (logit descending, id ascending); top-k keeps the first k;
//   4. typical (typical_p < 1), 5. top-p (top_p < 1), 6. min-p (min_p > 0), each on the softmax
//      (temperature 1) of the candidates that survived the previous stage;
//   7. temperature scaling and a draw: u = uniform01(seed, draw_counter); the first candidate (in
//      sorted order) whose cumulative weight exceeds u * total.
// Softmax, entropy and the draw run in double. Where CPU and device can differ: exp/log of the host
// libm vs CUDA's (both within 1 ulp in double), so a token can differ only when a stage threshold
// or u * total falls within ~1e-15 relative of a cumulative sum. Products and sums are written with
// the rounded-intrinsic macros below so nvcc cannot contract them into FMAs (host code has no FMA
// contraction at -std=c++20 without -march).
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define MEMRA_HD __host__ __device__ __forceinline__
#else
#define MEMRA_HD inline
#endif

#if defined(__CUDA_ARCH__)
#define MEMRA_FMUL(a, b) __fmul_rn((a), (b))
#define MEMRA_FADD(a, b) __fadd_rn((a), (b))
#define MEMRA_DMUL(a, b) __dmul_rn((a), (b))
#define MEMRA_DADD(a, b) __dadd_rn((a), (b))
#else
#define MEMRA_FMUL(a, b) ((a) * (b))
#define MEMRA_FADD(a, b) ((a) + (b))
#define MEMRA_DMUL(a, b) ((a) * (b))
#define MEMRA_DADD(a, b) ((a) + (b))
#endif

namespace memra::sample_chain {

// Counter-based generator (SplitMix64 finalizer applied to seed and counter): the n-th draw of a
// seed is a pure function of (seed, n), so the device reproduces it from a counter in memory.
MEMRA_HD uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Uniform in [0, 1) with 53 random bits.
MEMRA_HD double uniform01(uint64_t seed, uint64_t counter) {
  return (double)(mix64(seed ^ mix64(counter)) >> 11) * (1.0 / 9007199254740992.0);
}

// llama.cpp's penalty formula: the repetition penalty divides a positive logit and multiplies a
// non-positive one; then count * frequency + (count > 0) * presence is subtracted.
MEMRA_HD float penalize(float logit, int32_t count, float repeat, float frequency, float presence) {
  if (count <= 0) return logit;
  if (repeat != 1.0f) logit = logit > 0.0f ? logit / repeat : MEMRA_FMUL(logit, repeat);
  const float sub = MEMRA_FADD(MEMRA_FMUL((float)count, frequency), presence);
  return logit - sub;
}

// (a_logit, a_id) comes before (b_logit, b_id) in candidate order.
MEMRA_HD bool before(float a_logit, int32_t a_id, float b_logit, int32_t b_id) {
  return a_logit > b_logit || (a_logit == b_logit && a_id < b_id);
}

struct ChainParams {
  float temperature;  // > 0 here (greedy is decided by the caller)
  float top_p;        // 1 = off
  float min_p;        // 0 = off
  float typical_p;    // 1 = off
};

// p[i] = softmax(logit)[i] in double; logit[0] is the maximum (candidates are sorted).
MEMRA_HD void softmax_sorted(const float* logit, int32_t n, double* p) {
  const double m = (double)logit[0];
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    p[i] = exp((double)logit[i] - m);
    sum = MEMRA_DADD(sum, p[i]);
  }
  for (int32_t i = 0; i < n; ++i) p[i] = p[i] / sum;
}

// Typical sampling. `order` is scratch of n ints; `sort_by_score(order, score, n)` must sort the
// indices 0..n-1 by (score ascending, index ascending), a strict total order, so any correct sort
// gives the same permutation. Compacts the kept candidates in place (keeping logit order).
template <class SortFn>
MEMRA_HD int32_t typical_filter(float* logit, int32_t* id, int32_t n, double typical_p, double* p,
                                double* score, int32_t* order, SortFn sort_by_score) {
  softmax_sorted(logit, n, p);
  double ent = 0.0;
  for (int32_t i = 0; i < n; ++i)
    if (p[i] > 0.0) ent = MEMRA_DADD(ent, -MEMRA_DMUL(p[i], log(p[i])));
  for (int32_t i = 0; i < n; ++i) {
    score[i] = p[i] > 0.0 ? fabs(-log(p[i]) - ent) : INFINITY;
    order[i] = i;
  }
  sort_by_score(order, score, n);
  double cum = 0.0;
  int32_t kept = 0;
  // Reuse score[] as the keep mask: 1 = kept.
  for (int32_t j = 0; j < n; ++j) score[j] = 0.0;
  for (int32_t j = 0; j < n; ++j) {
    cum = MEMRA_DADD(cum, p[order[j]]);
    score[order[j]] = 1.0;
    ++kept;
    if (cum >= typical_p) break;
  }
  int32_t w = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (score[i] != 0.0) {
      logit[w] = logit[i];
      id[w] = id[i];
      ++w;
    }
  }
  return kept;
}

MEMRA_HD int32_t top_p_filter(const float* logit, int32_t n, double top_p, double* p) {
  softmax_sorted(logit, n, p);
  double cum = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    cum = MEMRA_DADD(cum, p[i]);
    if (cum >= top_p) return i + 1;
  }
  return n;
}

MEMRA_HD int32_t min_p_filter(const float* logit, int32_t n, double min_p, double* p) {
  softmax_sorted(logit, n, p);
  const double thr = MEMRA_DMUL(min_p, p[0]);
  int32_t k = 1;
  while (k < n && p[k] >= thr) ++k;
  return k;
}

// Stages 4-6 on candidates already penalized, sorted and cut to top-k: the number of candidates
// kept (the arrays may be compacted).
template <class SortFn>
MEMRA_HD int32_t filter(float* logit, int32_t* id, int32_t n, const ChainParams& c, double* p, double* score,
                        int32_t* order, SortFn sort_by_score) {
  if (c.typical_p < 1.0f && n > 1)
    n = typical_filter(logit, id, n, (double)c.typical_p, p, score, order, sort_by_score);
  if (c.top_p < 1.0f && n > 1) n = top_p_filter(logit, n, (double)c.top_p, p);
  if (c.min_p > 0.0f && n > 1) n = min_p_filter(logit, n, (double)c.min_p, p);
  return n;
}

// Stage 7's weights: w[i] = exp((logit[i] - logit[0]) / temperature); returns their sum, added in
// candidate order (the distribution a draw picks from is w / total).
MEMRA_HD double temperature_weights(const float* logit, int32_t n, double temperature, double* w) {
  const double m = (double)logit[0];
  double total = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    w[i] = exp(((double)logit[i] - m) / temperature);
    total = MEMRA_DADD(total, w[i]);
  }
  return total;
}

// Stage 7's draw: the first index whose cumulative weight exceeds u * total.
MEMRA_HD int32_t draw_index(const double* w, int32_t n, double total, double u) {
  const double target = MEMRA_DMUL(u, total);
  double cum = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    cum = MEMRA_DADD(cum, w[i]);
    if (cum > target) return i;
  }
  return n - 1;  // u * total rounded up to total
}

// Stages 4-7 on candidates already penalized, sorted and cut to top-k. Returns the index (into
// the candidate arrays, which it may compact) of the chosen candidate.
template <class SortFn>
MEMRA_HD int32_t pick(float* logit, int32_t* id, int32_t n, const ChainParams& c, double u,
                      double* p, double* score, int32_t* order, SortFn sort_by_score) {
  n = filter(logit, id, n, c, p, score, order, sort_by_score);
  const double total = temperature_weights(logit, n, (double)c.temperature, p);
  return draw_index(p, n, total, u);
}

}  // namespace memra::sample_chain
