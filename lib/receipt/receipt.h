#pragma once
// Receipts: one JSON object per run (a benchmark may add one per measured row, sharing run_id),
// appended as one line to a JSON Lines file. Schema documented in receipts/README.md; version in
// the "schema" field. A run never ends without its receipt: apps/common writes it on every exit
// path, with status "error" and the message when the run failed.
#include <nlohmann/json.hpp>

#include <future>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace memra {
namespace gguf {
class File;
}

inline constexpr const char* kReceiptSchema = "memra.receipt/1";

struct GpuInfo {
  std::string name;
  std::string driver;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  uint64_t memory_bytes = 0;
  // The card's peak memory bandwidth from its memory clock and bus width (2 transfers per clock):
  // 3.35e12 on an H100 SXM, ~4.9e12 on an H200 (its datasheet says 4.8e12, the figure the issue's
  // roofline uses). 0 when the driver does not report them.
  int memory_clock_khz = 0;
  int bus_width_bits = 0;
  double peak_bandwidth_bytes_per_s() const { return 2.0 * memory_clock_khz * 1e3 * bus_width_bits / 8.0; }
};

class Receipt {
 public:
  Receipt(std::string tool, std::vector<std::string> argv);

  // Fill the standard sections.
  void set_config(const Config& c);
  void set_model(const gguf::File& f, bool hash_file);
  // set_model whose sha256 is computed in a background thread (reading the file while the caller
  // loads it), filled in by wait_model_hash() or, at the latest, when the receipt is written.
  void set_model_hash_later(const gguf::File& f);
  void wait_model_hash();
  void set_gpu(const GpuInfo& g);
  void set_run_id(const std::string& id);
  const std::string& run_id() const { return run_id_; }

  nlohmann::json& metrics() { return j_["metrics"]; }
  nlohmann::json& results() { return j_["results"]; }
  nlohmann::json& json() { return j_; }
  const nlohmann::json& json() const { return j_; }

  // status: "ok" | "error" | "fail" (a gate that ran and failed).
  void set_status(const std::string& status, const std::string& error = "");

  // Appends one line to `path` (creating parent folders). Returns false (and logs) on I/O error:
  // failing to write a receipt must not mask the run's own error.
  bool append_to(const std::string& path);

 private:
  std::string run_id_;
  nlohmann::json j_;
  std::shared_future<std::string> model_hash_;  // set_model_hash_later's pending sha256
};

// A fresh run id (time + random), shared by all rows of one benchmark run.
std::string new_run_id();
std::string utc_timestamp();

// Validation: returns the list of problems (empty = valid).
std::vector<std::string> validate_receipt(const nlohmann::json& j);
struct ReceiptFileReport {
  size_t n_lines = 0;
  size_t n_valid = 0;
  std::vector<std::string> problems;  // "file:line: problem"
  std::vector<nlohmann::json> receipts;
};
ReceiptFileReport read_receipt_file(const std::string& path);

}  // namespace memra
