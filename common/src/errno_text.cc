#include "zcal/common/errno_text.h"

#include <cstring>

namespace zcal::common {

std::string ErrnoText(int err) {
  const char* name = strerrorname_np(err);
  return std::string(name != nullptr ? name : "errno " + std::to_string(err)) +
         " (" + std::strerror(err) + ")";
}

}  // namespace zcal::common
