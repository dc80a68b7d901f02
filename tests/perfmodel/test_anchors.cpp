// parse_kernel_anchor_table: the kernel tables of ../shared/anchors/llamacpp-h200.md read as the
// file writes them (a small table spelled out here, then the real file's MUL_MAT_ID table).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "perfmodel/anchors.h"

namespace memra::perf {
namespace {

constexpr const char* kSmall = R"(# Title
### MUL_MAT (dense)
| n | f16 | q8_0 |
|---|---|---|
| 1 | 30.26 us · 3.9 TF/s · 3881 GB/s | 23.14 us · 5.1 TF/s |

### MUL_MAT_ID (MoE, 128 experts)

| n | q8_0 | q4_K |
|---|---|---|
| 1 | 9.78 us · 2.6 TF/s · 1367 GB/s | 7.46 us · 3.4 TF/s · 949 GB/s |
| 512 | 324.1 us · 39.8 TF/s | 349.4 us · 36.9 TF/s |

**Observations**:
| 2 | 1 us | 1 us |
)";

TEST(KernelAnchors, ReadsTheNamedSectionOnly) {
  const auto t = parse_kernel_anchor_table(kSmall, "MUL_MAT_ID");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->title, "MUL_MAT_ID (MoE, 128 experts)");
  EXPECT_EQ(t->us.size(), 4u);
  EXPECT_DOUBLE_EQ(*t->find("q8_0", 1), 9.78);
  EXPECT_DOUBLE_EQ(*t->find("q4_K", 512), 349.4);
  EXPECT_FALSE(t->find("q4_K", 2).has_value());  // past the table's end
  EXPECT_FALSE(t->find("f16", 1).has_value());   // another section's column
  const auto d = parse_kernel_anchor_table(kSmall, "MUL_MAT (");
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ(*d->find("f16", 1), 30.26);
  EXPECT_FALSE(parse_kernel_anchor_table(kSmall, "FLASH_ATTN").has_value());
}

TEST(KernelAnchors, MalformedTablesAreErrors) {
  EXPECT_THROW(parse_kernel_anchor_table("### X\n| m | a |\n", "X"), Error);
  EXPECT_THROW(parse_kernel_anchor_table("### X\n| n | a |\n|--|--|\n| one | 1 us |\n", "X"), Error);
  EXPECT_THROW(parse_kernel_anchor_table("### X\n| n | a |\n|--|--|\n| 1 | fast |\n", "X"), Error);
  EXPECT_THROW(parse_kernel_anchor_table("### X\n| n | a | b |\n|--|--|--|\n| 1 | 2 us |\n", "X"), Error);
  EXPECT_THROW(parse_kernel_anchor_table("### X\ntext only\n", "X"), Error);
}

TEST(KernelAnchors, TheSharedFilesMoeTable) {
  const std::string path = std::string(MEMRA_SHARED_DIR) + "/anchors/llamacpp-h200.md";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path << " (../shared absent)";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto t = parse_kernel_anchor_table(ss.str(), "MUL_MAT_ID");
  ASSERT_TRUE(t.has_value());
  // The file's stated grid: types f16 q8_0 q6_K q4_K q4_0 at n = 1, 4, 8, 32, 512.
  for (const char* type : {"f16", "q8_0", "q6_K", "q4_K", "q4_0"})
    for (int n : {1, 4, 8, 32, 512}) EXPECT_TRUE(t->find(type, n).has_value()) << type << " n=" << n;
  EXPECT_EQ(t->us.size(), 25u);
  // Larger batches never take less time per op in that table (a parse that shifts a column would).
  for (const char* type : {"f16", "q8_0", "q6_K", "q4_K", "q4_0"})
    EXPECT_LT(*t->find(type, 1), *t->find(type, 512)) << type;
}

}  // namespace
}  // namespace memra::perf
