#pragma once
// Counter-based random numbers: value k of a stream is a pure function of (seed, stream name, k),
// so any thread can generate any row of any tensor and the file does not depend on the thread
// count or the chunking. The mixer is SplitMix64's finalizer applied to a Weyl sequence; normals
// come from Box-Muller on pairs (value 2j and 2j+1 of a stream share counter j).
#include <cmath>
#include <cstdint>
#include <string_view>

namespace memra::synth {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

class CounterRng {
 public:
  // The stream key depends on the name, not on the tensor's position in the plan, so adding a
  // tensor does not change the values of the others.
  CounterRng(uint64_t seed, std::string_view stream) : key_(mix64(mix64(seed) ^ fnv1a64(stream))) {}

  uint64_t bits(uint64_t counter) const { return mix64(key_ + (counter + 1) * 0x9E3779B97F4A7C15ull); }

  // out[i] = mean + stddev * N(0,1) for stream values [first, first + n).
  void fill_normal(uint64_t first, size_t n, float mean, float stddev, float* out) const {
    size_t i = 0;
    uint64_t k = first;
    if (k & 1) {  // odd start: second value of a pair
      float a, b;
      pair(k >> 1, a, b);
      out[i++] = mean + stddev * b;
      ++k;
    }
    for (; i + 1 < n; i += 2, k += 2) {
      float a, b;
      pair(k >> 1, a, b);
      out[i] = mean + stddev * a;
      out[i + 1] = mean + stddev * b;
    }
    if (i < n) {
      float a, b;
      pair(k >> 1, a, b);
      out[i] = mean + stddev * a;
    }
  }

 private:
  void pair(uint64_t j, float& a, float& b) const {
    const uint64_t r = bits(j);
    // u1 in (0, 1] so log never sees 0; 32 bits each are plenty for N(0, 0.02) weights.
    const float u1 = ((float)(uint32_t)(r >> 32) + 1.0f) * (1.0f / 4294967296.0f);
    const float u2 = (float)(uint32_t)r * (1.0f / 4294967296.0f);
    const float rad = std::sqrt(-2.0f * std::log(u1));
    const float th = 6.2831853071795864f * u2;
    a = rad * std::cos(th);
    b = rad * std::sin(th);
  }
  uint64_t key_;
};

}  // namespace memra::synth
