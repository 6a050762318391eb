// The host's speed within one calibration: a level for each probe, measured
// along the probe order, and the samples put on one scale (HostDrift in
// method_result.h; docs/calibrator.md, "When the host's speed moves").
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "zcal/calibrator/method_result.h"
#include "zcal/calibrator/sample.h"

namespace zcal::calibrator::detail {

/// Probes a block holds: a (method, depth, size) probed in two blocks or
/// more was probed at times apart, and so measures how the host's speed
/// moved between them. 16 probes last about 0.2 s on the discard path.
inline constexpr std::size_t kDriftBlock = 16;

/// Measures the level of each sample of one path (every method and depth)
/// and, where the levels spread beyond kDriftApplyRatio and beyond their
/// own noise, divides each sample's CPU and wall time by its level.
/// nullopt, and nothing changed, where a successful sample lacks its place
/// in the probe order.
std::optional<HostDrift> CorrectDrift(std::vector<Sample>& path_samples);

}  // namespace zcal::calibrator::detail
