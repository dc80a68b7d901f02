#include "receipt/sweep.h"

#include <cstring>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/sha256.h"
#include "receipt/receipt.h"

namespace memra {
namespace fs = std::filesystem;

std::string sweep_group_key(const nlohmann::json& r) {
  nlohmann::json cfg = r.value("config", nlohmann::json::object());
  cfg.erase("receipt");  // output paths
  cfg.erase("logging");
  if (cfg.contains("model")) cfg["model"].erase("path");  // where the file lies is not what it is
  std::string model = "none";
  if (r.contains("model") && r["model"].is_object()) {
    const auto& m = r["model"];
    const std::string sha = m.value("sha256", "");
    model = !sha.empty() ? sha.substr(0, 16) : m.value("architecture", "") + ":" + std::to_string(m.value("tensor_bytes", (uint64_t)0));
  }
  std::string gpu = "cpu";
  if (r.contains("gpu") && r["gpu"].is_object()) gpu = r["gpu"].value("name", "?");
  return fmt::format("{}|{}|{}|{}", r.value("tool", "?"), model, sha256_hex(cfg.dump()).substr(0, 16), gpu);
}

namespace {

struct Entry {
  std::string timestamp;
  double value = 0;  // tok/s median for rows
  bool pass = false; // for gates
  std::string kind;
  std::string where;
};

// key -> latest entry
void collect(const nlohmann::json& r, const std::string& where, std::map<std::string, Entry>& rows,
             std::map<std::string, Entry>& gates) {
  const std::string g = sweep_group_key(r);
  const std::string ts = r.value("timestamp", "");
  const auto& m = r["metrics"];
  if (m.is_object() && m.contains("row") && m.contains("tok_s_median") && m["tok_s_median"].is_number()) {
    const std::string key = g + "|" + m["row"].get<std::string>();
    Entry e{ts, m["tok_s_median"].get<double>(), false, m.value("kind", "decode"), where};
    if (!rows.count(key) || rows[key].timestamp < ts) rows[key] = e;
  }
  if (r.contains("results") && r["results"].is_object() && r["results"].contains("gates") && r["results"]["gates"].is_array()) {
    for (const auto& gate : r["results"]["gates"]) {
      if (!gate.is_object() || !gate.contains("name") || !gate.contains("pass")) continue;
      const std::string key = g + "|" + gate["name"].get<std::string>();
      Entry e{ts, 0, gate["pass"].is_boolean() && gate["pass"].get<bool>(), "gate", where};
      if (!gates.count(key) || gates[key].timestamp < ts) gates[key] = e;
    }
  }
}

}  // namespace

bool is_receipt_file(const std::string& name) {
  const auto ends = [&](const char* suf) {
    const size_t n = std::strlen(suf);
    return name.size() > n && name.compare(name.size() - n, n, suf) == 0;
  };
  return ends(".jsonl") || ends(".jsonl.gz");
}

SweepReport sweep_receipts(const std::string& root, const SweepOptions& opt) {
  SweepReport rep;
  std::map<std::string, Entry> rows, gates, base_rows, base_gates;
  if (!fs::is_directory(root)) {
    rep.failures.push_back(fmt::format("{}: not a directory", root));
    return rep;
  }
  std::vector<fs::path> files;
  // logs/ folders hold run logs and decode timelines (trace-*.jsonl.gz), not receipts.
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && it->path().filename() == "logs") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && is_receipt_file(it->path().filename().string())) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  const fs::path base_dir = fs::path(root) / "baselines";
  for (const auto& f : files) {
    ++rep.n_files;
    auto fr = read_receipt_file(f.string());
    for (const auto& p : fr.problems) rep.failures.push_back("invalid receipt: " + p);
    const bool is_base = f.string().rfind(base_dir.string(), 0) == 0;
    for (const auto& r : fr.receipts) {
      ++rep.n_receipts;
      if (is_base)
        collect(r, f.string(), base_rows, base_gates);
      else
        collect(r, f.string(), rows, gates);
    }
  }
  rep.n_rows = rows.size();
  rep.n_gates = gates.size();
  for (const auto& [key, cur] : rows) {
    auto it = base_rows.find(key);
    if (it == base_rows.end()) {
      rep.new_rows.push_back(key);
      continue;
    }
    const double tol = cur.kind == "prefill" ? opt.prefill_tolerance : opt.decode_tolerance;
    const double ratio = cur.value / it->second.value;
    const std::string line = fmt::format("{}: {:.2f} tok/s vs baseline {:.2f} ({:+.1f}%, tolerance -{:.0f}%)", key, cur.value, it->second.value, (ratio - 1) * 100, tol * 100);
    if (ratio < 1.0 - tol)
      rep.failures.push_back("regression: " + line + " [" + cur.where + "]");
    else
      rep.compared.push_back(line);
  }
  for (const auto& [key, cur] : gates) {
    auto it = base_gates.find(key);
    if (it == base_gates.end()) {
      rep.new_rows.push_back(key);
      continue;
    }
    if (it->second.pass && !cur.pass)
      rep.failures.push_back(fmt::format("gate flipped pass -> fail: {} [{}]", key, cur.where));
    else
      rep.compared.push_back(fmt::format("{}: {}", key, cur.pass ? "pass" : "fail (as in baseline)"));
  }
  return rep;
}

}  // namespace memra
