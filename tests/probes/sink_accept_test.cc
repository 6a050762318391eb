// Both sinks when accept(2) runs out of descriptors: the pending connection
// keeps the level-triggered listener readable, and a sink that retried at
// every wakeup would spin a core. Each case runs in a forked child whose
// RLIMIT_NOFILE is lowered and whose descriptors are filled, so that the
// limit and the filler stay there.
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "zcal/probes/peer/peer_protocol.h"
#include "zcal/probes/peer/peer_sink.h"
#include "zcal/probes/sink/sink.h"

namespace zcal::probes::sink_accept_test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Pauses awaited while descriptors are exhausted: 50 + 100 + 200 + 400 ms
// of backoff, long enough that a spinning thread's CPU time shows.
constexpr std::uint64_t kPausesWatched = 4;

// The sink's thread: the one thread of this (forked, single-threaded)
// process besides the caller.
pid_t OtherThread() {
  const auto self = static_cast<pid_t>(::syscall(SYS_gettid));
  pid_t other = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      const pid_t tid = std::stoi(e->d_name);
      if (tid != self) other = tid;
    }
    ::closedir(dir);
  }
  return other;
}

// CPU time of another thread of this process: the kernel's per-thread
// CPU clock id, (~tid << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED.
std::uint64_t ThreadCpuNs(pid_t tid) {
  const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6U);
  timespec t{};
  if (::clock_gettime(clock, &t) != 0) return 0;
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(t.tv_nsec);
}

// Whether the thread whose /proc/self/task/TID/syscall is open as `fd` is
// asleep in epoll_wait(2) with a timeout of 1 ms to 1 s: in the listener's
// pause (50 ms doubling to 1 s), not waiting for events alone (-1) nor
// polling (0). The kernel shows the system call a thread is blocked in,
// with its arguments ("running" when it is in none), anew at each read
// from the start; the file is opened before the descriptors run out.
bool AsleepInAPause(int fd) {
  std::array<char, 256> text{};
  const ssize_t got = ::pread(fd, text.data(), text.size() - 1, 0);
  if (got <= 0) return false;
  std::istringstream in(std::string(text.data(), static_cast<std::size_t>(got)));
  long number = -1;
  std::string epoll_fd, events, max_events, timeout;
  if (!(in >> number >> epoll_fd >> events >> max_events >> timeout)) return false;
  bool epoll_wait = number == SYS_epoll_pwait;
#ifdef SYS_epoll_wait
  epoll_wait = epoll_wait || number == SYS_epoll_wait;
#endif
  // An int in a 64-bit register: its low half.
  const auto timeout_ms =
      static_cast<std::int32_t>(static_cast<std::uint32_t>(std::stoull(timeout, nullptr, 16)));
  return epoll_wait && timeout_ms >= 1 && timeout_ms <= 1000;
}

