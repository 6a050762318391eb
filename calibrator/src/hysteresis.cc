#include "zcal/calibrator/hysteresis.h"

#include <algorithm>

namespace zcal::calibrator {

namespace {

bool WinsSomewhere(Verdict v) {
  return v == Verdict::kThreshold || v == Verdict::kAlways;
}

bool ThresholdsClose(const MethodResult& a, const MethodResult& b,
                     double tolerance) {
  if (!a.threshold_bytes || !b.threshold_bytes) return false;
  const double x = static_cast<double>(*a.threshold_bytes);
  const double y = static_cast<double>(*b.threshold_bytes);
  return std::abs(x - y) <= tolerance * std::max(x, y);
}

}  // namespace

bool Agree(const MethodResult& a, const MethodResult& b,
           const HysteresisOptions& options) {
  if (WinsSomewhere(a.verdict) && WinsSomewhere(b.verdict)) {
    if (a.verdict == Verdict::kAlways && b.verdict == Verdict::kAlways) {
      return true;
    }
    return ThresholdsClose(a, b, options.threshold_tolerance);
  }
  if (a.verdict != b.verdict) return false;
  if (a.verdict == Verdict::kNever) return a.reason == b.reason;
  return true;  // both inconclusive
}

HysteresisDecision ApplyHysteresis(const std::optional<MethodResult>& published,
                                   const std::optional<MethodResult>& pending,
                                   const MethodResult& fresh,
                                   const HysteresisOptions& options) {
  if (!published) return {true, std::nullopt};
  if (Agree(*published, fresh, options)) return {false, std::nullopt};
  if (fresh.verdict == Verdict::kInconclusive) return {false, pending};
  if (published->verdict == Verdict::kInconclusive) return {true, std::nullopt};
  if (pending && Agree(*pending, fresh, options)) return {true, std::nullopt};
  // Neither is inconclusive here (both returned above).
  const bool kind_changed =
      WinsSomewhere(published->verdict) != WinsSomewhere(fresh.verdict);
  if (kind_changed && fresh.confidence &&
      *fresh.confidence >= options.high_confidence) {
    return {true, std::nullopt};
  }
  return {false, fresh};
}

}  // namespace zcal::calibrator
