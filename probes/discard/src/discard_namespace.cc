#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>
#include <utility>

#include "discard_access.h"
#include "zcal/common/errno_text.h"
#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"
#include "zcal/probes/discard/discard.h"
#include "zcal/probes/host/rtnetlink.h"

// Why a helper process and not a thread that unshares its network
// namespace: unshare(CLONE_NEWUSER), the way in without CAP_SYS_ADMIN,
// fails with EINVAL in a multithreaded process, and the agent has threads.
// A forked child is single-threaded, so one design serves root and
// unprivileged users alike. The child only creates sockets (a socket keeps
// the namespace it was made in for life); the probes keep running on the
// caller's thread, so CPU accounting, io_uring rings and the locked-memory
// charge stay where they are for the other paths.

namespace zcal::probes {

namespace {

// The child's first message: how far setup got.
struct SetupReport {
  std::int32_t step = 0;  // 0 = ready, else a SetupStep; -1 = no namespace
  std::int32_t err = 0;
  std::int32_t new_net_err = 0;
  std::int32_t new_user_err = 0;
  char detail[256] = {};
};
static_assert(std::is_trivially_copyable_v<SetupReport>);

// The child's answer to a socket request: `count` fds as SCM_RIGHTS, or
// none and the errno of the socket(2) that failed.
struct SocketReply {
  std::int32_t err = 0;
  std::int32_t count = 0;
};

constexpr int kControlFd = 3;
constexpr int kSetupTimeoutMs = 5000;
constexpr int kRequestTimeoutMs = 2000;
constexpr char kSocketRequest = 'S';

void CopyDetail(SetupReport& report, const std::string& detail) {
  std::memcpy(report.detail, detail.data(), std::min(detail.size(), sizeof report.detail - 1));
}

bool SendSockets(int control, const int* fds, int count, int err) {
  SocketReply reply{err, count};
  iovec data{&reply, sizeof reply};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control_bytes[CMSG_SPACE(sizeof(int) * kSocketBatch)] = {};
  if (count > 0) {
    message.msg_control = control_bytes;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<std::size_t>(count));
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<std::size_t>(count));
    std::memcpy(CMSG_DATA(header), fds, sizeof(int) * static_cast<std::size_t>(count));
  }
  return ::sendmsg(control, &message, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof reply);
}

// Sets up the namespace and reports how far it got; true when ready.
bool SetUp(const char* qdisc, SetupReport& report) {
  if (::unshare(CLONE_NEWNET) != 0) {
    report.new_net_err = errno;
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
      report.new_user_err = errno;
      report.step = -1;
      return false;
    }
  }
  auto fail = [&](SetupStep step, const NetlinkError& error) {
    report.step = static_cast<std::int32_t>(step);
    report.err = error.err;
    CopyDetail(report, error.message);
    return false;
  };
  const unsigned lo = ::if_nametoindex("lo");
  if (lo == 0) return fail(SetupStep::kLoopbackIndex, NetlinkError(errno, ""));
  const auto netlink = Rtnetlink::Open();
  if (!netlink) return fail(SetupStep::kNetlinkSocket, netlink.error());
  if (auto up = (*netlink)->SetLinkUp(lo); !up) return fail(SetupStep::kLinkUp, up.error());
  if (auto root = (*netlink)->AddRootQdisc(lo, qdisc); !root) {
    return fail(SetupStep::kQdisc, root.error());
  }
  return true;
}

// The helper: runs in the forked child, never returns. It uses only
// syscalls and glibc's fork-safe malloc (the parent may have other threads
// holding other locks).
[[noreturn]] void HelperMain(int control, const char* qdisc, pid_t parent) {
  // Dies with the thread that forked it, so the namespace cannot outlive
  // the calibration even if the parent is killed.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  if (control != kControlFd) {
    if (::dup2(control, kControlFd) < 0) ::_exit(1);
  }
  // Inherited descriptors (listeners, rings, other probes' sockets) must
  // not be kept open by the helper.
  ::close_range(kControlFd + 1, ~0U, 0);

  SetupReport report;
  const bool ready = SetUp(qdisc, report);
  if (::send(kControlFd, &report, sizeof report, MSG_NOSIGNAL) != sizeof report || !ready) {
    ::_exit(0);
  }
  for (;;) {
    char request = 0;
    const ssize_t n = ::recv(kControlFd, &request, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || request != kSocketRequest) ::_exit(0);  // the parent is done
    // Closed here once sent: the parent holds its own copies.
    common::UniqueFd owned[kSocketBatch];
    int fds[kSocketBatch];
    int count = 0;
    int err = 0;
    while (count < kSocketBatch) {
      owned[count].Reset(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
      if (!owned[count]) {
        err = errno;
        break;
      }
      fds[count] = owned[count].get();
      ++count;
    }
    if (!SendSockets(kControlFd, fds, count, count > 0 ? 0 : err)) ::_exit(0);
  }
}

void Reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Waits for one message of `bytes` on the control socket.
int ReceiveWithin(int fd, msghdr* message, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return -errno;
    if (ready == 0) return -ETIMEDOUT;
    const ssize_t n = ::recvmsg(fd, message, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    return n < 0 ? -errno : static_cast<int>(n);
  }
}

}  // namespace

Result<std::unique_ptr<DiscardNamespace>> DiscardNamespace::Create(
    const DiscardNamespaceOptions& options) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return Fail(Errc::kFailed, "the discard path's namespace: socketpair failed with " +
                                   common::ErrnoText(errno));
  }
  common::UniqueFd control(pair[0]);
  common::UniqueFd helper_end(pair[1]);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    return Fail(Errc::kFailed, "the discard path's namespace: fork failed with " +
                                   common::ErrnoText(errno));
  }
  if (pid == 0) HelperMain(helper_end.get(), options.qdisc.c_str(), parent);
  helper_end.Reset();

  SetupReport report;
  iovec data{&report, sizeof report};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  const int n = ReceiveWithin(control.get(), &message, kSetupTimeoutMs);
  if (n != static_cast<int>(sizeof report)) {
    control.Reset();
    Reap(pid);
    return Fail(Errc::kFailed,
                "the discard path's namespace helper sent no setup report (" +
                    (n < 0 ? common::ErrnoText(-n) : std::to_string(n) + " bytes") +
                    "); it may have been killed");
  }
  if (report.step != 0) {
    control.Reset();
    Reap(pid);
    report.detail[sizeof report.detail - 1] = '\0';
    if (report.step < 0) {
      return tl::unexpected(NamespaceFailure({report.new_net_err, report.new_user_err},
                                             ReadAccessFacts(options.root)));
    }
    return tl::unexpected(SetupFailure(static_cast<SetupStep>(report.step), report.err,
                                       report.detail, options.qdisc));
  }
  return std::unique_ptr<DiscardNamespace>(
      new DiscardNamespace(pid, std::move(control), report.new_net_err != 0));
}

DiscardNamespace::DiscardNamespace(pid_t helper, common::UniqueFd control,
                                   bool in_user_namespace)
    : helper_(helper), control_(std::move(control)), in_user_namespace_(in_user_namespace) {}

DiscardNamespace::~DiscardNamespace() {
  control_.Reset();
  Reap(helper_);
}

Result<void> DiscardNamespace::Restock(const std::string& where) {
  if (::send(control_.get(), &kSocketRequest, 1, MSG_NOSIGNAL) != 1) {
    return Fail(Errc::kFailed, where + ": the namespace helper is gone (" +
                                   common::ErrnoText(errno) + ")");
  }
  SocketReply reply;
  iovec data{&reply, sizeof reply};
  alignas(cmsghdr) char control_bytes[CMSG_SPACE(sizeof(int) * kSocketBatch)] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control_bytes;
  message.msg_controllen = sizeof control_bytes;
  const int n = ReceiveWithin(control_.get(), &message, kRequestTimeoutMs);
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < fds; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      stock_.emplace_back(fd);
    }
  }
  if (n != static_cast<int>(sizeof reply) || stock_.empty()) {
    if (n == static_cast<int>(sizeof reply) && reply.err != 0) {
      return Fail(Errc::kFailed, where + ": socket(AF_INET, SOCK_DGRAM) in the namespace "
                                         "failed with " + common::ErrnoText(reply.err));
    }
    return Fail(Errc::kFailed, where + ": the namespace helper did not answer (" +
                                   (n < 0 ? common::ErrnoText(-n) : "no socket") + ")");
  }
  return {};
}

Result<common::UniqueFd> DiscardNamespace::ConnectUdp() {
  std::lock_guard lock(mutex_);
  const std::string where = std::string("discard path (UDP to ") + kDiscardAddress + ":" +
                            std::to_string(kDiscardPort) + ")";
  if (stock_.empty()) {
    if (auto restocked = Restock(where); !restocked) return tl::unexpected(restocked.error());
  }
  common::UniqueFd fd = std::move(stock_.back());
  stock_.pop_back();
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(kDiscardPort);
  ::inet_pton(AF_INET, kDiscardAddress, &address.sin_addr);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return Fail(Errc::kFailed, where + ": connect failed with " + common::ErrnoText(errno));
  }
  return fd;
}

}  // namespace zcal::probes
