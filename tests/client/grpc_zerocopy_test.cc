// gRPC C++ takes zcal's threshold: runs client/examples/grpc_zc (a server
// and a channel in one process, both built with the two zerocopy channel
// arguments from the msg_zerocopy lookup for 127.0.0.1) under
//   strace -f -e trace=setsockopt,sendmsg
// against segments written here, and reads from the system calls what gRPC
// did with them: SO_ZEROCOPY on its sockets, MSG_ZEROCOPY on writes above
// the threshold only, and neither for a `never` answer or without a segment
// (gRPC sets SO_ZEROCOPY on its listening socket in every case; see
// ConnectionsWithSoZerocopy).
//
//   client_grpc_zerocopy_test STRACE GRPC_ZC   (77, skipped, without strace)
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "segment_image.h"
#include "zcal/zcal.h"

extern char** environ;

namespace {

using zcal::test::MakeEntry;
using zcal::test::Peer;
using zcal::test::ScopedName;
using zcal::test::SegmentImage;

std::string g_strace;
std::string g_grpc_zc;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// What one run of the example left: its stdout and the strace log.
struct ExampleRun {
  int status = -1;
  std::string out;
  std::string trace;
};

// A scratch directory for one run's files, removed with them.
class ScratchDir {
 public:
  ScratchDir() {
    char path[] = "/tmp/zcal-grpc-XXXXXX";
    if (mkdtemp(path) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = path;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    for (const char* name : {"/out", "/trace"}) unlink((path_ + name).c_str());
    rmdir(path_.c_str());
  }
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

ExampleRun RunExample(const char* segment, std::uint64_t size, int count) {
  ScratchDir dir;
  const std::string out = dir.str() + "/out", trace = dir.str() + "/trace";
  std::vector<std::string> args = {g_strace, "-f", "-s", "0", "-e",
                                   "trace=listen,setsockopt,sendmsg",
                                   "-o", trace, g_grpc_zc, "--peer", "127.0.0.1",
                                   "--count", std::to_string(count), "--size",
                                   std::to_string(size)};
  if (segment != nullptr) {
    args.emplace_back("--segment");
    args.emplace_back(segment);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ExampleRun run;
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0)
    waitpid(pid, &run.status, 0);
  posix_spawn_file_actions_destroy(&actions);
  run.out = ReadFile(out);
  run.trace = ReadFile(trace);
  return run;
}

bool Exited0(const ExampleRun& run) { return WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0; }

// The descriptor after "NAME(" in a strace line, or -1.
int FdAfter(const std::string& line, const std::string& call) {
  const std::size_t at = line.find(call + "(");
  if (at == std::string::npos) return -1;
  return std::atoi(line.c_str() + at + call.size() + 1);
}

// sendmsg calls by their flags. A call strace sees interrupted by another
// thread's is logged in two lines ("... <unfinished ...>", "<... sendmsg
// resumed>) = N"): the first holds the flags, the second is skipped.
struct Sends {
  int zerocopy = 0;  // MSG_NOSIGNAL|MSG_ZEROCOPY
  int copy = 0;      // MSG_NOSIGNAL alone
};
Sends CountSends(const std::string& trace) {
  Sends sends;
  std::istringstream lines(trace);
  std::string line;
  while (std::getline(lines, line)) {
    if (FdAfter(line, "sendmsg") < 0 || line.find("resumed>") != std::string::npos) continue;
    const std::size_t flags = line.rfind("}, ");
    if (flags == std::string::npos) continue;
    const std::string rest = line.substr(flags + 3);
    if (rest.rfind("MSG_NOSIGNAL|MSG_ZEROCOPY", 0) == 0) ++sends.zerocopy;
    else if (rest.rfind("MSG_NOSIGNAL)", 0) == 0 || rest.rfind("MSG_NOSIGNAL <", 0) == 0)
      ++sends.copy;
  }
  return sends;
}

// SO_ZEROCOPY set on sockets that carry data. gRPC sets it on every
// listening socket whatever its arguments say (accepted sockets inherit
// it, but gRPC sends with MSG_ZEROCOPY only when the argument enables it),
// so a setsockopt followed by listen() on that descriptor is not counted.
int ConnectionsWithSoZerocopy(const std::string& trace) {
  std::vector<std::pair<bool, int>> events;  // (is listen, fd), in trace order
  std::istringstream lines(trace);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("SOL_SOCKET, SO_ZEROCOPY, [1], 4") != std::string::npos &&
        FdAfter(line, "setsockopt") >= 0)
      events.emplace_back(false, FdAfter(line, "setsockopt"));
    else if (FdAfter(line, "listen") >= 0)
      events.emplace_back(true, FdAfter(line, "listen"));
  }
  int count = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].first) continue;
    bool listener = false;
    for (std::size_t j = i + 1; j < events.size(); ++j) {
      if (events[j].second != events[i].second) continue;
      listener = events[j].first;
      break;
    }
    if (!listener) ++count;
  }
  return count;
}

