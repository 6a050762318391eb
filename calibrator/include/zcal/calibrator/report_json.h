// Analysis as JSON: the document `zcal analyze --json` prints, and the form
// in which the agent's state file keeps results.
//
// {"paths": {"<path>": {"methods": {"<method>": MethodResult}}}}
//
// MethodResult:
//   "verdict": "threshold|always|never|inconclusive",
//   "threshold_bytes": int|null, "reason": string|null, "detail": string,
//   "baseline": "copy|uring_send", "baseline_substituted": bool,
//   "confidence": number|null,             in [0, 1]
//   "rule": "model"|"per_size"|null,       which rule decided (null: a
//                                          report such as unsupported)
//   "rule_detail": string,                 why per_size ("model rejected:
//                                          ..."); "" otherwise
//   "interval": {"low_bytes": int, "high_bytes": int|null,
//                "level": number}|null,    high null: may never pay off;
//                                          level 0.95 (model) or 0 (per
//                                          size: the two probed sizes
//                                          around the threshold)
//   "regret": number|null,                 expected excess cost, fraction
//   "regret_never": number|null, "regret_always": number|null,
//   "regret_excess": number|null,          what the threshold may cost
//                                          over the best one (95 %
//                                          bootstrap quantile), fraction;
//                                          null: per size with one sample
//   "tail_threshold_bytes": int|null,      diagnostic: start of the
//                                          winning tail of probed sizes
//   "wins_below": [int], "losses_above": [int],   probed sizes
//   "measured_bracket": {"above_bytes": int|null,      the threshold lies
//                        "at_most_bytes": int|null}|null, above / at most
//                                          these probed sizes (clear loss
//                                          with only losses below; clear
//                                          win with only wins above)
//   "curve_choice": {"threshold_bytes": int|null,      model: where the
//                    "regret": number}|null,  curves alone put it (null
//                                          bytes: never), when the bracket
//                                          moved it; null otherwise
//   "curve_disagreements": [{"size": int, "measured": "wins"|"loses",
//        "relative_cost": x, "fitted_relative_cost": x,
//        "bounds_threshold": bool}],       model: probed sizes, clear beyond
//                                          their noise, that the curves
//                                          contradict
//   "overruled": [{"size": int, "measured": "wins"|"loses", "clear": bool,
//        "relative_cost": x, "excess_cost": x}],  wins_below and
//                                          losses_above with what the
//                                          threshold's choice costs there
//                                          (fraction)
//   "overruled_cost": number|null,         their total: the threshold's
//                                          expected excess cost on the
//                                          per-size comparisons, fraction
//   "model": Model|null,
//   "class_offset": {"ns_per_send": x, "standard_error": x,   a numeric
//        "samples": int, "sizes": int,     depth class: its CPU per send
//        "translated": int,                over the stream's (ClassOffset),
//        "rejected": string|null,          the stream samples moved by it
//        "threshold_low_bytes": int|null,  (0 and why where refused), the
//        "threshold_high_bytes": int|null,  thresholds at its 95 %
//        "set_aside": string|null}|null,   bounds (null: never), the sizes
//                                          off the number where the
//                                          comparison reads the same
//                                          either way (null: none)
//   "sizes": [{"size": int, "zerocopy_wins": bool, "decisive": bool,
//              "throughput_ratio": x, "cpu_ratio": x, "relative_cost": x,
//              "throughput_acceptable": bool,
//              "zerocopy": SizeStats, "baseline": SizeStats}]
//
// SizeStats: {"samples", "throughput_bytes_per_second", "throughput_spread",
//   "cpu_ns_per_byte", "cpu_ns_per_byte_spread", "copied_fraction"|null,
//   "enobufs"}
//
// Model: {"accepted": bool, "rejection": string|null,
//   "rejected_sizes": {"min_size_bytes": int, "max_size_bytes": int,
//                      "confirmed": bool}|null,   the run of sizes that
//                                          rejected it; confirmed: by repeats
//   "min_size_bytes": int, "max_size_bytes": int,   compared range
//   "bootstrap_replicates": int,                    0 when rejected and
//                                                   the per-size rule decided
//   "local_fit": bool,   rejected, and a local fit of the probed sizes'
//                        costs decided (absent in older files: false)
//   "exceptions": [{"min_size_bytes": int, "max_size_bytes": int,
//                   "reason": string}],   sizes decided by their own
//                                          comparison, left out of the fits
//   "zerocopy": Fit, "baseline": Fit}
//
// Fit (the curves of cost_model.h; s in bytes):
//   cpu_ns_per_byte(s) = per_byte_ns + per_send_ns / s
//   throughput(s) = min(line_rate_bytes_per_second,
//                       cpu_bound_cores * 1e9 / cpu_ns_per_byte(s))  [B/s]
//   {"method": string, "per_byte_ns": x, "per_send_ns": x,
//    "line_rate_bytes_per_second": x|null, "cpu_bound_cores": x|null,
//    "per_byte_ns_se": x, "per_send_ns_se": x, "per_byte_per_send_cov": x,
//    "line_rate_se": x|null, "cpu_bound_cores_se": x|null,
//    "cpu_residual": x, "throughput_residual": x,      relative, robust SD
//    "samples": int, "sizes": int, "min_size_bytes": int,
//    "max_size_bytes": int}
//   A null cap is absent (not reached in the fitted sizes). The standard
//   errors give a band: var cpu(s) = se_a^2 + 2 cov / s + se_b^2 / s^2.
#pragma once

#include <nlohmann/json.hpp>

#include "zcal/calibrator/method_result.h"
#include "zcal/common/result.h"

namespace zcal::calibrator {

nlohmann::json ToJson(const SizeStats& stats);
nlohmann::json ToJson(const MethodFit& fit);
nlohmann::json ToJson(const CostModel& model);
nlohmann::json ToJson(const MeasuredBracket& bracket);
nlohmann::json ToJson(const MethodResult& result);
nlohmann::json ToJson(const Analysis& analysis);

nlohmann::json ToJson(const PathResult& path);  ///< {"methods": {...}, "drift": ...}

/// Reads a MethodResult object as ToJson writes it, the form `zcal analyze
/// --json` prints and the agent's state file keeps; ToJson of the result
/// gives the object back. Fields added since the first release are
/// optional: absent or null keeps their defaults, so older documents still
/// read. Errors (Errc::kParse) name the method and the field: a missing or
/// unknown verdict, a threshold verdict without threshold_bytes, an
/// unknown reason, a confidence outside [0, 1], a sizes entry without
/// size, or a field of the wrong type.
Result<MethodResult> ReadMethodResult(const nlohmann::json& j, Method method);

/// Reads {"methods": {"<method>": MethodResult}, "drift": ...} of `path`;
/// every key of methods must be a zerocopy method. Errors as
/// ReadMethodResult, prefixed with "<path>.methods.", and ReadHostDrift's.
Result<PathResult> ReadPathResult(const nlohmann::json& j, const std::string& path);

/// Reads the "drift" of a path's object `j` (HostDrift, as ToJson of the
/// PathResult writes it): nullopt where it is absent or null. Errors name
/// "<path>.drift" and the field.
Result<std::optional<HostDrift>> ReadHostDrift(const nlohmann::json& j, const std::string& path);

}  // namespace zcal::calibrator
