// libfabric takes zcal's threshold through `zcal exec`: Debian's fi_pingpong
// (libfabric-bin), tcp provider, msg endpoints, a server and a client on
// 127.0.0.1, each run as
//   zcal exec --segment S --for 127.0.0.1 --format libfabric --
//       strace -f -o TRACE -e trace=setsockopt,sendmsg fi_pingpong ...
// against a segment written here with the agent's writer. The system calls
// show what libfabric did with FI_TCP_ZEROCOPY_SIZE: SO_ZEROCOPY on its
// sockets and MSG_ZEROCOPY on sends of at least the threshold; SO_ZEROCOPY
// but copying sends for a threshold above the messages; neither for never
// (-1, libfabric's default, so the first case fails if the variable does
// not reach the provider).
//
// On loopback the kernel copies every zerocopy send; libfabric reads the
// completion, sees it copied and sends the rest of that connection without
// MSG_ZEROCOPY. The test checks what libfabric asked for, not what the
// kernel did, so it counts at least one zerocopy send, not all.
//
//   agent_libfabric_exec_test STRACE FI_PINGPONG   (77, skipped, without them)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "shm_test_util.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using zcal::agent::PublishedEntry;
using zcal::test::MakeWriter;
using zcal::test::PeerEntry;
using zcal::test::ScopedName;

std::string g_strace;
std::string g_pingpong;
std::string g_zcal;

constexpr int kIterations = 20;
constexpr std::uint64_t kMessageBytes = 64 * 1024;
// Bounds one fi_pingpong run (both sides); a healthy run takes well under
// a second even under strace.
constexpr auto kRunBound = std::chrono::seconds(60);

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A scratch directory for one case's traces and outputs, removed with them.
class ScratchDir {
 public:
  ScratchDir() {
    char path[] = "/tmp/zcal-fabric-XXXXXX";
    if (mkdtemp(path) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = path;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// A program in a process group of its own (zcal execs strace, which forks
// fi_pingpong), standard output and error to a file. The group is killed
// when the child is still running at destruction: a failed assertion never
// leaves a server listening.
class Child {
 public:
  Child(const std::vector<std::string>& args, const fs::path& output) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    // The tcp provider listens on the first interface it finds (an
    // address of eth0, say) unless told: lo keeps the data connection on
    // 127.0.0.1, the address the threshold is looked up for.
    std::vector<std::string> env = {"FI_TCP_IFACE=lo"};
    for (char** e = environ; *e != nullptr; ++e)
      if (std::string_view(*e).rfind("FI_TCP_", 0) != 0) env.emplace_back(*e);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, &attr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
    }
  }
  bool Started() const { return pid_ > 0; }
  bool Running() {
    if (pid_ <= 0 || reaped_) return false;
    if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return !reaped_;
  }
  // The exit status, or -1 when it had to be killed at `deadline`.
  int Wait(std::chrono::steady_clock::time_point deadline) {
    while (Running()) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, &status_, 0);
        reaped_ = true;
        return -1;
      }
      const timespec poll_interval{0, 10'000'000};
      nanosleep(&poll_interval, nullptr);
    }
    return reaped_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

// A TCP port nothing listens on now (the kernel's pick for port 0).
std::uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  std::uint16_t port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

// Whether a socket listens on `port` (any address), from /proc/net/tcp:
// connecting to ask would use up fi_pingpong's only accept.
bool Listening(std::uint16_t port) {
  std::ifstream in("/proc/net/tcp");
  char wanted[8];
  std::snprintf(wanted, sizeof wanted, ":%04X", port);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.size() > 5 && local.substr(local.size() - 5) == wanted)
      return true;
  }
  return false;
}

// `formats`: zcal exec's --format, "" for its default (env,libfabric).
std::vector<std::string> Under(const std::string& segment, const std::string& formats,
                               const fs::path& trace, std::vector<std::string> pingpong) {
  std::vector<std::string> args = {g_zcal, "exec", "--segment", segment, "--for", "127.0.0.1"};
  if (!formats.empty()) args.insert(args.end(), {"--format", formats});
  args.insert(args.end(), {"--", g_strace, "-f", "-s", "0", "-o", trace.string(), "-e",
                           "trace=setsockopt,sendmsg", g_pingpong});
  args.insert(args.end(), pingpong.begin(), pingpong.end());
  return args;
}

// What one server-client run left.
struct PingpongRun {
  int server_status = -1, client_status = -1;
  std::string server_out, client_out;
  std::string server_trace, client_trace;
};

