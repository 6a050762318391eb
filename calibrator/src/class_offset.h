// A depth class's zerocopy cost as the stream class's plus a cost per send
// (ClassOffset in method_result.h; docs/calibrator.md, "Depth").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "zcal/calibrator/method.h"
#include "zcal/calibrator/method_result.h"
#include "zcal/calibrator/sample.h"

namespace zcal::calibrator::detail {

/// The class `depth`'s CPU per send of `method` over the stream class's, from
/// the samples of one path (every depth's). nullopt where there is nothing
/// to compare: no successful sample of the class or of the stream class.
/// A result with `rejected` set says why the model does not hold here.
/// `baseline` is the method zerocopy is judged against (Decide's: its
/// native one, or copy standing in); a size off the number is set aside
/// where both readings there lie clearly on one side of its cost.
std::optional<ClassOffset> MeasureClassOffset(std::span<const Sample> path_samples, Method method,
                                              std::uint32_t depth, Method baseline);

/// The stream class's successful samples of `method`, each moved into the
/// class `depth` by `ns_per_send` a send: its CPU time, and its wall time
/// in proportion (the sender ran for the same share of it: its throughput
/// follows its CPU, which MeasureClassOffset checks). A sample that would
/// be left with no CPU is dropped.
std::vector<Sample> MovedIntoClass(std::span<const Sample> path_samples, Method method,
                                   std::uint32_t depth, double ns_per_send);

}  // namespace zcal::calibrator::detail