// A table with one peer entry for 127.0.0.1 (what a loopback calibration
// or an operator's static entry publishes).
void WriteSegment(const ScopedName& name, const zcal_shm_entry& entry) {
  SegmentImage image(4);
  image.Add(entry);
  image.WriteTo(name);
}

// A 127.0.0.1/32 msg_zerocopy entry without a threshold (always, never).
zcal_shm_entry MakePeerEntry(std::uint8_t verdict) {
  zcal_shm_entry e = MakeEntry(ZCAL_SCOPE_PEER, ZCAL_METHOD_MSG_ZEROCOPY, verdict, std::nullopt);
  e.family = ZCAL_FAMILY_IPV4;
  e.address[0] = 127;
  e.address[3] = 1;
  e.prefix_len = 32;
  return e;
}

constexpr std::uint64_t kBig = 256 * 1024;
constexpr int kCalls = 10;

TEST(GrpcZerocopy, ThresholdBelowTheMessagesSendsThemWithMsgZerocopy) {
  ScopedName name("grpc");
  WriteSegment(name, Peer("127.0.0.1", 32, ZCAL_METHOD_MSG_ZEROCOPY, 65536));
  const ExampleRun run = RunExample(name.c_str(), kBig, kCalls);
  ASSERT_TRUE(Exited0(run)) << run.out;
  EXPECT_NE(run.out.find("tcp_tx_zerocopy_enabled=1"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("tcp_tx_zerocopy_send_bytes_threshold=65536"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("replies_ok=10"), std::string::npos) << run.out;
  // The accepted and the connected socket both get it.
  EXPECT_EQ(ConnectionsWithSoZerocopy(run.trace), 2) << run.trace;
  // Requests and replies: at least one write of each call's message each way.
  EXPECT_GE(CountSends(run.trace).zerocopy, 2 * kCalls) << run.trace;
}

TEST(GrpcZerocopy, ThresholdAboveTheMessagesEnablesButCopiesThem) {
  // 256 KiB messages are above gRPC's own 16 KiB default: without zcal's
  // threshold reaching gRPC, they would go with MSG_ZEROCOPY.
  ScopedName name("grpc");
  WriteSegment(name, Peer("127.0.0.1", 32, ZCAL_METHOD_MSG_ZEROCOPY, 4u << 20));
  const ExampleRun run = RunExample(name.c_str(), kBig, kCalls);
  ASSERT_TRUE(Exited0(run)) << run.out;
  EXPECT_NE(run.out.find("tcp_tx_zerocopy_send_bytes_threshold=4194304"), std::string::npos)
      << run.out;
  EXPECT_EQ(ConnectionsWithSoZerocopy(run.trace), 2) << run.trace;
  EXPECT_EQ(CountSends(run.trace).zerocopy, 0) << run.trace;
  EXPECT_GE(CountSends(run.trace).copy, 2 * kCalls) << run.trace;
}

// gRPC keeps at most 4 zerocopy sends pending: the example takes the
// class-4 entry where the agent published one, not the stream's.
TEST(GrpcZerocopy, TakesTheThresholdOfItsDepthClass) {
  ScopedName name("grpc");
  SegmentImage image(4);
  image.Add(Peer("127.0.0.1", 32, ZCAL_METHOD_MSG_ZEROCOPY, 65536));
  zcal_shm_entry four = Peer("127.0.0.1", 32, ZCAL_METHOD_MSG_ZEROCOPY, 4u << 20);
  four.depth_class = ZCAL_DEPTH_4;
  image.Add(four);
  image.WriteTo(name);
  const ExampleRun run = RunExample(name.c_str(), kBig, kCalls);
  ASSERT_TRUE(Exited0(run)) << run.out;
  EXPECT_NE(run.out.find("verdict threshold, depth 4"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("tcp_tx_zerocopy_send_bytes_threshold=4194304"), std::string::npos)
      << run.out;
  EXPECT_EQ(CountSends(run.trace).zerocopy, 0) << run.trace;
}

TEST(GrpcZerocopy, AlwaysSendsSmallMessagesWithMsgZerocopy) {
  // `always` is a threshold of 0: 1 KiB messages, below gRPC's default.
  ScopedName name("grpc");
  WriteSegment(name, MakePeerEntry(ZCAL_VERDICT_ALWAYS));
  const ExampleRun run = RunExample(name.c_str(), 1024, kCalls);
  ASSERT_TRUE(Exited0(run)) << run.out;
  EXPECT_NE(run.out.find("verdict always"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("tcp_tx_zerocopy_send_bytes_threshold=0"), std::string::npos) << run.out;
  EXPECT_EQ(ConnectionsWithSoZerocopy(run.trace), 2) << run.trace;
  EXPECT_GE(CountSends(run.trace).zerocopy, 2 * kCalls) << run.trace;
}

TEST(GrpcZerocopy, NeverLeavesZerocopyOff) {
  ScopedName name("grpc");
  WriteSegment(name, MakePeerEntry(ZCAL_VERDICT_NEVER));
  const ExampleRun run = RunExample(name.c_str(), kBig, kCalls);
  ASSERT_TRUE(Exited0(run)) << run.out;
  EXPECT_NE(run.out.find("verdict never"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("tcp_tx_zerocopy_enabled=0"), std::string::npos) << run.out;
  EXPECT_EQ(ConnectionsWithSoZerocopy(run.trace), 0) << run.trace;
  EXPECT_EQ(CountSends(run.trace).zerocopy, 0) << run.trace;
  EXPECT_GE(CountSends(run.trace).copy, 2 * kCalls) << run.trace;
}

TEST(GrpcZerocopy, NoSegmentLeavesZerocopyOff) {
  ScopedName name("grpc-absent");
  const ExampleRun run = RunExample(name.c_str(), kBig, kCalls);
  ASSERT_TRUE(Exited0(run)) << run.out;
  EXPECT_NE(run.out.find("no segment"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("tcp_tx_zerocopy_enabled=0"), std::string::npos) << run.out;
  EXPECT_EQ(ConnectionsWithSoZerocopy(run.trace), 0) << run.trace;
  EXPECT_EQ(CountSends(run.trace).zerocopy, 0) << run.trace;
}

// Exit status of the example run directly, its output discarded.
int RunPlain(std::vector<std::string> args) {
  args.insert(args.begin(), g_grpc_zc);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int status = -1;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0)
    waitpid(pid, &status, 0);
  posix_spawn_file_actions_destroy(&actions);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(GrpcZerocopy, RejectsBadUsage) {
  EXPECT_EQ(RunPlain({"--size", "0"}), 2);
  EXPECT_EQ(RunPlain({"--size", "5000000"}), 2);  // above gRPC's 4 MiB receive limit
  EXPECT_EQ(RunPlain({"--count", "x"}), 2);
  EXPECT_EQ(RunPlain({"--bogus", "1"}), 2);
  EXPECT_EQ(RunPlain({"--segment"}), 2);
}

TEST(GrpcZerocopy, RejectsAPeerThatIsNotAnAddress) {
  EXPECT_EQ(RunPlain({"--peer", "not-an-address"}), 2);
  EXPECT_EQ(RunPlain({"--peer", "127.0.0.256"}), 2);
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s STRACE GRPC_ZC\n", argv[0]);
    return 2;
  }
  g_strace = argv[1];
  g_grpc_zc = argv[2];
  if (access(g_strace.c_str(), X_OK) != 0) {
    std::printf("SKIP: %s is missing (apt-get install strace)\n", g_strace.c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}
