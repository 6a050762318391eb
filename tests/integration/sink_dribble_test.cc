// A sink that one client cannot fill: the real `zcal sink` on one host of a
// bridged network, an allowed source dribbling on 200 connections (a byte
// every 3 s, reconnecting whenever the sink closes one), and the real
// `zcal calibrate` from another allowed source, 20 times. The per-source
// cap keeps the dribbler to its share of the sink's connections and the
// handshake deadline frees each of its slots however it dribbles, so the
// other source is served.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "agent_harness.h"
#include "netns.h"
#include "peer_fleet.h"
#include "test_util.h"

namespace zcal::agent::testing::sink_dribble_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kSinkMember = 1;
constexpr int kDribblerMember = 2;
constexpr int kCalibratingMember = 3;
constexpr int kDribbledConnections = 200;
constexpr auto kDribbleEvery = 3s;
constexpr int kTries = 20;

// The dribbler: keeps kDribbledConnections connections to the sink open,
// each sending the next byte of a hello every kDribbleEvery and reopened
// (after 100 ms, so that refusals do not make it a tight loop) whenever the
// sink closes it. Runs on a thread inside its namespace until destroyed.
class Dribbler {
 public:
  Dribbler(const Netns& ns, const std::string& sink_address, int port)
      : thread_([this, &ns, sink_address, port] {
          ns.RunInside([&] { Run(sink_address, port); });
        }) {}
  ~Dribbler() {
    stop_.store(true);
    thread_.join();
  }
  Dribbler(const Dribbler&) = delete;
  Dribbler& operator=(const Dribbler&) = delete;

  /// Greetings read: connections the sink accepted and served a handshake.
  std::uint64_t greeted() const { return greeted_.load(); }
  /// Connections the sink ended (a refusal, the handshake deadline).
  std::uint64_t closed() const { return closed_.load(); }

 private:
  struct Connection {
    int fd = -1;
    std::size_t sent = 0;
    bool greeted = false;
    Clock::time_point next_byte;
    Clock::time_point reopen;
  };

  void Open(Connection& c, const sockaddr_in& sink) {
    c = Connection{};
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ::connect(c.fd, reinterpret_cast<const sockaddr*>(&sink), sizeof sink);
    c.next_byte = Clock::now() + kDribbleEvery;
  }

  void Run(const std::string& address, int port) {
    sockaddr_in sink{};
    sink.sin_family = AF_INET;
    sink.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, address.c_str(), &sink.sin_addr);
    static constexpr char kHello[] = "ZCALHELO";
    std::vector<Connection> connections(kDribbledConnections);
    for (Connection& c : connections) Open(c, sink);
    std::vector<pollfd> polled;
    std::vector<Connection*> of;
    while (!stop_.load()) {
      polled.clear();
      of.clear();
      for (Connection& c : connections) {
        if (c.fd < 0) continue;
        polled.push_back({c.fd, POLLIN, 0});
        of.push_back(&c);
      }
      ::poll(polled.data(), polled.size(), 50);
      const auto now = Clock::now();
      for (std::size_t i = 0; i < polled.size(); ++i) {
        Connection& c = *of[i];
        if ((polled[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        char buffer[64];
        const ssize_t got = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (got > 0) {
          // A greeting: a slot held. A refusal is followed by the close.
          if (!c.greeted && got >= 5 && buffer[4] == 'S') greeted_.fetch_add(1);
          c.greeted = true;
          continue;
        }
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        ::close(c.fd);
        c.fd = -1;
        c.reopen = now + 100ms;
        closed_.fetch_add(1);
      }
      for (Connection& c : connections) {
        if (c.fd < 0) {
          if (now >= c.reopen) Open(c, sink);
          continue;
        }
        if (now < c.next_byte) continue;
        const char byte = c.sent < 8 ? kHello[c.sent] : '\0';
        if (::send(c.fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) ++c.sent;
        c.next_byte = now + kDribbleEvery;
      }
    }
    for (Connection& c : connections) {
      if (c.fd >= 0) ::close(c.fd);
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> greeted_{0};
  std::atomic<std::uint64_t> closed_{0};
  std::thread thread_;
};

// The number after `label` in the last line of the sink's log that has it.
long LastCount(const std::string& log, const std::string& label) {
  const std::size_t at = log.rfind(label);
  return at == std::string::npos ? -1 : std::stol(log.substr(at + label.size()));
}

class SinkDribble : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = NetnsUnavailable(); !why.empty()) GTEST_SKIP() << why;
    SweepLeftoverNamespaces();
    ASSERT_EQ(net_.Build(3), "");
    keys_ = MakeKeyFile(dir_.path());
  }

  std::filesystem::path Log(const std::string& name) const { return dir_.path() / name; }

  TempDir dir_;
  BridgedNetwork net_;
  std::filesystem::path keys_;
};

TEST_F(SinkDribble, OneSourceDribblingOnAllItMayHoldLeavesTheSinkToAnother) {
  const std::string sink_address = BridgedNetwork::Address(kSinkMember);
  const std::string endpoint = sink_address + ":" + std::to_string(kSinkPort);
  auto sink = Child::Start(
      net_.member(kSinkMember)
          .Exec({ZcalBinary(), "sink", "--listen", endpoint, "--key-file", keys_.string(),
                 "--allow", "198.18.7.0/24", "--handshake-deadline", "2s", "--report-every",
                 "1s"}),
      Log("sink.log"));
  ASSERT_TRUE(sink->WaitForLog("serving on " + endpoint, 10s)) << sink->Log();

  Dribbler dribbler(net_.member(kDribblerMember), sink_address, kSinkPort);
  // Holding every slot it may: greeted on some, refused on the rest.
  ASSERT_TRUE(WaitFor([&] { return dribbler.greeted() >= 8; }, 20s))
      << dribbler.greeted() << "\n" << sink->Log();
  ASSERT_TRUE(WaitFor([&] { return LastCount(sink->Log(), "refused per source ") > 0; }, 20s))
      << sink->Log();

  int served = 0;
  std::string failures;
  for (int i = 0; i < kTries; ++i) {
    const auto log = Log("calibrate-" + std::to_string(i) + ".log");
    auto calibrate = Child::Start(
        net_.member(kCalibratingMember)
            .Exec({ZcalBinary(), "calibrate", "--path", endpoint, "--key-file", keys_.string(),
                   "--budget", "0.4", "--methods", "copy", "--max", "64K"}),
        log);
    const auto status = calibrate->WaitExit(60s);
    if (status == 0) {
      ++served;
    } else {
      failures += "try " + std::to_string(i) + ": exit " +
                  (status ? std::to_string(*status) : std::string("none")) + "\n" +
                  calibrate->Log() + "\n";
    }
  }
  std::printf("served %d of %d calibrations while the dribbler ran\n", served, kTries);
  EXPECT_GE(served, kTries - 1) << failures << sink->Log();
  // The dribbler was there all along: its connections kept being ended (at
  // the handshake deadline, or refused for its source) and reopened.
  EXPECT_GT(dribbler.closed(), static_cast<std::uint64_t>(kDribbledConnections));
  EXPECT_TRUE(sink->WaitForLog("timeout=", 5s));
  EXPECT_GT(LastCount(sink->Log(), "timeout="), 0) << sink->Log();
  EXPECT_GT(LastCount(sink->Log(), "refused per source "), 0) << sink->Log();
}

}  // namespace
}  // namespace zcal::agent::testing::sink_dribble_test
