#pragma once
// Reading ../shared/anchors/llamacpp-h200.md's kernel tables (test-backend-ops perf of llama.cpp
// on the H200): a section "### <title>" whose markdown table has the header "| n | <type> | ..."
// and cells "<us> us · <TF/s> TF/s [· <GB/s> GB/s]". The figures are published measurements of
// another implementation, read at run time so the probes can print their ratio on the same shapes.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace memra::perf {

struct KernelAnchorTable {
  std::string title;  // the section heading after "### "
  // (type name as the header spells it, e.g. "q8_0", "q4_K"; n) -> microseconds per op
  std::map<std::pair<std::string, int>, double> us;
  std::optional<double> find(std::string_view type, int n) const;
};

// The first section of `markdown` whose heading starts with `title_prefix` (e.g. "MUL_MAT_ID").
// nullopt when there is none; a memra::Error when the section is there but its table cannot be
// read (no "| n |" header, a row whose n is not an integer, a cell with no "us" figure).
std::optional<KernelAnchorTable> parse_kernel_anchor_table(std::string_view markdown, std::string_view title_prefix);

}  // namespace memra::perf
