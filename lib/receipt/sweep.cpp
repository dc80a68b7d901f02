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

namespace {

std::string model_identity(const nlohmann::json& r) {
  if (!r.contains("model") || !r["model"].is_object()) return "none";
  const auto& m = r["model"];
  const std::string sha = m.value("sha256", "");
  return !sha.empty() ? sha.substr(0, 16) : m.value("architecture", "") + ":" + std::to_string(m.value("tensor_bytes", (uint64_t)0));
}

std::string gpu_name(const nlohmann::json& r) {
  return r.contains("gpu") && r["gpu"].is_object() ? r["gpu"].value("name", "?") : "cpu";
}

bool harness_key(const std::string& key) {
  for (const char* p : {"receipt.", "bench.", "logging."})
    if (key.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

std::string sweep_group_key(const nlohmann::json& r) {
  nlohmann::json cfg = r.value("config", nlohmann::json::object());
  cfg.erase("receipt");  // output paths
  cfg.erase("logging");
  if (cfg.contains("model")) cfg["model"].erase("path");  // where the file lies is not what it is
  return fmt::format("{}|{}|{}|{}", r.value("tool", "?"), model_identity(r), sha256_hex(cfg.dump()).substr(0, 16), gpu_name(r));
}

std::string sweep_series_key(const nlohmann::json& r, bool curated) {
  if (!curated && r.contains("git") && r["git"].is_object() && r["git"].value("dirty", false)) return "";
  if (!curated && r.contains("results") && r["results"].is_object()) {
    const auto& res = r["results"];
    if (res.contains("aa_copy") && res["aa_copy"].is_boolean() && res["aa_copy"].get<bool>()) return "";
    if (res.contains("arm") && res["arm"].is_string()) {
      const std::string arm = res["arm"].get<std::string>();
      if (!arm.empty() && !(arm.size() >= 13 && arm.compare(arm.size() - 13, 13, "arm-base.toml") == 0)) return "";
    }
  }
  std::vector<std::string> sets;
  if (r.contains("argv") && r["argv"].is_array()) {
    const auto& argv = r["argv"];
    for (size_t i = 0; i < argv.size(); ++i) {
      if (!argv[i].is_string()) continue;
      const std::string a = argv[i].get<std::string>();
      if (!curated && (a == "--config" || a.rfind("--config=", 0) == 0 || a == "--trace")) return "";
      std::string kv;
      if (a == "--set" && i + 1 < argv.size() && argv[i + 1].is_string())
        kv = argv[++i].get<std::string>();
      else if (a.rfind("--set=", 0) == 0)
        kv = a.substr(6);
      if (!kv.empty() && !harness_key(kv.substr(0, kv.find('=')))) sets.push_back(kv);
    }
  }
  std::sort(sets.begin(), sets.end());
  std::string joined;
  for (const auto& kv : sets) joined += (joined.empty() ? "" : ",") + kv;
  return fmt::format("{}|{}|defaults{}{}|{}", r.value("tool", "?"), model_identity(r), joined.empty() ? "" : "+",
                     joined, gpu_name(r));
}

std::string sweep_gate_key(const nlohmann::json& r) { return fmt::format("{}|{}", r.value("tool", "?"), gpu_name(r)); }

namespace {

struct Entry {
  std::string timestamp;
  double value = 0;  // tok/s median for rows
  bool pass = false; // for gates
  std::string kind;
  std::string where;
};

// key -> latest entry
void keep_latest(std::map<std::string, Entry>& m, const std::string& key, const Entry& e) {
  auto it = m.find(key);
  if (it == m.end() || it->second.timestamp < e.timestamp) m[key] = e;
}

struct Maps {
  std::map<std::string, Entry> rows, series, gates;
  std::map<std::string, std::string> passed;  // gate key -> a receipt file where it passed
};

// A baseline row is filed under both its exact configuration and its series (whatever produced
// it: copying it into baselines/ says it stands for the defaults); a current row under its series
// where it was measured at its build's defaults, else under its exact configuration.
void collect(const nlohmann::json& r, const std::string& where, bool is_base, Maps& out) {
  const std::string ts = r.value("timestamp", "");
  const auto& m = r["metrics"];
  if (m.is_object() && m.contains("row") && m["row"].is_string() && m.contains("tok_s_median") &&
      m["tok_s_median"].is_number()) {
    const std::string row = "|" + m["row"].get<std::string>();
    const Entry e{ts, m["tok_s_median"].get<double>(), false, m.value("kind", "decode"), where};
    const std::string series = sweep_series_key(r, is_base);
    if (is_base || series.empty()) keep_latest(out.rows, sweep_group_key(r) + row, e);
    if (!series.empty()) keep_latest(out.series, series + row, e);
  }
  if (r.contains("results") && r["results"].is_object() && r["results"].contains("gates") && r["results"]["gates"].is_array()) {
    for (const auto& gate : r["results"]["gates"]) {
      if (!gate.is_object() || !gate.contains("name") || !gate["name"].is_string() || !gate.contains("pass")) continue;
      const std::string key = sweep_gate_key(r) + "|" + gate["name"].get<std::string>();
      const bool pass = gate["pass"].is_boolean() && gate["pass"].get<bool>();
      keep_latest(out.gates, key, Entry{ts, 0, pass, "gate", where});
      if (pass && !out.passed.count(key)) out.passed[key] = where;
    }
  }
}

void compare_row(const std::string& key, const Entry& cur, const Entry& base, const SweepOptions& opt, SweepReport& rep) {
  const double tol = cur.kind == "prefill" ? opt.prefill_tolerance : opt.decode_tolerance;
  const double ratio = cur.value / base.value;
  const std::string line = fmt::format("{}: {:.2f} tok/s vs baseline {:.2f} ({:+.1f}%, tolerance -{:.0f}%)", key, cur.value,
                                       base.value, (ratio - 1) * 100, tol * 100);
  if (ratio < 1.0 - tol)
    rep.failures.push_back("regression: " + line + " [" + cur.where + "]");
  else
    rep.compared.push_back(line);
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
  Maps cur, base;
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
      collect(r, f.string(), is_base, is_base ? base : cur);
    }
  }
  rep.n_rows = cur.rows.size() + cur.series.size();
  rep.n_gates = cur.gates.size();
  for (const auto& [key, row] : cur.rows) {
    auto it = base.rows.find(key);
    if (it == base.rows.end())
      rep.new_rows.push_back(key);
    else
      compare_row(key, row, it->second, opt, rep);
  }
  // A series' newest row against its baseline, when it was measured after the baseline's (an older
  // one measured defaults the baseline has moved past).
  for (const auto& [key, row] : cur.series) {
    auto it = base.series.find(key);
    if (it == base.series.end())
      rep.new_rows.push_back(key);
    else if (row.timestamp < it->second.timestamp)
      rep.new_rows.push_back(key + " (not measured since its baseline)");
    else
      compare_row(key, row, it->second, opt, rep);
  }
  // A gate's newest verdict outside baselines/ must not be a failure where the baseline or any
  // earlier receipt (any configuration) passed it; one that has never passed is listed as new.
  for (const auto& [key, g] : cur.gates) {
    auto b = base.passed.find(key);
    auto p = cur.passed.find(key);
    const std::string* where_passed = b != base.passed.end() ? &b->second : p != cur.passed.end() ? &p->second : nullptr;
    if (!g.pass && where_passed)
      rep.failures.push_back(fmt::format("gate flipped pass -> fail: {} [{}; passed in {}]", key, g.where, *where_passed));
    else if (!where_passed)
      rep.new_rows.push_back(key + " (never passed)");
    else
      rep.compared.push_back(fmt::format("{}: pass", key));
  }
  return rep;
}

}  // namespace memra
