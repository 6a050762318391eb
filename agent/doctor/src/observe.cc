#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "probes_live.h"
#include "root_files.h"
#include "zcal/agent/state/state.h"
#include "zcal/common/clock.h"
#include "zcal/common/errno_text.h"
#include "zcal/common/identity.h"
#include "zcal/common/unique_fd.h"

namespace zcal::agent::doctor {

namespace {

constexpr int kCapSysAdmin = 21;
constexpr int kCapIpcLock = 14;

// What the namespace child reports through its pipe: fixed-width, one write.
struct ChildReport {
  std::int32_t unshare_errno;
  std::int32_t optmem_errno;  // of reading optmem_max there; 0 = read
  std::uint64_t optmem_max;
};

[[noreturn]] void RunChild(int out, bool privileged) {
  ChildReport report{};
  const int flags = privileged ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET;
  if (::unshare(flags) != 0) {
    report.unshare_errno = errno;
  } else {
    // /proc/sys/net shows the namespace of the task that reads it.
    const int fd = ::open("/proc/sys/net/core/optmem_max", O_RDONLY | O_CLOEXEC);
    char text[32] = {};
    const ssize_t n = fd < 0 ? -1 : ::read(fd, text, sizeof text - 1);
    if (n <= 0) {
      report.optmem_errno = fd < 0 ? errno : EIO;
    } else {
      std::from_chars(text, text + n, report.optmem_max);
    }
  }
  const ssize_t written = ::write(out, &report, sizeof report);
  ::_exit(written == sizeof report ? 0 : 1);
}

}  // namespace

bool HasCapability(std::string_view root, int bit) {
  return common::EffectiveCapability(UnderRoot(root, "proc/self/status"), bit).value_or(false);
}

NamespaceObservation ProbeNamespaces(std::string_view root) {
  NamespaceObservation seen;
  seen.privileged = HasCapability(root, kCapSysAdmin);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    seen.netns_note = "no pipe for the namespace child (" + common::ErrnoText(errno) + ")";
    return seen;
  }
  common::UniqueFd read_end(fds[0]);
  common::UniqueFd write_end(fds[1]);
  const pid_t child = ::fork();
  if (child < 0) {
    seen.netns_note = "no child for the namespaces (fork: " + common::ErrnoText(errno) + ")";
    return seen;
  }
  if (child == 0) RunChild(write_end.get(), seen.privileged);
  write_end.Reset();
  ChildReport report{};
  ssize_t n = 0;
  do {
    n = ::read(read_end.get(), &report, sizeof report);
  } while (n < 0 && errno == EINTR);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof report)) {
    seen.netns_note = "the namespace child ended without an answer";
    return seen;
  }
  (seen.privileged ? seen.netns_errno : seen.userns_errno) = report.unshare_errno;
  if (report.unshare_errno != 0) {
    seen.netns_note = "no network namespace could be created here (unshare: " +
                      common::ErrnoText(report.unshare_errno) + ")";
  } else if (report.optmem_errno == ENOENT) {
    seen.netns_uses_host_optmem = true;
    seen.netns_note = "a new network namespace has no net.core.optmem_max of its own "
                      "(before Linux 6.9): the host's applies there";
  } else if (report.optmem_errno != 0) {
    seen.netns_note = "net.core.optmem_max could not be read in a new network namespace (" +
                      common::ErrnoText(report.optmem_errno) + ")";
  } else {
    seen.netns_optmem_max = report.optmem_max;
  }
  return seen;
}

MemlockObservation ProbeMemlock(std::string_view root) {
  MemlockObservation seen;
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    seen.soft_bytes = limit.rlim_cur;
  }
  seen.cap_ipc_lock = HasCapability(root, kCapIpcLock);
  return seen;
}

Observations Observe(const DoctorOptions& options) {
  Observations seen;
  seen.uring = ProbeUring();
  seen.msg_zerocopy = probes::CheckSupport(calibrator::Method::kMsgZerocopy,
                                           probes::CapabilityOptions{options.root});
  seen.namespaces = ProbeNamespaces(options.root);
  seen.memlock = ProbeMemlock(options.root);
  seen.host = probes::CollectHostFacts(options.root);
  if (Result<std::string> egress = probes::DefaultRouteInterface()) {
    seen.egress_interface = std::move(*egress);
  }
  seen.segment = ReadSegmentTable(options.segment);
  seen.state = LoadState(options.state_path);
  seen.now_ns = common::RealtimeNs();
  return seen;
}

}  // namespace zcal::agent::doctor
