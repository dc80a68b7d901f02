#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <zlib.h>

#include "config/config.h"
#include "core/sha256.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
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

// The card's peak bandwidth from its memory clock and bus width (two transfers per clock): an H100
// SXM's reported 2619 MHz x 5120 bits is its 3.35 TB/s datasheet figure; unknown clocks give 0, and
// the receipt's gpu section carries the three numbers.
TEST(Receipt, GpuPeakBandwidthFromClockAndBusWidth) {
  memra::GpuInfo g;
  g.name = "test card";
  EXPECT_EQ(g.peak_bandwidth_bytes_per_s(), 0.0);
  g.memory_clock_khz = 2619000;
  g.bus_width_bits = 5120;
  EXPECT_DOUBLE_EQ(g.peak_bandwidth_bytes_per_s(), 2.0 * 2.619e9 * 640.0);
  EXPECT_NEAR(g.peak_bandwidth_bytes_per_s(), 3.35e12, 0.01e12);
  auto r = make_receipt("unit");
  r.set_gpu(g);
  EXPECT_EQ(r.json()["gpu"]["memory_clock_khz"], 2619000);
  EXPECT_EQ(r.json()["gpu"]["bus_width_bits"], 5120);
  EXPECT_DOUBLE_EQ(r.json()["gpu"]["peak_bandwidth_bytes_per_s"].get<double>(), g.peak_bandwidth_bytes_per_s());
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

namespace {
// A pp-bench row measured at its build's defaults at time ts, with kernels.<key> = v in its
// resolved config (the defaults move from commit to commit).
nlohmann::json default_row(const std::string& ts, double tok_s, int v) {
  auto j = bench_row("tg128@d0", "decode", tok_s);
  j["timestamp"] = ts;
  j["config"]["kernels"]["some_key"] = v;
  j["git"]["dirty"] = false;  // the test binary's own tree may be dirty
  return j;
}
}  // namespace

// The defaults' series: a row measured at a later build's defaults (another config hash) is
// compared with the baseline all the same, and a drop beyond the tolerance fails; arms, pp-bench's
// A/A copy, dirty trees, --config bases and --trace runs are not the defaults and do not count.
TEST(Sweep, DefaultsSeriesFollowsConfigChanges) {
  const auto dir = temp_dir("sweep-series");
  write_lines(dir / "baselines" / "b.jsonl", {default_row("2026-12-01T00:00:00.000Z", 100.0, 1)});
  write_lines(dir / "run.jsonl", {default_row("2026-12-02T00:00:00.000Z", 97.0, 2)});
  auto rep = memra::sweep_receipts(dir.string(), {});
  EXPECT_TRUE(rep.ok());
  ASSERT_EQ(rep.compared.size(), 1u);
  EXPECT_NE(rep.compared[0].find("defaults"), std::string::npos) << rep.compared[0];
  // the newest row counts: a later one at -6% fails
  write_lines(dir / "run2.jsonl", {default_row("2026-12-03T00:00:00.000Z", 94.0, 3)});
  rep = memra::sweep_receipts(dir.string(), {});
  ASSERT_EQ(rep.failures.size(), 1u);
  EXPECT_NE(rep.failures[0].find("regression"), std::string::npos) << rep.failures[0];
  // a later row that is not the defaults does not replace it in the series
  auto later = [&](auto&& edit) {
    auto j = default_row("2026-12-04T00:00:00.000Z", 100.0, 4);
    edit(j);
    return j;
  };
  const std::vector<nlohmann::json> not_defaults = {
      later([](auto& j) { j["results"]["arm"] = "configs/arm-other.toml"; }),
      later([](auto& j) { j["results"]["aa_copy"] = true; }),
      later([](auto& j) { j["git"]["dirty"] = true; }),
      later([](auto& j) { j["argv"].push_back("--config"); j["argv"].push_back("x.toml"); }),
      later([](auto& j) { j["argv"].push_back("--trace"); j["argv"].push_back("t.jsonl"); })};
  for (const auto& j : not_defaults) {
    write_lines(dir / "run3.jsonl", {j});
    EXPECT_EQ(memra::sweep_receipts(dir.string(), {}).failures.size(), 1u) << j.dump();
  }
  // the no-op arm is the defaults: it replaces the -6% row
  write_lines(dir / "run3.jsonl", {later([](auto& j) { j["results"]["arm"] = "configs/arm-base.toml"; })});
  EXPECT_TRUE(memra::sweep_receipts(dir.string(), {}).ok());
  fs::remove_all(dir);
}

TEST(Sweep, SeriesKeySplitsOnNonHarnessSets) {
  auto a = default_row("2026-12-01T00:00:00.000Z", 1, 1);
  auto b = a;
  b["argv"].push_back("--set");
  b["argv"].push_back("receipt.hash_model=false");
  b["argv"].push_back("--set=bench.aa_copy=true");
  EXPECT_EQ(memra::sweep_series_key(a), memra::sweep_series_key(b));
  b["argv"].push_back("--set");
  b["argv"].push_back("kv.type_k=f16");
  EXPECT_NE(memra::sweep_series_key(a), memra::sweep_series_key(b));
  EXPECT_NE(memra::sweep_series_key(b).find("kv.type_k=f16"), std::string::npos);
  b["results"]["arm"] = "configs/arm-x.toml";
  EXPECT_EQ(memra::sweep_series_key(b), "");
  EXPECT_NE(memra::sweep_series_key(b, true), "");  // a curated baseline is keyed whatever produced it
}

// A baseline copied from an arm that became the default counts for the series; rows measured
// before it (at the older defaults) are not compared with it.
TEST(Sweep, CuratedBaselineAndOlderRows) {
  const auto dir = temp_dir("sweep-curated");
  auto arm = default_row("2026-12-02T00:00:00.000Z", 110.0, 2);
  arm["results"]["arm"] = "configs/arm-new-default.toml";
  write_lines(dir / "baselines" / "b.jsonl", {arm});
  write_lines(dir / "run.jsonl", {default_row("2026-12-01T00:00:00.000Z", 100.0, 1)});
  auto rep = memra::sweep_receipts(dir.string(), {});
  EXPECT_TRUE(rep.ok());
  EXPECT_TRUE(rep.compared.empty());
  ASSERT_EQ(rep.new_rows.size(), 1u);
  EXPECT_NE(rep.new_rows[0].find("not measured since"), std::string::npos) << rep.new_rows[0];
  write_lines(dir / "run2.jsonl", {default_row("2026-12-03T00:00:00.000Z", 100.0, 2)});  // -9%
  rep = memra::sweep_receipts(dir.string(), {});
  ASSERT_EQ(rep.failures.size(), 1u);
  fs::remove_all(dir);
}

// Gates are followed by name across configurations, without a baseline too: the newest verdict
// failing where an earlier receipt passed fails the sweep; a gate that never passed is listed.
TEST(Sweep, GateHistoryAcrossConfigs) {
  const auto dir = temp_dir("sweep-gate-history");
  auto gate = [](const std::string& ts, const std::string& name, bool pass, int v) {
    auto r = make_receipt("kernel-check");
    r.results()["gates"] = nlohmann::json::array({{{"name", name}, {"pass", pass}}});
    auto j = r.json();
    j["timestamp"] = ts;
    j["config"]["kernels"]["some_key"] = v;
    return j;
  };
  write_lines(dir / "a.jsonl", {gate("2026-12-01T00:00:00.000Z", "attn/x", true, 1),
                                gate("2026-12-01T00:00:00.000Z", "attn/new", false, 1)});
  auto rep = memra::sweep_receipts(dir.string(), {});
  EXPECT_TRUE(rep.ok());
  ASSERT_EQ(rep.new_rows.size(), 1u);
  EXPECT_NE(rep.new_rows[0].find("never passed"), std::string::npos) << rep.new_rows[0];
  write_lines(dir / "b.jsonl", {gate("2026-12-02T00:00:00.000Z", "attn/x", false, 2)});
  rep = memra::sweep_receipts(dir.string(), {});
  ASSERT_EQ(rep.failures.size(), 1u);
  EXPECT_NE(rep.failures[0].find("attn/x"), std::string::npos) << rep.failures[0];
  write_lines(dir / "c.jsonl", {gate("2026-12-03T00:00:00.000Z", "attn/x", true, 3)});
  EXPECT_TRUE(memra::sweep_receipts(dir.string(), {}).ok());
  fs::remove_all(dir);
}

// set_model_hash_later: the sha256 read in the background arrives in the written receipt (the
// file's digest), and a file that can no longer be read leaves an empty hash and the reason, not
// a lost receipt.
TEST(Receipt, ModelHashInTheBackground) {
  const fs::path dir = temp_dir("hash");
  const fs::path model = dir / "m.gguf";
  {
    memra::gguf::Writer w(model.string(), {{"general.architecture", memra::gguf::Value::str("llama")}},
                          {{"t", {64}, memra::QType::F32}});
    std::vector<float> x(64, 0.5f);
    w.write_tensor_data(x.data(), x.size() * sizeof(float));
    w.finish();
  }
  const auto f = memra::gguf::File::open(model.string());
  auto r = make_receipt("run-gen");
  r.set_model_hash_later(f);
  ASSERT_TRUE(r.append_to((dir / "r.jsonl").string()));
  auto rep = memra::read_receipt_file((dir / "r.jsonl").string());
  ASSERT_EQ(rep.receipts.size(), 1u);
  EXPECT_EQ(rep.receipts[0]["model"]["sha256"], memra::sha256_file_hex(model.string()));

  auto r2 = make_receipt("run-gen");
  fs::remove(model);  // (the mapping stays; the path is gone)
  r2.set_model_hash_later(f);
  ASSERT_TRUE(r2.append_to((dir / "r2.jsonl").string()));
  rep = memra::read_receipt_file((dir / "r2.jsonl").string());
  ASSERT_EQ(rep.receipts.size(), 1u);
  EXPECT_EQ(rep.receipts[0]["model"]["sha256"], "");
  EXPECT_NE(rep.receipts[0]["model"]["sha256_error"].get<std::string>().find("cannot open"), std::string::npos);
  fs::remove_all(dir);
}
