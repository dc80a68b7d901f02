// The decode step's L2 weight stream plan (lib/backend/cuda/l2_stream.h): what is requested after
// each matvec launch. Checked against a byte map of a synthetic stream: every requested byte
// belongs to a later launch, within the window, requested once; together the requests cover the
// stream past the first launch up to the 16-byte rounding of each range's end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "backend/cuda/l2_stream.h"

using memra::cuda::l2s::Launch;
using memra::cuda::l2s::launch_part;
using memra::cuda::l2s::Planner;
using memra::cuda::l2s::Range;

namespace {

// Fake device addresses: offsets from a 256-aligned base (never dereferenced).
constexpr uintptr_t kBase = 0x7f0000000000;
const void* at(uint64_t off) { return reinterpret_cast<const void*>(kBase + off); }
uint64_t off_of(const void* p) { return (uint64_t)(reinterpret_cast<uintptr_t>(p) - kBase); }

// Launch i has ranges of the given sizes, placed one after another (256-aligned) in the arena.
std::vector<Launch> make_stream(const std::vector<std::vector<uint64_t>>& sizes) {
  std::vector<Launch> out;
  uint64_t pos = 0;
  for (const auto& l : sizes) {
    Launch L;
    for (uint64_t b : l) {
      L.ranges.push_back({at(pos), b});
      pos = (pos + b + 255) / 256 * 256;
    }
    out.push_back(L);
  }
  return out;
}

// Which launch and range own an arena offset (-1: none).
std::pair<int, int> owner(const std::vector<Launch>& s, uint64_t off) {
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t r = 0; r < s[i].ranges.size(); ++r) {
      const uint64_t a = off_of(s[i].ranges[r].p);
      if (off >= a && off < a + s[i].ranges[r].bytes) return {(int)i, (int)r};
    }
  return {-1, -1};
}

}  // namespace

TEST(L2Stream, LaunchPartsTileEachRange) {
  const auto s = make_stream({{4096 * 3 + 48, 1000, 16 * 7}});
  const Launch& L = s[0];
  const uint64_t T = L.bytes();
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<uint64_t> cuts = {0, T};
    for (int c = 0; c < 5; ++c) cuts.push_back(rng() % (T + 1));
    std::sort(cuts.begin(), cuts.end());
    std::map<uint64_t, int> hits;  // arena byte -> times requested (16-byte granules)
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      std::vector<Range> out;
      launch_part(L, cuts[c], cuts[c + 1], out);
      for (const auto& r : out) {
        EXPECT_EQ(off_of(r.p) % 16, 0u);
        EXPECT_EQ(r.bytes % 16, 0u);
        EXPECT_GT(r.bytes, 0u);
        for (uint64_t b = 0; b < r.bytes; b += 16) ++hits[off_of(r.p) + b];
      }
    }
    // Each range is covered exactly once, up to its size rounded down to 16 bytes.
    uint64_t covered = 0;
    for (const auto& [o, n] : hits) {
      EXPECT_EQ(n, 1) << "granule at " << o << " requested " << n << " times";
      const auto [li, ri] = owner(s, o);
      ASSERT_EQ(li, 0);
      EXPECT_LE(o + 16 - off_of(L.ranges[(size_t)ri].p), L.ranges[(size_t)ri].bytes) << "past the range's end";
      covered += 16;
    }
    uint64_t want = 0;
    for (const auto& r : L.ranges) want += r.bytes & ~uint64_t{15};
    EXPECT_EQ(covered, want);
  }
}

TEST(L2Stream, PartIsProportionalAcrossRanges) {
  // Two planes of 64 KiB and 16 KiB: the first quarter of the launch is the first quarter of each.
  const auto s = make_stream({{65536, 16384}});
  std::vector<Range> out;
  launch_part(s[0], 0, s[0].bytes() / 4, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].p, s[0].ranges[0].p);
  EXPECT_EQ(out[0].bytes, 16384u);
  EXPECT_EQ(out[1].p, s[0].ranges[1].p);
  EXPECT_EQ(out[1].bytes, 4096u);
}

