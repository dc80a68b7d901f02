// main of test_backend_cuda_gpu: GoogleTest flags plus `--shared DIR`, the fixtures directory
// (a copy of ../shared with at least models/ and models/synth/). The carried build on the H200
// has no ../shared, so the runner copies the files it needs and passes their directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "backend_cuda/gpu_util.h"

namespace memra::gputest {
namespace {
std::string g_shared;
}
const std::string& shared_dir() { return g_shared; }
}  // namespace memra::gputest

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--shared" && i + 1 < argc) dir = argv[++i];
    else if (a.rfind("--shared=", 0) == 0) dir = a.substr(9);
  }
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