bool Await(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  while (!condition()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

struct SinkUnderTest {
  common::HostPort endpoint;
  std::function<std::uint64_t()> pauses;
  std::function<std::uint64_t()> accepted;
  // Once accepted: proves the connection is served (bytes counted, or the
  // greeting read); empty on success, else what went wrong.
  std::function<std::string(int fd)> serve;
};

// In the child: fills every descriptor, connects, watches the sink's
// thread while the connection waits, then frees the descriptors. Prints
// "watched= asleep= pauses= cpu_ns= wall_ns= accepted= served=" for the
// parent to check.
std::string ExhaustAndRecover(const std::function<SinkUnderTest()>& start) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = 128;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return "setrlimit failed";
  const SinkUnderTest sink = start();
  if (sink.endpoint.port == 0) return "the sink did not start";
  const pid_t thread = OtherThread();
  const std::string syscall_path = "/proc/self/task/" + std::to_string(thread) + "/syscall";
  const int syscall_fd = ::open(syscall_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (syscall_fd < 0) return syscall_path + ": cannot open (errno " + std::to_string(errno) + ")";
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const timeval wait{5, 0};  // bounds the reads of `serve`
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  // Filled until three passes in a row, 10 ms apart, find none free: a
  // sanitizer's runtime in the sink's thread can hold descriptors for a
  // moment (UBSan's vptr check probes memory through a pipe(2)), and one
  // pass made while it held them would leave them free for accept(2).
  std::vector<int> fillers;
  for (int quiet_passes = 0; quiet_passes < 3;) {
    const std::size_t before = fillers.size();
    for (int fd = ::dup(client); fd >= 0; fd = ::dup(client)) fillers.push_back(fd);
    if (errno != EMFILE) return "filling descriptors ended with errno " + std::to_string(errno);
    quiet_passes = fillers.size() == before ? quiet_passes + 1 : 0;
    std::this_thread::sleep_for(10ms);
  }
  const common::SocketAddress address = common::ToSocketAddress(sink.endpoint);
  // Completed by the kernel into the listen queue; only accept(2) lacks a
  // descriptor.
  if (::connect(client, address.get(), address.length) != 0) return "connect failed";
  if (!Await([&] { return sink.pauses() >= 1; }, 5000ms)) {
    return "no accept pause (accepted " + std::to_string(sink.accepted()) + ", " +
           std::to_string(fillers.size()) + " descriptors filled)";
  }
  const std::uint64_t pauses_before = sink.pauses();
  const std::uint64_t cpu_before = ThreadCpuNs(thread);
  const auto wall_before = Clock::now();
  bool asleep = false;
  const bool watched = Await(
      [&] {
        asleep = asleep || AsleepInAPause(syscall_fd);
        return sink.pauses() >= pauses_before + kPausesWatched;
      },
      10000ms);
  const std::uint64_t cpu_ns = ThreadCpuNs(thread) - cpu_before;
  const auto wall_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - wall_before).count();
  // The thread sleeps through nearly all of the pauses watched and is seen
  // asleep there; should every look have come while it was awake, it is
  // looked for a while longer.
  asleep = asleep || Await([&] { return AsleepInAPause(syscall_fd); }, 5000ms);
  const std::uint64_t accepted_while_full = sink.accepted();
  for (int fd : fillers) ::close(fd);
  const bool accepted = Await([&] { return sink.accepted() >= 1; }, 5000ms);
  const std::string served = accepted ? sink.serve(client) : "not accepted";
  std::ostringstream out;
  out << "watched=" << watched << " asleep=" << asleep
      << " pauses=" << sink.pauses() - pauses_before << " cpu_ns=" << cpu_ns
      << " wall_ns=" << wall_ns << " accepted_while_full=" << accepted_while_full
      << " accepted=" << accepted << " served=" << (served.empty() ? "yes" : served);
  ::close(client);
  ::close(syscall_fd);
  return out.str();
}

std::uint64_t Field(const std::string& text, const std::string& name) {
  const std::size_t at = text.find(name + "=");
  return at == std::string::npos ? ~0ULL : std::stoull(text.substr(at + name.size() + 1));
}

void ExpectPausedNotSpinning(const std::optional<std::string>& text) {
  ASSERT_TRUE(text) << "the child failed";
  ASSERT_NE(text->find("watched=1"), std::string::npos) << *text;
  // Paused, the thread sleeps through the backoff, in epoll_wait with the
  // pause as its timeout: a thread that polled would never be seen there.
  EXPECT_NE(text->find("asleep=1"), std::string::npos)
      << "the sink's thread was never seen asleep in a pause: " << *text;
  // One accept attempt per pause, not one per wakeup.
  EXPECT_LE(Field(*text, "pauses"), kPausesWatched + 1) << *text;
  // What the pauses cost, printed rather than asserted: a stopwatch on a
  // shared machine is no test.
  std::printf("sink thread while paused: %.2f %% of a core\n",
              100.0 * static_cast<double>(Field(*text, "cpu_ns")) /
                  static_cast<double>(Field(*text, "wall_ns")));
  EXPECT_EQ(Field(*text, "accepted_while_full"), 0U) << *text;
  EXPECT_NE(text->find("accepted=1"), std::string::npos) << *text;
  EXPECT_NE(text->find("served=yes"), std::string::npos) << *text;
}

TEST(SinkAccept, TheLoopbackSinkPausesWithoutDescriptorsAndServesOnceTheyAreFree) {
  std::unique_ptr<Sink> sink;
  const auto text = testing::RunInChild([&] {
    return ExhaustAndRecover([&] {
      auto started = Sink::Start({});
      if (!started) return SinkUnderTest{};
      sink = std::move(*started);
      Sink* raw = sink.get();
      return SinkUnderTest{
          raw->endpoint(), [raw] { return raw->Stats().accept_pauses; },
          [raw] { return raw->Stats().connections_accepted; },
          [raw](int fd) -> std::string {
            const std::vector<char> bytes(300'000, 'x');
            if (::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) !=
                static_cast<ssize_t>(bytes.size())) {
              return "send failed";
            }
            ::shutdown(fd, SHUT_WR);
            const bool all = Await(
                [raw, &bytes] { return raw->Stats().bytes_received == bytes.size(); }, 5000ms);
            return all ? "" : "received " + std::to_string(raw->Stats().bytes_received);
          }};
    });
  });
  ExpectPausedNotSpinning(text);
}

TEST(SinkAccept, ThePeerSinkPausesWithoutDescriptorsAndGreetsOnceTheyAreFree) {
  std::unique_ptr<PeerSink> sink;
  const auto text = testing::RunInChild([&] {
    return ExhaustAndRecover([&] {
      PeerSinkOptions options;
      options.auth_none = true;
      auto started = PeerSink::Start(options);
      if (!started) return SinkUnderTest{};
      sink = std::move(*started);
      PeerSink* raw = sink.get();
      return SinkUnderTest{
          raw->endpoint(), [raw] { return raw->Stats().accept_pauses; },
          [raw] { return raw->Stats().connections_accepted; },
          [](int fd) -> std::string {
            std::array<std::uint8_t, peer::kGreetingBytes> frame{};
            std::size_t have = 0;
            while (have < frame.size()) {
              const ssize_t got = ::recv(fd, frame.data() + have, frame.size() - have, 0);
              if (got <= 0) return "no greeting";
              have += static_cast<std::size_t>(got);
            }
            return peer::DecodeGreeting(frame) ? "" : "a malformed greeting";
          }};
    });
  });
  ExpectPausedNotSpinning(text);
}

}  // namespace
}  // namespace zcal::probes::sink_accept_test
