// How a calibration started and ended: the scheduler decides them, the
// service logs them, the metrics count them (labels `trigger`, `result`).
#pragma once

#include <cstdint>
#include <string_view>

namespace zcal::agent {

/// How a calibration ended (label `result` of zcal_calibrations_total).
enum class CalibrationResult : std::uint8_t { kSuccess, kFailed, kCancelled };

/// What started a calibration (label `trigger`).
enum class CalibrationTrigger : std::uint8_t {
  kStartup,
  kSchedule,
  kSignal,
  kFingerprint,
  kRetry,
  /// The applications' reports contradict a published entry (a field
  /// contradiction: publish/contradiction.h); once per contradiction.
  kContradiction,
};

/// "success", "failed", "cancelled".
std::string_view CalibrationResultName(CalibrationResult result);
/// "startup", "schedule", "signal", "fingerprint", "retry", "contradiction".
std::string_view CalibrationTriggerName(CalibrationTrigger trigger);

}  // namespace zcal::agent
