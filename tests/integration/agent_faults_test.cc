// Faults an operator meets, on the real `zcal agent`: the metrics port
// taken at start and at reload, and storms of signals.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "http_test_util.h"
#include "test_util.h"
#include "zcal/zcal.hpp"

namespace zcal::agent::testing::agent_faults_test {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kStartTimeout{30'000};
constexpr const char* kFinished = "calibration finished";
constexpr std::size_t kMethods = 3;  // the zerocopy methods on loopback

// A port on 127.0.0.1 that this test listens on, so that nobody else can.
class TakenPort {
 public:
  TakenPort() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
  }
  ~TakenPort() { Release(); }
  TakenPort(const TakenPort&) = delete;
  TakenPort& operator=(const TakenPort&) = delete;
  int port() const { return port_; }
  void Release() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  int port_ = 0;
};

std::size_t OpenFds(pid_t pid) {
  std::error_code ec;
  std::size_t count = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end;
       !ec && it != end; it.increment(ec)) {
    ++count;
  }
  return count;
}

class AgentFaultsTest : public ::testing::Test {
 protected:
  AgentFaultsTest() : cleanup_(settings_.segment = UniqueSegment()) {
    settings_.state = dir_.path() / "state" / "state.json";
  }

  std::unique_ptr<AgentProcess> StartAgent(const std::string& name = "agent") {
    const std::filesystem::path config = dir_.path() / "agent.yaml";
    WriteFile(config, AgentConfig(settings_));
    return AgentProcess::Start(config, dir_.path() / (name + ".log"));
  }

  TempDir dir_;
  AgentSettings settings_;
  SegmentCleanup cleanup_;
};

TEST_F(AgentFaultsTest, AMetricsPortTakenAtStartFailsTheStartAndLeavesThePreviousTable) {
  auto first = StartAgent("first");
  ASSERT_TRUE(first->WaitForLog(kFinished, kStartTimeout)) << first->Log();
  first->Signal(SIGTERM);
  ASSERT_EQ(first->WaitExit(milliseconds(5000)), 0) << first->Log();

  TakenPort taken;
  ASSERT_NE(taken.port(), 0);
  settings_.metrics = "127.0.0.1:" + std::to_string(taken.port());
  auto second = StartAgent("second");
  EXPECT_EQ(second->WaitExit(milliseconds(10'000)), 1) << second->Log();
  const std::string log = second->Log();
  EXPECT_EQ(CountOf(log, "metrics.listen " + settings_.metrics +
                             ": cannot listen: EADDRINUSE (Address already in use)"),
            1u)
      << log;
  // Failing before the segment: readers keep the table the first agent left.
  const auto info = ReadInfo(settings_.segment);
  ASSERT_TRUE(info) << log;
  EXPECT_EQ(info->agent_pid, static_cast<std::uint32_t>(first->pid()));
  EXPECT_EQ(info->count, kMethods);
  EXPECT_FALSE(info->flags & ZCAL_FLAG_RETIRED);
}

TEST_F(AgentFaultsTest, AMetricsPortTakenAtReloadKeepsTheOldListenerAndCountsTheFailure) {
  auto agent = StartAgent();
  ASSERT_TRUE(agent->WaitForLog(kFinished, kStartTimeout)) << agent->Log();
  const int old_port = agent->MetricsPort();
  ASSERT_NE(old_port, 0);

  TakenPort taken;
  ASSERT_NE(taken.port(), 0);
  settings_.metrics = "127.0.0.1:" + std::to_string(taken.port());
  WriteFile(dir_.path() / "agent.yaml", AgentConfig(settings_));
  agent->Signal(SIGHUP);
  ASSERT_TRUE(agent->WaitForLog("configuration reload rejected", kStartTimeout)) << agent->Log();
  EXPECT_TRUE(Contains(agent->Log(), "metrics.listen " + settings_.metrics + ": cannot listen"))
      << agent->Log();
  EXPECT_EQ(agent->MetricsPort(), old_port);
  const std::string metrics = Scrape(old_port);
  EXPECT_EQ(SeriesValue(metrics, "zcal_config_reloads_total{result=\"failure\"}"), 1) << metrics;
  EXPECT_EQ(SeriesValue(metrics, "zcal_config_reloads_total{result=\"success\"}"), 0);

  // Once the port is free, the same file reloads.
  taken.Release();
  agent->Signal(SIGHUP);
  ASSERT_TRUE(agent->WaitForLog("configuration reloaded", kStartTimeout)) << agent->Log();
  EXPECT_EQ(agent->MetricsPort(), taken.port());
  EXPECT_EQ(SeriesValue(Scrape(taken.port()), "zcal_config_reloads_total{result=\"success\"}"), 1);
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(5000)), 0) << agent->Log();
}

TEST_F(AgentFaultsTest, AHundredSighupsInASecondLeaveItServingWithEveryReloadCounted) {
  auto agent = StartAgent();
  ASSERT_TRUE(agent->WaitForLog(kFinished, kStartTimeout)) << agent->Log();
  const std::size_t fds_before = OpenFds(agent->pid());
  ASSERT_GT(fds_before, 0u);
  for (int i = 0; i < 100; ++i) {
    agent->Signal(SIGHUP);
    std::this_thread::sleep_for(milliseconds(10));  // paces the storm over a second
  }
  // The kernel merges a SIGHUP that arrives while one is pending; every one
  // the agent receives is one reload, logged and counted.
  std::size_t received = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string log = agent->Log();
        received = CountOf(log, "SIGHUP: reloading");
        return received > 0 && CountOf(log, "configuration reloaded") == received &&
               OpenFds(agent->pid()) <= fds_before;
      },
      milliseconds(20'000)))
      << "fds " << OpenFds(agent->pid()) << " (before " << fds_before << ")\n"
      << agent->Log();
  EXPECT_LE(received, 100u);
  EXPECT_FALSE(agent->WaitExit(milliseconds(0)));
  const std::string metrics = Scrape(agent->MetricsPort());
  const auto ok = SeriesValue(metrics, "zcal_config_reloads_total{result=\"success\"}");
  ASSERT_TRUE(ok) << metrics;
  EXPECT_GE(*ok, static_cast<double>(received));
  EXPECT_EQ(SeriesValue(metrics, "zcal_config_reloads_total{result=\"failure\"}"), 0);
  const auto info = ReadInfo(settings_.segment);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->count, kMethods);
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(5000)), 0) << agent->Log();
}

