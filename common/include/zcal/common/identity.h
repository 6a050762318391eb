// Users and groups by name, as the configuration names them.
#pragma once

#include <sys/types.h>

#include <string>

#include "zcal/common/result.h"

namespace zcal::common {

/// The gid of a group name, or of a numeric gid given as text. kNotFound
/// when no such group exists, kIo when the group database cannot be read
/// (the message names the group and what to do).
Result<gid_t> ResolveGroup(const std::string& group);

/// The name of a user, or "uid N" when it has none.
std::string UserName(uid_t uid);

}  // namespace zcal::common
