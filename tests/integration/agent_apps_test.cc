// The real agent reads the report objects of real processes: the example
// sender on loopback (its /metrics counts equal the sender's own summary,
// and its object's counts stay after it exits; also when it exits before
// the agent's next read, with the closed object it leaves), 1,000 short-lived
// processes killed with their objects left behind (removed by the agent,
// totals exact), and the field contradiction end to end: copies on
// loopback never trip it, copies through a veth where the host default
// says zerocopy pays flag the entries, count, recalibrate, and turn a
// guard's answers to copy. Each test's processes write their objects into a private
// directory bind-mounted on /dev/shm in a mount namespace of their own, so
// that the agent reads theirs only (root only; skipped otherwise).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent_harness.h"
#include "netns.h"
#include "test_util.h"

namespace zcal::agent::testing::agent_apps_test {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

// A directory under /dev/shm (tmpfs, as shm_open wants) that the tests'
// processes see as their /dev/shm; removed with what is left in it.
class PrivateShm {
 public:
  PrivateShm() {
    static std::atomic<int> counter{0};
    path_ = "/dev/shm/zcal-apps-it-" + std::to_string(getpid()) + "-" +
            std::to_string(counter++);
    fs::create_directory(path_);
  }
  ~PrivateShm() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  PrivateShm(const PrivateShm&) = delete;
  PrivateShm& operator=(const PrivateShm&) = delete;
  const std::string& path() const { return path_; }
  std::size_t Objects() const {
    std::size_t n = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(path_, ec)) {
      n += entry.path().filename().string().starts_with("zcal-report-") ? 1 : 0;
    }
    return n;
  }
  // argv running `command` (sh) with this directory as /dev/shm.
  std::vector<std::string> Run(const std::string& command) const {
    return {"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
            "mount --bind " + path_ + " /dev/shm && " + command};
  }

 private:
  std::string path_;
};

std::optional<std::string> CannotIsolate() {
  PrivateShm probe;
  const CommandResult r = RunCommand(probe.Run("true"));
  if (r.status != 0) return "a private /dev/shm needs root (unshare -m, mount --bind): " + r.err;
  return std::nullopt;
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The sum of the series of `family` whose labels hold every fragment.
double Sum(const std::string& text, const std::string& family,
           const std::vector<std::string>& fragments) {
  double sum = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(family + "{")) continue;
    const std::size_t close = line.rfind('}');
    if (close == std::string::npos) continue;
    const std::string labels = line.substr(0, close);
    bool all = true;
    for (const std::string& f : fragments) all = all && labels.find(f) != std::string::npos;
    if (all) sum += std::strtod(line.c_str() + close + 1, nullptr);
  }
  return sum;
}

// The app labels of zcal_app_reports.
std::set<std::string> Apps(const std::string& text) {
  std::set<std::string> apps;
  std::istringstream lines(text);
  const std::string prefix = "zcal_app_reports{app=\"";
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(prefix)) continue;
    apps.insert(line.substr(prefix.size(), line.find('"', prefix.size()) - prefix.size()));
  }
  return apps;
}

double Heartbeat(int port) {
  return Series(port, "zcal_segment_heartbeat_timestamp_seconds");
}

