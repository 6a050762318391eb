// What the agent watches on the host: the probes' host facts of every
// configured path, plus the set of network interfaces, reduced to one
// fingerprint. A change of the fingerprint triggers an early calibration.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "zcal/agent/config.h"
#include "zcal/agent/metrics.h"

namespace zcal::agent {

struct HostSnapshot {
  /// Changes when any path's host facts (kernel, CPU, egress interface,
  /// its driver, MTU, speed, IOMMU group and type, IOMMU kernel flags)
  /// change, or an interface appears in or disappears from
  /// ROOT/sys/class/net.
  std::uint64_t fingerprint = 0;
  HostInfo info;        ///< for the metrics
  nlohmann::json facts;  ///< for the state file: {"paths": {...}, "interfaces": [...]}
};

/// Reads the facts below config.host_root. Never fails: what cannot be read
/// is left unknown (and named in the facts' notes).
HostSnapshot CollectHostSnapshot(const Config& config);

/// The probes' name of a configured path ("loopback").
std::string ProbePath(const PathConfig& path);

}  // namespace zcal::agent
