// The calibration runner: drives the calibrator's sweep planner with real
// probes on one path, within a time budget.
#pragma once

#include <functional>

#include "zcal/calibrator/planner.h"
#include "zcal/probes/calibration/calibration_types.h"

namespace zcal::probes {

/// The sweep planner's options for these calibration options (path name,
/// methods, sizes, decision). On the discard path, whose probes have a
/// fixed length, the refinement may also use the probes the budget leaves
/// after the coarse grid (each zerocopy method's refine_probes raised to
/// all of them: the budget's end stops the calibration) and repeat a size
/// up to 16 times (max_repeats); elsewhere probes are stretched to fill the
/// budget instead.
calibrator::PlannerOptions PlannerOptionsFor(const CalibrationOptions& options,
                                             std::uint32_t depth = calibrator::kStreamDepth);

/// Runs a calibration. Errors: Errc::kInvalidArgument for bad options (the
/// sentence of ValidateCalibrationOptions); Errc::kUnsupported when no probe
/// could run at all (every method unsupported, the sink unable to start),
/// with the reasons. On a peer path the calibration is one session of the
/// peer's sink (peer_client.h), and a session that does not open keeps the
/// code PeerSession::Open gave, with `peer` set to how it failed: kBusy
/// (try later or another peer), kPermission (kAuthFailed: the key),
/// kInvalidArgument (kOverLimit: over the sink's limits), kUnsupported
/// (kUnsupportedVersion), kParse (kProtocolError: a malformed answer),
/// kFailed (kUnreachable, kTimeout: refused, closed, or no answer in
/// time); a session lost after its grant ends the sweep with session_lost
/// set (and kFailed with `peer` the loss's kind, instead of kUnsupported,
/// when not one probe had measured). Otherwise the report, whatever the
/// verdicts. `on_progress` is called on the calling thread before each
/// probe.
Result<CalibrationReport, CalibrationError> RunCalibration(
    const CalibrationOptions& options,
    const std::function<void(const CalibrationProgress&)>& on_progress = {});

}  // namespace zcal::probes
