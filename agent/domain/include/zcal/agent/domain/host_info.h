// The host facts the agent publishes (zcal_host_info, zcal_interface_info)
// and the NIC whose results become the host default.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/probes/host/host_facts.h"

namespace zcal::agent {

/// The `path` label of the host default NIC's zcal_interface_info series.
inline constexpr std::string_view kHostDefaultInterfacePath = "host_default";
/// The `path` label's prefix of the zcal_interface_info series of an
/// interface that kept peers are reached through ("interface/eth1").
inline constexpr std::string_view kPeerInterfacePathPrefix = "interface/";

/// The egress interface of one path: "loopback", "discard", "peer/..." (a
/// configured or peer path), kHostDefaultInterfacePath, or
/// kPeerInterfacePathPrefix + NAME.
struct PathInterface {
  std::string path;
  probes::InterfaceFacts facts;
};

/// The NIC whose results become the host default: the interface of the
/// default route, or the one the configuration names. A fact, read with
/// the host's; what is made of it is the choice (host_default_choice.h).
struct HostDefaultNic {
  std::optional<probes::InterfaceFacts> facts;  ///< nullopt: not found
  std::string why_unknown = "not read yet";  ///< when facts is nullopt
};

/// The host facts as the agent reads them once per round (the service's
/// CollectHostSnapshot) and as a calibration ran under, formatted where
/// shown (zcal_host_info, zcal_interface_info, the state file's "host",
/// the report's Host): the probes' one type of the host's facts, and what
/// the agent adds to it, the egress interface of each path and the host
/// default NIC.
struct HostInfo {
  /// Kernel, CPU, IOMMU command line, devices, the fingerprint (0
  /// unknown), and the notes of what could not be read, also of the
  /// paths' interfaces.
  probes::HostFacts facts;
  std::vector<PathInterface> interfaces;
  /// The NIC whose results become the host default, as last read (not
  /// kept in the state file: it is read again at start).
  HostDefaultNic host_default_nic;
};

/// Adds the egress interface of one more path, and the notes of reading
/// it that host.facts lacks.
void AddPath(HostInfo& host, std::string path, probes::InterfaceFacts interface,
             std::span<const std::string> notes);

/// The host of one path's reading, with its egress interface as `path`'s.
HostInfo HostInfoOf(probes::PathFacts facts, std::string path);

}  // namespace zcal::agent
