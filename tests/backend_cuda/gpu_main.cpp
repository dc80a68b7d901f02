// main of test_backend_cuda_gpu: GoogleTest flags plus `--shared DIR`, the fixtures directory
// (a copy of ../shared with at least models/ and models/synth/). The carried build on the H200
// has no ../shared, so the runner copies the files it needs and passes their directory.
// `--config FILE` (repeatable) and `--set KEY=VALUE` give the configuration every gpu_config()
// starts from (load_config's rules: unknown keys are errors), so the whole suite can run at an
// arm's values before they become the defaults; each test's own settings still override it.
#include <gtest/gtest.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "backend_cuda/gpu_util.h"

namespace memra::gputest {
namespace {
std::string g_shared;
Config g_base;
}
const std::string& shared_dir() { return g_shared; }
const Config& base_config() { return g_base; }
}  // namespace memra::gputest

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string dir;
  std::vector<std::string> configs, sets;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shared" && i + 1 < argc) dir = argv[++i];
    else if (a.rfind("--shared=", 0) == 0) dir = a.substr(9);
    else if (a == "--config" && i + 1 < argc) configs.push_back(argv[++i]);
    else if (a == "--set" && i + 1 < argc) sets.push_back(argv[++i]);
    else {
      fprintf(stderr, "unknown argument %s (GoogleTest flags, --shared DIR, --config FILE, --set KEY=VALUE)\n", a.c_str());
      return 2;
    }
  }
  try {
    memra::gputest::g_base = memra::load_config(configs, sets);
  } catch (const std::exception& e) {
    fprintf(stderr, "configuration: %s\n", e.what());
    return 2;
  }
  for (const auto& c : configs) fprintf(stderr, "base configuration: %s\n", c.c_str());
  for (const auto& kv : sets) fprintf(stderr, "base configuration: --set %s\n", kv.c_str());
  namespace fs = std::filesystem;
  if (dir.empty()) {
    for (const std::string& cand : {std::string(MEMRA_SHARED_DIR), std::string(".device/shared")})
      if (fs::exists(cand + "/models")) {
        dir = cand;
        break;
      }
  } else if (!fs::exists(dir + "/models")) {
    fprintf(stderr, "--shared %s: no models/ folder there\n", dir.c_str());
    return 2;
  }
  memra::gputest::g_shared = dir;
  fprintf(stderr, "fixtures: %s\n", dir.empty() ? "(none found; fixture tests skip)" : dir.c_str());
  return RUN_ALL_TESTS();
}
