#include "zcal/probes/calibration/depth_classes.h"

#include <algorithm>
#include <limits>

#include "zcal/calibrator/depth.h"

namespace zcal::probes::depth_classes {

namespace {

using calibrator::Reason;
using calibrator::Verdict;

// Orders classes by depth: the numbers ascending, stream (0) deepest.
std::uint64_t Rank(std::uint32_t depth) {
  return depth == calibrator::kStreamDepth ? std::numeric_limits<std::uint64_t>::max() : depth;
}

// A reason that holds at every depth: the method cannot run, its sends were
// copied, its probes failed, or nothing was there to compare it with.
bool HoldsAtEveryDepth(const Known& k) {
  return k.reason == Reason::kUnsupported || k.reason == Reason::kKernelCopied ||
         k.reason == Reason::kFailed || k.reason == Reason::kNoBaseline;
}

std::string Said(const Known& k) {
  std::string text(calibrator::VerdictName(k.verdict));
  if (k.reason != Reason::kNone) text += " (" + std::string(calibrator::ReasonName(k.reason)) + ")";
  return text;
}

}  // namespace

std::vector<std::uint32_t> CalibrationOrder(const std::vector<std::uint32_t>& depths) {
  std::vector<std::uint32_t> numeric;
  bool stream = depths.empty();
  for (std::uint32_t d : depths) {
    if (d == calibrator::kStreamDepth) {
      stream = true;
    } else {
      numeric.push_back(d);
    }
  }
  std::sort(numeric.begin(), numeric.end());
  std::vector<std::uint32_t> order;
  if (stream) order.push_back(calibrator::kStreamDepth);
  if (!numeric.empty()) {
    order.push_back(numeric.front());
    order.insert(order.end(), numeric.rbegin(), numeric.rend() - 1);
  }
  return order;
}

Known KnownOf(const calibrator::MethodResult& result, std::uint32_t depth) {
  Known k;
  k.verdict = result.verdict;
  k.reason = result.reason;
  k.threshold_bytes = result.threshold_bytes;
  k.decided_at = depth;
  return k;
}

namespace {

// What the classes decided so far say of one method at one depth: the
// nearest shallower and deeper classes that know it, or an answer that
// holds at every depth.
struct Neighbours {
  bool seen = false;  ///< some class knows the method
  const Known* everywhere = nullptr;
  const Known* shallower = nullptr;
  const Known* deeper = nullptr;
  const Known* stream = nullptr;  ///< the stream class's, when it was calibrated
  std::uint32_t shallower_depth = 0, deeper_depth = 0;
};

Neighbours NeighboursOf(calibrator::Method method, std::uint32_t depth,
                        const KnownClasses& known) {
  Neighbours n;
  for (const auto& [d, methods] : known) {
    const auto it = methods.find(method);
    if (it == methods.end()) continue;
    n.seen = true;
    const Known& k = it->second;
    if (HoldsAtEveryDepth(k)) {
      n.everywhere = &k;
      return n;
    }
    if (d == calibrator::kStreamDepth) n.stream = &k;
    if (Rank(d) < Rank(depth) && (!n.shallower || Rank(d) > Rank(n.shallower_depth))) {
      n.shallower = &k;
      n.shallower_depth = d;
    }
    if (Rank(d) > Rank(depth) && (!n.deeper || Rank(d) < Rank(n.deeper_depth))) {
      n.deeper = &k;
      n.deeper_depth = d;
    }
  }
  return n;
}

// Whether the neighbours already give this class's answer (then `place`
// says why and what it is).
bool AnsweredByNeighbours(const Neighbours& n, Placement& place) {
  if (n.everywhere) {
    place.skip = "it was " + Said(*n.everywhere) + " at depth " +
                 calibrator::DepthName(n.everywhere->decided_at);
    place.inferred = *n.everywhere;
    return true;
  }
  if (!n.seen) {
    place.skip = "it was not measured at the classes before";
    return true;
  }
  // The agent publishes no entry of a class it did not probe, and libzcal
  // answers that class's readers from the stream entry: a neighbour's
  // answer stands for this class only where the stream entry gives it too
  // (or where this calibration has no stream class). A depth 16 that says
  // never beside a stream that says 25 KiB leaves depth 4 to be measured.
  const auto stream_gives = [&n](Verdict v) { return !n.stream || n.stream->verdict == v; };
  if (n.deeper && n.deeper->verdict == Verdict::kNever && stream_gives(Verdict::kNever)) {
    place.skip = "depth " + calibrator::DepthName(n.deeper_depth) + " is " + Said(*n.deeper) +
                 ", and a shallower class pays more per send";
    place.inferred = *n.deeper;
    return true;
  }
  if (n.shallower && n.shallower->verdict == Verdict::kAlways && stream_gives(Verdict::kAlways)) {
    place.skip = "depth " + calibrator::DepthName(n.shallower_depth) +
                 " is always, and a deeper class pays less per send";
    place.inferred = *n.shallower;
    return true;
  }
  return false;
}

// Between the neighbours' thresholds: below the deeper one's, zerocopy
// loses here too; from the shallower one's on, it wins here too. The
// range's ends stay, so that `always` and `never` rest on this class's own
// probes. Empty: the whole grid.
std::vector<std::uint64_t> SizesBetween(const Neighbours& n,
                                        const std::vector<std::uint64_t>& grid) {
  std::uint64_t low = grid.front();
  std::uint64_t high = grid.back();
  if (n.deeper && n.deeper->verdict == Verdict::kThreshold && n.deeper->threshold_bytes) {
    for (std::uint64_t g : grid) {
      if (g < *n.deeper->threshold_bytes) low = g;
    }
  }
  if (n.shallower && n.shallower->threshold_bytes &&
      (n.shallower->verdict == Verdict::kThreshold)) {
    for (auto g = grid.rbegin(); g != grid.rend(); ++g) {
      if (*g >= *n.shallower->threshold_bytes) high = *g;
    }
  }
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t g : grid) {
    if (g == grid.front() || g == grid.back() || (g >= low && g <= high)) sizes.push_back(g);
  }
  if (sizes.size() == grid.size()) sizes.clear();
  return sizes;
}

}  // namespace

Placement Place(calibrator::Method method, std::uint32_t depth, const KnownClasses& known,
                const std::vector<std::uint64_t>& grid) {
  Placement place;
  if (known.empty() || grid.empty()) return place;
  const Neighbours n = NeighboursOf(method, depth, known);
  if (AnsweredByNeighbours(n, place)) return place;
  place.sizes = SizesBetween(n, grid);
  return place;
}

double ShareOf(std::size_t methods, std::size_t methods_after, double remaining, double coarse,
               double coarse_after) {
  if (methods == 0) return 0;
  const double coarse_all = coarse + coarse_after;
  if (coarse_all <= 0) {
    return remaining * static_cast<double>(methods) /
           static_cast<double>(methods + methods_after);
  }
  if (remaining <= coarse_all) return remaining * coarse / coarse_all;
  return remaining - coarse_after;
}

}  // namespace zcal::probes::depth_classes
