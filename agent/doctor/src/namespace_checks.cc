// The discard path's private network namespace: created directly with
// CAP_SYS_ADMIN, else inside an unprivileged user namespace.
#include <cerrno>

#include "root_files.h"
#include "zcal/agent/doctor/doctor.h"
#include "zcal/common/errno_text.h"

namespace zcal::agent::doctor {

namespace {

constexpr const char* kCheck = "userns";
constexpr const char* kLost =
    ": the discard path cannot run (loopback and peers still can), so there is no "
    "host-default estimate without peers";

// Why an unprivileged user namespace was refused, from the sysctls that
// refuse one, in the order the kernel applies them; the seccomp filter
// last, as what is left.
Finding Refused(const DoctorOptions& options, const std::string& what) {
  const auto max = ReadSysctlNumber(options.root, "user.max_user_namespaces");
  const auto clone = ReadSysctl(options.root, "kernel.unprivileged_userns_clone");
  const auto apparmor = ReadSysctl(options.root, "kernel.apparmor_restrict_unprivileged_userns");
  Finding f{kCheck, Status::kWarn, what, ""};
  if (max && *max == 0) {
    f.detail += " (user.max_user_namespaces = 0)" + std::string(kLost);
    f.fix = "sysctl -w user.max_user_namespaces=15000 (and in /etc/sysctl.d/), or run the "
            "agent with CAP_SYS_ADMIN";
  } else if (clone == "0") {
    f.detail += " (kernel.unprivileged_userns_clone = 0)" + std::string(kLost);
    f.fix = "sysctl -w kernel.unprivileged_userns_clone=1 (and in /etc/sysctl.d/), or run "
            "the agent with CAP_SYS_ADMIN";
  } else if (apparmor == "1") {
    f.detail += " (kernel.apparmor_restrict_unprivileged_userns = 1: AppArmor gives an "
                "unconfined program's user namespace no capabilities)" +
                std::string(kLost);
    f.fix = "load an AppArmor profile for zcal with the `userns,` rule, or sysctl -w "
            "kernel.apparmor_restrict_unprivileged_userns=0, or run the agent with "
            "CAP_SYS_ADMIN";
  } else {
    f.detail += " although no sysctl forbids it: a seccomp filter (a container "
                "runtime's) or an LSM refuses it" +
                std::string(kLost);
    f.fix = "allow unshare and clone with CLONE_NEWUSER | CLONE_NEWNET in the seccomp "
            "profile (in Kubernetes, a Localhost seccompProfile), or run the agent with "
            "CAP_SYS_ADMIN";
  }
  return f;
}

}  // namespace

std::vector<Finding> CheckUserNamespaces(const DoctorOptions& options, const Observations& seen) {
  const NamespaceObservation& ns = seen.namespaces;
  if (ns.privileged) {
    if (ns.netns_errno == 0) {
      return {{kCheck, Status::kOk,
               "CAP_SYS_ADMIN: the discard path creates its network namespace directly, "
               "no user namespace needed",
               ""}};
    }
    return {{kCheck, Status::kWarn,
             "with CAP_SYS_ADMIN, unshare(CLONE_NEWNET) still fails" +
                 (ns.netns_errno ? " with " + common::ErrnoText(*ns.netns_errno)
                                 : std::string(" (not tried: ") + ns.netns_note + ")") +
                 kLost,
             "allow unshare with CLONE_NEWNET in the seccomp profile of the agent's "
             "container or unit"}};
  }
  if (ns.userns_errno == 0) {
    return {{kCheck, Status::kOk,
             "an unprivileged user namespace with a network namespace can be created: the "
             "discard path runs",
             ""}};
  }
  if (!ns.userns_errno) return {Refused(options, "no child could try a user namespace (" +
                                                     ns.netns_note + ")")};
  if (*ns.userns_errno == ENOSPC) {
    return {{kCheck, Status::kWarn,
             "unshare(CLONE_NEWUSER | CLONE_NEWNET) fails with ENOSPC: this user has as many "
             "user namespaces as user.max_user_namespaces allows" +
                 std::string(kLost),
             "raise user.max_user_namespaces, or find what holds them (lsns -t user)"}};
  }
  return {Refused(options, "unshare(CLONE_NEWUSER | CLONE_NEWNET) fails with " +
                               common::ErrnoText(*ns.userns_errno))};
}

}  // namespace zcal::agent::doctor
