// What the agent watches on the host: the probes' host facts, the egress
// interface of every configured path and the host fingerprint
// (probes::HostFacts::fingerprint, the same value `zcal calibrate --json`
// prints). A change of the fingerprint triggers an early calibration.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "zcal/agent/config/config.h"
#include "zcal/agent/domain/host_info.h"
#include "zcal/probes/host/host_facts.h"
#include "zcal/probes/types/target.h"

namespace zcal::agent {

/// Reads the facts below config.host_root, once per round: the host's (kept
/// when there is a configured path), those of every configured path's
/// egress interface and of the host default NIC (also as
/// a HostDefaultInterface in `interfaces`), and the fingerprint, which
/// changes with the kernel, the CPU, the IOMMU kernel flags, or the facts
/// (driver, MTU, speed, offloads, IOMMU group and type) of lo or of any
/// interface backed by a device, and when such an interface appears or
/// disappears. Never fails: what cannot be read is left unknown (and named
/// in the facts' notes).
HostInfo CollectHostSnapshot(const Config& config);

/// Describes, in host.interfaces (path "interface/NAME"), each of
/// `names`: the interfaces that kept peers are reached through, so that the
/// fleet's per-interface classes have the facts of a second NIC too, not
/// only of the host default's. Entries of names no longer given go; an
/// interface that cannot be found gets none. Reads below config.host_root.
/// Returns whether the list changed.
bool DescribePeerInterfaces(HostInfo& host, const Config& config,
                            const std::set<std::string>& names);

/// Where the probes of a configured path send.
probes::Target ProbeTarget(const PathConfig& path);

}  // namespace zcal::agent
