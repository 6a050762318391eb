// What the sweep planner and its stops share (planner.cc, planner_stop.cc).
#pragma once

namespace zcal::calibrator {

/// A method stops inside this share of its stated resolution (the excess
/// cost, the interval), so that one hovering at the line is not refined
/// round after round.
inline constexpr double kStopShare = 0.8;

}  // namespace zcal::calibrator
