// The agent's `sink:` through the real binaries: `zcal calibrate --path`
// probes toward a running `zcal agent`, whose metrics count the session;
// the configuration and start errors an operator can hit.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "test_util.h"
#include "zcal/common/unique_fd.h"
#include "zcal/probes/peer/peer_client.h"

namespace zcal::agent::testing::agent_sink_test {
namespace {

using std::chrono::milliseconds;

// The value of the series `name` exactly as written ("name{labels}").
std::optional<double> SeriesValue(const std::string& metrics, const std::string& name) {
  const std::size_t at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return std::nullopt;
  return std::stod(metrics.substr(at + name.size() + 2));
}

// A key file made by the real `zcal keygen`, readable by its owner only.
std::filesystem::path MakeKeyFile(const TempDir& dir) {
  const CommandResult keygen = RunCommand({ZcalBinary(), "keygen"});
  EXPECT_EQ(keygen.status, 0) << keygen.err;
  const std::filesystem::path path = dir.path() / "peer.keys";
  WriteFile(path, keygen.out);
  chmod(path.c_str(), 0600);
  return path;
}

TEST(AgentSink, ServesACalibrationAndCountsItInTheMetrics) {
  TempDir dir;
  const std::filesystem::path keys = MakeKeyFile(dir);
  const int port = FreePort();
  AgentSettings settings;
  settings.segment = UniqueSegment();
  settings.state = dir.path() / "state.json";
  // No calibration of its own: while the agent probes, its sink answers busy.
  settings.at_startup = false;
  settings.sink_listen = "127.0.0.1:" + std::to_string(port);
  settings.sink_key_file = keys.string();
  SegmentCleanup cleanup(settings.segment);
  WriteFile(dir.path() / "agent.yaml", AgentConfig(settings));
  auto agent = AgentProcess::Start(dir.path() / "agent.yaml", dir.path() / "agent.log");
  ASSERT_TRUE(agent->WaitForLog("serving metrics at", milliseconds(20'000))) << agent->Log();
  ASSERT_TRUE(agent->WaitForLog("serving the peer sink on " + settings.sink_listen + " (1 key(s)",
                                milliseconds(5000)))
      << agent->Log();

  const auto before = HttpGet(agent->MetricsPort(), "/metrics");
  ASSERT_TRUE(before);
  for (const std::string outcome : {"served", "busy", "not_allowed", "auth_failed",
                                    "protocol_error", "timeout", "limit",
                                    "unsupported_version"}) {
    EXPECT_EQ(SeriesValue(before->body, "zcal_sink_sessions_total{outcome=\"" + outcome + "\"}"),
              0.0)
        << outcome << "\n" << before->body;
  }
  EXPECT_EQ(SeriesValue(before->body, "zcal_sink_sessions_open"), 0.0);

  const CommandResult calibrate =
      RunCommand({ZcalBinary(), "calibrate", "--path", settings.sink_listen, "--key-file",
                  keys.string(), "--budget", "2"});
  EXPECT_EQ(calibrate.status, 0) << calibrate.out << calibrate.err << agent->Log();

  const auto after = HttpGet(agent->MetricsPort(), "/metrics");
  ASSERT_TRUE(after);
  EXPECT_EQ(SeriesValue(after->body, "zcal_sink_sessions_total{outcome=\"served\"}"), 1.0)
      << after->body;
  EXPECT_EQ(SeriesValue(after->body, "zcal_sink_sessions_total{outcome=\"auth_failed\"}"), 0.0);
  const auto bytes = SeriesValue(after->body, "zcal_sink_bytes_received_total");
  ASSERT_TRUE(bytes) << after->body;
  EXPECT_GT(*bytes, 0.0);
  std::printf("sink served 1 session, %.0f bytes received\n", *bytes);
  EXPECT_EQ(SeriesValue(after->body, "zcal_sink_sessions_open"), 0.0);

  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(10'000)), 0) << agent->Log();
}

// An agent that serves a keyed sink on a free loopback port and does not
// calibrate on its own (while it probes, its sink answers busy).
struct KeyedSinkAgent {
  KeyedSinkAgent() : keys(MakeKeyFile(dir)), port(FreePort()) {
    settings.segment = UniqueSegment();
    settings.state = dir.path() / "state.json";
    settings.at_startup = false;
    settings.sink_listen = "127.0.0.1:" + std::to_string(port);
    settings.sink_key_file = keys.string();
    cleanup = std::make_unique<SegmentCleanup>(settings.segment);
    WriteFile(dir.path() / "agent.yaml", AgentConfig(settings));
    agent = AgentProcess::Start(dir.path() / "agent.yaml", dir.path() / "agent.log");
  }
  TempDir dir;
  std::filesystem::path keys;
  int port;
  AgentSettings settings;
  std::unique_ptr<SegmentCleanup> cleanup;
  std::unique_ptr<AgentProcess> agent;
};

std::size_t Entries(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

std::uint64_t Heartbeat(const std::string& segment) {
  const CommandResult show = RunCommand({ZcalBinary(), "show", "--segment", segment, "--json"});
  if (show.status != 0) return 0;
  return nlohmann::json::parse(show.out).at("heartbeat_ns").get<std::uint64_t>();
}

// 500 connections at once against the agent's own sink: its file
// descriptors and threads stay bounded, its heartbeat and metrics go on,
// and a legitimate probe is served afterwards.
TEST(AgentSink, FiveHundredConnectionsLeaveTheAgentBeatingAndAProbeServedAfter) {
  KeyedSinkAgent started;
  const std::filesystem::path& keys = started.keys;
  const int port = started.port;
  const AgentSettings& settings = started.settings;
  auto& agent = started.agent;
  ASSERT_TRUE(agent->WaitForLog("serving the peer sink on", milliseconds(20'000)))
      << agent->Log();
  const std::filesystem::path proc = "/proc/" + std::to_string(agent->pid());
  const std::size_t fds_before = Entries(proc / "fd");
  const std::size_t threads_before = Entries(proc / "task");

  sockaddr_in sink{};
  sink.sin_family = AF_INET;
  sink.sin_port = htons(static_cast<std::uint16_t>(port));
  sink.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::vector<common::UniqueFd> clients;
  for (int i = 0; i < 500; ++i) {
    common::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(fd) << "socket " << i;
    (void)::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sink), sizeof sink);
    clients.push_back(std::move(fd));
  }
  // Held (silent) while the agent is watched: its descriptors, its metrics
  // and its heartbeat, sampled until the sink is full (it refused
  // connections over its limits) and the segment has had two heartbeats
  // since. The bound only ends a hung agent's test.
  const std::uint64_t beat_before = Heartbeat(settings.segment);
  std::size_t most_fds = 0;
  double most_open = 0;
  bool scraped = true;
  std::optional<std::uint64_t> beat_when_full;
  std::uint64_t beat_after = beat_before;
  int beats_while_full = 0;
  const bool beating_while_full = WaitFor(
      [&] {
        most_fds = std::max(most_fds, Entries(proc / "fd"));
        const auto metrics = HttpGet(agent->MetricsPort(), "/metrics");
        if (!metrics) {
          scraped = false;
          return true;  // asserted below
        }
        most_open = std::max(
            most_open, SeriesValue(metrics->body, "zcal_sink_connections_open").value_or(-1));
        const std::uint64_t beat = Heartbeat(settings.segment);
        if (beat_when_full && beat > beat_after) ++beats_while_full;
        beat_after = beat;
        const bool full =
            SeriesValue(metrics->body, "zcal_sink_sessions_total{outcome=\"limit\"}")
                .value_or(0) > 0;
        if (full && !beat_when_full) beat_when_full = beat;
        return beats_while_full >= 2;
      },
      milliseconds(60'000));
  ASSERT_TRUE(scraped) << "a scrape while 500 connections are held failed\n" << agent->Log();
  EXPECT_TRUE(beating_while_full)
      << (beat_when_full ? "the heartbeat stopped while the sink was full"
                         : "the sink refused no connection over its limits")
      << " (60 s)\n"
      << agent->Log();
  EXPECT_GT(beat_after, beat_before) << "the heartbeat went on";
  EXPECT_LE(most_open, 64.0) << "sink.max_connections";
  // The sink's 64 sockets, and a few the metrics listener and `zcal show`
  // hold for a moment: nowhere near one per client.
  EXPECT_LE(most_fds, fds_before + 64 + 8) << fds_before;
  EXPECT_EQ(Entries(proc / "task"), threads_before) << "no thread per client";
  std::printf("500 connections held: agent fds %zu -> at most %zu, sink sockets at most %.0f, "
              "threads %zu\n",
              fds_before, most_fds, most_open, threads_before);
  clients.clear();

  const CommandResult calibrate =
      RunCommand({ZcalBinary(), "calibrate", "--path", settings.sink_listen, "--key-file",
                  keys.string(), "--budget", "1", "--methods", "copy,uring_send"});
  EXPECT_EQ(calibrate.status, 0) << calibrate.err << agent->Log();
  // The sink counts the session when it reads the end of the control
  // connection, which on a loaded machine may come a scheduling slice after
  // the client has exited.
  std::optional<HttpResponse> metrics;
  WaitFor(
      [&] {
        metrics = HttpGet(agent->MetricsPort(), "/metrics");
        return metrics &&
               SeriesValue(metrics->body, "zcal_sink_sessions_total{outcome=\"served\"}") == 1.0;
      },
      milliseconds(5000));
  ASSERT_TRUE(metrics);
  EXPECT_EQ(SeriesValue(metrics->body, "zcal_sink_sessions_total{outcome=\"served\"}"), 1.0)
      << metrics->body;
  EXPECT_GT(SeriesValue(metrics->body, "zcal_sink_sessions_total{outcome=\"limit\"}").value_or(0),
            0.0)
      << "the connections over the limit were counted\n" << metrics->body;

  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(10'000)), 0) << agent->Log();
}

TEST(AgentSink, TheAgentDoesNotCalibrateWhileItsSinkServesAPeer) {
  KeyedSinkAgent started;
  const std::filesystem::path& keys = started.keys;
  const int port = started.port;
  auto& agent = started.agent;
  ASSERT_TRUE(agent->WaitForLog("serving the peer sink on", milliseconds(20'000)))
      << agent->Log();

  // A peer's session, held open by this test.
  const auto ring = probes::peer::LoadKeyFile(keys.string());
  ASSERT_TRUE(ring) << ring.error().message;
  auto session = probes::PeerSession::Open(
      {*common::ParseIpAddress("127.0.0.1"), static_cast<std::uint16_t>(port)},
      ring->Presented(), probes::PeerSessionRequest{std::chrono::seconds(60)},
      milliseconds(5000));
  ASSERT_TRUE(session) << session.error().message;

  agent->Signal(SIGUSR1);
  EXPECT_TRUE(agent->WaitForLog(
      "the sink is serving a peer's probe; the signal calibration waits", milliseconds(10'000)))
      << agent->Log();
  EXPECT_FALSE(Contains(agent->Log(), "calibration started"));

  // Once the session ends, the retry a few seconds later calibrates.
  session->Close();
  EXPECT_TRUE(agent->WaitForLog("calibration started (signal)", milliseconds(20'000)))
      << agent->Log();
  EXPECT_TRUE(agent->WaitForLog("calibration finished", milliseconds(30'000))) << agent->Log();
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(10'000)), 0) << agent->Log();
}

TEST(AgentSink, AnAddressInUseIsAnErrorAtStart) {
  // Holds the port the agent's sink would listen on.
  const int held = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(held, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(held, 1), 0);
  ASSERT_EQ(getsockname(held, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string listen_at = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));

  TempDir dir;
  AgentSettings settings;
  settings.segment = UniqueSegment();
  settings.state = dir.path() / "state.json";
  settings.sink_listen = listen_at;
  SegmentCleanup cleanup(settings.segment);
  WriteFile(dir.path() / "agent.yaml", AgentConfig(settings));
  auto agent = AgentProcess::Start(dir.path() / "agent.yaml", dir.path() / "agent.log");
  EXPECT_EQ(agent->WaitExit(milliseconds(20'000)), 1) << agent->Log();
  EXPECT_TRUE(Contains(agent->Log(), "cannot start the peer sink (sink.listen " + listen_at + ")"))
      << agent->Log();
  close(held);
}

// Listens on a free loopback port until destroyed; "127.0.0.1:PORT".
class HeldPort {
 public:
  HeldPort() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(listen(fd_, 1), 0);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    text_ = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  }
  ~HeldPort() { close(fd_); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  const std::string& text() const { return text_; }

 private:
  int fd_;
  std::string text_;
};

TEST(AgentSink, AReloadMovesTheSinkOrKeepsItWhenTheNewOneCannotStart) {
  TempDir dir;
  AgentSettings settings;
  settings.segment = UniqueSegment();
  settings.state = dir.path() / "state.json";
  settings.at_startup = false;
  settings.sink_listen = "127.0.0.1:" + std::to_string(FreePort());
  SegmentCleanup cleanup(settings.segment);
  const std::filesystem::path config = dir.path() / "agent.yaml";
  WriteFile(config, AgentConfig(settings));
  auto agent = AgentProcess::Start(config, dir.path() / "agent.log");
  ASSERT_TRUE(agent->WaitForLog("serving the peer sink on " + settings.sink_listen,
                                milliseconds(20'000)))
      << agent->Log();

  // A busy address: the reload is rejected and the old sink keeps serving.
  {
    HeldPort held;
    AgentSettings busy = settings;
    busy.sink_listen = held.text();
    WriteFile(config, AgentConfig(busy));
    agent->Signal(SIGHUP);
    ASSERT_TRUE(agent->WaitForLog("configuration reload rejected", milliseconds(10'000)))
        << agent->Log();
    EXPECT_TRUE(Contains(agent->Log(), "cannot start the peer sink (sink.listen " +
                                           held.text() + ")"));
  }
  const CommandResult old_sink = RunCommand(
      {ZcalBinary(), "calibrate", "--path", settings.sink_listen, "--budget", "1"});
  EXPECT_EQ(old_sink.status, 0) << old_sink.err << agent->Log();

  // A free address: the sink moves there.
  AgentSettings moved = settings;
  moved.sink_listen = "127.0.0.1:" + std::to_string(FreePort());
  WriteFile(config, AgentConfig(moved));
  agent->Signal(SIGHUP);
  ASSERT_TRUE(agent->WaitForLog("serving the peer sink on " + moved.sink_listen,
                                milliseconds(10'000)))
      << agent->Log();
  EXPECT_TRUE(agent->WaitForLog("changed: sink", milliseconds(5000))) << agent->Log();
  const CommandResult new_sink = RunCommand(
      {ZcalBinary(), "calibrate", "--path", moved.sink_listen, "--budget", "1"});
  EXPECT_EQ(new_sink.status, 0) << new_sink.err << agent->Log();
  const auto metrics = HttpGet(agent->MetricsPort(), "/metrics");
  ASSERT_TRUE(metrics);
  // The totals of the replaced sink are carried over.
  EXPECT_EQ(SeriesValue(metrics->body, "zcal_sink_sessions_total{outcome=\"served\"}"), 2.0)
      << metrics->body;
  agent->Signal(SIGTERM);
  EXPECT_EQ(agent->WaitExit(milliseconds(10'000)), 0) << agent->Log();
}

TEST(AgentSink, CheckConfigRequiresAKeyFileOffLoopback) {
  TempDir dir;
  const std::filesystem::path config = dir.path() / "agent.yaml";
  WriteFile(config, "sink: {listen: \"0.0.0.0:7070\"}\n");
  const CommandResult result =
      RunCommand({ZcalBinary(), "agent", "--check-config", config.string()});
  EXPECT_EQ(result.status, 2);
  EXPECT_TRUE(Contains(result.err, config.string() + ":1:7: sink.key_file: required to listen "
                                   "on 0.0.0.0 (not loopback)"))
      << result.err;
}

}  // namespace
}  // namespace zcal::agent::testing::agent_sink_test
