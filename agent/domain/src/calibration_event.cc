#include "zcal/agent/domain/calibration_event.h"

namespace zcal::agent {

std::string_view CalibrationResultName(CalibrationResult result) {
  switch (result) {
    case CalibrationResult::kSuccess:
      return "success";
    case CalibrationResult::kFailed:
      return "failed";
    case CalibrationResult::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string_view CalibrationTriggerName(CalibrationTrigger trigger) {
  switch (trigger) {
    case CalibrationTrigger::kStartup:
      return "startup";
    case CalibrationTrigger::kSchedule:
      return "schedule";
    case CalibrationTrigger::kSignal:
      return "signal";
    case CalibrationTrigger::kFingerprint:
      return "fingerprint";
    case CalibrationTrigger::kRetry:
      return "retry";
    case CalibrationTrigger::kContradiction:
      return "contradiction";
  }
  return "unknown";
}

}  // namespace zcal::agent
