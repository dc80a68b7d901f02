#pragma once
// The receipt sweep CI runs: every receipt under receipts/ must validate; benchmark rows are grouped
// and the newest of each group compared with receipts/baselines/ (updating a baseline is an
// explicit commit); gate verdicts are followed by name. Fails on a median throughput drop beyond the
// configured tolerance, or on a gate whose newest verdict is a failure where a baseline or an
// earlier receipt passed it; rows without a baseline and gates never passed are reported as "new".
//
// Row groups: a row measured at the defaults of the build that ran it (no --config, no --arm but
// the no-op arm-base.toml, not pp-bench's A/A copy, a clean tree) belongs to the series of that
// tool, model, GPU and row (plus any non-harness --set KEY=VALUE): the defaults move from commit to
// commit and the series follows them, which is what a regression check must compare. Any other row
// (an arm, a --config base) is grouped with the rows of exactly its configuration.
//
// Conventions for receipts that take part (documented in receipts/README.md):
//   benchmark row: metrics.row (string, e.g. "tg128@d0"), metrics.kind ("decode"|"prefill"),
//                  metrics.tok_s_median (number)
//   gates:         results.gates = [{name: string, pass: bool, ...}]
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace memra {

struct SweepOptions {
  double decode_tolerance = 0.05;
  double prefill_tolerance = 0.08;
};

struct SweepReport {
  size_t n_files = 0, n_receipts = 0, n_rows = 0, n_gates = 0;
  std::vector<std::string> failures;  // each makes the sweep fail
  std::vector<std::string> new_rows;  // no baseline yet
  std::vector<std::string> compared;  // row/gate comparisons that passed
  bool ok() const { return failures.empty(); }
};

// Group key of a receipt: tool | model identity | config hash without output paths and logging |
// GPU name. Exposed for tests.
std::string sweep_group_key(const nlohmann::json& receipt);
// Series key of a row measured at its build's defaults (see above): tool | model identity |
// "defaults" [+ the sorted non-harness --set KEY=VALUE] | GPU name; empty for any other receipt
// (also a --trace run: the profiler's timeline costs time). curated: a baseline receipt, keyed
// whatever produced it (an arm that became the default, say): copying it into baselines/ says it
// stands for the defaults from then on; a current row counts against it only if measured after it.
std::string sweep_series_key(const nlohmann::json& receipt, bool curated = false);
// Gate key prefix: tool | GPU name (a gate is followed by name across configurations).
std::string sweep_gate_key(const nlohmann::json& receipt);

// Sweep a receipts folder (recursively, *.jsonl; files under <root>/baselines are the baselines).
// The files the sweep reads: *.jsonl and gzip-compressed *.jsonl.gz (older receipts are stored
// compressed to keep the working tree small), outside folders named logs (run logs, timelines).
bool is_receipt_file(const std::string& name);
SweepReport sweep_receipts(const std::string& root, const SweepOptions& opt);

}  // namespace memra