// No calibration starts while another runs: between two "calibration
// started" lines there is the end of the first.
void ExpectOneCalibrationAtATime(const std::string& log) {
  std::istringstream lines(log);
  std::string line;
  bool running = false;
  while (std::getline(lines, line)) {
    if (Contains(line, "calibration started")) {
      EXPECT_FALSE(running) << "a second concurrent calibration: " << line << "\n" << log;
      running = true;
    } else if (Contains(line, kFinished) || Contains(line, "calibration failed") ||
               Contains(line, "calibration cancelled")) {
      running = false;
    }
  }
}

TEST_F(AgentFaultsTest, SigusrDuringACalibrationIsRefusedWithALineNotRunAlongside) {
  settings_.at_startup = false;
  auto agent = StartAgent();
  ASSERT_TRUE(agent->WaitForLog("publishing thresholds", kStartTimeout)) << agent->Log();
  // A loopback calibration is short: ask again as soon as one has started,
  // and try anew when it finished before the second request arrived.
  bool refused = false;
  for (int attempt = 0; attempt < 20 && !refused; ++attempt) {
    const std::size_t started = CountOf(agent->Log(), "calibration started");
    agent->Signal(SIGUSR1);
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (CountOf(agent->Log(), "calibration started") == started &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    agent->Signal(SIGUSR1);
    // The second request is either refused or, having come after the end,
    // starts the next calibration; wait until every request is answered.
    ASSERT_TRUE(WaitFor(
        [&] {
          const std::string log = agent->Log();
          return CountOf(log, "SIGUSR1: calibration requested") == 2 * (attempt + 1u) &&
                 CountOf(log, "calibration started") ==
                     CountOf(log, kFinished) + CountOf(log, "calibration failed");
        },
        kStartTimeout))
        << agent->Log();
    refused = Contains(agent->Log(), "a calibration is already running; request ignored");
  }
  ASSERT_TRUE(refused) << agent->Log();
  ExpectOneCalibrationAtATime(agent->Log());
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(5000)), 0) << agent->Log();
}

TEST_F(AgentFaultsTest, SigtermRightBehindAReloadExitsCleanlyWithStateAndTableKept) {
  auto agent = StartAgent();
  ASSERT_TRUE(agent->WaitForLog(kFinished, kStartTimeout)) << agent->Log();
  const std::string old_segment = settings_.segment;
  const std::string new_segment = UniqueSegment();
  SegmentCleanup new_cleanup(new_segment);
  settings_.segment = new_segment;
  WriteFile(dir_.path() / "agent.yaml", AgentConfig(settings_));
  const std::uint64_t before = static_cast<std::uint64_t>(
      std::chrono::system_clock::now().time_since_epoch().count());
  agent->Signal(SIGHUP);
  agent->Signal(SIGTERM);
  ASSERT_EQ(agent->WaitExit(milliseconds(5000)), 0) << agent->Log();
  const std::string log = agent->Log();
  EXPECT_TRUE(Contains(log, "SIGTERM: stopping")) << log;
  const nlohmann::json state = nlohmann::json::parse(ReadFile(settings_.state));
  EXPECT_EQ(state["paths"]["loopback"].size(), kMethods);
  // The reload either went through before the stop or was not started; in
  // both cases one segment holds the table with a last heartbeat.
  const bool reloaded = Contains(log, "configuration reloaded");
  const std::string live = reloaded ? new_segment : old_segment;
  EXPECT_TRUE(Contains(log, "stopped; segment " + live + " keeps its last table")) << log;
  const auto info = ReadInfo(live);
  ASSERT_TRUE(info) << log;
  EXPECT_EQ(info->count, kMethods);
  EXPECT_GE(info->heartbeat_ns, before);
  EXPECT_FALSE(info->flags & ZCAL_FLAG_RETIRED);
  if (reloaded) {
    EXPECT_FALSE(ReadInfo(old_segment)) << "the old segment is removed";
  }
}

}  // namespace
}  // namespace zcal::agent::testing::agent_faults_test
