// `zcal agent --check-config` and `--config` on the corpus of malformed
// configurations, through the real binary.
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "agent_harness.h"
#include "test_util.h"

namespace zcal::agent::testing::agent_check_config_test {
namespace {

std::filesystem::path SourceRoot() {
  const char* root = std::getenv("ZCAL_SOURCE_ROOT");
  return root != nullptr ? root : ".";
}

TEST(AgentCheckConfig, RejectsEveryMalformedFileWithItsPosition) {
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           SourceRoot() / "tests/data/configs/bad")) {
    const std::string path = entry.path().string();
    const std::string text = ReadFile(entry.path());
    const std::string expected =
        path + ":" + text.substr(10, text.find('\n') - 10);  // "# expect: "
    const CommandResult result =
        RunCommand({ZcalBinary(), "agent", "--check-config", path});
    EXPECT_EQ(result.status, 2) << path;
    EXPECT_TRUE(Contains(result.err, expected))
        << "expected: " << expected << "\ngot: " << result.err;
    EXPECT_TRUE(Contains(result.err, "the configuration is invalid"));
    ++checked;
  }
  EXPECT_GE(checked, 20u);
}

TEST(AgentCheckConfig, AcceptsTheGoodFilesAndTheEmbeddedDefault) {
  for (const auto& entry : std::filesystem::directory_iterator(
           SourceRoot() / "tests/data/configs/good")) {
    const CommandResult result = RunCommand(
        {ZcalBinary(), "agent", "--check-config", entry.path().string()});
    EXPECT_EQ(result.status, 0) << result.err;
    EXPECT_TRUE(Contains(result.out, "the configuration is valid"));
  }
  const CommandResult embedded =
      RunCommand({ZcalBinary(), "agent", "--check-config"});
  EXPECT_EQ(embedded.status, 0) << embedded.err;
  EXPECT_EQ(embedded.out, "<embedded default>: the configuration is valid\n");
}

TEST(AgentCheckConfig, ChecksTheFileGivenWithConfig) {
  const std::string bad =
      (SourceRoot() / "tests/data/configs/bad/unknown_top_key.yaml").string();
  const CommandResult result =
      RunCommand({ZcalBinary(), "agent", "--config", bad, "--check-config"});
  EXPECT_EQ(result.status, 2);
  EXPECT_TRUE(Contains(result.err, bad + ":3:1: schedul: unknown key"));
}

TEST(AgentCheckConfig, AMissingFileIsAUsageError) {
  const CommandResult result = RunCommand(
      {ZcalBinary(), "agent", "--check-config", "/nonexistent/zcal.yaml"});
  EXPECT_EQ(result.status, 2);
  EXPECT_TRUE(Contains(result.err,
                       "/nonexistent/zcal.yaml: cannot open the configuration: "
                       "ENOENT (No such file or directory)"))
      << result.err;
}

TEST(AgentCheckConfig, RefusesADeviceOrAHugeFileWithoutReadingIt) {
  // /dev/zero read to its end would take the host's memory.
  const CommandResult zero =
      RunCommand({ZcalBinary(), "agent", "--check-config", "/dev/zero"});
  EXPECT_EQ(zero.status, 2);
  EXPECT_TRUE(Contains(zero.err, "/dev/zero is a character device, not a regular file"))
      << zero.err;
  TempDir dir;
  const std::string big = (dir.path() / "big.yaml").string();
  WriteFile(big, "# " + std::string(1 << 20, 'x') + "\n");
  const CommandResult huge = RunCommand({ZcalBinary(), "agent", "--check-config", big});
  EXPECT_EQ(huge.status, 2);
  EXPECT_TRUE(Contains(huge.err, big + ": the configuration is larger than 1 MiB"))
      << huge.err;
}

TEST(AgentCheckConfig, PrintsTheFirstErrorsAndCountsTheRest) {
  TempDir dir;
  const std::string many = (dir.path() / "many.yaml").string();
  std::string text;
  for (int i = 0; i < 500; ++i) text += "unknown_" + std::to_string(i) + ": 1\n";
  WriteFile(many, text);
  const CommandResult result = RunCommand({ZcalBinary(), "agent", "--check-config", many});
  EXPECT_EQ(result.status, 2);
  std::size_t error_lines = 0;
  std::istringstream err(result.err);
  for (std::string line; std::getline(err, line);) {
    if (Contains(line, ": unknown key")) ++error_lines;
  }
  EXPECT_EQ(error_lines, 20u) << result.err;
  EXPECT_TRUE(Contains(result.err, many + ":20:1: unknown_19: unknown key")) << result.err;
  EXPECT_FALSE(Contains(result.err, "unknown_20:")) << result.err;
  EXPECT_TRUE(Contains(result.err,
                       many + ": ... and 480 more errors (the first 20 are listed)\n"
                              "zcal agent: the configuration is invalid\n"))
      << result.err;
}

TEST(AgentCheckConfig, AnInvalidFileKeepsTheAgentFromStarting) {
  const std::string bad =
      (SourceRoot() / "tests/data/configs/bad/segment_name_no_slash.yaml").string();
  const CommandResult result = RunCommand({ZcalBinary(), "agent", "--config", bad});
  EXPECT_EQ(result.status, 2);
  EXPECT_TRUE(Contains(result.err, bad + ":3:9: segment.name"));
  EXPECT_TRUE(Contains(result.err, "not started, the configuration is invalid"));
}

TEST(AgentCheckConfig, PrintsTheEmbeddedDefault) {
  const CommandResult result =
      RunCommand({ZcalBinary(), "agent", "--print-default-config"});
  EXPECT_EQ(result.status, 0);
  EXPECT_EQ(result.out, ReadFile(SourceRoot() / "configs/default.yaml"));
}

}  // namespace
}  // namespace zcal::agent::testing::agent_check_config_test
