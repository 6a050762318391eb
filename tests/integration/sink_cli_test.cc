// `zcal sink` and `zcal calibrate --path ADDR:PORT --key-file`, the real
// binaries on loopback: a served calibration, the refusals a user meets,
// and every bad option.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "test_util.h"
#include "run_command.h"

namespace zcal::agent::testing::sink_cli_test {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using zcal::testing::CommandResult;
using zcal::testing::RunCommand;
using zcal::testing::ZcalPath;

class SinkCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("zcal-sink-cli-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    keys_ = WriteKeys("keys", "fleet-1");
    other_keys_ = WriteKeys("other.keys", "fleet-1");
  }
  void TearDown() override {
    sink_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string WriteKeys(const std::string& name, const std::string& id) {
    const CommandResult r = RunCommand({ZcalPath(), "keygen", "--id", id});
    EXPECT_EQ(r.exit_status, 0) << r.err;
    const auto path = dir_ / name;
    std::ofstream(path) << r.out;
    ::chmod(path.c_str(), 0600);
    return path.string();
  }

  // Starts `zcal sink --listen 127.0.0.1:0 ARGS` and returns its port.
  int StartSink(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {ZcalPath(), "sink", "--listen", "127.0.0.1:0",
                                     "--report-every", "1s"};
    argv.insert(argv.end(), args.begin(), args.end());
    sink_ = AgentProcess::StartProgram(argv, dir_ / "sink.log");
    if (!sink_->WaitForLog("serving on 127.0.0.1:", 10s)) return 0;
    const std::string log = sink_->Log();
    const auto at = log.find("serving on 127.0.0.1:") + std::string("serving on 127.0.0.1:").size();
    return std::stoi(log.substr(at));
  }

  CommandResult Calibrate(int port, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {ZcalPath(), "calibrate", "--path",
                                     "127.0.0.1:" + std::to_string(port), "--budget", "1",
                                     "--methods", "copy,uring_send", "--max", "64K"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv);
  }

  std::filesystem::path dir_;
  std::string keys_;
  std::string other_keys_;
  std::unique_ptr<AgentProcess> sink_;
};

TEST_F(SinkCli, ACalibrationWithTheKeyIsServedAndCounted) {
  const int port = StartSink({"--key-file", keys_});
  ASSERT_GT(port, 0) << sink_->Log();
  const CommandResult r = Calibrate(port, {"--key-file", keys_, "--json"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_GT(doc.at("probes").at("copy").at("ok").get<int>(), 0);
  EXPECT_TRUE(doc.at("paths").contains("127.0.0.1:" + std::to_string(port)));
  ASSERT_TRUE(sink_->WaitForLog("served=1", 5s)) << sink_->Log();
  sink_->Signal(SIGTERM);
  EXPECT_EQ(sink_->WaitExit(5s), 0);
  EXPECT_THAT(sink_->Log(), HasSubstr("stopped by SIGTERM"));
}

TEST_F(SinkCli, WithoutTheRightKeyTheCalibrationExitsThreeSayingWhy) {
  const int port = StartSink({"--key-file", keys_});
  ASSERT_GT(port, 0) << sink_->Log();
  CommandResult r = Calibrate(port, {});
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_THAT(r.err, HasSubstr("bad_auth"));
  EXPECT_THAT(r.err, HasSubstr("--key-file"));
  // Same id, another secret.
  r = Calibrate(port, {"--key-file", other_keys_});
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_THAT(r.err, HasSubstr("does not accept this key"));
  ASSERT_TRUE(sink_->WaitForLog("auth_failed=2", 5s)) << sink_->Log();
}

TEST_F(SinkCli, AnAuthNoneSinkServesAClientWithoutAKey) {
  const int port = StartSink({"--auth", "none"});
  ASSERT_GT(port, 0) << sink_->Log();
  const CommandResult r = Calibrate(port, {});
  EXPECT_EQ(r.exit_status, 0) << r.err;
}

TEST_F(SinkCli, NoSinkThereIsExitThree) {
  // A port nothing listens on: bind one sink, stop it, use its port.
  const int port = StartSink({"--auth", "none"});
  ASSERT_GT(port, 0);
  sink_->Signal(SIGTERM);
  ASSERT_EQ(sink_->WaitExit(5s), 0);
  const CommandResult r = Calibrate(port, {});
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_THAT(r.err, HasSubstr("127.0.0.1:" + std::to_string(port)));
}

// Silent TCP connections to a sink on loopback, closed by Clear() or at the
// end of the test.
struct HeldConnections {
  std::vector<int> fds;
  HeldConnections(int port, int n) {
    for (int i = 0; i < n; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(static_cast<std::uint16_t>(port));
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
      fds.push_back(fd);
    }
  }
  ~HeldConnections() { Clear(); }
  void Clear() {
    for (int fd : fds) ::close(fd);
    fds.clear();
  }
};

TEST_F(SinkCli, ACalibrationRefusedForThePerSourceLimitNamesIt) {
  const int port = StartSink({"--key-file", keys_, "--max-connections-per-source", "4",
                              "--handshake-deadline", "60s"});
  ASSERT_NE(port, 0) << sink_->Log();
  HeldConnections held(port, 4);
  ASSERT_TRUE(sink_->WaitForLog("connections 4,", 10s)) << sink_->Log();
  CommandResult r = Calibrate(port, {"--key-file", keys_});
  EXPECT_EQ(r.exit_status, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("source_limit"));
  EXPECT_THAT(r.err, HasSubstr("sink.max_connections_per_source (zcal sink "
                               "--max-connections-per-source) allows"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("after 0 bytes")));
  EXPECT_TRUE(sink_->WaitForLog("refused per source 1,", 10s)) << sink_->Log();
  held.Clear();
  r = Calibrate(port, {"--key-file", keys_});
  EXPECT_EQ(r.exit_status, 0) << r.err;
}

TEST_F(SinkCli, BadOptionsExitTwoNamingTheOption) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--listen", "0.0.0.0:0"}, "--key-file: required"},
      {{"--listen", "127.0.0.1:0", "--allow", "10.0.0.1/8"}, "--allow"},
      {{"--listen", "127.0.0.1:0", "--allow", "2001:db8::/32"}, "can never match"},
      {{"--listen", "127.0.0.1:0", "--max-sessions", "0"}, "--max-sessions"},
      {{"--listen", "127.0.0.1:0", "--max-connections-per-source", "1"},
       "--max-connections-per-source: 4 to 4096"},
      {{"--listen", "127.0.0.1:0", "--max-session-seconds", "1500ms"}, "--max-session-seconds"},
      {{"--listen", "127.0.0.1:0", "--idle-timeout", "soon"}, "--idle-timeout"},
      {{"--listen", "127.0.0.1:0", "--auth", "maybe"}, "--auth"},
      {{"--listen", "127.0.0.1:0", "--key-file", "/nonexistent/keys"}, "--key-file"},
      {{"--listen", "localhost:7070"}, "--listen"},
      {{"--listen", "127.0.0.1:0", "--key-file", "KEYS", "--auth", "none"}, "--auth"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {ZcalPath(), "sink"};
    for (const std::string& a : c.args) argv.push_back(a == "KEYS" ? keys_ : a);
    const CommandResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_status, 2) << c.says << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says));
  }
  // A key file that is not one.
  const auto bad = dir_ / "bad.keys";
  std::ofstream(bad) << "fleet-1 abcd\n";
  const CommandResult r =
      RunCommand({ZcalPath(), "sink", "--listen", "127.0.0.1:0", "--key-file", bad.string()});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.keys:1"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("abcd")));  // never the secret
}

