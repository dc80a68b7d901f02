#pragma once
// The decode step's weight stream, requested into L2 ahead of the matvecs (kernels.l2_stream_mib).
// Kept free of CUDA types so its rules are unit-tested on the CPU (tests/backend_cuda/test_l2_stream.cpp).
//
// Why: a decode step reads its weights in one fixed order (the mmvs launches: q/k/v, o, gate+up,
// down per layer, then the output head), yet between two matvecs run kernels that move almost no
// bytes (norms, RoPE + append, attention at small depth, its combine, the GLU output's
// quantization): DRAM idles for ~20 us per layer while the weights of the next matvec are known
// and constant. The backend learns the order on a step shape's first (eager) run; in the captured
// graph, after every matvec launch a tiny kernel requests the next bytes of that order into L2,
// up to `window` bytes past the end of the matvec just launched, so the following small kernels
// overlap DRAM traffic and the next matvecs find part of their weights in L2. A cache hint only:
// the same bits.
//
// Model: the stream is the concatenation of the launches' bytes in order. A launch reads its
// ranges (the planes of its matrices) in parallel, front to back (its CTAs go in index order), so
// the first fraction f of a launch is taken as the first fraction f of each of its ranges.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace memra::cuda::l2s {

struct Range {
  const void* p = nullptr;
  uint64_t bytes = 0;
  bool operator==(const Range&) const = default;
};

struct Launch {
  std::vector<Range> ranges;
  uint64_t bytes() const {
    uint64_t s = 0;
    for (const auto& r : ranges) s += r.bytes;
    return s;
  }
  bool operator==(const Launch&) const = default;
};

// The part [a, b) of a launch of `total` bytes, as subranges of each of its ranges: for range r,
// [cut(a), cut(b)) with cut(x) = floor(x * r.bytes / total) rounded down to 16 bytes (the unit of
// a bulk L2 prefetch), r.bytes itself at x == total rounded down likewise. Consecutive parts
// tile each range without gaps or overlaps (the same cut on both sides of a boundary); empty
// pieces are left out.
inline void launch_part(const Launch& l, uint64_t a, uint64_t b, std::vector<Range>& out) {
  const uint64_t total = l.bytes();
  if (total == 0 || a >= b) return;
  for (const auto& r : l.ranges) {
    const auto cut = [&](uint64_t x) -> uint64_t {
      const uint64_t v = x >= total ? r.bytes : (uint64_t)((unsigned __int128)x * r.bytes / total);
      return v & ~uint64_t{15};
    };
    const uint64_t lo = cut(a), hi = cut(b);
    if (hi > lo) out.push_back({static_cast<const uint8_t*>(r.p) + lo, hi - lo});
  }
}

// The plan of one recorded step: which ranges to request after each launch.
class Planner {
 public:
  Planner(std::vector<Launch> launches, uint64_t window) : launches_(std::move(launches)), window_(window) {
    end_.reserve(launches_.size());
    uint64_t s = 0;
    for (const auto& l : launches_) end_.push_back(s += l.bytes());
  }
  size_t size() const { return launches_.size(); }
  const Launch& launch(size_t i) const { return launches_[i]; }
  uint64_t total() const { return end_.empty() ? 0 : end_.back(); }

  // Ranges to request once launch i is enqueued: the stream bytes [max(requested, end_i),
  // min(end_i + window, total)), where `requested` is how far earlier calls reached (calls are
  // made for i = 0, 1, ... in order; a call out of order restarts from that launch). Bytes of
  // launch i itself and before are never requested: they are being read already.
  std::vector<Range> after(size_t i) {
    std::vector<Range> out;
    if (i >= launches_.size()) return out;
    if (next_ != i) requested_ = 0;  // out of order: no memory of what was asked
    next_ = i + 1;
    const uint64_t lo = std::max(requested_, end_[i]);
    const uint64_t hi = std::min(end_[i] + window_, total());
    if (hi <= lo) return out;
    requested_ = hi;
    for (size_t j = i + 1; j < launches_.size(); ++j) {
      const uint64_t s = end_[j] - launches_[j].bytes();
      if (s >= hi) break;
      if (end_[j] <= lo) continue;
      launch_part(launches_[j], std::max(lo, s) - s, std::min(hi, end_[j]) - s, out);
    }
    return out;
  }

 private:
  std::vector<Launch> launches_;
  std::vector<uint64_t> end_;  // stream offset of each launch's end
  uint64_t window_;
  uint64_t requested_ = 0;
  size_t next_ = 0;
};

}  // namespace memra::cuda::l2s
