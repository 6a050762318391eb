// The real `zcal agent`'s metrics listener under idle clients:
// half-open connections do not blind monitoring, and are closed later.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "agent_harness.h"
#include "http_test_util.h"
#include "test_util.h"

namespace zcal::agent::testing::agent_metrics_http_test {
namespace {

using std::chrono::milliseconds;

constexpr const char* kServing = "serving metrics at ";

std::string Dropped(const std::string& reason) {
  return "zcal_http_connections_dropped_total{reason=\"" + reason + "\"}";
}

class AgentMetricsHttp : public ::testing::Test {
 protected:
  AgentMetricsHttp() : cleanup_(settings_.segment = UniqueSegment()) {
    settings_.state = dir_.path() / "state.json";
    settings_.at_startup = false;  // the listener is under test, not probes
  }

  std::unique_ptr<AgentProcess> StartAgent() {
    WriteFile(dir_.path() / "agent.yaml", AgentConfig(settings_));
    auto agent = AgentProcess::Start(dir_.path() / "agent.yaml",
                                     dir_.path() / "agent.log");
    EXPECT_TRUE(agent->WaitForLog(kServing, milliseconds(30'000)))
        << agent->Log();
    return agent;
  }

  TempDir dir_;
  AgentSettings settings_;
  SegmentCleanup cleanup_;
};

TEST_F(AgentMetricsHttp, SixtyFourIdleConnectionsDoNotDelayAScrape) {
  auto agent = StartAgent();
  const int port = agent->MetricsPort();
  ASSERT_GT(port, 0) << agent->Log();
  std::vector<TcpClient> idle;
  for (int i = 0; i < 64; ++i) {
    TcpClient client("127.0.0.1", port);
    ASSERT_TRUE(client.ok() && client.Send("GET /metrics HTTP/1.1\r\n")) << i;
    idle.push_back(std::move(client));
  }

  const auto start = std::chrono::steady_clock::now();
  const auto response = HttpGet(port, "/metrics");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  std::printf("zcal agent: scrape behind 64 idle connections: %.3f ms\n",
              std::chrono::duration<double, std::milli>(elapsed).count());
  // Answered before any idle connection reached its request timeout (5 s):
  // a server that served the scrape only once idle ones went would have
  // counted timeouts in that very response.
  EXPECT_EQ(SeriesValue(response->body, Dropped("request_timeout")), 0) << response->body;
  // 8 connections per client: 56 replaced by later ones, 1 by the scrape.
  EXPECT_EQ(SeriesValue(response->body, Dropped("client_limit")), 57)
      << response->body;

  // The other 7 are closed at the request timeout (5 s).
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const TcpClient& c : idle) {
          if (!c.PeerClosed()) return false;
        }
        return true;
      },
      milliseconds(30'000)));
  EXPECT_TRUE(WaitFor([&] { return Series(port, Dropped("request_timeout")) == 7; },
                      milliseconds(10'000)));

  const auto stop = std::chrono::steady_clock::now();
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(10'000)), 0) << agent->Log();
  std::printf("zcal agent: exit after SIGTERM: %.0f ms\n",
              std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - stop)
                  .count());
}

TEST_F(AgentMetricsHttp, ServesOnTheIpv6Loopback) {
  if (!HasIpv6Loopback()) GTEST_SKIP() << "no IPv6 loopback address here";
  settings_.metrics = "[::1]:0";
  auto agent = StartAgent();
  const std::string log = agent->Log();
  // Appended, not `std::string(kServing) + "..."`: GCC 12 at -O1 reports a
  // false -Warray-bounds inside that operator+ (the bug of -Wrestrict that
  // meson.build silences).
  std::string marker = kServing;
  marker += "http://[::1]:";
  const std::size_t at = log.find(marker);
  ASSERT_NE(at, std::string::npos) << log;
  const int port = std::atoi(log.c_str() + at + marker.size());
  const auto response = HttpExchange(
      "::1", port, "GET /metrics HTTP/1.1\r\nHost: [::1]\r\n\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(StatusOf(*response), 200) << *response;
  EXPECT_NE(BodyOf(*response).find("zcal_build_info{"), std::string::npos);
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(10'000)), 0) << agent->Log();
}

}  // namespace
}  // namespace zcal::agent::testing::agent_metrics_http_test
