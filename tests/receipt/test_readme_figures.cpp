// README's figures table (section "On the H200") against the receipts behind it: every figure of
// ours must be the median of a committed baseline receipt of that file and row (as printed, to its
// decimals), its fraction that receipt's roofline / bf16-peak fraction, and its ratio our figure
// over the anchor in the same cell. A number edited by hand, or a receipt dropped from
// receipts/baselines/, fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "receipt/receipt.h"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) out.push_back(part);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "528.2" -> {528.2, 1 decimal}
struct Num {
  double v = 0;
  int decimals = 0;
};
std::vector<Num> numbers(const std::string& s) {
  std::vector<Num> out;
  static const std::regex re(R"((\d+)(\.(\d+))?)");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[0].str()), (*it)[3].matched ? (int)(*it)[3].length() : 0});
  return out;
}

// One cell: "528.2 tok/s (255.5, 2.07x), 0.52 of roofline" or "466.1 / 407.1 (238.3 / 197.1,
// 1.96x / 2.07x), 0.48 / 0.49": ours, the anchors, the ratios, the fractions.
struct Cell {
  std::vector<Num> ours, anchors, ratios, fracs;
};
Cell parse_cell(const std::string& text) {
  Cell c;
  const auto open = text.find('('), close = text.find(')');
  if (open == std::string::npos || close == std::string::npos) return c;
  c.ours = numbers(text.substr(0, open));
  const std::string inside = text.substr(open + 1, close - open - 1);
  const auto comma = inside.find(',');
  c.anchors = numbers(inside.substr(0, comma));
  if (comma != std::string::npos) c.ratios = numbers(inside.substr(comma + 1));
  std::string tail = text.substr(close + 1);  // ", 0.52 of roofline": up to the words ("bf16")
  const auto word = tail.find_first_of("abcdefghijklmnopqrstuvwxyz");
  c.fracs = numbers(tail.substr(0, word));
  return c;
}

struct Row {
  std::string stem, row;
  double median = 0, frac = 0;
};

std::vector<Row> baseline_rows(const fs::path& dir) {
  std::vector<Row> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto fr = memra::read_receipt_file(e.path().string());
    for (const auto& r : fr.receipts) {
      const auto& m = r["metrics"];
      if (!m.is_object() || !m.contains("row") || !m.contains("tok_s_median") || !r["model"].is_object()) continue;
      Row row;
      row.stem = fs::path(r["model"].value("path", "")).stem().string();
      row.row = m["row"].get<std::string>();
      row.median = m["tok_s_median"].get<double>();
      row.frac = m.value("kind", "") == "prefill" ? m.value("bf16_peak_frac", -1.0) : m.value("roofline_frac", -1.0);
      out.push_back(row);
    }
  }
  return out;
}

}  // namespace

TEST(ReadmeFigures, EveryFigureIsABaselineReceipt) {
  std::ifstream in(fs::path(MEMRA_SOURCE_DIR) / "README.md");
  ASSERT_TRUE(in) << "README.md not found under " << MEMRA_SOURCE_DIR;
  const auto rows = baseline_rows(fs::path(MEMRA_SOURCE_DIR) / "receipts" / "baselines");
  ASSERT_FALSE(rows.empty());
  std::string line;
  bool in_table = false;
  int checked = 0;
  // columns 1..4 of the table, and the rows of each
  const std::vector<std::vector<std::string>> col_rows = {
      {"tg128@d0"}, {"pp512@d0"}, {"pp2048@d0"}, {"tg128@d4096", "tg128@d16384"}};
  while (std::getline(in, line)) {
    if (line.rfind("| file | tg128 | pp512 | pp2048 | tg128 @ 4096 / 16384 |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.rfind("| ---", 0) == 0) continue;
    if (line.rfind("| ", 0) != 0) break;
    const auto cells = split(line, '|');  // "", file, c1..c4, ""
    ASSERT_GE(cells.size(), 6u) << line;
    std::string label = trim(cells[1]);
    label = label.substr(0, label.find(" ("));
    std::string stem = label;
    for (auto& ch : stem)
      if (ch == ' ') ch = '-';
    for (size_t col = 0; col < col_rows.size(); ++col) {
      const std::string text = trim(cells[col + 2]);
      if (text.empty()) continue;
      const Cell c = parse_cell(text);
      const size_t n = col_rows[col].size();
      ASSERT_EQ(c.ours.size(), n) << label << ": '" << text << "'";
      ASSERT_EQ(c.anchors.size(), n) << label << ": '" << text << "'";
      ASSERT_EQ(c.ratios.size(), n) << label << ": '" << text << "'";
      ASSERT_EQ(c.fracs.size(), n) << label << ": '" << text << "'";
      for (size_t i = 0; i < n; ++i) {
        const Num ours = c.ours[i];
        const double half_ulp = 0.5 * std::pow(10.0, -ours.decimals) + 1e-9;
        const Row* hit = nullptr;
        for (const auto& r : rows)
          if (r.stem == stem && r.row == col_rows[col][i] && std::fabs(r.median - ours.v) <= half_ulp) hit = &r;
        EXPECT_NE(hit, nullptr) << label << " " << col_rows[col][i] << ": " << ours.v
                                << " is not the median of a receipt in receipts/baselines/";
        if (hit) {
          const double frac_tol = 0.5 * std::pow(10.0, -c.fracs[i].decimals) + 1e-9;
          EXPECT_NEAR(c.fracs[i].v, hit->frac, frac_tol) << label << " " << col_rows[col][i] << ": fraction";
        }
        // ratio = ours / anchor, to the printed digits (ours and the anchor are rounded as printed)
        const double ratio = ours.v / c.anchors[i].v;
        EXPECT_NEAR(c.ratios[i].v, ratio, 0.5 * std::pow(10.0, -c.ratios[i].decimals) + 0.002)
            << label << " " << col_rows[col][i] << ": ratio to the anchor";
        ++checked;
      }
    }
  }
  EXPECT_TRUE(in_table) << "README.md has no figures table (header '| file | tg128 | pp512 | ...')";
  EXPECT_GE(checked, 14) << "figures checked";
}
