#include "sample/stop.h"

#include <algorithm>

namespace memra {

bool StopCriteria::is_eog(int32_t token) const {
  return std::find(eog_ids.begin(), eog_ids.end(), token) != eog_ids.end();
}

std::optional<size_t> StopCriteria::find_stop(std::string_view text) const {
  std::optional<size_t> best;
  for (const auto& s : stop_strings) {
    if (s.empty()) continue;
    const size_t pos = text.find(s);
    if (pos != std::string_view::npos && (!best || pos < *best)) best = pos;
  }
  return best;
}

size_t StopCriteria::holdback(std::string_view text) const {
  size_t best = 0;
  for (const auto& s : stop_strings) {
    // Longest proper prefix of s that is a suffix of text.
    const size_t max_len = std::min(s.size() - (s.empty() ? 0 : 1), text.size());
    for (size_t len = max_len; len > best; --len) {
      if (text.substr(text.size() - len) == std::string_view(s).substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

size_t StopCriteria::max_stop_len() const {
  size_t m = 0;
  for (const auto& s : stop_strings) m = std::max(m, s.size());
  return m;
}

}  // namespace memra
