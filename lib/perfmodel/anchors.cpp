#include "perfmodel/anchors.h"

#include <cstdlib>
#include <vector>

#include "core/error.h"

namespace memra::perf {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "| a | b |" -> {"a", "b"}
std::vector<std::string_view> cells(std::string_view line) {
  std::vector<std::string_view> out;
  line = trim(line);
  if (line.empty() || line.front() != '|') return out;
  line.remove_prefix(1);
  while (!line.empty()) {
    const size_t bar = line.find('|');
    if (bar == std::string_view::npos) break;
    out.push_back(trim(line.substr(0, bar)));
    line.remove_prefix(bar + 1);
  }
  return out;
}

}  // namespace

std::optional<double> KernelAnchorTable::find(std::string_view type, int n) const {
  const auto it = us.find({std::string(type), n});
  if (it == us.end()) return std::nullopt;
  return it->second;
}

std::optional<KernelAnchorTable> parse_kernel_anchor_table(std::string_view md, std::string_view title_prefix) {
  size_t pos = 0;
  bool found = false;
  KernelAnchorTable t;
  std::vector<std::string> header;
  while (pos < md.size()) {
    size_t end = md.find('\n', pos);
    if (end == std::string_view::npos) end = md.size();
    const std::string_view line = trim(md.substr(pos, end - pos));
    pos = end + 1;
    if (!found) {
      if (line.substr(0, 4) == "### " && trim(line.substr(4)).substr(0, title_prefix.size()) == title_prefix) {
        found = true;
        t.title = std::string(trim(line.substr(4)));
      }
      continue;
    }
    if (line.substr(0, 1) == "#") break;  // the next section
    const auto c = cells(line);
    if (c.empty()) {
      if (!header.empty() && !t.us.empty()) break;  // the end of the table
      continue;
    }
    if (header.empty()) {
      MEMRA_CHECK(c.size() >= 2 && c[0] == "n", "anchor table '{}': expected a header '| n | <type> | ...', got '{}'",
                  t.title, line);
      for (size_t i = 1; i < c.size(); ++i) header.emplace_back(c[i]);
      continue;
    }
    if (c[0].find_first_not_of("-: ") == std::string_view::npos) continue;  // the |---| rule
    const std::string n_text(c[0]);
    char* n_end = nullptr;
    const long n = std::strtol(n_text.c_str(), &n_end, 10);
    MEMRA_CHECK(n_end && *n_end == '\0' && n > 0, "anchor table '{}': row '{}' does not start with a batch size",
                t.title, line);
    MEMRA_CHECK(c.size() == header.size() + 1, "anchor table '{}': row n = {} has {} cells, the header {}", t.title, n,
                c.size() - 1, header.size());
    for (size_t i = 1; i < c.size(); ++i) {
      const std::string cell(c[i]);
      char* e = nullptr;
      const double us = std::strtod(cell.c_str(), &e);
      MEMRA_CHECK(e != cell.c_str() && std::string_view(e).substr(0, 3) == " us" && us > 0,
                  "anchor table '{}': cell n = {}, {} is '{}', not '<us> us ...'", t.title, n, header[i - 1], cell);
      t.us[{header[i - 1], (int)n}] = us;
    }
  }
  if (!found) return std::nullopt;
  MEMRA_CHECK(!t.us.empty(), "anchor table '{}': no rows", t.title);
  return t;
}

}  // namespace memra::perf
