#pragma once
// Facts baked in at build time (cmake/build_info.cmake): no .git travels to the device.
#include <string>

namespace memra {

struct BuildInfo {
  const char* git_commit;  // full sha or "unknown"
  bool git_dirty;          // tracked files modified at build time
  const char* build_type;  // Release, Debug, ...
  const char* cuda_arch;   // e.g. "90a", or "none" for a CPU-only tree
};

const BuildInfo& build_info();

}  // namespace memra
