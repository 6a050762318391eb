// Which depth classes a calibration probes, in which order, and where: the
// part of a run with several classes that is decision, not probing, kept
// apart from the loop (calibration.cc) so that it is tested without probes.
//
// A deeper class pays less per send (its completions arrive merged), so its
// threshold is at most a shallower class's. The run probes the stream class
// first (every method, the baselines once for all classes), then the
// shallowest class, then the others from the deepest: each of those lies
// between two classes already decided. A zerocopy method is not probed at a
// class whose answer its neighbours already give (a deeper neighbour never
// wins, or a shallower one always does), and is probed elsewhere only at
// the sizes where its neighbours disagree, besides the range's two ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "zcal/calibrator/method.h"
#include "zcal/calibrator/method_result.h"

namespace zcal::probes::depth_classes {

/// The classes of `depths` (empty: stream only) in calibration order:
/// stream, the shallowest numeric class, then the other numeric classes
/// from the deepest.
std::vector<std::uint32_t> CalibrationOrder(const std::vector<std::uint32_t>& depths);

/// One zerocopy method's answer at a class: measured, or taken from a
/// neighbour (`inferred`).
struct Known {
  calibrator::Verdict verdict = calibrator::Verdict::kInconclusive;
  calibrator::Reason reason = calibrator::Reason::kNone;
  std::optional<std::uint64_t> threshold_bytes;  ///< kThreshold and kAlways
  std::uint32_t decided_at = 0;  ///< the class whose probes decided it
};

/// Per class calibrated (or inferred) so far, per zerocopy method.
using KnownClasses = std::map<std::uint32_t, std::map<calibrator::Method, Known>>;

/// What `result` says, as a Known of class `depth`.
Known KnownOf(const calibrator::MethodResult& result, std::uint32_t depth);

/// Where `method` is probed at `depth`, given what the classes decided so
/// far say: not at all (`skip` with the sentence why), the whole grid
/// (`sizes` empty) or only `sizes` of `grid`.
struct Placement {
  std::optional<std::string> skip;
  std::optional<Known> inferred;  ///< with skip: the answer it takes
  std::vector<std::uint64_t> sizes;
};

/// The first class (known empty) is probed everywhere. A method absent
/// from every class decided so far (it could not run, or the kernel copied
/// its sends, at the first class) is skipped. `grid` ascending.
Placement Place(calibrator::Method method, std::uint32_t depth, const KnownClasses& known,
                const std::vector<std::uint64_t>& grid);

/// A class's share, in seconds, of the `remaining` seconds of the budget,
/// in calibration order. Where its probes have a fixed length (the
/// discard path: `coarse` and `coarse_after` are the seconds its own
/// coarse grid and the later classes' are likely to need), all of it but
/// `coarse_after`, and where even the coarse grids do not fit, a share of
/// `remaining` in proportion to them. The stream class, probed first and
/// the answer for every connection without a class of its own, refines as
/// long as its planner projects that probes get it to its resolution; its
/// planner's noise and time stops, not a fixed split, leave the rest to the
/// classes after it, which probe where their neighbours disagree. Where the
/// probes are sized to the time left (TCP paths: both coarse figures 0),
/// by the `methods` this class probes against the `methods_after` of the
/// later classes, so that a class that probes one method does not hold
/// time another needs. What a class leaves goes on to the next. 0 for a
/// class that probes no method.
double ShareOf(std::size_t methods, std::size_t methods_after, double remaining, double coarse,
               double coarse_after);

}  // namespace zcal::probes::depth_classes
