#include "receipt/receipt.h"

#include <zlib.h>

#include <optional>
#include <sstream>

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "core/build_info.h"
#include "core/error.h"
#include "core/log.h"
#include "core/sha256.h"
#include "gguf/gguf.h"

namespace memra {

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, (int)ms);
}

std::string new_run_id() {
  std::random_device rd;
  const uint64_t r = ((uint64_t)rd() << 32) ^ rd();
  std::string ts = utc_timestamp();
  std::string compact;
  for (char c : ts)
    if (std::isdigit((unsigned char)c)) compact += c;
  return fmt::format("{}-{:08x}", compact.substr(0, 14), (uint32_t)r);
}

Receipt::Receipt(std::string tool, std::vector<std::string> argv) : run_id_(new_run_id()) {
  const auto& b = build_info();
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  j_ = {
      {"schema", kReceiptSchema},
      {"tool", tool},
      {"run_id", run_id_},
      {"timestamp", utc_timestamp()},
      {"git", {{"commit", b.git_commit}, {"dirty", b.git_dirty}}},
      {"build", {{"type", b.build_type}, {"cuda_arch", b.cuda_arch}}},
      {"host", {{"name", host}, {"n_cpus", std::thread::hardware_concurrency()}}},
      {"gpu", nullptr},
      {"model", nullptr},
      {"config", nlohmann::json::object()},
      {"config_hash", ""},
      {"argv", argv},
      {"metrics", nlohmann::json::object()},
      {"results", nlohmann::json::object()},
      {"status", "ok"},
      {"error", ""},
  };
}

void Receipt::set_run_id(const std::string& id) {
  run_id_ = id;
  j_["run_id"] = id;
}

void Receipt::set_config(const Config& c) {
  // The resolved config as a JSON object {section: {key: value}}, parsed back from its TOML form
  // so the receipt shows exactly what --print-config shows.
  nlohmann::json cfg = nlohmann::json::object();
  std::string section;
  const std::string text = to_toml(c);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    if (line.front() == '[') {
      section = line.substr(1, line.size() - 2);
      cfg[section] = nlohmann::json::object();
      continue;
    }
    const auto eq = line.find(" = ");
    const std::string key = line.substr(0, eq);
    std::string val = line.substr(eq + 3);
    nlohmann::json v = nlohmann::json::parse(val, nullptr, false);
    if (v.is_discarded()) v = val;  // TOML-only syntax: keep the literal
    cfg[section][key] = v;
  }
  j_["config"] = cfg;
  j_["config_hash"] = config_hash(c);
}

void Receipt::set_model_hash_later(const gguf::File& f) {
  set_model(f, false);
  model_hash_ = std::async(std::launch::async, [path = f.path()] { return sha256_file_hex(path); }).share();
}

void Receipt::wait_model_hash() {
  if (!model_hash_.valid()) return;
  try {
    j_["model"]["sha256"] = model_hash_.get();
  } catch (const std::exception& e) {  // the run goes on; its receipt says why the hash is missing
    j_["model"]["sha256"] = "";
    j_["model"]["sha256_error"] = e.what();
  }
  model_hash_ = {};
}

void Receipt::set_model(const gguf::File& f, bool hash_file) {
  j_["model"] = {
      {"path", f.path()},
      {"bytes", f.file_size()},
      {"tensor_bytes", f.tensor_bytes()},
      {"architecture", f.find_string("general.architecture").value_or("")},
      {"name", f.find_string("general.name").value_or("")},
      {"tensor_types", f.type_histogram()},
      {"sha256", hash_file ? sha256_file_hex(f.path()) : std::string()},
  };
}

