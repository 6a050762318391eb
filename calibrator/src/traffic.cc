#include "zcal/calibrator/decision_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "zcal/common/text.h"
#include "zcal/common/units.h"

namespace zcal::calibrator {

Result<std::vector<TrafficBin>> ParseTraffic(std::string_view text) {
  std::vector<TrafficBin> bins;
  double total = 0;
  for (std::string_view entry : common::Split(text, ',')) {
    entry = common::Trim(entry);
    const std::string quoted = "'" + std::string(entry) + "'";
    const auto colon = entry.find(':');
    if (colon == std::string_view::npos) {
      return Fail(Errc::kInvalidArgument,
                  quoted + " is not SIZE:WEIGHT (e.g. 4KiB:30,64KiB:70)");
    }
    auto size = common::ParseSize(common::Trim(entry.substr(0, colon)));
    if (!size || *size == 0) {
      return Fail(Errc::kInvalidArgument,
                  "the size in " + quoted + " must be a size of at least 1 byte" +
                      (size ? std::string() : " (" + size.error().message + ")"));
    }
    const std::string weight_text(common::Trim(entry.substr(colon + 1)));
    char* end = nullptr;
    errno = 0;
    const double weight = std::strtod(weight_text.c_str(), &end);
    if (weight_text.empty() || end != weight_text.c_str() + weight_text.size() ||
        errno != 0 || !std::isfinite(weight) || weight < 0) {
      return Fail(Errc::kInvalidArgument,
                  "the weight in " + quoted + " must be a number >= 0");
    }
    total += weight;
    bins.push_back({*size, weight});
  }
  if (!(total > 0)) {
    return Fail(Errc::kInvalidArgument, "the weights must not all be zero");
  }
  return bins;
}

}  // namespace zcal::calibrator
