// A real Prometheus server scrapes the real agent, and a query through its
// HTTP API returns the threshold series.
#include <signal.h>
#include <unistd.h>

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "test_util.h"

namespace zcal::agent::testing::agent_prometheus_test {
namespace {

using std::chrono::milliseconds;

constexpr const char* kPrometheus = "/usr/bin/prometheus";

TEST(AgentPrometheus, AQueryReturnsTheThresholdSeriesWithTheirLabels) {
  if (access(kPrometheus, X_OK) != 0) {
    GTEST_SKIP() << kPrometheus
                 << " is missing (Debian package prometheus; "
                    "scripts/install-deps.sh installs it)";
  }
  TempDir dir;
  AgentSettings settings;
  settings.segment = UniqueSegment();
  settings.state = dir.path() / "state.json";
  SegmentCleanup cleanup(settings.segment);
  WriteFile(dir.path() / "agent.yaml", AgentConfig(settings));
  auto agent = AgentProcess::Start(dir.path() / "agent.yaml",
                                   dir.path() / "agent.log");
  ASSERT_TRUE(agent->WaitForLog("calibration finished", milliseconds(30'000)))
      << agent->Log();
  const std::string target = "127.0.0.1:" + std::to_string(agent->MetricsPort());

  WriteFile(dir.path() / "prometheus.yml",
            "global:\n"
            "  scrape_interval: 1s\n"
            "  evaluation_interval: 1s\n"
            "scrape_configs:\n"
            "  - job_name: zcal\n"
            "    static_configs:\n"
            "      - targets: [\"" + target + "\"]\n");
  const int port = FreePort();
  auto prometheus = AgentProcess::StartProgram(
      {kPrometheus, "--config.file=" + (dir.path() / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (dir.path() / "data").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(port),
       "--log.level=warn"},
      dir.path() / "prometheus.log");

  nlohmann::json result;
  const bool answered = WaitFor(
      [&] {
        const auto response =
            HttpGet(port, "/api/v1/query?query=" + UrlEncode("zcal_threshold_bytes"));
        if (!response || response->status != 200) return false;
        const nlohmann::json body =
            nlohmann::json::parse(response->body, nullptr, false);
        if (body.is_discarded() || body["status"] != "success") return false;
        result = body["data"]["result"];
        return result.size() >= 3;
      },
      milliseconds(60'000));
  ASSERT_TRUE(answered) << "Prometheus log:\n"
                        << prometheus->Log() << "\nlast result: " << result.dump();
  std::set<std::string> methods;
  for (const nlohmann::json& series : result) {
    const nlohmann::json& labels = series["metric"];
    EXPECT_EQ(labels["__name__"], "zcal_threshold_bytes");
    EXPECT_EQ(labels["job"], "zcal");
    EXPECT_EQ(labels["instance"], target);
    EXPECT_EQ(labels["path"], "loopback");
    methods.insert(labels["method"].get<std::string>());
    // Never zerocopy on loopback: the threshold is +Inf.
    EXPECT_EQ(series["value"][1], "+Inf") << series.dump();
  }
  EXPECT_EQ(methods, (std::set<std::string>{"msg_zerocopy", "uring_send_zc",
                                            "uring_send_zc_fixed"}));

  prometheus->Signal(SIGTERM);
  EXPECT_TRUE(prometheus->WaitExit(milliseconds(20'000)));
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(5000)), 0);
}

}  // namespace
}  // namespace zcal::agent::testing::agent_prometheus_test
