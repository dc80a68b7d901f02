#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <zlib.h>

#include "config/config.h"
#include "receipt/receipt.h"
#include "receipt/sweep.h"

namespace fs = std::filesystem;

namespace {
fs::path temp_dir(const std::string& tag) {
  fs::path p = fs::temp_directory_path() / ("memra-receipt-test-" + tag + "-" + memra::new_run_id());
  fs::create_directories(p);
  return p;
}

memra::Receipt make_receipt(const std::string& tool) {
  memra::Receipt r(tool, {tool, "--flag"});
  r.set_config(memra::Config{});
  return r;
}

nlohmann::json bench_row(const std::string& row, const std::string& kind, double tok_s) {
  auto r = make_receipt("pp-bench");
  r.metrics()["row"] = row;
  r.metrics()["kind"] = kind;
  r.metrics()["tok_s_median"] = tok_s;
  return r.json();
}

void write_lines(const fs::path& p, const std::vector<nlohmann::json>& rows) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p);
  for (const auto& j : rows) out << j.dump() << "\n";
}
}  // namespace

TEST(Receipt, FreshReceiptValidatesAndRoundTrips) {
  auto r = make_receipt("unit");
  r.metrics()["tok_s"] = 12.5;
  const auto dir = temp_dir("rt");
  const auto path = (dir / "sub" / "r.jsonl").string();
  ASSERT_TRUE(r.append_to(path));
  ASSERT_TRUE(r.append_to(path));
  const auto rep = memra::read_receipt_file(path);
  EXPECT_EQ(rep.n_lines, 2u);
  EXPECT_EQ(rep.n_valid, 2u);
  EXPECT_TRUE(rep.problems.empty()) << rep.problems.front();
  EXPECT_EQ(rep.receipts[0]["metrics"]["tok_s"], 12.5);
  EXPECT_EQ(rep.receipts[0]["schema"], memra::kReceiptSchema);
  EXPECT_EQ(rep.receipts[0]["config_hash"], memra::config_hash(memra::Config{}));
  fs::remove_all(dir);
}

TEST(Receipt, ValidatorRejectsMissingAndMistypedFields) {
  auto j = make_receipt("unit").json();
  EXPECT_TRUE(memra::validate_receipt(j).empty());
  auto k = j;
  k.erase("git");
  EXPECT_FALSE(memra::validate_receipt(k).empty());
  k = j;
  k["status"] = "maybe";
  EXPECT_FALSE(memra::validate_receipt(k).empty());
  k = j;
  k["schema"] = "memra.receipt/0";
  EXPECT_FALSE(memra::validate_receipt(k).empty());
  k = j;
  k["status"] = "error";  // error status needs its text
  EXPECT_FALSE(memra::validate_receipt(k).empty());
  k["error"] = "boom";
  EXPECT_TRUE(memra::validate_receipt(k).empty());
  k = j;
  k["timestamp"] = "yesterday";
  EXPECT_FALSE(memra::validate_receipt(k).empty());
}

TEST(Receipt, BrokenLineIsReported) {
  const auto dir = temp_dir("broken");
  const auto path = dir / "r.jsonl";
  std::ofstream(path) << make_receipt("unit").json().dump() << "\n{not json\n";
  const auto rep = memra::read_receipt_file(path.string());
  EXPECT_EQ(rep.n_valid, 1u);
  ASSERT_EQ(rep.problems.size(), 1u);
  EXPECT_NE(rep.problems[0].find(":2:"), std::string::npos) << rep.problems[0];
  fs::remove_all(dir);
}

