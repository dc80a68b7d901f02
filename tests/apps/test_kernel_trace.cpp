// pp-bench --trace's summary (apps/common/kernel_trace.h) on hand-made timelines whose figures
// follow from interval arithmetic.
#include <gtest/gtest.h>

#include <map>

#include "common/kernel_trace.h"

using memra::app::KernelRecord;
using memra::app::short_kernel_name;
using memra::app::summarize_trace;

namespace {

KernelRecord rec(const char* name, uint64_t s_us, uint64_t e_us) {
  KernelRecord r;
  r.name = name;
  r.start_ns = s_us * 1000;
  r.end_ns = e_us * 1000;
  return r;
}

TEST(KernelTrace, ExposedTimeIsTheUncoveredPartOfEachInterval) {
  // Two steps of: A [0,10], B [5,20] (overlaps A by 5), C [25,30] after a 5 us gap.
  const std::vector<KernelRecord> recs = {rec("A", 100, 110), rec("B", 105, 120), rec("C", 125, 130),
                                          rec("A", 0, 10),    rec("B", 5, 20),    rec("C", 25, 30)};
  const auto t = summarize_trace(recs, 2);
  EXPECT_EQ(t.kernels_per_step, 3);
  EXPECT_DOUBLE_EQ(t.wall_us_per_step, 65.0);  // 0 .. 130 over two steps
  EXPECT_DOUBLE_EQ(t.busy_us_per_step, 25.0);  // 10 + 10 + 5
  EXPECT_DOUBLE_EQ(t.idle_us_per_step, 40.0);  // 5 in each step + 70 between them, over 2
  ASSERT_EQ(t.kinds.size(), 3u);
  std::map<std::string, memra::app::TraceSummary::Kind> by;
  for (const auto& k : t.kinds) by[k.name] = k;
  EXPECT_DOUBLE_EQ(by["A"].exposed_us_per_step, 10.0);
  EXPECT_DOUBLE_EQ(by["B"].exposed_us_per_step, 10.0);
  EXPECT_DOUBLE_EQ(by["B"].mean_us, 15.0);
  EXPECT_DOUBLE_EQ(by["C"].exposed_us_per_step, 5.0);
  EXPECT_DOUBLE_EQ(by["C"].calls_per_step, 1.0);
  EXPECT_EQ(t.kinds.back().name, "C");  // sorted by exposed time
}

TEST(KernelTrace, AKernelInsideAnotherIsNotExposed) {
  const auto t = summarize_trace({rec("outer", 0, 100), rec("inner", 10, 20)}, 1);
  std::map<std::string, double> ex;
  for (const auto& k : t.kinds) ex[k.name] = k.exposed_us_per_step;
  EXPECT_DOUBLE_EQ(ex["outer"], 100.0);
  EXPECT_DOUBLE_EQ(ex["inner"], 0.0);
  EXPECT_DOUBLE_EQ(t.idle_us_per_step, 0.0);
}

TEST(KernelTrace, ByGridSplitsOneKernelByLaunchShape) {
  KernelRecord a = rec("mv", 0, 10), b = rec("mv", 10, 30), c = rec("mv", 30, 35);
  a.grid = 1536;
  b.grid = 4096;
  c.grid = 1536;
  const auto t = summarize_trace({a, b, c}, 1, /*by_grid=*/true);
  std::map<std::string, memra::app::TraceSummary::Kind> by;
  for (const auto& k : t.kinds) by[k.name] = k;
  ASSERT_EQ(by.size(), 2u);
  EXPECT_DOUBLE_EQ(by["mv [1536]"].calls_per_step, 2.0);
  EXPECT_DOUBLE_EQ(by["mv [1536]"].exposed_us_per_step, 15.0);
  EXPECT_DOUBLE_EQ(by["mv [4096]"].exposed_us_per_step, 20.0);
  EXPECT_EQ(summarize_trace({a, b, c}, 1).kinds.size(), 1u);  // by name only
}

TEST(KernelTrace, ShortNames) {
  EXPECT_EQ(short_kernel_name("void memra::cuda::(anonymous namespace)::mmvs_kernel<(memra::QType)12, 1, 0>("
                              "memra::cuda::(anonymous namespace)::Args)"),
            "mmvs_kernel<(memra::QType)12, 1, 0>");
  EXPECT_EQ(short_kernel_name("plain_kernel"), "plain_kernel");
  EXPECT_TRUE(summarize_trace({}, 4).kinds.empty());
}

}  // namespace
