// Hysteresis: whether a fresh calibration result replaces the published one.
//
// The rule, per (path, method):
//  1. Nothing published yet: publish the fresh result.
//  2. The fresh result agrees with the published one: keep the published
//     one (no change) and forget any pending candidate.
//  3. The fresh result is inconclusive: keep the published one (and the
//     pending candidate). A published inconclusive result is replaced by the
//     first conclusive one.
//  4. The fresh result agrees with the pending candidate (the previous
//     calibration's result, which also differed from the published one):
//     publish the fresh result. Two consecutive calibrations agree.
//  5. The verdict changes kind (a threshold or always becomes never, or a
//     never becomes a threshold or always) and the fresh result's confidence
//     is at least `high_confidence`: publish at once.
//  6. Otherwise the fresh result becomes the pending candidate; nothing is
//     published.
//
// Two results agree when they have the same verdict and, for thresholds,
// the thresholds differ by at most `threshold_tolerance` of the larger one
// (default 0.5: within a factor of two, one coarse step of the planner; on a
// shared host with +-20 % noise per probe, successive calibrations of an
// unchanged truth scatter over about that much). threshold and always are
// different verdicts but agree when the always result's threshold (the
// smallest size) is within the tolerance of the threshold.
#pragma once

#include <optional>

#include "zcal/calibrator/method_result.h"

namespace zcal::calibrator {

struct HysteresisOptions {
  double threshold_tolerance = 0.5;   ///< fraction of the larger threshold
  double high_confidence = 0.9;       ///< for an immediate change of kind

  bool operator==(const HysteresisOptions&) const = default;
};

/// True when a and b agree in the sense above.
bool Agree(const MethodResult& a, const MethodResult& b,
           const HysteresisOptions& options);

struct HysteresisDecision {
  bool publish = false;                  ///< replace published with fresh
  std::optional<MethodResult> pending;   ///< the candidate to remember
};

/// Applies the rule. `published` and `pending` are the state kept by the
/// caller for one (path, method).
HysteresisDecision ApplyHysteresis(const std::optional<MethodResult>& published,
                                   const std::optional<MethodResult>& pending,
                                   const MethodResult& fresh,
                                   const HysteresisOptions& options);

}  // namespace zcal::calibrator
