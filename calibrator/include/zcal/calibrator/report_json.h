// Analysis as JSON: the document `zcal analyze --json` prints.
//
// {"paths": {"<path>": {"methods": {"<method>": {
//    "verdict": "threshold|always|never|inconclusive",
//    "threshold_bytes": int|null, "reason": string|null,
//    "baseline": "copy|uring_send", "baseline_substituted": bool,
//    "confidence": number|null, "detail": string,
//    "sizes": [{"size": N, "zerocopy_wins": bool, "decisive": bool,
//               "throughput_ratio": x, "cpu_ratio": x,
//               "zerocopy": {...}, "baseline": {...}}]}}}}}
#pragma once

#include <nlohmann/json.hpp>

#include "zcal/calibrator/decision.h"

namespace zcal::calibrator {

nlohmann::json ToJson(const SizeStats& stats);
nlohmann::json ToJson(const MethodResult& result);
nlohmann::json ToJson(const Analysis& analysis);

}  // namespace zcal::calibrator
