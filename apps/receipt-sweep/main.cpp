// receipt-sweep: validate every committed receipt and compare benchmark rows and gate verdicts
// with receipts/baselines/. CI runs it; exit 1 on an invalid receipt or a regression.
#include <cstdio>

#include "common/app.h"
#include "receipt/sweep.h"

int main(int argc, char** argv) {
  std::string root = "receipts";
  bool verbose = false;
  memra::app::Spec spec;
  spec.tool = "receipt-sweep";
  spec.description = "memra receipt-sweep: validate receipts and fail on regressions against receipts/baselines";
  spec.add_options = [&](CLI::App& cli) {
    cli.add_option("root", root, "receipts folder (default: receipts)");
    cli.add_flag("-v,--verbose", verbose, "list every comparison");
  };
  spec.run = [&](memra::app::Context& ctx) -> int {
    memra::SweepOptions opt{ctx.cfg.sweep.decode_tolerance, ctx.cfg.sweep.prefill_tolerance};
    const auto rep = memra::sweep_receipts(root, opt);
    for (const auto& s : rep.failures) std::printf("FAIL %s\n", s.c_str());
    for (const auto& s : rep.new_rows) std::printf("new  %s\n", s.c_str());
    if (verbose)
      for (const auto& s : rep.compared) std::printf("ok   %s\n", s.c_str());
    std::printf("receipt-sweep: %zu files, %zu receipts, %zu rows, %zu gates, %zu compared, %zu new, %zu failures\n",
                rep.n_files, rep.n_receipts, rep.n_rows, rep.n_gates, rep.compared.size(), rep.new_rows.size(), rep.failures.size());
    auto& r = ctx.receipt.results();
    r["failures"] = rep.failures;
    r["n_receipts"] = rep.n_receipts;
    r["n_new"] = rep.new_rows.size();
    return rep.ok() ? 0 : 1;
  };
  return memra::app::main(argc, argv, spec);
}