// Waits until the agent has finished two heartbeats (and so two reads of
// the report objects) after this call.
bool TwoMoreReads(int port) {
  const double first = Heartbeat(port);
  double second = first;
  return WaitFor([&] { return (second = Heartbeat(port)) > first; }, milliseconds(30'000)) &&
         WaitFor([&] { return Heartbeat(port) > second; }, milliseconds(30'000));
}

struct Agent {
  TempDir dir;
  std::string segment;
  std::unique_ptr<SegmentCleanup> cleanup;
  std::unique_ptr<AgentProcess> process;
  int port = 0;
};

void StartAgent(Agent& agent, const PrivateShm& shm) {
  AgentSettings settings;
  settings.segment = UniqueSegment();
  settings.state = agent.dir.path() / "state.json";
  settings.at_startup = false;
  settings.apps = "apps:\n  directory: " + shm.path() +
                  "\n  max_objects: 256\n  owner_check: on\n";
  agent.cleanup = std::make_unique<SegmentCleanup>(settings.segment);
  agent.segment = settings.segment;
  WriteFile(agent.dir.path() / "agent.yaml", AgentConfig(settings));
  agent.process =
      AgentProcess::Start(agent.dir.path() / "agent.yaml", agent.dir.path() / "agent.log");
  ASSERT_TRUE(WaitFor([&] { return (agent.port = agent.process->MetricsPort()) > 0; },
                      milliseconds(30'000)))
      << agent.process->Log();
}

// A TCP receiver on loopback that reads until the sender shuts down its
// side, then holds the connection open until Release().
class Receiver {
 public:
  Receiver() {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(listener_, 1) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      std::abort();
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      const int fd = accept(listener_, nullptr, nullptr);
      char buffer[1 << 16];
      while (fd >= 0 && read(fd, buffer, sizeof buffer) > 0) {
      }
      eof_ = true;
      while (!release_) std::this_thread::sleep_for(milliseconds(10));
      if (fd >= 0) close(fd);
    });
  }
  ~Receiver() {
    Release();
    shutdown(listener_, SHUT_RDWR);
    thread_.join();
    close(listener_);
  }
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;
  int port() const { return port_; }
  bool eof() const { return eof_; }
  void Release() { release_ = true; }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> eof_{false};
  std::atomic<bool> release_{false};
  std::thread thread_;
};

// "key=value" fields of the sender's summary line.
std::map<std::string, double> Summary(const std::string& text) {
  std::map<std::string, double> fields;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    const std::size_t eq = word.find('=');
    if (eq != std::string::npos) fields[word.substr(0, eq)] = std::strtod(word.c_str() + eq + 1, nullptr);
  }
  return fields;
}

// The agent's /metrics for the example sender `app` (msg_zerocopy) equal
// the sender's own summary line, and its size histogram counts `messages`.
void ExpectTheSendersCounts(const std::string& text, const std::string& app,
                            const std::map<std::string, double>& summary, double messages) {
  const std::string a = "app=\"" + app + "\"";
  const std::string zc = "method=\"msg_zerocopy\"";
  EXPECT_EQ(Sum(text, "zcal_app_sends_total", {a, zc, "decision=\"zerocopy\""}),
            summary.at("zerocopy_messages"));
  EXPECT_EQ(Sum(text, "zcal_app_sends_total", {a, zc, "decision=\"copy\""}),
            summary.at("copy_messages"));
  EXPECT_EQ(Sum(text, "zcal_app_bytes_total", {a, zc}), summary.at("bytes"));
  EXPECT_EQ(Sum(text, "zcal_app_completions_total", {a, zc}), summary.at("completions"));
  EXPECT_EQ(Sum(text, "zcal_app_completions_total", {a, zc, "copied=\"true\""}),
            summary.at("copied"));
  EXPECT_EQ(Sum(text, "zcal_app_message_size_bytes_count", {a, zc}), messages);
}

TEST(AgentApps, CountsTheExampleSendersSendsAndCompletionsAsItsOwnSummary) {
  if (const auto why = CannotIsolate()) GTEST_SKIP() << *why;
  PrivateShm shm;
  Agent agent;
  ASSERT_NO_FATAL_FAILURE(StartAgent(agent, shm));
  const std::string app = "it-sender-" + std::to_string(getpid());
  Receiver receiver;
  const fs::path out = agent.dir.path() / "sender.out";
  // No segment: the fallback answers zerocopy; loopback copies every
  // zerocopy send, so the guard turns itself off after copied completions.
  auto sender = AgentProcess::StartProgram(
      shm.Run(Env("ZC_SENDER") + " --segment /zcal-it-none-" + std::to_string(getpid()) +
              " --fallback zerocopy --count 3000 --sizes 1000,4096,65536 --report " + app +
              " 127.0.0.1 " + std::to_string(receiver.port()) + " > " + out.string()),
      agent.dir.path() / "sender.log");
  ASSERT_TRUE(WaitFor([&] { return receiver.eof(); }, milliseconds(60'000)))
      << ReadFile(agent.dir.path() / "sender.log");
  // Everything is counted once the sender shut its side down; two reads
  // later the agent holds its final counts, before the object goes.
  ASSERT_TRUE(TwoMoreReads(agent.port));
  receiver.Release();
  ASSERT_EQ(sender->WaitExit(milliseconds(30'000)), 0) << ReadFile(agent.dir.path() / "sender.log");
  const auto summary = Summary(ReadFile(out));
  ASSERT_EQ(summary.at("messages"), 3000) << ReadFile(out);
  // The owner removed its object at exit; the agent folds its counts.
  std::string text;
  ASSERT_TRUE(WaitFor(
      [&] {
        text = Scrape(agent.port);
        return Contains(text, "zcal_app_reports{app=\"" + app + "\"} 0\n");
      },
      milliseconds(30'000)))
      << text;
  EXPECT_EQ(shm.Objects(), 0u);
  ExpectTheSendersCounts(text, app, summary, 3000);
  const std::string a = "app=\"" + app + "\"";
  EXPECT_GT(summary.at("completions"), 0) << "loopback gave no zerocopy completion";
  // The figures, for the log: the sender's own line and the agent's series.
  std::printf("%s", ReadFile(out).c_str());
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(a) != std::string::npos && !line.starts_with("zcal_app_message_size_bytes_bucket"))
      std::printf("%s\n", line.c_str());
  }
  // After more reads, the exited process's counts are still there.
  ASSERT_TRUE(TwoMoreReads(agent.port));
  EXPECT_EQ(Sum(Scrape(agent.port), "zcal_app_sends_total", {a}), 3000);
}

// The flags word of a report object (docs/shm-abi.md, "Header": offset 84).
std::uint32_t ReportFlags(const fs::path& object) {
  std::uint32_t flags = 0;
  std::ifstream in(object, std::ios::binary);
  in.seekg(84);
  in.read(reinterpret_cast<char*>(&flags), sizeof flags);
  return in ? flags : 0xffffffffu;
}

// A sender that exits before the agent reads again: libzcal sees the
// agent's live heartbeat and leaves its closed object, whose counts the
// agent then folds, every one of them, once, and removes.
TEST(AgentApps, ASenderThatExitsBeforeTheAgentsNextReadIsCountedExactly) {
  if (const auto why = CannotIsolate()) GTEST_SKIP() << *why;
  PrivateShm shm;
  Agent agent;
  ASSERT_NO_FATAL_FAILURE(StartAgent(agent, shm));
  // The sender's /dev/shm is the private directory: the agent's segment
  // goes there too, as the same file (a hard link, so its heartbeat moves).
  const fs::path segment = "/dev/shm" + agent.segment;
  ASSERT_TRUE(WaitFor([&] { return fs::exists(segment); }, milliseconds(30'000)));
  fs::create_hard_link(segment, shm.path() + agent.segment);
  const std::string app = "it-exit-" + std::to_string(getpid());
  Receiver receiver;
  const fs::path out = agent.dir.path() / "sender.out";
  auto sender = AgentProcess::StartProgram(
      shm.Run(Env("ZC_SENDER") + " --segment " + agent.segment +
              " --fallback zerocopy --count 2000 --sizes 1000,65536 --report " + app +
              " 127.0.0.1 " + std::to_string(receiver.port()) + " > " + out.string()),
      agent.dir.path() / "sender.log");
  ASSERT_TRUE(WaitFor([&] { return receiver.eof(); }, milliseconds(60'000)))
      << ReadFile(agent.dir.path() / "sender.log");
  // The agent reads nothing more until the sender is gone: whatever the
  // sender counted after the agent's last read reaches it only through
  // the object left behind.
  agent.process->Signal(SIGSTOP);
  receiver.Release();
  const std::optional<int> status = sender->WaitExit(milliseconds(30'000));
  std::vector<fs::path> objects;
  for (const auto& entry : fs::directory_iterator(shm.path())) {
    if (entry.path().filename().string().starts_with("zcal-report-")) objects.push_back(entry.path());
  }
  const std::uint32_t flags = objects.size() == 1 ? ReportFlags(objects[0]) : 0;
  agent.process->Signal(SIGCONT);
  ASSERT_EQ(status, 0) << ReadFile(agent.dir.path() / "sender.log");
  ASSERT_EQ(objects.size(), 1u) << "libzcal removed its object at exit: nothing left to fold";
  EXPECT_EQ(flags, 1u) << "CLOSED";
  const auto summary = Summary(ReadFile(out));
  ASSERT_EQ(summary.at("messages"), 2000) << ReadFile(out);
  std::string text;
  ASSERT_TRUE(WaitFor(
      [&] {
        text = Scrape(agent.port);
        return shm.Objects() == 0 &&
               Contains(text, "zcal_app_reports{app=\"" + app + "\"} 0\n");
      },
      milliseconds(30'000)))
      << shm.Objects() << " objects left\n"
      << text;
  ExpectTheSendersCounts(text, app, summary, 2000);
  const std::string a = "app=\"" + app + "\"";
  EXPECT_EQ(Series(agent.port, "zcal_app_report_remove_failures_total"), 0);
  std::printf("%s", ReadFile(out).c_str());
  // Folded once: more reads add nothing.
  ASSERT_TRUE(TwoMoreReads(agent.port));
  EXPECT_EQ(Sum(Scrape(agent.port), "zcal_app_sends_total", {a}), 2000);
}

TEST(AgentApps, AThousandKilledProcessesLeaveNoObjectsAndExactTotals) {
  if (const auto why = CannotIsolate()) GTEST_SKIP() << *why;
  PrivateShm shm;
  Agent agent;
  ASSERT_NO_FATAL_FAILURE(StartAgent(agent, shm));
  const std::string app = "it-churn-" + std::to_string(getpid());
  // Each answers 3 sends and reports 3 completions, 1 copied, then dies
  // by SIGKILL, leaving its object without the CLOSED flag.
  const CommandResult run = RunCommand(
      shm.Run("i=0; while [ $i -lt 1000 ]; do " + Env("REPORT_CHURN") + " " + app +
              " 3 1; i=$((i+1)); done; true"));
  ASSERT_EQ(run.status, 0) << run.err;
  std::string text;
  ASSERT_TRUE(WaitFor(
      [&] {
        text = Scrape(agent.port);
        return shm.Objects() == 0 &&
               Sum(text, "zcal_app_sends_total", {"app=\"" + app + "\""}) == 3000;
      },
      milliseconds(120'000)))
      << shm.Objects() << " objects left\n"
      << text;
  const std::string a = "app=\"" + app + "\"";
  EXPECT_EQ(Sum(text, "zcal_app_sends_total", {a, "decision=\"zerocopy\""}), 3000);
  EXPECT_EQ(Sum(text, "zcal_app_bytes_total", {a}), 3000 * 4096);
  EXPECT_EQ(Sum(text, "zcal_app_completions_total", {a, "copied=\"true\""}), 1000);
  EXPECT_EQ(Sum(text, "zcal_app_completions_total", {a, "copied=\"false\""}), 2000);
  EXPECT_TRUE(Contains(text, "zcal_app_reports{app=\"" + app + "\"} 0\n"));
  EXPECT_GE(Series(agent.port, "zcal_app_reports_removed_total"), 1000);
  // One name's series, nothing per process.
  EXPECT_EQ(Apps(text), std::set<std::string>{app});
  EXPECT_EQ(Series(agent.port, "zcal_app_report_refusals_total{kind=\"layout\"}"), 0);
}


// The host default, from saved discard results, for a host whose NIC (fake
// eth0) no IOMMU translates: msg_zerocopy from 24 KiB. The apps' window is
// the shortest allowed and the rule trips at 200 completions.
void StartLearningAgent(Agent& agent, const PrivateShm& shm) {
  AgentSettings settings;
  settings.segment = UniqueSegment();
  settings.state = agent.dir.path() / "state.json";
  settings.at_startup = false;
  settings.discard = true;
  settings.budget_seconds = 1;
  const fs::path root = agent.dir.path() / "root";
  MakeFakeNic(root, "");
  settings.host_root = root.string();
  settings.host_default_interface = "eth0";
  settings.apps = "apps:\n  directory: " + shm.path() +
                  "\n  owner_check: on\n  window: 1m\n  contradiction_min_completions: 200\n";
  agent.cleanup = std::make_unique<SegmentCleanup>(settings.segment);
  agent.segment = settings.segment;
  WriteFile(agent.dir.path() / "agent.yaml", AgentConfig(settings));
  // A first start learns this host's fingerprint (it logs the change from
  // the saved one); saved with it, the second start finds the host
  // unchanged and keeps the saved results instead of calibrating, whose
  // answer on a loaded machine could be anything.
  SaveDiscardState(settings.state);
  {
    auto first = AgentProcess::Start(agent.dir.path() / "agent.yaml",
                                     agent.dir.path() / "first.log");
    const std::string marker = "(fingerprint 0000000000000001 -> ";
    ASSERT_TRUE(first->WaitForLog(marker, milliseconds(30'000))) << first->Log();
    const std::string log = first->Log();
    const std::string fingerprint = log.substr(log.find(marker) + marker.size(), 16);
    first.reset();  // SIGKILL: it must not save a state of its own
    SaveDiscardState(settings.state, fingerprint);
  }
  agent.process =
      AgentProcess::Start(agent.dir.path() / "agent.yaml", agent.dir.path() / "agent.log");
  ASSERT_TRUE(WaitFor([&] { return (agent.port = agent.process->MetricsPort()) > 0; },
                      milliseconds(30'000)))
      << agent.process->Log();
}

// The host default entries of msg_zerocopy as `zcal show --json` prints them.
std::vector<nlohmann::json> HostDefaults(const std::string& segment) {
  const CommandResult show = RunCommand({ZcalBinary(), "show", "--segment", segment, "--json"});
  std::vector<nlohmann::json> out;
  if (show.status != 0) return out;
  const nlohmann::json doc = nlohmann::json::parse(show.out, nullptr, false);
  if (!doc.is_object() || !doc.contains("entries")) {
    ADD_FAILURE() << "zcal show --json: " << show.out;
    return out;
  }
  for (const auto& e : doc["entries"]) {
    if (e.value("scope", "") == "host_default" && e.value("method", "") == "msg_zerocopy") {
      out.push_back(e);
    }
  }
  return out;
}

// Whether every entry that says zerocopy pays (threshold or always) is
// flagged, and there is one: a recalibration may publish `never` for a
// class, which is not flagged (nothing to contradict).
// Whether no entry says zerocopy pays (a threshold or always).
bool NonePays(const std::vector<nlohmann::json>& entries) {
  return std::none_of(entries.begin(), entries.end(), [](const nlohmann::json& e) {
    const std::string verdict = e.value("verdict", "");
    return verdict == "threshold" || verdict == "always";
  });
}

bool AllContradicted(const std::vector<nlohmann::json>& entries) {
  std::size_t paying = 0;
  for (const auto& e : entries) {
    const std::string verdict = e.value("verdict", "");
    if (verdict != "threshold" && verdict != "always") continue;
    ++paying;
    if (!e.value("contradicted", false)) return false;
  }
  return paying > 0;
}

// argv: `command` in a mount namespace whose /dev/shm is `shm`'s directory
// with the agent's segment bound into it, so that libzcal reads the agent's
// segment and writes its report where the agent reads.
std::vector<std::string> WithSegment(const PrivateShm& shm, const std::string& segment,
                                     const std::string& command) {
  const std::string inside = shm.path() + segment;
  return {"/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
          "touch " + inside + " && mount --bind /dev/shm" + segment + " " + inside +
              " && mount --rbind " + shm.path() + " /dev/shm && " + command};
}

TEST(AgentApps, CopiesWhereTheHostDefaultSaysZerocopyFlagItAndRecalibrateButLoopbackNever) {
  if (const auto why = CannotIsolate()) GTEST_SKIP() << *why;
  if (const std::string why = NetnsUnavailable(); !why.empty()) GTEST_SKIP() << why;
  SweepLeftoverNamespaces();
  PrivateShm shm;
  Agent agent;
  ASSERT_NO_FATAL_FAILURE(StartLearningAgent(agent, shm));
  ASSERT_FALSE(HostDefaults(agent.segment).empty()) << agent.process->Log();
  ASSERT_FALSE(AllContradicted(HostDefaults(agent.segment)));
  const std::string flagged = "field contradiction on host_default/msg_zerocopy";

  // Loopback first: every zerocopy send copied, answered by the host
  // default (no loopback entry yet), and still no contradiction.
  {
    Receiver receiver;
    const std::string app = "it-loop-" + std::to_string(getpid());
    auto sender = AgentProcess::StartProgram(
        WithSegment(shm, agent.segment,
                    Env("ZC_SENDER") + " --segment " + agent.segment +
                        " --guard off --count 1000 --sizes 65536 --report " + app +
                        " 127.0.0.1 " + std::to_string(receiver.port())),
        agent.dir.path() / "loop.log");
    ASSERT_TRUE(WaitFor([&] { return receiver.eof(); }, milliseconds(60'000)))
        << ReadFile(agent.dir.path() / "loop.log");
    ASSERT_TRUE(TwoMoreReads(agent.port));
    receiver.Release();
    ASSERT_EQ(sender->WaitExit(milliseconds(30'000)), 0) << ReadFile(agent.dir.path() / "loop.log");
    const std::string text = Scrape(agent.port);
    EXPECT_GE(Sum(text, "zcal_app_completions_total",
                  {"app=\"" + app + "\"", "copied=\"true\""}), 200) << text;
    EXPECT_FALSE(Contains(agent.process->Log(), "field contradiction")) << agent.process->Log();
    EXPECT_FALSE(AllContradicted(HostDefaults(agent.segment)));
  }

  // Then through a NIC the kernel copies on (a veth to another namespace):
  // the host default answers, the completions come back copied. The sink
  // closes 2 s after the sender's end, and the sender waits for that, so
  // the agent reads its last counts before it exits and removes its object
  // (counts after the agent's last read are lost at a normal exit:
  // docs/shm-abi.md, "The agent's reader").
  BridgedNetwork net;
  ASSERT_EQ(net.Build(2), "");
  auto sink = Child::Start(
      net.member(2).Exec({"/usr/bin/python3", "-c",
                          "import socket, threading, time\n"
                          "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                          "s.bind(('0.0.0.0', 7070)); s.listen(8); print('listening', flush=True)\n"
                          "def drain(c):\n"
                          "    while c.recv(1 << 16): pass\n"
                          "    time.sleep(2); c.close()\n"
                          "while True:\n"
                          "    c, _ = s.accept(); threading.Thread(target=drain, args=(c,), daemon=True).start()\n"}),
      agent.dir.path() / "sink.log");
  ASSERT_TRUE(sink->WaitForLog("listening", milliseconds(10'000))) << sink->Log();
  const std::string app = "it-nic-" + std::to_string(getpid());
  const CommandResult sent = RunCommand(net.member(1).Exec(WithSegment(
      shm, agent.segment,
      Env("ZC_SENDER") + " --segment " + agent.segment +
          " --guard off --count 1000 --sizes 65536 --report " + app + " " +
          BridgedNetwork::Address(2) + " 7070 && sleep 5")));
  ASSERT_EQ(sent.status, 0) << sent.out << sent.err;
  std::printf("%s", sent.out.c_str());
  ASSERT_TRUE(agent.process->WaitForLog(flagged, milliseconds(60'000))) << agent.process->Log();
  // Flagged in the segment, every class of the method; counted; recalibrated.
  // The recalibration may find, before this looks, that zerocopy no longer
  // pays there at all (a `never`, as a loaded discard path can say): that
  // clears the flag at once, by the documented rule, and is logged.
  const std::string cleared =
      flagged + " cleared: no entry of that scope and method says zerocopy pays any more";
  bool seen_flagged = false;
  EXPECT_TRUE(WaitFor(
      [&] {
        const std::vector<nlohmann::json> entries = HostDefaults(agent.segment);
        seen_flagged = AllContradicted(entries);
        return seen_flagged ||
               (Contains(agent.process->Log(), cleared) && NonePays(entries));
      },
      milliseconds(30'000)))
      << RunCommand({ZcalBinary(), "show", "--segment", agent.segment, "--json"}).out
      << agent.process->Log();
  if (!seen_flagged) std::printf("flag cleared by a recalibration that says never\n");
  const std::string text = Scrape(agent.port);
  EXPECT_EQ(Sum(text, "zcal_app_contradictions_total",
                {"scope=\"host_default\"", "method=\"msg_zerocopy\""}),
            1)
      << text;
  EXPECT_TRUE(agent.process->WaitForLog("calibration started (contradiction)", milliseconds(30'000)))
      << agent.process->Log();
  // The log line names the application that saw the copies, not loopback's.
  const std::string log = agent.process->Log();
  const std::string line = log.substr(log.find(flagged), log.find('\n', log.find(flagged)) - log.find(flagged));
  EXPECT_TRUE(Contains(line, app)) << line;
  EXPECT_FALSE(Contains(line, "it-loop-")) << line;
  std::printf("%s\n", line.c_str());

  // A guard now answers copy for the flagged entry: the same sender with
  // its guard on sends nothing with zerocopy.
  const CommandResult guarded = RunCommand(net.member(1).Exec(WithSegment(
      shm, agent.segment,
      Env("ZC_SENDER") + " --segment " + agent.segment + " --count 200 --sizes 65536 " +
          BridgedNetwork::Address(2) + " 7070")));
  ASSERT_EQ(guarded.status, 0) << guarded.out << guarded.err;
  EXPECT_EQ(Summary(guarded.out).at("zerocopy_messages"), 0) << guarded.out;
}

}  // namespace
}  // namespace zcal::agent::testing::agent_apps_test
