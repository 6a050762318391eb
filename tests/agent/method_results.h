// Calibration verdicts for the agent's tests: one spelling of a threshold
// and of a never, shared by the tests that build states and tables.
#pragma once

#include <cstdint>

#include "zcal/calibrator/decision.h"

namespace zcal::agent::testing {

inline calibrator::MethodResult Threshold(calibrator::Method method, std::uint64_t bytes,
                                          double confidence = 0.8) {
  calibrator::MethodResult r;
  r.method = method;
  r.verdict = calibrator::Verdict::kThreshold;
  r.threshold_bytes = bytes;
  r.confidence = confidence;
  return r;
}

inline calibrator::MethodResult Never(calibrator::Method method, calibrator::Reason reason) {
  calibrator::MethodResult r;
  r.method = method;
  r.verdict = calibrator::Verdict::kNever;
  r.reason = reason;
  r.confidence = 1.0;
  return r;
}

}  // namespace zcal::agent::testing
