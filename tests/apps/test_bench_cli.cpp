// pp-bench --arm on the CPU backend with a tiny synth model: the receipts per row and arm, the
// arms' configurations, bench.interleave (repetitions rotating over resident arms) and its guard
// against an arm that changes the shared rows.
#include <map>

#include "core/sha256.h"
#include "run_util.h"

namespace memra::apptest {
namespace {

std::string tiny_model() { return shared_dir() + "/models/synth/qwen3-q4_k_m.gguf"; }

std::vector<std::string> bench_args(const std::vector<std::string>& arms, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> a = {"-m", tiny_model(), "-p", "8", "-n", "4", "-r", "3", "--set", "run.backend=cpu"};
  for (const auto& f : arms) {
    a.push_back("--arm");
    a.push_back(f);
  }
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::string write_arm(const std::string& name, const std::string& toml) {
  const auto p = scratch() / name;
  write_file(p, toml);
  return p.string();
}

TEST(PpBenchArms, InterleavedArmsGiveOneReceiptPerRowAndArm) {
  MEMRA_APPS_REQUIRE_SHARED();
  const std::string a = write_arm("arm_a.toml", "[kernels]\nfuse = true\n");
  const std::string b = write_arm("arm_b.toml", "[kernels]\nfuse = false\n");
  for (bool interleave : {true, false}) {
    auto res = run_tool(MEMRA_PP_BENCH, bench_args({a, b}, {"--set", interleave ? "bench.interleave=true" : "bench.interleave=false",
                                                            "--set", "receipt.hash_model=true"}));
    ASSERT_EQ(res.code, 0) << res.describe();
    ASSERT_EQ(res.receipts.size(), 4u) << "2 rows x 2 arms";
    int seen_a = 0, seen_b = 0;
    const std::string file_hash = sha256_file_hex(tiny_model());  // every row's receipt names the file by it
    for (const auto& r : res.receipts) {
      EXPECT_EQ(r["status"], "ok");
      EXPECT_EQ(r["model"]["sha256"], file_hash);
      const auto& m = r["metrics"];
      EXPECT_EQ(m["interleaved_arms"].get<int>(), interleave ? 2 : 1);
      ASSERT_EQ(m["samples_tok_s"].size(), 3u);
      for (const auto& x : m["samples_tok_s"]) EXPECT_GT(x.get<double>(), 0.0);
      const std::string arm = r["results"]["arm"];
      const bool fuse = r["config"]["kernels"]["fuse"].get<bool>();
      // Interleaved, the 2nd arm's receipt carries its median over the 1st arm's (same row).
      EXPECT_EQ(m.contains("ratio_to_first_arm"), interleave && arm == b);
      if (arm == a) {
        ++seen_a;
        EXPECT_TRUE(fuse) << "arm a's receipt must carry arm a's configuration";
      } else if (arm == b) {
        ++seen_b;
        EXPECT_FALSE(fuse) << "arm b's receipt must carry arm b's configuration";
      } else {
        ADD_FAILURE() << "unexpected arm " << arm;
      }
    }
    EXPECT_EQ(seen_a, 2);
    EXPECT_EQ(seen_b, 2);
    if (interleave)  // the ratio is the two receipts' medians, row by row
      for (const auto& rb : res.receipts) {
        if (rb["results"]["arm"] != b) continue;
        for (const auto& ra : res.receipts) {
          if (ra["results"]["arm"] == a && ra["metrics"]["row"] == rb["metrics"]["row"]) {
            EXPECT_DOUBLE_EQ(rb["metrics"]["ratio_to_first_arm"].get<double>(),
                             rb["metrics"]["tok_s_median"].get<double>() / ra["metrics"]["tok_s_median"].get<double>());
          }
        }
      }
  }
}

// bench.aa_copy: a second copy of the first arm joins the rotation, loaded last; its receipts carry
// the first arm's configuration and results.aa_copy, every receipt of a row the copy's median over
// the first arm's (metrics.aa_ratio), the other arms' receipts their median over the copy's.
TEST(PpBenchArms, AaCopyJoinsTheRotation) {
  MEMRA_APPS_REQUIRE_SHARED();
  const std::string a = write_arm("arm_aa_a.toml", "[kernels]\nfuse = true\n");
  const std::string b = write_arm("arm_aa_b.toml", "[kernels]\nfuse = false\n");
  auto res = run_tool(MEMRA_PP_BENCH, bench_args({a, b}, {"--set", "bench.aa_copy=true"}));
  ASSERT_EQ(res.code, 0) << res.describe();
  ASSERT_EQ(res.receipts.size(), 6u) << "2 rows x (2 arms + the copy)";
  EXPECT_NE(res.out.find("(A/A copy)"), std::string::npos) << res.out;
  std::map<std::string, double> first, copy;  // row -> median
  for (const auto& r : res.receipts) {
    const auto& m = r["metrics"];
    EXPECT_EQ(m["interleaved_arms"].get<int>(), 3);
    ASSERT_TRUE(r["results"].contains("aa_copy"));
    const bool is_copy = r["results"]["aa_copy"].get<bool>();
    const std::string row = m["row"];
    if (is_copy) {
      EXPECT_EQ(r["results"]["arm"], a) << "the copy is of the first arm";
      EXPECT_TRUE(r["config"]["kernels"]["fuse"].get<bool>()) << "the copy carries the first arm's configuration";
      EXPECT_FALSE(copy.count(row));
      copy[row] = m["tok_s_median"].get<double>();
    } else if (r["results"]["arm"] == a) {
      first[row] = m["tok_s_median"].get<double>();
    }
  }
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(copy.size(), 2u);
  for (const auto& r : res.receipts) {
    const auto& m = r["metrics"];
    const std::string row = m["row"];
    ASSERT_TRUE(m.contains("aa_ratio"));
    EXPECT_DOUBLE_EQ(m["aa_ratio"].get<double>(), copy[row] / first[row]);
    const bool other = r["results"]["arm"] == b;
    EXPECT_EQ(m.contains("ratio_to_aa_copy"), other);
    if (other) {
      EXPECT_DOUBLE_EQ(m["ratio_to_aa_copy"].get<double>(), m["tok_s_median"].get<double>() / copy[row]);
    }
  }
  // Arms run one after another have no rotation to put a copy in: a clear error.
  auto seq = run_tool(MEMRA_PP_BENCH, bench_args({a, b}, {"--set", "bench.aa_copy=true", "--set", "bench.interleave=false"}));
  EXPECT_NE(seq.code, 0) << seq.describe();
  EXPECT_NE(seq.err.find("bench.aa_copy"), std::string::npos) << seq.err;
}

TEST(PpBenchArms, ArmChangingTheRowsIsAnErrorWhenInterleaved) {
  MEMRA_APPS_REQUIRE_SHARED();
  const std::string a = write_arm("arm_plain.toml", "[kernels]\nfuse = true\n");
  const std::string d8 = write_arm("arm_depths.toml", "[bench]\ndepth = [0, 8]\n");  // -d is not on the command line
  auto res = run_tool(MEMRA_PP_BENCH, bench_args({a, d8}));
  EXPECT_NE(res.code, 0) << res.describe();
  EXPECT_NE(res.err.find("bench.interleave"), std::string::npos) << res.err;
  // Run one after another, the arm keeps its own rows: 2 for the plain arm, 4 for the other.
  auto seq = run_tool(MEMRA_PP_BENCH, bench_args({a, d8}, {"--set", "bench.interleave=false"}));
  ASSERT_EQ(seq.code, 0) << seq.describe();
  ASSERT_EQ(seq.receipts.size(), 6u);
  int rows_d8 = 0;
  for (const auto& r : seq.receipts) rows_d8 += r["results"]["arm"] == d8;
  EXPECT_EQ(rows_d8, 4);
}

// --pm-sample reads the GPU's performance counters: with the CPU backend it is a clear error (exit
// 1, the option named), never samples of an idle device beside CPU rows.
TEST(PpBenchArms, PmSampleNeedsTheCudaBackend) {
  MEMRA_APPS_REQUIRE_SHARED();
  const auto pm = (scratch() / "pm.jsonl").string();
  auto res = run_tool(MEMRA_PP_BENCH, bench_args({}, {"--pm-sample", pm}));
  EXPECT_EQ(res.code, 1) << res.describe();
  EXPECT_NE(res.err.find("--pm-sample"), std::string::npos) << res.describe();
  EXPECT_NE(res.err.find("run.backend = cuda"), std::string::npos) << res.describe();
}

}  // namespace
}  // namespace memra::apptest
