// The host facts the agent publishes (zcal_host_info, zcal_interface_info)
// and the NIC whose results become the host default.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/probes/host/host_facts.h"

namespace zcal::agent {

/// Whose egress interface a PathInterface describes.
enum class InterfaceRole : std::uint8_t {
  kPath,         ///< a configured path's or a peer's ("loopback", "peer/...")
  kHostDefault,  ///< the host default NIC ("host_default")
  kPeers,        ///< an interface kept peers are reached through ("interface/eth1")
};

/// One interface the agent describes (zcal_interface_info, the state file's
/// "host", the report), with whose it is. Made by the functions below, so
/// that the label and the role always agree; code asks the role, never the
/// label's text.
struct PathInterface {
  InterfaceRole role = InterfaceRole::kPath;
  /// The series' `path` label and the state file's key: the path's name
  /// ("loopback", "peer/ADDR:PORT"), "host_default", or "interface/NAME".
  std::string path;
  probes::InterfaceFacts facts;
};

/// The egress interface of the path named `path` (ToString of its PathId).
PathInterface PathEgress(std::string path, probes::InterfaceFacts facts);
/// The host default NIC.
PathInterface HostDefaultInterface(probes::InterfaceFacts facts);
/// An interface kept peers are reached through, labelled by its name.
PathInterface PeersInterface(probes::InterfaceFacts facts);
/// Reads a label back (the state file): "host_default" and "interface/..."
/// are theirs, any other text a path's.
PathInterface InterfaceOfLabel(std::string label, probes::InterfaceFacts facts);

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

/// Adds one more interface (a path's egress interface, or one read back
/// from the state file), and the notes of reading it that host.facts lacks.
void AddInterface(HostInfo& host, PathInterface interface, std::span<const std::string> notes);

/// The host of one path's reading, with its egress interface as `path`'s.
HostInfo HostInfoOf(probes::PathFacts facts, std::string path);

}  // namespace zcal::agent