PingpongRun RunPingpong(const std::string& segment, const std::string& formats = "libfabric") {
  ScratchDir dir;
  PingpongRun run;
  const std::uint16_t port = FreePort();
  if (port == 0) return run;
  const std::vector<std::string> common = {"-p", "tcp", "-e", "msg",
                                           "-I", std::to_string(kIterations),
                                           "-S", std::to_string(kMessageBytes)};
  std::vector<std::string> server_args = common;
  server_args.insert(server_args.end(), {"-B", std::to_string(port)});
  std::vector<std::string> client_args = common;
  client_args.insert(client_args.end(), {"-P", std::to_string(port), "127.0.0.1"});

  const auto deadline = std::chrono::steady_clock::now() + kRunBound;
  Child server(Under(segment, formats, dir / "server.trace", server_args), dir / "server.out");
  if (server.Started()) {
    while (server.Running() && !Listening(port) && std::chrono::steady_clock::now() < deadline) {
      const timespec poll_interval{0, 10'000'000};
      nanosleep(&poll_interval, nullptr);
    }
    if (Listening(port)) {
      Child client(Under(segment, formats, dir / "client.trace", client_args),
                   dir / "client.out");
      run.client_status = client.Wait(deadline);
    }
    run.server_status = server.Wait(deadline);
  }
  run.server_out = ReadFile(dir / "server.out");
  run.client_out = ReadFile(dir / "client.out");
  run.server_trace = ReadFile(dir / "server.trace");
  run.client_trace = ReadFile(dir / "client.trace");
  return run;
}

// setsockopt(..., SOL_SOCKET, SO_ZEROCOPY, [1], 4) calls.
int SoZerocopyCalls(const std::string& trace) {
  int count = 0;
  std::istringstream lines(trace);
  for (std::string line; std::getline(lines, line);)
    if (line.find("setsockopt(") != std::string::npos &&
        line.find("SOL_SOCKET, SO_ZEROCOPY, [1]") != std::string::npos)
      ++count;
  return count;
}

// sendmsg calls by their flags, and the fewest bytes one zerocopy call
// sent (its return value). A call strace saw interrupted by another
// thread's is logged twice ("<unfinished ...>", then "<... sendmsg
// resumed>"): the first line holds the flags, the second is skipped, and
// such a call's bytes are not known.
struct Sends {
  int zerocopy = 0;
  int copy = 0;
  std::uint64_t smallest_zerocopy_bytes = UINT64_MAX;
};
Sends CountSends(const std::string& trace) {
  Sends sends;
  std::istringstream lines(trace);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("sendmsg(") == std::string::npos || line.find("resumed>") != std::string::npos)
      continue;
    const std::size_t flags = line.rfind("}, ");
    if (flags == std::string::npos) continue;
    if (line.find("MSG_ZEROCOPY", flags) == std::string::npos) {
      ++sends.copy;
      continue;
    }
    ++sends.zerocopy;
    const std::size_t result = line.find(") = ", flags);
    if (result != std::string::npos)
      sends.smallest_zerocopy_bytes =
          std::min<std::uint64_t>(sends.smallest_zerocopy_bytes,
                                  std::strtoull(line.c_str() + result + 4, nullptr, 10));
  }
  return sends;
}

// The writer stays open for the run, as the agent's would.
std::unique_ptr<zcal::agent::ShmWriter> Publish(const ScopedName& name,
                                                const std::vector<PublishedEntry>& entries) {
  auto writer = MakeWriter(name);
  auto published = writer->Publish(entries, false);
  if (!published) throw std::runtime_error(published.error().message);
  return writer;
}

// An operator's static entry for 127.0.0.1 (a peer /32), which --for
// 127.0.0.1 finds before the loopback scope.
PublishedEntry LoopbackPeer(std::uint64_t threshold) { return PeerEntry("127.0.0.1", 32, threshold); }

void ExpectCompleted(const PingpongRun& run) {
  EXPECT_EQ(run.server_status, 0) << "server:\n" << run.server_out;
  EXPECT_EQ(run.client_status, 0) << "client:\n" << run.client_out;
}

