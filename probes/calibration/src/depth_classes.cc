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

Placement Place(calibrator::Method method, std::uint32_t depth, const KnownClasses& known,
                const std::vector<std::uint64_t>& grid) {
  Placement place;
  if (known.empty() || grid.empty()) return place;
  const Known* shallower = nullptr;
  const Known* deeper = nullptr;
  std::uint32_t shallower_depth = 0, deeper_depth = 0;
  bool seen = false;
  for (const auto& [d, methods] : known) {
    const auto it = methods.find(method);
    if (it == methods.end()) continue;
    seen = true;
    const Known& k = it->second;
    if (HoldsAtEveryDepth(k)) {
      place.skip = "it was " + Said(k) + " at depth " + calibrator::DepthName(k.decided_at);
      place.inferred = k;
      return place;
    }
    if (Rank(d) < Rank(depth) && (!shallower || Rank(d) > Rank(shallower_depth))) {
      shallower = &k;
      shallower_depth = d;
    }
    if (Rank(d) > Rank(depth) && (!deeper || Rank(d) < Rank(deeper_depth))) {
      deeper = &k;
      deeper_depth = d;
    }
  }
  if (!seen) {
    place.skip = "it was not measured at the classes before";
    return place;
  }
  if (deeper && deeper->verdict == Verdict::kNever) {
    place.skip = "depth " + calibrator::DepthName(deeper_depth) + " is " + Said(*deeper) +
                 ", and a shallower class pays more per send";
    place.inferred = *deeper;
    return place;
  }
  if (shallower && shallower->verdict == Verdict::kAlways) {
    place.skip = "depth " + calibrator::DepthName(shallower_depth) +
                 " is always, and a deeper class pays less per send";
    place.inferred = *shallower;
    return place;
  }
  // Between the neighbours' thresholds: below the deeper one's, zerocopy
  // loses here too; from the shallower one's on, it wins here too. The
  // range's ends stay, so that `always` and `never` rest on this class's
  // own probes.
  std::uint64_t low = grid.front();
  std::uint64_t high = grid.back();
  if (deeper && deeper->verdict == Verdict::kThreshold && deeper->threshold_bytes) {
    for (std::uint64_t g : grid) {
      if (g < *deeper->threshold_bytes) low = g;
    }
  }
  if (shallower && shallower->threshold_bytes &&
      (shallower->verdict == Verdict::kThreshold)) {
    for (auto g = grid.rbegin(); g != grid.rend(); ++g) {
      if (*g >= *shallower->threshold_bytes) high = *g;
    }
  }
  for (std::uint64_t g : grid) {
    if (g == grid.front() || g == grid.back() || (g >= low && g <= high)) {
      place.sizes.push_back(g);
    }
  }
  if (place.sizes.size() == grid.size()) place.sizes.clear();
  return place;
}

}  // namespace zcal::probes::depth_classes