void Receipt::set_gpu(const GpuInfo& g) {
  j_["gpu"] = {{"name", g.name},
               {"driver", g.driver},
               {"sm_count", g.sm_count},
               {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
               {"memory_bytes", g.memory_bytes},
               {"memory_clock_khz", g.memory_clock_khz},
               {"bus_width_bits", g.bus_width_bits},
               {"peak_bandwidth_bytes_per_s", g.peak_bandwidth_bytes_per_s()}};
}

void Receipt::set_status(const std::string& status, const std::string& error) {
  j_["status"] = status;
  j_["error"] = error;
}

bool Receipt::append_to(const std::string& path) {
  wait_model_hash();
  try {
    const std::filesystem::path p(path);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
    std::ofstream out(path, std::ios::app);
    if (!out) {
      spdlog::error("cannot open receipt file '{}'", path);
      return false;
    }
    out << j_.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    out.flush();
    if (!out) {
      spdlog::error("write error on receipt file '{}'", path);
      return false;
    }
    return true;
  } catch (const std::exception& e) {
    spdlog::error("cannot write receipt '{}': {}", path, e.what());
    return false;
  }
}

std::vector<std::string> validate_receipt(const nlohmann::json& j) {
  std::vector<std::string> p;
  if (!j.is_object()) return {"receipt is not a JSON object"};
  auto need = [&](const char* key, auto pred, const char* what) {
    if (!j.contains(key)) {
      p.push_back(fmt::format("missing field '{}'", key));
    } else if (!pred(j[key])) {
      p.push_back(fmt::format("field '{}' must be {}", key, what));
    }
  };
  auto is_str = [](const nlohmann::json& v) { return v.is_string(); };
  auto is_obj = [](const nlohmann::json& v) { return v.is_object(); };
  auto obj_or_null = [](const nlohmann::json& v) { return v.is_object() || v.is_null(); };
  need("schema", is_str, "a string");
  if (j.contains("schema") && j["schema"].is_string() && j["schema"] != kReceiptSchema)
    p.push_back(fmt::format("unknown schema '{}' (expected {})", j["schema"].get<std::string>(), kReceiptSchema));
  need("tool", is_str, "a string");
  need("run_id", is_str, "a string");
  need("timestamp", is_str, "a string");
  need("git", [](const nlohmann::json& v) { return v.is_object() && v.contains("commit") && v["commit"].is_string() && v.contains("dirty") && v["dirty"].is_boolean(); }, "{commit: string, dirty: bool}");
  need("build", [](const nlohmann::json& v) { return v.is_object() && v.contains("type") && v.contains("cuda_arch"); }, "{type, cuda_arch}");
  need("host", is_obj, "an object");
  need("gpu", [](const nlohmann::json& v) { return v.is_null() || (v.is_object() && v.contains("name") && v.contains("driver") && v.contains("sm_count")); }, "null or {name, driver, sm_count}");
  need("model", [](const nlohmann::json& v) { return v.is_null() || (v.is_object() && v.contains("path") && v.contains("sha256") && v.contains("architecture") && v.contains("tensor_types") && v.contains("bytes")); }, "null or {path, sha256, architecture, tensor_types, bytes}");
  need("config", is_obj, "an object");
  need("config_hash", is_str, "a string");
  need("argv", [](const nlohmann::json& v) { return v.is_array(); }, "an array");
  need("metrics", is_obj, "an object");
  need("results", obj_or_null, "an object");
  need("status", [](const nlohmann::json& v) { return v.is_string() && (v == "ok" || v == "error" || v == "fail"); }, "one of ok, error, fail");
  need("error", is_str, "a string");
  if (j.contains("status") && j["status"] == "error" && j.contains("error") && j["error"].is_string() && j["error"].get<std::string>().empty())
    p.push_back("status is 'error' but 'error' text is empty");
  if (j.contains("timestamp") && j["timestamp"].is_string()) {
    const std::string ts = j["timestamp"];
    if (ts.size() < 20 || ts.back() != 'Z' || ts[4] != '-' || ts[10] != 'T') p.push_back(fmt::format("timestamp '{}' is not UTC ISO-8601", ts));
  }
  return p;
}

namespace {

// The whole file, gunzipped when the name ends in ".gz"; nullopt when it cannot be read.
std::optional<std::string> read_text(const std::string& path) {
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    gzFile gz = gzopen(path.c_str(), "rb");
    if (!gz) return std::nullopt;
    std::string text;
    char buf[1 << 16];
    int n;
    while ((n = gzread(gz, buf, sizeof buf)) > 0) text.append(buf, (size_t)n);
    const bool ok = n == 0;
    gzclose(gz);
    if (!ok) return std::nullopt;
    return text;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

ReceiptFileReport read_receipt_file(const std::string& path) {
  ReceiptFileReport r;
  const auto text = read_text(path);
  if (!text) {
    r.problems.push_back(fmt::format("{}: cannot open or decompress", path));
    return r;
  }
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    ++r.n_lines;
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      r.problems.push_back(fmt::format("{}:{}: empty line", path, r.n_lines));
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      r.problems.push_back(fmt::format("{}:{}: not valid JSON", path, r.n_lines));
      continue;
    }
    auto probs = validate_receipt(j);
    if (probs.empty()) {
      ++r.n_valid;
      r.receipts.push_back(std::move(j));
    }
    for (const auto& s : probs) r.problems.push_back(fmt::format("{}:{}: {}", path, r.n_lines, s));
  }
  if (r.n_lines == 0) r.problems.push_back(fmt::format("{}: no receipts in file", path));
  return r;
}

}  // namespace memra
