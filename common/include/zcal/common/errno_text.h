// errno values as people read them in zcal's messages.
#pragma once

#include <string>

namespace zcal::common {

/// "EPERM (Operation not permitted)"; "errno 1234 (Unknown error 1234)"
/// for a value without a name.
std::string ErrnoText(int err);

}  // namespace zcal::common
