// What the agent watches on the host: the probes' host facts of every
// configured path and the host fingerprint (probes::HostFacts::Fingerprint,
// the same value `zcal calibrate --json` prints). A change of the
// fingerprint triggers an early calibration.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "zcal/agent/config.h"
#include "zcal/agent/metrics.h"
#include "zcal/probes/target.h"

namespace zcal::agent {

struct HostSnapshot {
  /// probes::HostFacts::Fingerprint: changes with the kernel, the CPU, the
  /// IOMMU kernel flags, or the facts (driver, MTU, speed, offloads, IOMMU
  /// group and type) of lo or of any interface backed by a device, and
  /// when such an interface appears or disappears.
  std::uint64_t fingerprint = 0;
  HostInfo info;        ///< for the metrics
  nlohmann::json facts;  ///< for the state file: {"fingerprint", "paths": {...}}
};

/// Reads the facts below config.host_root. Never fails: what cannot be read
/// is left unknown (and named in the facts' notes).
HostSnapshot CollectHostSnapshot(const Config& config);

/// Where the probes of a configured path send.
probes::Target ProbeTarget(const PathConfig& path);

}  // namespace zcal::agent
