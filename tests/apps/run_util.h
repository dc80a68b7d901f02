#pragma once
// Runs a tool binary (run-gen, run-spec, pp-bench) in a child process (no shell: arguments pass through
// byte for byte), captures stdout/stderr and the receipts it appended, and reads ../shared
// reference files.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace memra::apptest {

namespace fs = std::filesystem;

inline std::string shared_dir() { return MEMRA_SHARED_DIR; }
inline bool have_shared() { return fs::exists(shared_dir() + "/reference/README.md"); }

#define MEMRA_APPS_REQUIRE_SHARED()                                                                \
  do {                                                                                             \
    if (!::memra::apptest::have_shared())                                                          \
      GTEST_SKIP() << "shared fixtures not found at " << ::memra::apptest::shared_dir()            \
                   << " (models and llama.cpp references live in ../shared)";                      \
  } while (0)

// One scratch folder per test process.
inline fs::path scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("memra_test_apps_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), (std::streamsize)bytes.size());
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

struct RunResult {
  int code = -1;
  std::string out, err;
  nlohmann::json receipt;  // the last receipt line written by this run (null if none)
  std::vector<nlohmann::json> receipts;  // every receipt line it wrote
  std::string describe() const { return "exit " + std::to_string(code) + "\nstderr:\n" + err; }
};

// Runs the tool binary exe with args plus --receipt <fresh file> (receipt.hash_model off unless args
// set it on: most tests do not need the sha256).
inline RunResult run_tool(const std::string& exe, std::vector<std::string> args, bool receipt = true) {
  static int counter = 0;
  const int n = ++counter;
  const fs::path out = scratch() / ("out" + std::to_string(n)), err = scratch() / ("err" + std::to_string(n)),
                 rec = scratch() / ("receipt" + std::to_string(n) + ".jsonl");
  if (receipt) {
    args.push_back("--receipt");
    args.push_back(rec.string());
    if (std::find(args.begin(), args.end(), "receipt.hash_model=true") == args.end()) {
      args.push_back("--set");
      args.push_back("receipt.hash_model=false");
    }
  }
  std::vector<std::string> full{exe};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  RunResult r;
  const int rc = posix_spawn(&pid, full[0].c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    r.err = "posix_spawn failed for " + full[0];
    return r;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  if (receipt && fs::exists(rec)) {
    r.receipts = read_jsonl(rec.string());
    if (!r.receipts.empty()) r.receipt = r.receipts.back();
  }
  fs::remove(out);
  fs::remove(err);
  fs::remove(rec);
  return r;
}

// run-gen (the binary these tests mostly drive).
inline RunResult run_gen(std::vector<std::string> args, bool receipt = true) {
  return run_tool(MEMRA_RUN_GEN, std::move(args), receipt);
}

// run-spec.
inline RunResult run_spec(std::vector<std::string> args, bool receipt = true) {
  return run_tool(MEMRA_RUN_SPEC, std::move(args), receipt);
}

inline std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s;
}

}  // namespace memra::apptest
