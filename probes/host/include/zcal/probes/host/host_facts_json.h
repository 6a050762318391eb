// The JSON of host facts, both ways: probes::ToJson(PathFacts) (`zcal
// calibrate --json`; the agent's state file writes the same fields per
// path) and the facts of one interface in it, read back by the agent and
// the report.
#pragma once

#include <nlohmann/json.hpp>

#include "zcal/probes/host/host_facts.h"

namespace zcal::probes {

/// {"kernel_release", "cpu_model", "iommu_cmdline": [..], "devices": [IF..],
///  "interface": IF, "fingerprint": "16 hex digits", "notes": [..]} where IF
/// is InterfaceFactsToJson, "interface" the path's egress interface and
/// "fingerprint" HostFacts::fingerprint; unknown values are null.
nlohmann::json ToJson(const PathFacts& facts);

/// {"name", "driver", "pci_device", "speed_mbps", "mtu", "sg", "tso",
///  "iommu_group", "iommu_type"}; unknown values are null.
nlohmann::json InterfaceFactsToJson(const InterfaceFacts& facts);

/// The inverse of InterfaceFactsToJson. Lenient, as for a file written by
/// another version: a missing, null or mistyped field stays unknown (empty
/// or nullopt), and a value that is not an object gives facts with nothing
/// known.
InterfaceFacts InterfaceFactsFromJson(const nlohmann::json& json);

}  // namespace zcal::probes
