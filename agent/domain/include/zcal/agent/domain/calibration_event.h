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
};

/// "success", "failed", "cancelled".
std::string_view CalibrationResultName(CalibrationResult result);
/// "startup", "schedule", "signal", "fingerprint", "retry".
std::string_view CalibrationTriggerName(CalibrationTrigger trigger);

}  // namespace zcal::agent
