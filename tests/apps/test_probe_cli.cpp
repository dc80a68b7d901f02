// moe-devq8-check's input checks, which run before it looks for a device: a bad --types or
// --anchors is an exit 1 with the reason on stderr and in an error receipt.
#include "receipt/receipt.h"
#include "run_util.h"

namespace memra::apptest {
namespace {

#ifdef MEMRA_MOE_DEVQ8_CHECK
RunResult run_probe(std::vector<std::string> args) { return run_tool(MEMRA_MOE_DEVQ8_CHECK, std::move(args)); }

void expect_refused(const std::vector<std::string>& args, const std::string& needle) {
  const auto r = run_probe(args);
  EXPECT_EQ(r.code, 1) << r.describe();
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.describe();
  ASSERT_TRUE(r.receipt.is_object()) << "no receipt";
  EXPECT_EQ(r.receipt["status"], "error");
  EXPECT_TRUE(validate_receipt(r.receipt).empty());
  EXPECT_NE(r.receipt.value("error", "").find(needle), std::string::npos) << r.receipt.dump();
}

TEST(MoeDevq8CheckCli, BadTypesAreRefused) {
  expect_refused({"--types", "Q9_9"}, "unknown type 'Q9_9'");
  expect_refused({"--types", "F16"}, "F16 is not a weight block type");
  expect_refused({"--types", "Q8_0,Q8_1"}, "Q8_1 is not a weight block type");
}

TEST(MoeDevq8CheckCli, AnchorsWithoutTheTableAreRefused) {
  const auto f = scratch() / "anchors-without-table.md";
  write_file(f, "# anchors\n### MUL_MAT (dense)\n| n | q8_0 |\n|---|---|\n| 1 | 9 us |\n");
  expect_refused({"--anchors", f.string()}, "no '### MUL_MAT_ID' section");
  write_file(f, "### MUL_MAT_ID\n| n | q8_0 |\n|---|---|\n| 1 | quick |\n");
  expect_refused({"--anchors", f.string()}, "not '<us> us");
}

TEST(MoeDevq8CheckCli, OtherShapesAreChecked) {
  expect_refused({"--experts", "8", "--used", "9"}, "--used 9 is more than --experts 8");
  expect_refused({"--ff", "320", "--types", "Q4_K"}, "do not divide 320 columns");
  expect_refused({"--used", "16", "--tokens", "8000"}, "--tokens 8000: 128000 slots");
}

TEST(MoeDevq8CheckCli, OptionRangesAreRefused) {
  const auto r = run_probe({"--tokens", "0"});
  EXPECT_NE(r.code, 0) << r.describe();
  const auto r2 = run_probe({"--reps", "3"});
  EXPECT_NE(r2.code, 0) << r2.describe();
}
#else
TEST(MoeDevq8CheckCli, NotBuilt) { GTEST_SKIP() << "moe-devq8-check is built only in a CUDA build"; }
#endif

}  // namespace
}  // namespace memra::apptest
