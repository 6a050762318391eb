// Offload features of a live interface through the ethtool ioctl.
#pragma once

#include <optional>
#include <string>

namespace zcal::probes {

struct OffloadFeatures {
  std::optional<bool> sg;   ///< scatter-gather (ETHTOOL_GSG)
  std::optional<bool> tso;  ///< TCP segmentation offload (ETHTOOL_GTSO)
  std::string error;        ///< why a value is unknown; empty if both known
};

/// Asks the kernel, in the caller's network namespace.
OffloadFeatures QueryOffloads(const std::string& interface);

}  // namespace zcal::probes
