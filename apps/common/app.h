#pragma once
// What every app shares: --config (repeatable), --set, --print-config, --receipt; the resolved
// Config; one receipt per run written on every exit path (status "error" with the message when
// the run throws); exit codes 0 ok, 1 run error or failed gate, 2 command-line/config error.
#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "receipt/receipt.h"

namespace memra::app {

struct Context {
  Config cfg;
  Receipt receipt;
  std::string receipt_path;  // resolved: --receipt, else receipt.path
  bool write_receipt = true;
  // An app that writes its own per-row receipts (a benchmark) sets this so the wrapper does not
  // append a final summary object on success.
  bool receipt_written = false;
  // What the config was resolved from, so a tool can resolve variants (benchmark arms).
  std::vector<std::string> config_files;
  std::vector<std::string> overrides;
  std::function<void(Config&)> apply_cli;
};

struct Spec {
  std::string tool;         // receipt "tool" field and program name
  std::string description;  // --help text
  // Register app-specific options on the CLI (after the common ones).
  std::function<void(CLI::App&)> add_options;
  // Adjust the config from app-specific CLI flags (after files and --set are applied). May throw.
  std::function<void(Config&)> apply_cli;
  // The run. Return 0 for ok, 1 for a failed gate (status "fail"). Throwing memra::Error gives
  // status "error".
  std::function<int(Context&)> run;
};

int main(int argc, char** argv, const Spec& spec);

// GPU facts for the receipt (nullopt without CUDA or without a device).
std::optional<GpuInfo> query_gpu();

// Apply the logging level of the config to spdlog (logs go to stderr).
void setup_logging(const Config& c);

}  // namespace memra::app
