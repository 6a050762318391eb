// `zcal doctor` as a user runs it on this machine: whatever the machine
// allows, the exit status follows the worst line, --json parses, and every
// line that is not ok says what to change.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "agent_harness.h"
#include "run_command.h"
#include "test_util.h"

namespace zcal::agent::testing::doctor_cli_test {
namespace {

using zcal::testing::CommandResult;
using zcal::testing::RunCommand;

constexpr std::chrono::milliseconds kTimeout{20'000};

int Rank(const std::string& status) {
  if (status == "ok") return 0;
  if (status == "warn") return 1;
  if (status == "fail") return 2;
  ADD_FAILURE() << "unknown status " << status;
  return 2;
}

// The JSON document's checks, asserted well-formed; returns the worst rank.
int CheckDocument(const nlohmann::json& doc) {
  EXPECT_TRUE(doc["checks"].is_array());
  EXPECT_GE(doc["checks"].size(), 10U);
  int worst = 0;
  for (const nlohmann::json& c : doc["checks"]) {
    const std::string status = c["status"];
    const int rank = Rank(status);
    worst = std::max(worst, rank);
    EXPECT_FALSE(c["check"].get<std::string>().empty());
    EXPECT_FALSE(c["detail"].get<std::string>().empty()) << c;
    if (rank == 0) {
      EXPECT_TRUE(c["fix"].is_null()) << c;
    } else {
      EXPECT_TRUE(c["fix"].is_string() && !c["fix"].get<std::string>().empty()) << c;
    }
  }
  EXPECT_EQ(Rank(doc["status"]), worst);
  return worst;
}

const nlohmann::json* Find(const nlohmann::json& doc, const std::string& check) {
  for (const nlohmann::json& c : doc["checks"]) {
    if (c["check"] == check) return &c;
  }
  return nullptr;
}

TEST(DoctorCli, ExitStatusFollowsTheWorstLineAndJsonParses) {
  TempDir dir;
  const std::string segment = UniqueSegment();
  const std::string state = (dir.path() / "state.json").string();
  const CommandResult json = RunCommand(
      {ZcalBinary(), "doctor", "--json", "--segment", segment, "--state", state});
  const nlohmann::json doc = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << json.out << json.err;
  const int worst = CheckDocument(doc);
  // No agent publishes that segment: a fail, so exit status 1.
  const nlohmann::json* agent = Find(doc, "agent.segment");
  ASSERT_NE(agent, nullptr);
  EXPECT_EQ((*agent)["status"], "fail");
  EXPECT_EQ(worst, 2);
  EXPECT_EQ(json.exit_status, 1) << json.err;

  // The text says the same, one line per check, a fix under each that is
  // not ok.
  const CommandResult text =
      RunCommand({ZcalBinary(), "doctor", "--segment", segment, "--state", state});
  EXPECT_EQ(text.exit_status, json.exit_status);
  std::istringstream lines(text.out);
  std::string line;
  std::size_t checks = 0;
  bool fix_due = false;
  while (std::getline(lines, line)) {
    if (fix_due) {
      EXPECT_NE(line.find("fix: "), std::string::npos) << line;
      fix_due = false;
      continue;
    }
    ++checks;
    const std::string status = line.substr(0, line.find(' '));
    fix_due = Rank(status) > 0;
  }
  EXPECT_FALSE(fix_due);
  EXPECT_EQ(checks, doc["checks"].size());
}

TEST(DoctorCli, SeesARunningAgentAndWarnsOnlyWhenStrict) {
  TempDir dir;
  AgentSettings settings;
  SegmentCleanup cleanup(settings.segment = UniqueSegment());
  settings.state = dir.path() / "state.json";
  settings.at_startup = false;
  const std::filesystem::path config = dir.path() / "agent.yaml";
  WriteFile(config, AgentConfig(settings));
  const auto agent = AgentProcess::Start(config, dir.path() / "agent.log");
  ASSERT_TRUE(agent->WaitForLog("serving metrics at", kTimeout)) << agent->Log();

  const CommandResult r =
      RunCommand({ZcalBinary(), "doctor", "--json", "--config", config.string()});
  const nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out << r.err;
  const int worst = CheckDocument(doc);
  const nlohmann::json* segment = Find(doc, "agent.segment");
  ASSERT_NE(segment, nullptr);
  EXPECT_EQ((*segment)["status"], "ok") << *segment;
  EXPECT_NE((*segment)["detail"].get<std::string>().find(std::to_string(agent->pid())),
            std::string::npos)
      << *segment;
  // No calibration ran (at_startup: false): no state file yet.
  EXPECT_EQ((*Find(doc, "agent.calibration"))["status"], "warn");
  EXPECT_EQ(r.exit_status, worst == 2 ? 1 : 0) << r.err;

  const CommandResult strict =
      RunCommand({ZcalBinary(), "doctor", "--strict", "--config", config.string()});
  EXPECT_EQ(strict.exit_status, 1);  // the calibration's warning at least
}

TEST(DoctorCli, RefusesABadConfigurationWithExitTwo) {
  TempDir dir;
  const std::filesystem::path config = dir.path() / "bad.yaml";
  WriteFile(config, "min_size_bytes: [\n");
  const CommandResult r = RunCommand({ZcalBinary(), "doctor", "--config", config.string()});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("zcal doctor: ", 0), 0U) << r.err;
  EXPECT_EQ(RunCommand({ZcalBinary(), "doctor", "--config", (dir.path() / "none.yaml").string()})
                .exit_status,
            2);
}

}  // namespace
}  // namespace zcal::agent::testing::doctor_cli_test
