// Host facts in JSON, both ways: the state file's "host" and the "host" of
// `zcal calibrate --json`, which the report reads too.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "zcal/agent/domain/host_info.h"

namespace zcal::agent {

/// {"fingerprint": "16 hex digits", "paths": {PATH: FACTS}}, FACTS as
/// probes::ToJson writes a path's (kernel_release, cpu_model,
/// iommu_cmdline, devices, interface, notes; the host's facts repeated
/// under each path) with PATH's egress interface, one per interface of
/// `host`.
nlohmann::json HostToStateJson(const HostInfo& host);

/// The inverse of HostToStateJson, lenient as for a file of another
/// version: what is missing or mistyped stays unknown. nullopt when `json`
/// is not an object with at least one path.
std::optional<HostInfo> HostFromStateJson(const nlohmann::json& json);

/// The facts of probes::ToJson (`zcal calibrate --json`'s "host"), with
/// their egress interface as `path`'s. nullopt when `facts` is not an
/// object.
std::optional<HostInfo> HostFromFactsJson(const nlohmann::json& facts, std::string path);

}  // namespace zcal::agent
