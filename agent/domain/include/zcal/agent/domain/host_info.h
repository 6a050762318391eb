// The host facts the agent publishes (zcal_host_info, zcal_interface_info)
// and the NIC whose results become the host default.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zcal/agent/domain/depth_class.h"
#include "zcal/agent/domain/published_entry.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/method.h"
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
/// default route, or the one the configuration names.
struct HostDefaultNic {
  std::optional<probes::InterfaceFacts> facts;  ///< nullopt: not found
  std::string why_unknown = "not read yet";  ///< when facts is nullopt
};

/// The host facts as the agent reads them once per round (the service's
/// CollectHostSnapshot) and as a calibration ran under: the one type of
/// them above the probes, formatted where shown (zcal_host_info,
/// zcal_interface_info, the state file's "host", the report's Host).
struct HostInfo {
  std::string kernel_release;
  std::string cpu_model;
  std::vector<std::string> iommu_cmdline;  ///< words, in order
  std::uint64_t fingerprint = 0;  ///< probes::HostFacts::Fingerprint; 0 unknown
  /// What the fingerprint covers besides the above: lo and every interface
  /// backed by a device (probes::HostFacts::devices).
  std::vector<probes::InterfaceFacts> devices;
  std::vector<PathInterface> interfaces;
  /// What could not be read (for people), without duplicates.
  std::vector<std::string> notes;
  /// The NIC whose results become the host default, as last read (not
  /// kept in the state file: it is read again at start).
  HostDefaultNic host_default_nic;
};

/// The host-wide facts of `facts`, with its egress interface as `path`'s.
HostInfo HostInfoOf(const probes::HostFacts& facts, std::string path);

/// Adds the egress interface of one more path, and the notes `facts` has
/// that `host` lacks.
void AddPath(HostInfo& host, const probes::HostFacts& facts, std::string path);

/// Where the published host default comes from (zcal_host_default_info);
/// its entries are those of the published table.
struct HostDefaultInfo {
  /// Where it comes from, or why there is none (named where shown:
  /// HostDefaultSourceName, HostDefaultAbsenceReason).
  HostDefaultSource source = HostDefaultSource::kUnknown;
  std::string interface;  ///< the NIC it stands for; "" when unknown
};


}  // namespace zcal::agent
