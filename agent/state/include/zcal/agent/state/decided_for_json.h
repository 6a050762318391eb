// Which traffic mix a path's thresholds were decided for (DecidedFor) in
// JSON, both ways: the "decided_for" of the state file, and what `zcal show
// --state` and the report print.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "zcal/agent/domain/traffic_mix.h"
#include "zcal/common/result.h"

namespace zcal::agent {

/// {"source": "uniform" | "configured" | "applications", "window_seconds",
///  "sends", "bins": [{"size_bytes", "weight"}], "depths": {"1": share, ...}}.
nlohmann::json DecidedForToJson(const DecidedFor& decided_for);

/// The inverse of DecidedForToJson. kParse with a sentence that starts
/// with the bad key ("source: 'x' is not uniform, configured or
/// applications") for anything else; the caller adds where the object is.
/// Keys other than "source" may be missing (zero, empty).
Result<DecidedFor> DecidedForFromJson(const nlohmann::json& json);

/// "applications (3600 s, 12000 sends, 5 sizes)", "configured (2 sizes)",
/// "uniform": one line for a table.
std::string DescribeDecidedFor(const DecidedFor& decided_for);

}  // namespace zcal::agent
