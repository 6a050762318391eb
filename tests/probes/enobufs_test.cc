// msg_zerocopy under a tiny option-memory limit: sends fail with ENOBUFS,
// and the probe reaps, retries, counts them and still completes.
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "child_process.h"
#include "zcal/probes/discard/discard.h"
#include "zcal/probes/host/rtnetlink.h"
#include "zcal/probes/send/probe.h"
#include "zcal/probes/send/probe_runner.h"
#include "zcal/probes/sink/sink.h"

namespace zcal::probes::enobufs_test {
namespace {

using namespace std::chrono_literals;
using calibrator::Method;
using testing::RunInChild;

// Room for about one zerocopy notification (an skb's true size), so that a
// second send before the first completes runs out.
constexpr const char* kTinyOptmem = "1024";

// "" when the child is in a fresh network namespace with lo up and the tiny
// limit set (and, with `blackhole`, lo's root qdisc dropping everything, as
// on the discard path); otherwise why not.
std::string EnterTinyOptmemNamespace(bool blackhole = false) {
  if (::unshare(CLONE_NEWNET) != 0) {
    return std::string("cannot create a network namespace: ") + std::strerror(errno);
  }
  if (blackhole) {
    auto netlink = Rtnetlink::Open();
    if (!netlink) return "cannot open rtnetlink: " + netlink.error().message;
    if (!(*netlink)->AddRootQdisc(::if_nametoindex("lo"), "blackhole")) {
      return "cannot install the blackhole qdisc";
    }
  }
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (fd < 0 || ::ioctl(fd, SIOCGIFFLAGS, &request) != 0) return "cannot read lo's flags";
  request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
  if (::ioctl(fd, SIOCSIFFLAGS, &request) != 0) return "cannot bring lo up";
  ::close(fd);
  // /proc/sys/net is the namespace of the task that opens it.
  const int sysctl = ::open("/proc/sys/net/core/optmem_max", O_WRONLY | O_CLOEXEC);
  if (sysctl < 0) return "cannot open net.core.optmem_max";
  const ssize_t n = ::write(sysctl, kTinyOptmem, std::strlen(kTinyOptmem));
  ::close(sysctl);
  if (n < 0) return "cannot set net.core.optmem_max";
  return {};
}

TEST(MsgZerocopyEnobufs, ProbesCompleteAndCountThemInANamespaceWithTinyOptmem) {
  const auto out = RunInChild([] {
    if (std::string why = EnterTinyOptmemNamespace(); !why.empty()) return "skip " + why;
    auto sink = Sink::Start({});
    if (!sink) return "fail " + sink.error().message;
    std::ostringstream text;
    std::uint64_t accepted = 0;
    for (std::uint64_t size : {4096ULL, 65536ULL}) {
      ProbeOptions options;
      options.method = Method::kMsgZerocopy;
      options.size_bytes = size;
      options.sink = (*sink)->endpoint();
      options.duration = 100ms;
      const std::uint64_t before = (*sink)->Stats().bytes_received;
      const calibrator::Sample sample = RunProbe(options);
      const bool idle = (*sink)->WaitIdle(++accepted, 5s);
      text << (sample.ok() ? "ok" : "fail " + sample.error) << " " << sample.enobufs << " "
           << sample.bytes << " " << ((*sink)->Stats().bytes_received - before) << " "
           << sample.zc_completions << " " << (idle ? "idle" : "busy") << "\n";
    }
    return text.str();
  });
  ASSERT_TRUE(out.has_value()) << "the child crashed";
  if (out->rfind("skip ", 0) == 0) GTEST_SKIP() << out->substr(5);
  std::istringstream lines(*out);
  std::string status;
  int probes = 0;
  while (lines >> status) {
    ASSERT_EQ(status, "ok") << *out;
    std::uint64_t enobufs = 0, sent = 0, received = 0, completions = 0;
    std::string idle;
    lines >> enobufs >> sent >> received >> completions >> idle;
    EXPECT_GT(enobufs, 0u) << *out;
    EXPECT_GT(sent, 0u) << *out;
    EXPECT_EQ(sent, received) << *out;
    EXPECT_GT(completions, 0u) << *out;
    EXPECT_EQ(idle, "idle");
    ++probes;
  }
  EXPECT_EQ(probes, 2) << *out;
}

// The same on UDP, as the discard path sends: the notifications of
// datagrams freed in the qdisc also need option memory.
TEST(MsgZerocopyEnobufs, UdpDatagramsCompleteAndCountThemWithTinyOptmem) {
  const auto out = RunInChild([] {
    if (std::string why = EnterTinyOptmemNamespace(true); !why.empty()) return "skip " + why;
    std::ostringstream text;
    for (std::uint64_t size : {std::uint64_t{4096}, kMaxUdpPayloadBytes}) {
      ProbeOptions options;
      options.method = Method::kMsgZerocopy;
      options.size_bytes = size;
      options.duration = 100ms;
      const calibrator::Sample sample = RunProbeOn(options, []() -> Result<common::UniqueFd> {
        common::UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(kDiscardPort);
        ::inet_pton(AF_INET, kDiscardAddress, &address.sin_addr);
        if (!fd ||
            ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
          return Fail(Errc::kFailed, std::string("udp socket: ") + std::strerror(errno));
        }
        return fd;
      });
      text << (sample.ok() ? "ok" : "fail " + sample.error) << " " << sample.enobufs << " "
           << sample.bytes / size << " " << sample.zc_completions << " " << sample.zc_copied
           << "\n";
    }
    return text.str();
  });
  ASSERT_TRUE(out.has_value()) << "the child crashed";
  if (out->rfind("skip ", 0) == 0) GTEST_SKIP() << out->substr(5);
  std::istringstream lines(*out);
  std::string status;
  int probes = 0;
  while (lines >> status) {
    ASSERT_EQ(status, "ok") << *out;
    std::uint64_t enobufs = 0, datagrams = 0, completions = 0, copied = 0;
    lines >> enobufs >> datagrams >> completions >> copied;
    EXPECT_GT(enobufs, 0u) << *out;
    EXPECT_GT(datagrams, 0u) << *out;
    EXPECT_EQ(completions, datagrams) << *out;
    EXPECT_EQ(copied, 0u) << *out;
    ++probes;
  }
  EXPECT_EQ(probes, 2) << *out;
}

}  // namespace
}  // namespace zcal::probes::enobufs_test
