// The discard path's private network namespace: created, usable, gone
// afterwards, and refused with a sentence that names the cause.
#include "zcal/probes/discard/discard.h"

#include <grp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "child_process.h"
#include "zcal/probes/host/rtnetlink.h"

namespace zcal::probes::discard_namespace_test {
namespace {

using testing::RunInChild;
namespace fs = std::filesystem;

std::size_t OpenFds() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

ino_t InodeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// The inode of the network namespace a socket belongs to (0 if unknown).
ino_t NamespaceOfSocket(int fd) {
  const int ns = ::ioctl(fd, SIOCGSKNS);
  if (ns < 0) return 0;
  struct stat st {};
  const ino_t inode = ::fstat(ns, &st) == 0 ? st.st_ino : 0;
  ::close(ns);
  return inode;
}

// Any process whose network namespace has this inode.
bool SomeProcessIsIn(ino_t inode) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    if (InodeOf(entry.path() / "ns" / "net") == inode) return true;
  }
  return false;
}

TEST(DiscardNamespace, HandsOutSocketsOfAPrivateNamespaceAndLeavesNothingBehind) {
  const std::size_t fds_before = OpenFds();
  const ino_t host_namespace = InodeOf("/proc/self/ns/net");
  pid_t helper = 0;
  ino_t namespace_inode = 0;
  {
    auto discard = DiscardNamespace::Create();
    if (!discard && discard.error().code == Errc::kUnsupported) {
      GTEST_SKIP() << discard.error().message;
    }
    ASSERT_TRUE(discard) << discard.error().message;
    helper = (*discard)->helper_pid();
    // More than one batch of the helper's sockets.
    for (int i = 0; i < kSocketBatch + 3; ++i) {
      auto fd = (*discard)->ConnectUdp();
      ASSERT_TRUE(fd) << fd.error().message;
      const ino_t inode = NamespaceOfSocket(fd->get());
      EXPECT_NE(inode, 0u);
      EXPECT_NE(inode, host_namespace);
      if (namespace_inode != 0) {
        EXPECT_EQ(inode, namespace_inode) << "one namespace";
      }
      namespace_inode = inode;
      // The qdisc drops the datagram; the send succeeds.
      const char datagram[1000] = {};
      EXPECT_EQ(::send(fd->get(), datagram, sizeof datagram, 0), 1000) << std::strerror(errno);
    }
    EXPECT_TRUE(SomeProcessIsIn(namespace_inode)) << "the helper holds it";
  }
  EXPECT_EQ(InodeOf("/proc/self/ns/net"), host_namespace);
  EXPECT_EQ(::kill(helper, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "the helper is reaped";
  EXPECT_FALSE(SomeProcessIsIn(namespace_inode));
  EXPECT_EQ(OpenFds(), fds_before) << "no descriptor left open";
}

TEST(DiscardNamespace, SocketsOutliveNothingOnceTheHelperIsGone) {
  auto discard = DiscardNamespace::Create();
  if (!discard) GTEST_SKIP() << discard.error().message;
  ::kill((*discard)->helper_pid(), SIGKILL);
  auto fd = (*discard)->ConnectUdp();
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, Errc::kFailed);
  EXPECT_NE(fd.error().message.find("helper"), std::string::npos) << fd.error().message;
}

// "filtered" once unshare fails with EPERM for flags matching `mask`
// (0 = every call).
std::string RefuseUnshare(std::uint64_t mask) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return "seccomp_init failed";
  // Spelled out: SCMP_A0() is a C compound literal, which clang rejects in C++.
  const scmp_arg_cmp flags_match{0, SCMP_CMP_MASKED_EQ, mask, mask};
  int rc = mask == 0
               ? seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0)
               : seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                                        &flags_match);
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  return rc == 0 ? "filtered" : "seccomp rule/load failed: " + std::to_string(rc);
}

// "nobody" once the process runs as uid/gid 65534 without capabilities.
std::string BecomeNobody() {
  if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
      ::setresuid(65534, 65534, 65534) != 0) {
    return std::string("cannot drop to nobody: ") + std::strerror(errno);
  }
  return "nobody";
}

std::string Outcome(const Result<std::unique_ptr<DiscardNamespace>>& discard) {
  if (discard) return (*discard)->in_user_namespace() ? "ok userns" : "ok privileged";
  return std::string(discard.error().code == Errc::kUnsupported ? "unsupported|" : "failed|") +
         discard.error().message;
}

TEST(DiscardNamespace, ASeccompFilterRefusingUnshareMakesItUnsupportedNamingTheFilter) {
  const auto out = RunInChild([] {
    const std::string filtered = RefuseUnshare(0);
    if (filtered != "filtered") return "skip " + filtered;
    return Outcome(DiscardNamespace::Create());
  });
  ASSERT_TRUE(out.has_value()) << "the child crashed";
  if (out->rfind("skip ", 0) == 0) GTEST_SKIP() << out->substr(5);
  std::cout << *out << "\n";
  EXPECT_EQ(out->rfind("unsupported|", 0), 0u) << *out;
  EXPECT_NE(out->find("unshare(CLONE_NEWNET) failed with EPERM"), std::string::npos) << *out;
  EXPECT_NE(out->find("unshare(CLONE_NEWUSER | CLONE_NEWNET) failed with EPERM"),
            std::string::npos)
      << *out;
  EXPECT_NE(out->find("seccomp"), std::string::npos) << *out;
  EXPECT_NE(out->find("allow unshare(2)"), std::string::npos) << *out;
}

