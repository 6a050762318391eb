#include "zcal/common/text.h"

#include <array>

#include <gtest/gtest.h>

#include "zcal/common/clock.h"
#include "zcal/common/errno_text.h"
#include "zcal/common/unique_fd.h"

namespace zcal::common::text_test {
namespace {

TEST(Text, TrimsBlanksOnly) {
  EXPECT_EQ(Trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim(" \t "), "");
}

TEST(Text, JoinsAndSplits) {
  const std::array<std::string_view, 3> words = {"a", "b", "c"};
  EXPECT_EQ(Join(words), "a, b, c");
  EXPECT_EQ(Join(std::vector<std::string>{"x", "y"}, " "), "x y");
  EXPECT_EQ(Join(std::vector<std::string>{}), "");
  const std::vector<std::string_view> fields = Split("a,,b", ',');
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[1], "");
  EXPECT_EQ(Split("", ',').size(), 1u);
}

TEST(Text, FingerprintsAreSixteenHexDigitsBothWays) {
  EXPECT_EQ(Hex64(0xabcdef), "0000000000abcdef");
  EXPECT_EQ(Hex64(~0ULL), "ffffffffffffffff");
  EXPECT_EQ(*ParseHex64("0000000000abcdef"), 0xabcdefu);
  EXPECT_EQ(*ParseHex64("0xABCDEF"), 0xabcdefu);
  EXPECT_FALSE(ParseHex64(""));
  EXPECT_FALSE(ParseHex64("12345678901234567"));
  EXPECT_FALSE(ParseHex64("12g4"));
  const std::array<std::uint8_t, 3> bytes = {0x00, 0x7f, 0xff};
  EXPECT_EQ(HexBytes(bytes), "007fff");
}

TEST(Text, Fnv1aMatchesTheReferenceValues) {
  EXPECT_EQ(Fnv1a(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a("foobar"), 0x85944171f73967e8ULL);
}

TEST(Clock, RealtimeIsUnixTime) {
  EXPECT_GT(RealtimeSeconds(), 1.7e9);  // after 2023
  EXPECT_DOUBLE_EQ(NsToSeconds(1'500'000'000), 1.5);
}

TEST(ErrnoText, NamesTheErrorAndSaysIt) {
  EXPECT_EQ(ErrnoText(EPERM), "EPERM (Operation not permitted)");
  EXPECT_NE(ErrnoText(123456).find("123456"), std::string::npos);
}

TEST(UniqueFd, ClosesOnceAndMoves) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  UniqueFd write_end(fds[1]);
  {
    UniqueFd read_end(fds[0]);
    UniqueFd moved = std::move(read_end);
    EXPECT_FALSE(read_end);  // NOLINT(bugprone-use-after-move): the point
    EXPECT_EQ(moved.get(), fds[0]);
  }
  // The read end is closed: writing fails with EPIPE (SIGPIPE ignored here).
  signal(SIGPIPE, SIG_IGN);
  EXPECT_EQ(::write(write_end.get(), "x", 1), -1);
  EXPECT_EQ(errno, EPIPE);
  const int raw = write_end.Release();
  EXPECT_FALSE(write_end);
  ::close(raw);
}

}  // namespace
}  // namespace zcal::common::text_test
