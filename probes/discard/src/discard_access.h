// Why the discard path's namespace could not be set up, as sentences that
// name what is missing and how to grant it. Pure functions of what was
// tried and what the host says, so that every branch is testable.
#pragma once

#include <optional>
#include <string>

#include "zcal/common/result.h"

namespace zcal::probes {

/// What the namespace helper tried, errno per attempt (0 = it worked).
struct NamespaceAttempt {
  int new_net_err = 0;  ///< unshare(CLONE_NEWNET), needs CAP_SYS_ADMIN
  /// unshare(CLONE_NEWUSER | CLONE_NEWNET), tried when the first failed.
  int new_user_err = 0;
};

/// The host settings that decide whether a namespace can be created.
/// nullopt = unknown (the file does not exist on this kernel).
struct AccessFacts {
  std::optional<bool> cap_sys_admin;  ///< in the effective set
  std::optional<std::string> unprivileged_userns_clone;  ///< Debian sysctl
  std::optional<std::string> max_user_namespaces;
  std::optional<std::string> apparmor_restrict_unprivileged_userns;
};

/// Reads ROOT/proc/self/status (CapEff) and the sysctls above under ROOT.
AccessFacts ReadAccessFacts(const std::string& root);

/// Errc::kUnsupported: both attempts failed; the sentence gives each
/// errno, the likely cause, and what to do.
Error NamespaceFailure(const NamespaceAttempt& attempt, const AccessFacts& facts);

/// The step inside the namespace that failed.
enum class SetupStep : int {
  kLoopbackIndex = 1,  ///< if_nametoindex("lo")
  kNetlinkSocket,      ///< opening the NETLINK_ROUTE socket
  kLinkUp,             ///< RTM_NEWLINK lo up
  kQdisc,              ///< RTM_NEWQDISC root `qdisc_kind`
};

/// Errc::kUnsupported when the qdisc kind is unknown (ENOENT) or the kernel
/// has no traffic control (EOPNOTSUPP); Errc::kFailed otherwise. `detail`
/// is the kernel's extended-ack text, if any.
Error SetupFailure(SetupStep step, int err, const std::string& detail,
                   const std::string& qdisc_kind);

}  // namespace zcal::probes