TEST(DiscardNamespace, ANonRootProcessGetsAUserNamespaceOrIsToldWhy) {
  const auto out = RunInChild([] {
    const std::string nobody = BecomeNobody();
    if (nobody != "nobody") return "skip " + nobody;
    auto discard = DiscardNamespace::Create();
    std::string text = Outcome(discard);
    if (discard) {
      auto fd = (*discard)->ConnectUdp();
      const char datagram[100] = {};
      text += fd && ::send(fd->get(), datagram, sizeof datagram, 0) == 100 ? " sent" : " not sent";
    }
    return text;
  });
  ASSERT_TRUE(out.has_value()) << "the child crashed";
  if (out->rfind("skip ", 0) == 0) GTEST_SKIP() << out->substr(5);
  std::cout << "as nobody: " << *out << "\n";
  if (out->rfind("ok", 0) == 0) {
    EXPECT_EQ(*out, "ok userns sent");
  } else {
    EXPECT_EQ(out->rfind("unsupported|", 0), 0u) << *out;
    EXPECT_NE(out->find("lacks CAP_SYS_ADMIN"), std::string::npos) << *out;
    EXPECT_NE(out->find("run zcal as root or with CAP_SYS_ADMIN"), std::string::npos) << *out;
  }
}

TEST(DiscardNamespace, ANonRootProcessWithoutUserNamespacesIsToldBothWays) {
  const auto out = RunInChild([] {
    const std::string nobody = BecomeNobody();
    if (nobody != "nobody") return "skip " + nobody;
    // What a host without unprivileged user namespaces answers.
    const std::string filtered = RefuseUnshare(CLONE_NEWUSER);
    if (filtered != "filtered") return "skip " + filtered;
    return Outcome(DiscardNamespace::Create());
  });
  ASSERT_TRUE(out.has_value()) << "the child crashed";
  if (out->rfind("skip ", 0) == 0) GTEST_SKIP() << out->substr(5);
  std::cout << *out << "\n";
  EXPECT_EQ(out->rfind("unsupported|", 0), 0u) << *out;
  EXPECT_NE(out->find("lacks CAP_SYS_ADMIN"), std::string::npos) << *out;
  EXPECT_NE(out->find("run zcal as root or with CAP_SYS_ADMIN"), std::string::npos) << *out;
  EXPECT_NE(out->find("CLONE_NEWUSER | CLONE_NEWNET) failed with EPERM"), std::string::npos)
      << *out;
}

// The missing-blackhole case cannot be produced on a kernel that has it
// (it is built in with CONFIG_NET_SCHED); a kind the kernel does not know
// takes the same path through rtnetlink (ENOENT with the kernel's text).
TEST(DiscardNamespace, AQdiscTheKernelDoesNotKnowIsUnsupportedWithTheKernelsAnswer) {
  const std::size_t fds_before = OpenFds();
  DiscardNamespaceOptions options;
  options.qdisc = "zcal_no_such_qdisc";
  auto discard = DiscardNamespace::Create(options);
  ASSERT_FALSE(discard);
  if (discard.error().message.find("none could be created") != std::string::npos) {
    GTEST_SKIP() << discard.error().message;
  }
  std::cout << discard.error().message << "\n";
  EXPECT_EQ(discard.error().code, Errc::kUnsupported) << discard.error().message;
  EXPECT_NE(discard.error().message.find("\"zcal_no_such_qdisc\""), std::string::npos)
      << discard.error().message;
  EXPECT_NE(discard.error().message.find("RTM_NEWQDISC"), std::string::npos);
  EXPECT_NE(discard.error().message.find("ENOENT"), std::string::npos)
      << discard.error().message;
  EXPECT_EQ(OpenFds(), fds_before);
}

// The rtnetlink requests themselves, in a namespace of the test's own.
TEST(Rtnetlink, ReportsTheKernelsErrorsWithTheirText) {
  const auto out = RunInChild([] {
    if (::unshare(CLONE_NEWNET) != 0) return std::string("skip unshare: ") + std::strerror(errno);
    auto opened = Rtnetlink::Open();
    if (!opened) return "open " + std::to_string(opened.error().err);
    Rtnetlink* netlink = opened->get();
    const unsigned lo = ::if_nametoindex("lo");
    std::string text;
    auto add = [&](const Result<void, NetlinkError>& r) {
      const NetlinkError e = r ? NetlinkError() : r.error();
      text += std::to_string(e.err) + "|" + e.message + "\n";
    };
    add(netlink->SetLinkUp(lo));
    add(netlink->SetLinkUp(999999));
    add(netlink->AddRootQdisc(lo, "blackhole"));
    add(netlink->AddRootQdisc(lo, "blackhole"));  // exclusive: exists now
    add(netlink->AddRootQdisc(999999, "blackhole"));
    add(netlink->AddRootQdisc(lo, std::string(100, 'x')));
    return text;
  });
  ASSERT_TRUE(out.has_value()) << "the child crashed";
  if (out->rfind("skip ", 0) == 0) GTEST_SKIP() << out->substr(5);
  std::cout << *out;
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; (end = out->find('\n', start)) != std::string::npos;
       start = end + 1) {
    lines.push_back(out->substr(start, end - start));
  }
  ASSERT_EQ(lines.size(), 6u) << *out;
  EXPECT_EQ(lines[0], "0|");
  EXPECT_EQ(lines[1].rfind(std::to_string(ENODEV) + "|", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2], "0|");
  EXPECT_EQ(lines[3].rfind(std::to_string(EEXIST) + "|", 0), 0u) << lines[3];
  EXPECT_EQ(lines[4].rfind(std::to_string(ENODEV) + "|", 0), 0u) << lines[4];
  EXPECT_NE(lines[5].rfind("0|", 0), 0u) << "an overlong kind is refused: " << lines[5];
}

}  // namespace
}  // namespace zcal::probes::discard_namespace_test
