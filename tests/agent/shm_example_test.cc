// The example transport, client/examples/zc_sender, against a loopback
// receiver: without an agent it falls back; with one it follows the
// published threshold, reaps every completion, and delivers intact data.
// On loopback the kernel copies every zerocopy send and says so: its guard
// turns zerocopy off after the first copied completions, unless told not
// to (--guard off).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "shm_test_util.h"

// This file's names, apart from other test files' (unity builds).
namespace shm_example_test {
namespace {

using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
using zcal::test::Entry;
using zcal::test::MakeWriter;
using zcal::test::Run;
using zcal::test::ScopedName;

// Accepts one connection on 127.0.0.1 and hashes what arrives.
class Receiver {
 public:
  Receiver() {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listener_, 1) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("receiver: cannot listen on 127.0.0.1");
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      const int fd = accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      unsigned long long hash = 1469598103934665603ull;
      std::vector<unsigned char> buf(1 << 16);
      for (;;) {
        const ssize_t n = read(fd, buf.data(), buf.size());
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; ++i) hash = (hash ^ buf[i]) * 1099511628211ull;
        bytes_ += static_cast<unsigned long long>(n);
      }
      close(fd);
      char text[24];
      std::snprintf(text, sizeof text, "%016llx", hash);
      checksum_ = text;
    });
  }
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;
  ~Receiver() {
    shutdown(listener_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    close(listener_);
  }
  std::string port() const { return std::to_string(port_); }
  // Call once the sender exited: it waits for the receiver's close, so
  // either the transfer is done or it never connected.
  void Wait() {
    shutdown(listener_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }
  unsigned long long bytes() const { return bytes_; }
  const std::string& checksum() const { return checksum_; }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
  unsigned long long bytes_ = 0;
  std::string checksum_;
};

// "zc_sender: a=1 b=x" -> {a: 1, b: x}
std::map<std::string, std::string> Fields(const std::string& out) {
  std::map<std::string, std::string> fields;
  std::istringstream words(out);
  std::string word;
  while (words >> word) {
    const auto eq = word.find('=');
    if (eq != std::string::npos) fields[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return fields;
}

std::string Sender() {
  const char* path = std::getenv("ZC_SENDER");
  return path ? path : "";
}

struct Sent {
  std::map<std::string, std::string> fields;
  std::string err;
};

Sent SendThrough(const ScopedName& segment, std::vector<std::string> extra) {
  Receiver receiver;
  std::vector<std::string> argv = {Sender(), "--segment", segment.str(), "--count", "200",
                                   "--sizes", "4096,65536"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("127.0.0.1");
  argv.push_back(receiver.port());
  auto result = zcal::test::Run(argv);
  receiver.Wait();
  EXPECT_EQ(result.exit_status, 0) << result.err;
  Sent sent{Fields(result.out), result.err};
  EXPECT_EQ(sent.fields["bytes"], std::to_string(receiver.bytes()));
  EXPECT_EQ(sent.fields["bytes"], std::to_string(100ull * 4096 + 100ull * 65536));
  EXPECT_EQ(sent.fields["checksum"], receiver.checksum()) << "data arrived intact";
  return sent;
}

class ZcSender : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Sender().empty()) GTEST_SKIP() << "ZC_SENDER is not set (run through meson test)";
  }
};

TEST_F(ZcSender, WithoutAnAgentFallsBackToCopy) {
  ScopedName segment("sender-none");
  Sent sent = SendThrough(segment, {});
  EXPECT_EQ(sent.fields["decision"], "fallback");
  EXPECT_EQ(sent.fields["zerocopy_messages"], "0");
  EXPECT_EQ(sent.fields["completions"], "0");
  EXPECT_NE(sent.err.find("no zcal data"), std::string::npos) << sent.err;
}

// The sender reuses each of its 8 buffers only after the completion of the
// zerocopy send that used it: by its 9th message the guard has seen one.
constexpr int kPool = 8;

int Number(const std::string& text) { return std::stoi(text.empty() ? "-1" : text); }

TEST_F(ZcSender, WithoutAnAgentFallsBackToZerocopyUntilTheKernelCopies) {
  ScopedName segment("sender-none-zc");
  Sent sent = SendThrough(segment, {"--fallback", "zerocopy"});
  EXPECT_EQ(sent.fields["decision"], "fallback");
  EXPECT_GE(Number(sent.fields["zerocopy_messages"]), 1);
  EXPECT_LE(Number(sent.fields["zerocopy_messages"]), kPool);
  EXPECT_EQ(sent.fields["completions"], sent.fields["zerocopy_messages"]);
  // Delivered locally, the kernel copies every zerocopy send and says so.
  EXPECT_EQ(sent.fields["copied"], sent.fields["completions"]);
  EXPECT_EQ(sent.fields["guard_state"], "off");
  EXPECT_EQ(sent.fields["guard_turned_off"], "1") << "no probe within 200 messages";
}

TEST_F(ZcSender, WithTheGuardOffEverySendIsZerocopyAndCopied) {
  ScopedName segment("sender-none-noguard");
  Sent sent = SendThrough(segment, {"--fallback", "zerocopy", "--guard", "off"});
  EXPECT_EQ(sent.fields["guard"], "off");
  EXPECT_EQ(sent.fields["zerocopy_messages"], "200");
  EXPECT_NE(sent.fields["completions"], "0");
  EXPECT_EQ(sent.fields["copied"], sent.fields["completions"]);
  EXPECT_EQ(sent.fields["guard_state"], "on");
}

TEST_F(ZcSender, FollowsThePublishedThreshold) {
  ScopedName segment("sender-agent");
  auto writer = MakeWriter(segment);
  std::vector<PublishedEntry> table = {Entry(ScopeKind::kLoopback, 8192),
                                       Entry(ScopeKind::kHostDefault, 1)};
  ASSERT_TRUE(writer->Publish(table, false));
  Sent sent = SendThrough(segment, {"--guard", "off"});
  EXPECT_EQ(sent.fields["decision"], "agent");
  EXPECT_EQ(sent.fields["zerocopy_messages"], "100") << "only the 65536-byte messages";
  EXPECT_EQ(sent.fields["copy_messages"], "100");
  EXPECT_NE(sent.fields["completions"], "0");
}

TEST_F(ZcSender, TheGuardStopsZerocopyThatTheKernelCopies) {
  ScopedName segment("sender-agent-guard");
  auto writer = MakeWriter(segment);
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{Entry(ScopeKind::kLoopback, 8192)},
                              false));
  Sent sent = SendThrough(segment, {});
  EXPECT_EQ(sent.fields["decision"], "agent");
  // Only the 65536-byte (odd) messages qualify; the guard stops them
  // once the first completion, copied, is in.
  EXPECT_GE(Number(sent.fields["zerocopy_messages"]), 1);
  EXPECT_LE(Number(sent.fields["zerocopy_messages"]), kPool / 2 + 1);
  EXPECT_EQ(sent.fields["copied"], sent.fields["completions"]);
  EXPECT_EQ(sent.fields["guard_state"], "off");
}

