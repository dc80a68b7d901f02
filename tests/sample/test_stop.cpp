#include <gtest/gtest.h>

#include "sample/stop.h"

using memra::StopCriteria;

TEST(Stop, EogIds) {
  StopCriteria s{{2, 32000}, {}};
  EXPECT_TRUE(s.is_eog(2));
  EXPECT_TRUE(s.is_eog(32000));
  EXPECT_FALSE(s.is_eog(3));
}

TEST(Stop, FindsEarliestStopString) {
  StopCriteria s{{}, {"###", "\nUser:", ""}};
  EXPECT_FALSE(s.find_stop("hello world").has_value());
  EXPECT_EQ(s.find_stop("abc\nUser: x ###"), 3u);
  EXPECT_EQ(s.find_stop("a### \nUser:"), 1u);
  EXPECT_EQ(s.max_stop_len(), 6u);
}

TEST(Stop, HoldbackIsLongestPartialPrefix) {
  StopCriteria s{{}, {"</s>", "END"}};
  EXPECT_EQ(s.holdback("text</"), 2u);
  EXPECT_EQ(s.holdback("text<"), 1u);
  EXPECT_EQ(s.holdback("textEN"), 2u);
  EXPECT_EQ(s.holdback("text"), 0u);
  EXPECT_EQ(s.holdback("</s>"), 0u);  // a full match is find_stop's business, not a prefix
  EXPECT_EQ(s.holdback(""), 0u);
}
