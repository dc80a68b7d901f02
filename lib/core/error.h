#pragma once
// Errors: library code throws memra::Error; only an app's main() catches it, writes the receipt
// with status "error" and exits non-zero. The library never terminates the process itself.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace memra {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
[[noreturn]] void throw_error(const char* file, int line, const std::string& msg);
}  // namespace detail

}  // namespace memra

// MEMRA_FAIL("fmt {}", args...): throw memra::Error("<msg> (file:line)").
#define MEMRA_FAIL(...) ::memra::detail::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
// MEMRA_CHECK(cond, "fmt {}", args...): throw when cond is false; the message names the condition.
#define MEMRA_CHECK(cond, ...)                                                                 \
  do {                                                                                         \
    if (!(cond)) [[unlikely]]                                                                  \
      ::memra::detail::throw_error(__FILE__, __LINE__,                                         \
                                   ::fmt::format(__VA_ARGS__) + " [check failed: " #cond "]"); \
  } while (0)
