#pragma once
// Stop conditions: end-of-generation token ids and stop strings matched on detokenized text.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memra {

struct StopCriteria {
  std::vector<int32_t> eog_ids;           // e.g. EOS, EOT, <|im_end|>
  std::vector<std::string> stop_strings;  // empty strings are ignored

  bool is_eog(int32_t token) const;
  // Position in `text` where the earliest stop string starts, or nullopt. Pass the detokenized
  // tail that could hold a stop string (at least max_stop_len() - 1 bytes before the newest text).
  std::optional<size_t> find_stop(std::string_view text) const;
  // Bytes at the end of `text` that are a proper prefix of some stop string: a streaming printer
  // holds these back until the next token decides whether a stop string is being formed.
  size_t holdback(std::string_view text) const;
  size_t max_stop_len() const;
};

}  // namespace memra