// Older receipts are stored gzip-compressed (*.jsonl.gz): the sweep reads them like plain ones, so
// a regression inside one fails it, and a damaged one is reported.
TEST(Sweep, ReadsGzipReceipts) {
  const auto dir = temp_dir("sweep-gz");
  write_lines(dir / "baselines" / "b.jsonl", {bench_row("tg128", "decode", 100.0)});
  const auto gz_path = dir / "old.jsonl.gz";
  gzFile gz = gzopen(gz_path.string().c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  const std::string line = bench_row("tg128", "decode", 50.0).dump() + "\n";
  ASSERT_EQ(gzwrite(gz, line.data(), (unsigned)line.size()), (int)line.size());
  gzclose(gz);
  EXPECT_TRUE(memra::is_receipt_file("old.jsonl.gz"));
  EXPECT_FALSE(memra::is_receipt_file("trace.json.gz"));
  auto rep = memra::sweep_receipts(dir.string(), {});
  EXPECT_EQ(rep.n_receipts, 2u);
  ASSERT_FALSE(rep.ok());
  EXPECT_NE(rep.failures.front().find("regression"), std::string::npos) << rep.failures.front();
  // logs/ holds timelines and run logs, not receipts: never read.
  write_lines(dir / "logs" / "trace-x.jsonl", {nlohmann::json{{"kind", "kernel"}}});
  EXPECT_EQ(memra::sweep_receipts(dir.string(), {}).n_receipts, 2u);
  std::ofstream(dir / "bad.jsonl.gz") << "not gzip at all";
  rep = memra::sweep_receipts(dir.string(), {});
  bool bad_reported = false;
  for (const auto& f : rep.failures) bad_reported |= f.find("bad.jsonl.gz") != std::string::npos;
  EXPECT_TRUE(bad_reported);
  fs::remove_all(dir);
}

TEST(Sweep, PassesWithinToleranceAndListsNewRows) {
  const auto dir = temp_dir("sweep-ok");
  write_lines(dir / "baselines" / "b.jsonl", {bench_row("tg128", "decode", 100.0)});
  write_lines(dir / "run.jsonl", {bench_row("tg128", "decode", 96.0), bench_row("pp512", "prefill", 5000)});
  const auto rep = memra::sweep_receipts(dir.string(), {});
  EXPECT_TRUE(rep.ok()) << rep.failures.front();
  EXPECT_EQ(rep.compared.size(), 1u);
  EXPECT_EQ(rep.new_rows.size(), 1u);
  fs::remove_all(dir);
}

TEST(Sweep, FailsOnDoctoredRegression) {
  const auto dir = temp_dir("sweep-regress");
  write_lines(dir / "baselines" / "b.jsonl", {bench_row("tg128", "decode", 100.0), bench_row("pp512", "prefill", 1000.0)});
  // decode -6% (tolerance 5%) fails; prefill -7% (tolerance 8%) passes.
  write_lines(dir / "run.jsonl", {bench_row("tg128", "decode", 94.0), bench_row("pp512", "prefill", 930.0)});
  const auto rep = memra::sweep_receipts(dir.string(), {});
  ASSERT_EQ(rep.failures.size(), 1u);
  EXPECT_NE(rep.failures[0].find("tg128"), std::string::npos) << rep.failures[0];
  fs::remove_all(dir);
}

TEST(Sweep, FailsOnGateFlipAndOnBrokenReceipt) {
  const auto dir = temp_dir("sweep-gate");
  auto gate = [](bool pass) {
    auto r = make_receipt("kernel-check");
    r.results()["gates"] = nlohmann::json::array({{{"name", "matvec/q4_0"}, {"pass", pass}}});
    return r.json();
  };
  write_lines(dir / "baselines" / "b.jsonl", {gate(true)});
  write_lines(dir / "run.jsonl", {gate(false)});
  auto rep = memra::sweep_receipts(dir.string(), {});
  ASSERT_EQ(rep.failures.size(), 1u);
  EXPECT_NE(rep.failures[0].find("pass -> fail"), std::string::npos);
  write_lines(dir / "run.jsonl", {gate(true)});
  EXPECT_TRUE(memra::sweep_receipts(dir.string(), {}).ok());
  std::ofstream(dir / "junk.jsonl") << "{\"schema\": 1}\n";
  rep = memra::sweep_receipts(dir.string(), {});
  EXPECT_FALSE(rep.ok());
  fs::remove_all(dir);
}

TEST(Sweep, GroupKeyIgnoresOutputPathsAndLogging) {
  auto a = make_receipt("pp-bench").json();
  auto b = a;
  b["config"]["receipt"]["path"] = "elsewhere.jsonl";
  b["config"]["logging"]["level"] = "debug";
  EXPECT_EQ(memra::sweep_group_key(a), memra::sweep_group_key(b));
  b["config"]["kv"]["type_k"] = "f16";
  EXPECT_NE(memra::sweep_group_key(a), memra::sweep_group_key(b));
}