TEST(L2Stream, WindowAheadOfEachLaunchRequestedOnce) {
  const std::vector<std::vector<uint64_t>> sizes = {{30000, 4000}, {8192}, {100000, 100000, 6256}, {16}, {50000}, {7000, 7008}};
  const auto s = make_stream(sizes);
  std::vector<uint64_t> end;
  uint64_t tot = 0;
  for (const auto& l : s) end.push_back(tot += l.bytes());
  for (uint64_t window : {uint64_t{1000}, uint64_t{20000}, uint64_t{123456}, uint64_t{1} << 40}) {
    Planner pl(s, window);
    ASSERT_EQ(pl.total(), tot);
    std::map<uint64_t, int> hits;
    for (size_t i = 0; i < s.size(); ++i) {
      for (const auto& r : pl.after(i)) {
        for (uint64_t b = 0; b < r.bytes; b += 16) {
          const uint64_t o = off_of(r.p) + b;
          ++hits[o];
          const auto [li, ri] = owner(s, o);
          ASSERT_GE(li, 0);
          EXPECT_GT(li, (int)i) << "launch " << i << " requested bytes of launch " << li << " (not ahead)";
          // Its position in the stream: within the window past launch i's end (the proportional
          // cut may place a granule up to its range's share of the window earlier or later, so
          // check the launch-level bound: the launch starts before end_i + window).
          const uint64_t start_li = end[(size_t)li] - s[(size_t)li].bytes();
          EXPECT_LT(start_li, end[i] + window) << "launch " << li << " is beyond the window of " << i;
        }
      }
    }
    for (const auto& [o, n] : hits) EXPECT_EQ(n, 1) << "granule " << o << " requested " << n << " times";
    // Together the requests are the stream bytes of the union of [end_i, end_i + window) (in
    // order, each asked once), up to the 16-byte rounding of every cut: at most 16 bytes per range
    // and call below it, never above.
    uint64_t want = 0, reach = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      const uint64_t lo = std::max(reach, end[i]), hi = std::min(end[i] + window, tot);
      if (hi > lo) want += hi - lo, reach = hi;
    }
    size_t n_ranges = 0;
    for (const auto& l : s) n_ranges += l.ranges.size();
    EXPECT_LE(hits.size() * 16, want) << "window " << window;
    EXPECT_GE(hits.size() * 16 + 16 * n_ranges * (s.size() + 1), want) << "window " << window;
    if (window >= tot) {
      // Everything after launch 0 was requested right after launch 0, rounded down per range.
      uint64_t all = 0;
      for (size_t i = 1; i < s.size(); ++i)
        for (const auto& r : s[i].ranges) all += r.bytes & ~uint64_t{15};
      EXPECT_EQ(hits.size() * 16, all);
    }
  }
}

TEST(L2Stream, SmallWindowStaysWithinTheNextLaunch) {
  const auto s = make_stream({{4096}, {65536}, {65536}});
  Planner pl(s, 1024);
  const auto r0 = pl.after(0);
  ASSERT_EQ(r0.size(), 1u);
  EXPECT_EQ(r0[0].p, s[1].ranges[0].p);
  EXPECT_EQ(r0[0].bytes, 1024u);
  // After launch 1: [end_1, end_1 + 1024) = the first KiB of launch 2 (launch 1's rest is its own).
  const auto r1 = pl.after(1);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(r1[0].p, s[2].ranges[0].p);
  EXPECT_EQ(r1[0].bytes, 1024u);
  EXPECT_TRUE(pl.after(2).empty()) << "nothing after the last launch";
}

TEST(L2Stream, OutOfOrderCallRestartsAndZeroWindowRequestsNothing) {
  const auto s = make_stream({{4096}, {4096}, {4096}, {4096}});
  Planner pl(s, 8192);
  EXPECT_EQ(pl.after(0).size(), 2u);   // launches 1 and 2
  EXPECT_EQ(pl.after(1).size(), 1u);   // launch 3 (2 already asked)
  const auto again = pl.after(0);      // a new step: out of order, asks again
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].p, s[1].ranges[0].p);
  Planner none(s, 0);
  for (size_t i = 0; i < s.size(); ++i) EXPECT_TRUE(none.after(i).empty());
  EXPECT_TRUE(none.after(99).empty());
}
