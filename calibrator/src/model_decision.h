// The verdict from the cost model (internal to the calibrator).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "zcal/calibrator/decision_options.h"
#include "zcal/calibrator/method_result.h"
#include "zcal/calibrator/sample.h"

namespace zcal::calibrator::detail {

/// Distinct sizes each method needs in the compared range for a model fit:
/// two parameters per curve and at least two sizes to see structure in.
inline constexpr std::uint32_t kMinModelSizes = 4;

/// Central bootstrap interval of the threshold.
inline constexpr double kIntervalLevel = 0.95;

/// The kIntervalLevel quantile of ascending, non-empty `sorted` values
/// (regret_excess: what a threshold may cost over the best one).
inline double LevelQuantile(const std::vector<double>& sorted) {
  return sorted[static_cast<std::size_t>(
                    std::ceil(kIntervalLevel * static_cast<double>(sorted.size()))) -
                1];
}

/// FNV-1a over the bytes of `values`, continuing from `hash`: bootstrap
/// seeds from the samples, so the same samples give the same figures.
std::uint64_t HashValues(const std::vector<double>& values, std::uint64_t hash);

/// Below this share of bootstrap replicates in which the published threshold
/// costs at most half a percentage point more than their own best threshold,
/// the verdict is inconclusive.
inline constexpr double kMinConfidence = 0.8;

/// Fits the model for r.method against r.baseline from `samples` and, when
/// it fits, sets r's verdict, threshold, reason, detail, confidence, rule,
/// model, interval, regrets, curve_choice and curve_disagreements, and
/// returns true. The threshold and interval stay within
/// r.measured_bracket (set by the caller from r.sizes). Otherwise sets r.model
/// (if a fit was made) and r.rule_detail, and returns false: the per-size
/// rule decides.
bool DecideByModel(std::span<const Sample> samples, MethodResult& r,
                   const DecisionOptions& options);

}  // namespace zcal::calibrator::detail
