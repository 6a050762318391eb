// What the sweep planner and its stops share (planner.cc, planner_stop.cc).
#pragma once

#include <optional>
#include <string>

#include "zcal/calibrator/method_result.h"

namespace zcal::calibrator {

/// A method stops inside this share of its stated resolution (the excess
/// cost, the interval), so that one hovering at the line is not refined
/// round after round.
inline constexpr double kStopShare = 0.8;

/// Whether `r` is at the stated resolution (docs/calibrator.md, "The sweep
/// planner"): its regret_excess within `regret_resolution`, or the model's
/// 95 % interval within `resolution` of the threshold. A per-size
/// threshold needs its bracket (the probed size below it, and it) within
/// `resolution` as well: its excess is drawn at the probed sizes only and
/// says nothing of the sizes between them.
bool AtStatedResolution(const MethodResult& r, double resolution, double regret_resolution);

/// Where `r` is not at the stated resolution: what it is instead, for
/// people ("the published bracket 6656..8192 bytes is 18.8 % wide (stated:
/// 12.5 %)"); nullopt where it is.
std::optional<std::string> WiderThanStated(const MethodResult& r, double resolution,
                                           double regret_resolution);

}  // namespace zcal::calibrator
