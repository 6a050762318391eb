// Users and groups by name, as the configuration names them, and what a
// process may do (its capabilities).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "zcal/common/result.h"

namespace zcal::common {

/// The gid of a group name, or of a numeric gid given as text. kNotFound
/// when no such group exists, kIo when the group database cannot be read
/// (the message names the group and what to do).
Result<gid_t> ResolveGroup(const std::string& group);

/// The name of a user, or "uid N" when it has none.
std::string UserName(uid_t uid);

/// Whether capability `bit` (a CAP_* of linux/capability.h) is in the
/// effective set a /proc/PID/status file lists (its CapEff line); nullopt
/// when the file cannot be read or has no CapEff line that parses.
std::optional<bool> EffectiveCapability(const std::string& proc_status, int bit);

}  // namespace zcal::common
