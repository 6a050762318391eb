// The host's load a calibration was measured under (probes::HostLoad) in
// JSON, both ways: the "load" of each result in the state file and the
// "host_load" of `zcal calibrate --json`, which the report reads too.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "zcal/common/result.h"
#include "zcal/probes/host/cpu_accounting.h"

namespace zcal::agent {

/// {"busy_share", "steal_share", "own_share" (shares of all CPUs' time,
/// 0 to 1), "runnable_mean", "runnable_max", "runnable_reads",
/// "window_seconds"}; null for nullopt (not measured).
nlohmann::json HostLoadToJson(const std::optional<probes::HostLoad>& load);

/// The inverse of HostLoadToJson: nullopt for null. kParse with a sentence
/// that starts with the bad key ("busy_share: 1.5 is not a share in
/// [0, 1]") when `json` is neither null nor an object with every key, each
/// a finite number in its range (shares in [0, 1], runnable_mean and
/// window_seconds >= 0, runnable_max and runnable_reads whole numbers that
/// fit 32 bits); the caller adds where the object is.
Result<std::optional<probes::HostLoad>> HostLoadFromJson(const nlohmann::json& json);

}  // namespace zcal::agent