TEST_F(ZcSender, NeverVerdictKeepsCopyingDespiteAZerocopyFallback) {
  ScopedName segment("sender-never");
  auto writer = MakeWriter(segment);
  PublishedEntry never = Entry(ScopeKind::kLoopback, 0);
  never.verdict = zcal::calibrator::Verdict::kNever;
  never.threshold_bytes.reset();
  never.reason = zcal::calibrator::Reason::kKernelCopied;
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{never}, false));
  Sent sent = SendThrough(segment, {"--fallback", "zerocopy"});
  EXPECT_EQ(sent.fields["decision"], "agent");
  EXPECT_EQ(sent.fields["zerocopy_messages"], "0");
}

TEST_F(ZcSender, StaleAgentHeartbeatFallsBack) {
  ScopedName segment("sender-old");
  auto writer = MakeWriter(segment);
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{Entry(ScopeKind::kLoopback, 1)},
                              false));
  auto* hdr = static_cast<zcal_shm_header*>(const_cast<void*>(writer->mapping()));
  __atomic_store_n(&hdr->heartbeat_ns, zcal::test::NowNs() - 120ull * 1000000000ull,
                   __ATOMIC_RELEASE);
  Sent sent = SendThrough(segment, {"--max-age-s", "60"});
  EXPECT_EQ(sent.fields["decision"], "fallback");
  EXPECT_EQ(sent.fields["zerocopy_messages"], "0");
}

}  // namespace

}  // namespace shm_example_test