TEST_F(SinkCli, AnAddressInUseExitsOne) {
  const int port = StartSink({"--auth", "none"});
  ASSERT_GT(port, 0);
  const CommandResult r = RunCommand(
      {ZcalPath(), "sink", "--listen", "127.0.0.1:" + std::to_string(port), "--auth", "none"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot listen"));
}

// The value of the series `name{outcome="OUTCOME"}` in a scrape, or -1.
double OutcomeValue(const std::string& scrape, const std::string& name,
                    const std::string& outcome) {
  const std::string key = name + "{outcome=\"" + outcome + "\"} ";
  const auto at = scrape.find(key);
  return at == std::string::npos ? -1 : std::stod(scrape.substr(at + key.size()));
}

TEST_F(SinkCli, MetricsListenServesTheSinksCountersAndNoAgentSeries) {
  const int port = StartSink({"--key-file", keys_, "--metrics-listen", "127.0.0.1:0"});
  ASSERT_GT(port, 0) << sink_->Log();
  ASSERT_TRUE(sink_->WaitForLog("metrics at http://127.0.0.1:", 5s)) << sink_->Log();
  const std::string log = sink_->Log();
  const std::string marker = "metrics at http://127.0.0.1:";
  const int metrics_port = std::stoi(log.substr(log.find(marker) + marker.size()));

  ASSERT_EQ(Calibrate(port, {"--key-file", keys_}).exit_status, 0);
  EXPECT_EQ(Calibrate(port, {"--key-file", other_keys_}).exit_status, 3);
  ASSERT_TRUE(sink_->WaitForLog("auth_failed=1", 5s)) << sink_->Log();

  const auto scrape = HttpGet(metrics_port, "/metrics");
  ASSERT_TRUE(scrape) << sink_->Log();
  ASSERT_EQ(scrape->status, 200);
  const std::string& text = scrape->body;
  EXPECT_EQ(OutcomeValue(text, "zcal_sink_sessions_total", "served"), 1) << text;
  EXPECT_EQ(OutcomeValue(text, "zcal_sink_sessions_total", "auth_failed"), 1) << text;
  EXPECT_EQ(OutcomeValue(text, "zcal_sink_sessions_total", "busy"), 0) << text;
  const std::string bytes = "\nzcal_sink_bytes_received_total ";  // not its # HELP
  ASSERT_THAT(text, HasSubstr(bytes));
  EXPECT_GT(std::stod(text.substr(text.find(bytes) + bytes.size())), 0);
  EXPECT_THAT(text, HasSubstr("zcal_build_info{"));
  EXPECT_THAT(text, HasSubstr("zcal_http_responses_total"));
  // Nothing of an agent: no calibration, heartbeat or published result that
  // would stand at zero and look like an agent that never calibrates.
  for (const char* agent_only : {"zcal_calibrations_total", "zcal_heartbeat",
                                  "zcal_published", "zcal_agent_start_time_seconds",
                                  "zcal_threshold_bytes", "zcal_peer"}) {
    EXPECT_THAT(text, ::testing::Not(HasSubstr(agent_only))) << agent_only;
  }
  if (access("/usr/bin/promtool", X_OK) == 0) {
    const auto file = dir_ / "scrape.txt";
    std::ofstream(file) << text;
    const CommandResult check =
        RunCommand({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + file.string()});
    EXPECT_EQ(check.exit_status, 0) << check.out;
  }
  sink_->Signal(SIGTERM);
  EXPECT_EQ(sink_->WaitExit(5s), 0) << sink_->Log();
}

TEST_F(SinkCli, ABadOrBusyMetricsListenIsRefusedNamingTheOption) {
  CommandResult r = RunCommand({ZcalPath(), "sink", "--listen", "127.0.0.1:0", "--auth", "none",
                                "--metrics-listen", "localhost:9464"});
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--metrics-listen 'localhost:9464' is not ADDRESS:PORT"));
  // A port that one sink's metrics already hold.
  const int port = StartSink({"--auth", "none", "--metrics-listen", "127.0.0.1:0"});
  ASSERT_GT(port, 0) << sink_->Log();
  ASSERT_TRUE(sink_->WaitForLog("metrics at http://127.0.0.1:", 5s)) << sink_->Log();
  const std::string log = sink_->Log();
  const std::string marker = "metrics at http://127.0.0.1:";
  const std::string taken = "127.0.0.1:" + std::to_string(std::stoi(
                                               log.substr(log.find(marker) + marker.size())));
  r = RunCommand({ZcalPath(), "sink", "--listen", "127.0.0.1:0", "--auth", "none",
                  "--metrics-listen", taken});
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--metrics-listen"));
  EXPECT_THAT(r.err, HasSubstr("leave --metrics-listen out"));
}

TEST_F(SinkCli, ASinkKilledMidCalibrationExitsOneWithPartialResults) {
  const int port = StartSink({"--auth", "none"});
  ASSERT_GT(port, 0) << sink_->Log();
  auto calibrate = AgentProcess::StartProgram(
      {ZcalPath(), "calibrate", "--path", "127.0.0.1:" + std::to_string(port), "--budget", "4",
       "--methods", "copy,uring_send", "--max", "64K"},
      dir_ / "calibrate.log");
  // Killed once its probes are under way: the sink reports (every second)
  // that it received bytes of them.
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string log = sink_->Log();
        const std::size_t at = log.rfind("bytes received ");
        return at != std::string::npos && log.compare(at, 17, "bytes received 0,") != 0;
      },
      std::chrono::milliseconds(10'000)))
      << sink_->Log();
  sink_->Signal(SIGKILL);
  const auto status = calibrate->WaitExit(10s);
  ASSERT_TRUE(status) << calibrate->Log();
  EXPECT_EQ(*status, 1) << calibrate->Log();
  EXPECT_THAT(calibrate->Log(), HasSubstr("the session was lost"));
  EXPECT_THAT(calibrate->Log(), HasSubstr("the results are partial"));
}

TEST_F(SinkCli, CalibrateRefusesAKeyFileOffAPeerPath) {
  const CommandResult r =
      RunCommand({ZcalPath(), "calibrate", "--path", "loopback", "--key-file", keys_});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_THAT(r.err, HasSubstr("only a peer path"));
}

}  // namespace
}  // namespace zcal::agent::testing::sink_cli_test
