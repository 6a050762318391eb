// What the cost model's exceptions cost on the grid of the threshold rule
// (internal to the calibrator; docs/calibrator.md, "When the model is
// rejected").
#pragma once

#include <cstddef>
#include <random>
#include <span>
#include <vector>

#include "least_cost.h"
#include "zcal/calibrator/cost_model.h"
#include "zcal/calibrator/decision_options.h"
#include "zcal/calibrator/method_result.h"

namespace zcal::calibrator::detail {

/// Where and what the exceptions' own comparisons cost on the grid.
///
/// An exception was measured at its own sizes only. Between it and the
/// fitted sizes on either side nothing was measured, so where it ends is
/// unknown: anywhere from its outermost size to halfway (in log size) to
/// the next compared size. The point estimate reaches 1/8 octave past its
/// sizes (or halfway, if nearer): a deviation at one size is presumed
/// narrow (on the discard path copy of exactly 8 KiB costs a quarter more
/// than at 7.5 or 8.5 KiB), and the curves decide beyond. Reaching halfway
/// would pin a threshold to the edge of that reach, a place nothing
/// measured, with an interval of zero width.
///
/// Each bootstrap replicate draws both what is unknown: each edge, uniform
/// in log size over its possible range, and the cost (CPU and throughput
/// ratios around the medians, log-normal with the standard errors of the
/// ratios from the size's repeats, keeping the size's non-inferiority
/// verdict). A threshold that an exception pins then has an interval that
/// spans what was not measured, and the planner probes there.
class ExceptionCosts {
 public:
  /// `grid` and `sizes` (the compared sizes, ascending) must outlive this.
  ExceptionCosts(const WeightedSizes& grid, const std::vector<ModelException>& exceptions,
                 std::span<const SizeComparison> sizes, const DecisionOptions& options);

  bool Any() const { return !spans_.empty(); }
  /// Per grid point: the compared size whose own cost stands there, or -1
  /// (the point estimate's reach).
  const std::vector<std::ptrdiff_t>& PointCells() const { return point_cells_; }
  /// Per compared size: its own relative cost as measured.
  std::span<const double> PointCosts() const { return point_cost_; }

  /// One bootstrap replicate's reach and costs.
  struct Drawn {
    std::vector<std::ptrdiff_t> cells;
    std::vector<double> cost;
  };
  Drawn Draw(std::mt19937_64& rng) const;

 private:
  static constexpr double kPointReachOctaves = 0.125;

  struct Span {
    std::vector<std::size_t> members;  // indices into sizes
    std::size_t first = 0, last = 0;
    double inner_low = 0, inner_high = 0;  // its outermost sizes
    double outer_low = 0, outer_high = 0;  // halfway to the compared sizes around it
  };

  // Per grid point: the index into sizes of the exception size nearest to
  // it when it lies within [low, high] of an exception, else -1.
  std::vector<std::ptrdiff_t> Cells(const std::vector<double>& low,
                                    const std::vector<double>& high) const;

  const WeightedSizes& grid_;
  std::span<const SizeComparison> sizes_;
  const DecisionOptions& options_;
  std::vector<Span> spans_;
  std::vector<std::size_t> used_;
  std::vector<std::ptrdiff_t> point_cells_;
  std::vector<double> point_cost_;
};

}  // namespace zcal::calibrator::detail
