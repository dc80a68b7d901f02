#pragma once
// The receipt sweep CI runs: every receipt under receipts/ must validate; benchmark rows and gate
// verdicts are grouped and compared with receipts/baselines/ (updating a baseline is an explicit
// commit). Fails on a gate that flipped pass -> fail or a median throughput drop beyond the
// configured tolerance; rows without a baseline are reported as "new".
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

// Sweep a receipts folder (recursively, *.jsonl; files under <root>/baselines are the baselines).
// The files the sweep reads: *.jsonl and gzip-compressed *.jsonl.gz (older receipts are stored
// compressed to keep the working tree small), outside folders named logs (run logs, timelines).
bool is_receipt_file(const std::string& name);
SweepReport sweep_receipts(const std::string& root, const SweepOptions& opt);

}  // namespace memra
