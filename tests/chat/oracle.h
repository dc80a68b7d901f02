#pragma once
// Runs tests/chat/jinja_oracle.py (Python Jinja2, configured like transformers) on a template and
// context, so the C++ renderer can be compared with the reference implementation.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace memra::chat::testing {

struct OracleResult {
  enum class Status { Ok, TemplateError, Unavailable } status = Status::Unavailable;
  std::string text;  // rendered text, or the error / why unavailable
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline OracleResult run_oracle(const std::string& tmpl, const nlohmann::ordered_json& context, std::int64_t now_unix) {
  OracleResult r;
  const std::string python = "/usr/bin/python3";
  const std::string script = std::string(MEMRA_SOURCE_DIR) + "/tests/chat/jinja_oracle.py";
  if (access(python.c_str(), X_OK) != 0) {
    r.text = python + " is absent";
    return r;
  }
  char dir_tmpl[] = "/tmp/memra_chat_oracle_XXXXXX";
  const char* dir = mkdtemp(dir_tmpl);
  if (!dir) {
    r.text = "mkdtemp failed";
    return r;
  }
  const std::filesystem::path d(dir);
  nlohmann::ordered_json req;
  req["template"] = tmpl;
  req["context"] = context;
  req["now_unix"] = now_unix;
  {
    std::ofstream f(d / "req.json", std::ios::binary);
    f << req.dump();
  }
  const std::string cmd = python + " " + script + " < " + (d / "req.json").string() + " > " + (d / "out.txt").string() +
                          " 2> " + (d / "err.txt").string();
  const int rc = std::system(cmd.c_str());
  const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  const std::string out = read_file(d / "out.txt"), err = read_file(d / "err.txt");
  std::filesystem::remove_all(d);
  if (code == 0) {
    r.status = OracleResult::Status::Ok;
    r.text = out;
  } else if (code == 3) {
    r.status = OracleResult::Status::TemplateError;
    r.text = err;
  } else {
    r.text = code == 2 ? "python3-jinja2 is not installed (jinja2 not importable)" : "oracle failed: " + err;
  }
  return r;
}

// Renders many small templates in one Python process. Returns false (with `why`) when the oracle
// is unavailable; otherwise fills `out` with one OracleResult per case (Ok or TemplateError).
inline bool run_oracle_batch(const std::vector<std::pair<std::string, nlohmann::ordered_json>>& cases,
                             std::int64_t now_unix, std::vector<OracleResult>& out, std::string& why,
                             bool optimized = true) {
  nlohmann::ordered_json batch = nlohmann::ordered_json::array();
  for (const auto& [t, ctx] : cases) batch.push_back({{"template", t}, {"context", ctx}});
  const std::string python = "/usr/bin/python3";
  const std::string script = std::string(MEMRA_SOURCE_DIR) + "/tests/chat/jinja_oracle.py";
  if (access(python.c_str(), X_OK) != 0) {
    why = python + " is absent";
    return false;
  }
  char dir_tmpl[] = "/tmp/memra_chat_oracle_XXXXXX";
  const char* dir = mkdtemp(dir_tmpl);
  if (!dir) {
    why = "mkdtemp failed";
    return false;
  }
  const std::filesystem::path d(dir);
  {
    std::ofstream f(d / "req.json", std::ios::binary);
    f << nlohmann::ordered_json{{"batch", batch}, {"now_unix", now_unix}, {"optimized", optimized}}.dump();
  }
  const std::string cmd = python + " " + script + " < " + (d / "req.json").string() + " > " + (d / "out.txt").string() +
                          " 2> " + (d / "err.txt").string();
  const int rc = std::system(cmd.c_str());
  const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  const std::string text = read_file(d / "out.txt"), err = read_file(d / "err.txt");
  std::filesystem::remove_all(d);
  if (code != 0) {
    why = code == 2 ? "python3-jinja2 is not installed (jinja2 not importable)" : "oracle failed: " + err;
    return false;
  }
  for (const auto& r : nlohmann::ordered_json::parse(text)) {
    OracleResult o;
    o.status = r["ok"].get<bool>() ? OracleResult::Status::Ok : OracleResult::Status::TemplateError;
    o.text = r["text"].get<std::string>();
    out.push_back(std::move(o));
  }
  return true;
}

}  // namespace memra::chat::testing
