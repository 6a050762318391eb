#include "zcal/agent/domain/segment_name.h"

namespace zcal::agent {

Result<void> ValidateSegmentName(const std::string& name) {
  if (name.size() < 2 || name.size() > kMaxSegmentNameBytes + 1 || name[0] != '/' ||
      name.find('/', 1) != std::string::npos || name == "/." || name == "/..") {
    return Fail(Errc::kInvalidArgument,
                "segment name \"" + name +
                    "\" is invalid: write \"/NAME\" with one leading slash and 1 to " +
                    std::to_string(kMaxSegmentNameBytes) +
                    " more bytes, none of them a slash, e.g. /zcal");
  }
  return {};
}

}  // namespace zcal::agent
