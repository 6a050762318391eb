// `zcal keygen` as a user runs it: the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "run_command.h"

namespace zcal::testing {
namespace {

using ::testing::HasSubstr;

TEST(KeygenCli, PrintsOneKeyLineWithThirtyTwoRandomBytes) {
  const CommandResult first = RunCommand({ZcalPath(), "keygen", "--id", "fleet-1"});
  const CommandResult second = RunCommand({ZcalPath(), "keygen", "--id", "fleet-1"});
  ASSERT_EQ(first.exit_status, 0) << first.err;
  EXPECT_TRUE(std::regex_match(first.out, std::regex("fleet-1 [0-9a-f]{64}\n")))
      << first.out;
  EXPECT_NE(first.out, second.out);
  EXPECT_EQ(first.err, "");

  const CommandResult unnamed = RunCommand({ZcalPath(), "keygen"});
  ASSERT_EQ(unnamed.exit_status, 0);
  EXPECT_TRUE(std::regex_match(unnamed.out, std::regex("k[0-9a-f]{8} [0-9a-f]{64}\n")))
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
}  // namespace zcal::testing
