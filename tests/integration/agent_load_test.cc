// The real `zcal agent` on loopback publishes the load each result was
// measured under: in the state file, /metrics, `zcal show --state`, the
// live page and `zcal report` of the state file.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "http_test_util.h"
#include "test_util.h"

namespace zcal::agent::testing::agent_load_test {
namespace {

using std::chrono::milliseconds;

const std::vector<std::string> kZerocopyMethods = {"msg_zerocopy", "uring_send_zc",
                                                   "uring_send_zc_fixed"};

// A load as the state file and `zcal show --json` write it: every share in
// [0, 1], busy at least this process's share, at least one runnable task
// (the calibrating thread).
void ExpectLoad(const nlohmann::json& load, const std::string& where) {
  ASSERT_TRUE(load.is_object()) << where << ": " << load.dump();
  for (const char* share : {"busy_share", "steal_share", "own_share"}) {
    ASSERT_TRUE(load[share].is_number()) << where << ": " << load.dump();
    EXPECT_GE(load[share].get<double>(), 0) << where << " " << share;
    EXPECT_LE(load[share].get<double>(), 1) << where << " " << share;
  }
  EXPECT_GE(load["busy_share"].get<double>(), load["steal_share"].get<double>()) << where;
  EXPECT_GE(load["runnable_max"].get<double>(), 1) << where;
  EXPECT_GT(load["runnable_reads"].get<double>(), 0) << where;
  EXPECT_GT(load["window_seconds"].get<double>(), 0) << where;
}

TEST(AgentLoad, EveryPublishedResultCarriesTheLoadItWasMeasuredUnder) {
  TempDir dir;
  AgentSettings settings;
  SegmentCleanup cleanup(settings.segment = UniqueSegment());
  settings.state = dir.path() / "state.json";
  WriteFile(dir.path() / "agent.yaml", AgentConfig(settings));
  auto agent = AgentProcess::Start(dir.path() / "agent.yaml", dir.path() / "agent.log");
  ASSERT_TRUE(agent->WaitForLog("calibration finished", milliseconds(30'000))) << agent->Log();

  // The state file is saved before the calibration is logged as finished.
  const nlohmann::json state = nlohmann::json::parse(ReadFile(settings.state));
  for (const std::string& method : kZerocopyMethods) {
    ExpectLoad(state["paths"]["loopback"][method]["load"], "state " + method);
  }

  const auto scrape = HttpGet(agent->MetricsPort(), "/metrics");
  ASSERT_TRUE(scrape && scrape->status == 200);
  for (const std::string& method : kZerocopyMethods) {
    const std::string labels = "{path=\"loopback\",method=\"" + method + "\",depth=\"stream\"}";
    for (const char* ratio : {"zcal_calibration_host_busy_ratio", "zcal_calibration_host_steal_ratio",
                              "zcal_calibration_own_cpu_ratio"}) {
      const auto value = SeriesValue(scrape->body, ratio + labels);
      ASSERT_TRUE(value) << ratio << labels << "\n" << scrape->body;
      EXPECT_GE(*value, 0);
      EXPECT_LE(*value, 1);
    }
    const auto runnable = SeriesValue(scrape->body, "zcal_calibration_runnable_tasks" + labels);
    ASSERT_TRUE(runnable) << scrape->body;
    EXPECT_GE(*runnable, 1);
  }

  // The segment has no room for the load: show reads it from the state file.
  const CommandResult show = RunCommand({ZcalBinary(), "show", "--segment", settings.segment,
                                         "--state", settings.state.string(), "--json"});
  ASSERT_EQ(show.status, 0) << show.err;
  const nlohmann::json shown = nlohmann::json::parse(show.out);
  EXPECT_EQ(shown["measured_under"]["state"], settings.state.string());
  ASSERT_EQ(shown["measured_under"]["results"].size(), kZerocopyMethods.size()) << show.out;
  for (const nlohmann::json& r : shown["measured_under"]["results"]) {
    EXPECT_EQ(r["path"], "loopback");
    ExpectLoad(r["load"], "show " + r["method"].get<std::string>());
  }
  const CommandResult table = RunCommand({ZcalBinary(), "show", "--segment", settings.segment,
                                          "--state", settings.state.string()});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_TRUE(Contains(table.out, "measured under (from the state file ")) << table.out;
  EXPECT_EQ(CountOf(table.out, "  host busy "), kZerocopyMethods.size())
      << table.out;
  const CommandResult missing = RunCommand(
      {ZcalBinary(), "show", "--segment", settings.segment, "--state",
       (dir.path() / "none.json").string()});
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(Contains(missing.err, "--state " + (dir.path() / "none.json").string()))
      << missing.err;
  nlohmann::json corrupt = state;
  corrupt["paths"]["loopback"]["msg_zerocopy"]["load"]["busy_share"] = 7;
  WriteFile(dir.path() / "corrupt.json", corrupt.dump());
  const CommandResult bad = RunCommand({ZcalBinary(), "show", "--segment", settings.segment,
                                        "--state", (dir.path() / "corrupt.json").string()});
  EXPECT_EQ(bad.status, 1);
  EXPECT_TRUE(Contains(bad.err, "paths.loopback.msg_zerocopy.load: busy_share: 7 is not a share"))
      << bad.err;

  const auto page = HttpGet(agent->MetricsPort(), "/");
  ASSERT_TRUE(page && page->status == 200);
  EXPECT_EQ(CountOf(page->body, "<td class=\"load\">host busy "), kZerocopyMethods.size());

  const std::filesystem::path report = dir.path() / "report.html";
  const CommandResult rendered =
      RunCommand({ZcalBinary(), "report", settings.state.string(), "-o", report.string()});
  ASSERT_EQ(rendered.status, 0) << rendered.err;
  EXPECT_EQ(CountOf(ReadFile(report), "<td class=\"load\">host busy "), kZerocopyMethods.size());
}

}  // namespace
}  // namespace zcal::agent::testing::agent_load_test
