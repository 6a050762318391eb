// The guard on a real TCP connection over 127.0.0.1, where the kernel
// copies every MSG_ZEROCOPY send it delivers locally and says so
// (SO_EE_CODE_ZEROCOPY_COPIED): the guard turns zerocopy off after the
// first copied completion, probes after ZCAL_GUARD_RETRY_SENDS sends, and
// waits twice as long after the probe is copied too.
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "segment_image.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace guard_loopback_test {
namespace {

using zcal::test::MakeEntry;
using zcal::test::ScopedName;
using zcal::test::SegmentImage;

constexpr std::size_t kMessage = 8192;

// A connected pair on 127.0.0.1; a thread drains the receiving end.
class Connection {
 public:
  Connection() {
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("cannot listen on 127.0.0.1");
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0)
      throw std::runtime_error("cannot connect to 127.0.0.1");
    peer_ = accept(listener, nullptr, nullptr);
    close(listener);
    drain_ = std::thread([this] {
      std::vector<char> buf(1 << 16);
      ssize_t n;
      while ((n = read(peer_, buf.data(), buf.size())) > 0) received_ += static_cast<std::uint64_t>(n);
    });
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    shutdown(fd_, SHUT_WR);
    drain_.join();
    close(fd_);
    close(peer_);
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1, peer_ = -1;
  std::thread drain_;
  std::atomic<std::uint64_t> received_{0};
};

// Sends through the guard and feeds it every completion from the error
// queue, as a transport would.
class GuardedSender {
 public:
  GuardedSender(zcal_guard* guard, int fd) : guard_(guard), fd_(fd), buf_(kMessage, 'z') {}

  // Reaps what has completed, then sends one message; returns whether it
  // went with MSG_ZEROCOPY.
  bool Send() {
    Reap(false);
    const bool zerocopy = zcal_guard_should_zerocopy(guard_, kMessage) != 0;
    std::size_t off = 0;
    while (off < kMessage) {
      const ssize_t n = send(fd_, buf_.data() + off, kMessage - off, zerocopy ? MSG_ZEROCOPY : 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
      if (zerocopy) ++outstanding_;
      off += static_cast<std::size_t>(n);
    }
    return zerocopy;
  }

  // Reads the error queue; with `wait`, until no completion is missing
  // (5 s at most per wait).
  void Reap(bool wait) {
    for (;;) {
      char control[128];
      msghdr msg{};
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      if (recvmsg(fd_, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN) throw std::runtime_error("recvmsg(MSG_ERRQUEUE) failed");
        if (!wait || outstanding_ == 0) return;
        pollfd p{fd_, 0, 0};
        if (poll(&p, 1, 5000) == 0) throw std::runtime_error("no completion within 5 s");
        continue;
      }
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        sock_extended_err err;
        std::memcpy(&err, CMSG_DATA(c), sizeof err);
        if (err.ee_origin != SO_EE_ORIGIN_ZEROCOPY || err.ee_errno != 0) continue;
        const std::uint64_t n = std::uint64_t{err.ee_data - err.ee_info} + 1;
        const bool copied = (err.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) != 0;
        EXPECT_EQ(zcal_guard_completed(guard_, n, copied ? n : 0), 0);
        outstanding_ -= n;
        completions_ += n;
        copied_ += copied ? n : 0;
      }
    }
  }

  // Sends until the guard answers zerocopy again; returns the copies sent.
  std::uint64_t CopiesUntilProbe(std::uint64_t limit) {
    std::uint64_t copies = 0;
    while (copies < limit && !Send()) ++copies;
    return copies;
  }

  std::uint64_t completions() const { return completions_; }
  std::uint64_t copied() const { return copied_; }

 private:
  zcal_guard* guard_;
  int fd_;
  std::vector<char> buf_;
  std::uint64_t outstanding_ = 0, completions_ = 0, copied_ = 0;
};

TEST(GuardLoopback, TurnsZerocopyOffAfterCopiedCompletionsAndRetriesPerItsRule) {
  Connection connection;
  int one = 1;
  if (setsockopt(connection.fd(), SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) != 0)
    GTEST_SKIP() << "SO_ZEROCOPY unsupported here: " << std::strerror(errno);
  setsockopt(connection.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  // A published threshold below the message size for loopback peers, so
  // that only the guard can say no.
  ScopedName name("guard-loopback");
  SegmentImage image(2);
  image.Add(MakeEntry(ZCAL_SCOPE_LOOPBACK, ZCAL_METHOD_MSG_ZEROCOPY, ZCAL_VERDICT_THRESHOLD,
                      4096));
  image.WriteTo(name);
  zcal_handle* handle = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &handle), 0) << zcal_error_detail();
  zcal_guard guard;
  ASSERT_EQ(zcal_guard_init(&guard, sizeof guard, handle, connection.fd(),
                            ZCAL_METHOD_MSG_ZEROCOPY, 0, 0),
            0)
      << zcal_error_detail();
  ASSERT_EQ(guard.result.scope, ZCAL_SCOPE_LOOPBACK);

  GuardedSender sender(&guard, connection.fd());
  ASSERT_TRUE(sender.Send()) << "on: the threshold says zerocopy";
  sender.Reap(true);
  ASSERT_EQ(sender.completions(), 1u);
  ASSERT_EQ(sender.copied(), 1u) << "the kernel copies loopback's zerocopy sends";
  EXPECT_EQ(guard.state, ZCAL_GUARD_OFF);

  // Off for exactly ZCAL_GUARD_RETRY_SENDS sends, then one probe; copied
  // again, off for twice as long.
  std::uint64_t wait = ZCAL_GUARD_RETRY_SENDS;
  for (int probe = 0; probe < 2; ++probe) {
    EXPECT_EQ(sender.CopiesUntilProbe(4 * wait), wait) << "probe " << probe;
    EXPECT_EQ(guard.state, ZCAL_GUARD_PROBING);
    sender.Reap(true);
    EXPECT_EQ(guard.state, ZCAL_GUARD_OFF) << "the probe was copied too";
    wait *= 2;
    EXPECT_EQ(guard.retry_sends, wait);
  }
  EXPECT_EQ(sender.completions(), 3u) << "one zerocopy send per state change";
  EXPECT_EQ(sender.copied(), 3u);
  EXPECT_EQ(guard.completions, 3u);
  EXPECT_EQ(guard.copied, 3u);
  EXPECT_EQ(guard.turned_off, 3u);
  zcal_close(handle);
}

}  // namespace

}  // namespace guard_loopback_test