TEST(LibfabricExec, AThresholdBelowTheMessagesSendsThemWithMsgZerocopy) {
  ScopedName name("fabric-below");
  const auto writer = Publish(name, {LoopbackPeer(16384)});
  const PingpongRun run = RunPingpong(name.str());
  ExpectCompleted(run);
  EXPECT_GE(SoZerocopyCalls(run.server_trace), 1) << run.server_trace;
  EXPECT_GE(SoZerocopyCalls(run.client_trace), 1) << run.client_trace;
  const Sends server = CountSends(run.server_trace), client = CountSends(run.client_trace);
  EXPECT_GE(server.zerocopy + client.zerocopy, 1) << run.server_trace << run.client_trace;
  EXPECT_GE(std::min(server.smallest_zerocopy_bytes, client.smallest_zerocopy_bytes), 16384u)
      << "no send below the threshold goes with MSG_ZEROCOPY";
}

TEST(LibfabricExec, AThresholdAboveTheMessagesCopiesThem) {
  ScopedName name("fabric-above");
  const auto writer = Publish(name, {LoopbackPeer(131072)});
  const PingpongRun run = RunPingpong(name.str());
  ExpectCompleted(run);
  EXPECT_GE(SoZerocopyCalls(run.server_trace), 1) << run.server_trace;
  EXPECT_GE(SoZerocopyCalls(run.client_trace), 1) << run.client_trace;
  const Sends server = CountSends(run.server_trace), client = CountSends(run.client_trace);
  EXPECT_EQ(server.zerocopy + client.zerocopy, 0) << run.server_trace << run.client_trace;
  // The messages did go through sendmsg: the count above could see them.
  EXPECT_GE(server.copy + client.copy, 2 * kIterations) << run.server_trace;
}

TEST(LibfabricExec, NeverLeavesZerocopyOff) {
  ScopedName name("fabric-never");
  PublishedEntry never = LoopbackPeer(0);
  never.verdict = zcal::calibrator::Verdict::kNever;
  never.threshold_bytes.reset();
  never.reason = zcal::calibrator::Reason::kKernelCopied;
  const auto writer = Publish(name, {never});
  const PingpongRun run = RunPingpong(name.str());
  ExpectCompleted(run);
  EXPECT_EQ(SoZerocopyCalls(run.server_trace) + SoZerocopyCalls(run.client_trace), 0)
      << run.server_trace << run.client_trace;
  const Sends server = CountSends(run.server_trace), client = CountSends(run.client_trace);
  EXPECT_EQ(server.zerocopy + client.zerocopy, 0);
  EXPECT_GE(server.copy + client.copy, 2 * kIterations) << run.server_trace;
}

// What a VM often publishes: msg_zerocopy decided, the io_uring methods
// inconclusive or absent. libfabric reads msg_zerocopy only, so zcal exec's
// default formats (env,libfabric) start it; env marks the others missing.
TEST(LibfabricExec, TheDefaultFormatsRunItWithoutTheIoUringMethods) {
  ScopedName name("fabric-no-uring");
  PublishedEntry unsure = LoopbackPeer(0);
  unsure.method = zcal::calibrator::Method::kUringSendZcFixed;
  unsure.verdict = zcal::calibrator::Verdict::kInconclusive;
  unsure.threshold_bytes.reset();
  unsure.reason = zcal::calibrator::Reason::kNoisy;
  const auto writer = Publish(name, {LoopbackPeer(16384), unsure});
  const PingpongRun run = RunPingpong(name.str(), "");
  ExpectCompleted(run);
  EXPECT_NE(run.server_out.find("marked missing"), std::string::npos) << run.server_out;
  EXPECT_GE(SoZerocopyCalls(run.server_trace), 1) << run.server_trace;
  EXPECT_GE(SoZerocopyCalls(run.client_trace), 1) << run.client_trace;
  const Sends server = CountSends(run.server_trace), client = CountSends(run.client_trace);
  EXPECT_GE(server.zerocopy + client.zerocopy, 1) << run.server_trace << run.client_trace;
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s STRACE FI_PINGPONG\n", argv[0]);
    return 2;
  }
  g_strace = argv[1];
  g_pingpong = argv[2];
  const char* zcal = std::getenv("ZCAL_BINARY");
  if (zcal == nullptr) {
    std::printf("SKIP: ZCAL_BINARY is not set (run through meson test)\n");
    return 77;
  }
  g_zcal = zcal;
  for (const std::string& program : {g_strace, g_pingpong}) {
    if (program.empty() || access(program.c_str(), X_OK) != 0) {
      std::printf("SKIP: %s is missing (apt-get install strace libfabric-bin)\n",
                  program.empty() ? "a program" : program.c_str());
      return 77;
    }
  }
  return RUN_ALL_TESTS();
}
