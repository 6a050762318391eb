#include "discard_access.h"

#include <linux/capability.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "zcal/common/errno_text.h"
#include "zcal/common/identity.h"
#include "zcal/common/result.h"
#include "zcal/probes/host/sysfs.h"

namespace zcal::probes {

namespace {

struct Explanation {
  std::string cause;  ///< " (...)" after the errno, or empty
  std::string fix;    ///< what to do, or empty
};

constexpr const char* kSeccompFix =
    "allow unshare(2) in the seccomp profile or security policy that "
    "refuses it, for user and network namespaces only (systemd: "
    "RestrictNamespaces=user net, as the packaged unit has; Kubernetes: "
    "the profile deploy/kubernetes/seccomp/zcal-agent.json, "
    "docs/operations.md)";

Explanation ExplainNewNet(int err, const AccessFacts& facts) {
  if ((err == EPERM && facts.cap_sys_admin == true) || err == ENOSYS) {
    return {" (refused although the process has CAP_SYS_ADMIN: a seccomp filter, "
            "as container runtimes install, or a security module)",
            kSeccompFix};
  }
  if (err == EPERM) {
    return {" (the process lacks CAP_SYS_ADMIN)",
            "run zcal as root or with CAP_SYS_ADMIN"};
  }
  if (err == EINVAL) {
    return {" (the kernel lacks network namespaces)",
            "use a kernel built with CONFIG_NET_NS=y"};
  }
  if (err == ENOSPC) {
    return {" (the limit user.max_net_namespaces is reached)",
            "raise user.max_net_namespaces"};
  }
  return {};
}

Explanation ExplainNewUser(int err, const AccessFacts& facts) {
  if (err == EPERM && facts.unprivileged_userns_clone == "0") {
    return {" (kernel.unprivileged_userns_clone = 0)",
            "allow unprivileged user namespaces (sysctl "
            "kernel.unprivileged_userns_clone=1)"};
  }
  if ((err == EPERM || err == EACCES) &&
      facts.apparmor_restrict_unprivileged_userns == "1") {
    return {" (kernel.apparmor_restrict_unprivileged_userns = 1)",
            "let zcal create user namespaces (sysctl "
            "kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor "
            "profile with the userns permission)"};
  }
  if (err == ENOSPC && facts.max_user_namespaces == "0") {
    return {" (user.max_user_namespaces = 0: user namespaces are disabled)",
            "allow user namespaces (sysctl user.max_user_namespaces=10000)"};
  }
  if (err == ENOSPC) {
    return {" (the limit user.max_user_namespaces" +
                (facts.max_user_namespaces ? " = " + *facts.max_user_namespaces : "") +
                " is reached)",
            "raise user.max_user_namespaces"};
  }
  if (err == EINVAL) {
    return {" (the kernel lacks user namespaces)",
            "use a kernel built with CONFIG_USER_NS=y"};
  }
  if (err == EPERM || err == ENOSYS) {
    return {" (a seccomp filter, as container runtimes install, or a security "
            "module refuses it)",
            kSeccompFix};
  }
  return {};
}

std::optional<bool> CapSysAdmin(const std::string& root) {
  return common::EffectiveCapability(UnderRoot(root, "proc/self/status"), CAP_SYS_ADMIN);
}

std::optional<std::string> Sysctl(const std::string& root, const char* relative) {
  auto value = ReadFirstLine(UnderRoot(root, relative));
  if (!value) return std::nullopt;
  return *value;
}

}  // namespace

AccessFacts ReadAccessFacts(const std::string& root) {
  AccessFacts facts;
  facts.cap_sys_admin = CapSysAdmin(root);
  facts.unprivileged_userns_clone = Sysctl(root, "proc/sys/kernel/unprivileged_userns_clone");
  facts.max_user_namespaces = Sysctl(root, "proc/sys/user/max_user_namespaces");
  facts.apparmor_restrict_unprivileged_userns =
      Sysctl(root, "proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  return facts;
}

Error NamespaceFailure(const NamespaceAttempt& attempt, const AccessFacts& facts) {
  const Explanation net = ExplainNewNet(attempt.new_net_err, facts);
  const Explanation user = ExplainNewUser(attempt.new_user_err, facts);
  std::string text =
      "the discard path needs a private network namespace, and none could be "
      "created: unshare(CLONE_NEWNET) failed with " +
      common::ErrnoText(attempt.new_net_err) + net.cause +
      ", and unshare(CLONE_NEWUSER | CLONE_NEWNET) failed with " +
      common::ErrnoText(attempt.new_user_err) + user.cause;
  std::vector<std::string> fixes;
  for (const std::string& fix : {net.fix, user.fix}) {
    if (!fix.empty() && (fixes.empty() || fixes.front() != fix)) fixes.push_back(fix);
  }
  if (!fixes.empty()) {
    text += "; to measure this path, " + fixes.front();
    if (fixes.size() > 1) text += ", or " + fixes.back();
  }
  return {Errc::kUnsupported, text};
}

Error SetupFailure(SetupStep step, int err, const std::string& detail,
                   const std::string& qdisc_kind) {
  const std::string said = detail.empty() ? "" : " (\"" + detail + "\")";
  switch (step) {
    case SetupStep::kLoopbackIndex:
      return {Errc::kFailed, "the discard path's namespace has no lo: if_nametoindex "
                             "failed with " + common::ErrnoText(err)};
    case SetupStep::kNetlinkSocket:
      return {Errc::kFailed, "the discard path's namespace: " + detail + " with " +
                                 common::ErrnoText(err)};
    case SetupStep::kLinkUp:
      return {Errc::kFailed, "bringing lo up in the discard path's namespace "
                             "(RTM_NEWLINK) failed with " + common::ErrnoText(err) + said};
    case SetupStep::kQdisc:
      break;
  }
  const std::string request = "installing the root qdisc \"" + qdisc_kind +
                              "\" on lo (RTM_NEWQDISC) failed with " + common::ErrnoText(err) + said;
  if (err == ENOENT) {
    return {Errc::kUnsupported,
            "the discard path needs the kernel's \"" + qdisc_kind + "\" qdisc: " + request +
                ": the kernel does not know this kind; blackhole is built in with "
                "traffic control (CONFIG_NET_SCHED=y; modprobe sch_" + qdisc_kind +
                " where a custom kernel has it as a module)"};
  }
  if (err == EOPNOTSUPP) {
    return {Errc::kUnsupported,
            "the discard path needs the kernel's \"" + qdisc_kind + "\" qdisc: " + request +
                ": this kernel has no traffic control; use one built with "
                "CONFIG_NET_SCHED=y"};
  }
  return {Errc::kFailed, "the discard path's namespace: " + request};
}

}  // namespace zcal::probes
