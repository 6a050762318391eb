// The least-cost threshold (internal to the calibrator; the rule is
// documented in decision.h and docs/calibrator.md, "The threshold rule").
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "robust_fit.h"
#include "zcal/calibrator/decision_options.h"
#include "zcal/calibrator/method_result.h"

namespace zcal::calibrator::detail {

/// Sizes at which costs are compared, with weights that sum to 1.
struct WeightedSizes {
  std::vector<double> size;    ///< bytes, ascending
  std::vector<double> weight;  ///< >= 0
};

/// Points every 1/8 of an octave from `lo` to `hi` (lo <= hi), and with a
/// traffic histogram a point at each bin's size within [lo, hi]. Weights
/// uniform in log size, or the histogram's, each bin on its own point
/// (bins outside [lo, hi] on the nearer end).
WeightedSizes DenseSizes(double lo, double hi, std::span<const TrafficBin> traffic);

/// The probed sizes themselves. Uniform in log size gives each size the log
/// cell between the geometric midpoints to its neighbours (half cells at
/// the ends); traffic bins go to the size nearest in log.
WeightedSizes CellSizes(std::span<const double> sizes, std::span<const TrafficBin> traffic);

/// Standard error of the ratio of two medians, relative, from their
/// spreads: 1.2533 * sqrt(ra^2/na + rb^2/nb) (the median's standard error is
/// sqrt(pi/2) times the mean's). Zero when either side has one sample.
double RatioNoise(const Estimate& a, std::uint32_t na, const Estimate& b, std::uint32_t nb);

/// One bootstrap draw of a probed size's relative cost: its CPU and
/// throughput ratios redrawn around the medians (log-normal, with the
/// standard errors of the ratios from the size's repeats), its
/// non-inferiority verdict kept. With one sample per side the ratio has no
/// noise estimate and the cost stays as measured.
double DrawRelativeCost(const SizeComparison& c, std::mt19937_64& rng,
                        const DecisionOptions& options);

/// Zerocopy's cost relative to its baseline's at one size under the
/// objective: below 1 it is the cheaper send. `throughput_acceptable` is
/// the efficiency objective's non-inferiority verdict on throughput.
double RelativeCost(double cpu_ratio, double throughput_ratio, bool throughput_acceptable,
                    const DecisionOptions& options);

/// The least-cost threshold over weighted sizes, given zerocopy's relative
/// cost at each.
struct Choice {
  /// Sizes [0, split) use the baseline, [split, n) zerocopy: 0 is always,
  /// n is never.
  std::size_t split = 0;
  /// The threshold in bytes: the first zerocopy size, or with `interpolate`
  /// the point between the two sizes where the cost crosses 1. kInf for
  /// never.
  double threshold = 0;
  double regret = 0;         ///< expected excess cost of this choice
  double regret_never = 0;   ///< ... of never using zerocopy
  double regret_always = 0;  ///< ... of using it at every size
};

/// What the probed sizes allow the threshold to be (MeasuredBracket, in
/// bytes): above `above` (0: no limit) and at most `at_most` (kInf: no
/// limit, so never is allowed).
struct Bounds {
  double above = 0;
  double at_most = kInf;
};

/// The least-cost choice among the thresholds `bounds` allows; its
/// threshold lies within them.
Choice LeastCost(const WeightedSizes& sizes, std::span<const double> cost, bool interpolate,
                 const Bounds& bounds = {});

/// Expected excess cost of using zerocopy at the sizes >= threshold.
double Regret(const WeightedSizes& sizes, std::span<const double> cost, double threshold);

}  // namespace zcal::calibrator::detail
