// `zcal keygen` as a user runs it: the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "run_command.h"

namespace zcal::testing::keygen_cli_test {
namespace {

using ::testing::HasSubstr;

// "ID HEX\n" with 64 lower-case hex digits (no std::regex: GCC 12's
// sanitizer build warns inside <regex>).
bool IsKeyLine(const std::string& out, const std::string& id_prefix, std::size_t id_size) {
  if (out.size() != id_size + 1 + 64 + 1 || !out.starts_with(id_prefix)) return false;
  if (out[id_size] != ' ' || out.back() != '\n') return false;
  const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  return std::all_of(out.begin() + static_cast<long>(id_size) + 1, out.end() - 1, hex) &&
         std::all_of(out.begin() + static_cast<long>(id_prefix.size()),
                     out.begin() + static_cast<long>(id_size), hex);
}

TEST(KeygenCli, PrintsOneKeyLineWithThirtyTwoRandomBytes) {
  const CommandResult first = RunCommand({ZcalPath(), "keygen", "--id", "fleet-1"});
  const CommandResult second = RunCommand({ZcalPath(), "keygen", "--id", "fleet-1"});
  ASSERT_EQ(first.exit_status, 0) << first.err;
  EXPECT_TRUE(IsKeyLine(first.out, "fleet-1", 7))
      << first.out;
  EXPECT_NE(first.out, second.out);
  EXPECT_EQ(first.err, "");

  const CommandResult unnamed = RunCommand({ZcalPath(), "keygen"});
  ASSERT_EQ(unnamed.exit_status, 0);
  EXPECT_TRUE(IsKeyLine(unnamed.out, "k", 9))
      << unnamed.out;
}

TEST(KeygenCli, RefusesAnInvalidIdWithExitTwo) {
  const CommandResult r = RunCommand({ZcalPath(), "keygen", "--id", "no spaces"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("key id 'no spaces' is not 1 to 16 of [A-Za-z0-9_.-]"));
  EXPECT_EQ(RunCommand({ZcalPath(), "keygen", "--id", "seventeen-chars-x"}).exit_status, 2);
}

}  // namespace
}  // namespace zcal::testing::keygen_cli_test
