#include "core/error.h"

#include <cstring>

namespace memra::detail {

void throw_error(const char* file, int line, const std::string& msg) {
  const char* base = std::strrchr(file, '/');
  throw Error(fmt::format("{} ({}:{})", msg, base ? base + 1 : file, line));
}

}  // namespace memra::detail
