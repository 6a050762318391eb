// A local fit of zerocopy's cost relative to its baseline's over the probed
// sizes: what decides where the curves a + b/size are rejected (internal to
// the calibrator; docs/calibrator.md, "When the model is rejected").
#pragma once

#include <cstddef>
#include <random>
#include <span>
#include <vector>

#include "least_cost.h"
#include "zcal/calibrator/method_result.h"

namespace zcal::calibrator::detail {

/// Zerocopy's CPU-per-byte and throughput ratios to its baseline at each
/// point of a grid (the curves', or the local fit's).
struct Evaluated {
  std::vector<double> cpu_ratio;
  std::vector<double> thr_ratio;
};

/// The logs of both ratios against log2 size, each fitted by local linear
/// regression: at every size a straight line through the probed sizes
/// nearby, weighted by a tricube kernel of kBandwidthOctaves (wider where
/// the probed sizes are sparser, so that one size on each side counts) and
/// by each size's sample counts. Real costs have knees, power laws other
/// than 1/size, and steps; what they do not have is a shape that changes
/// within a fraction of an octave everywhere, so neighbours pool their
/// noise where the curves a + b/size would impose a shape.
///
/// The fit is linear in the data, so its weights are computed once and
/// each bootstrap replicate costs one product per grid point.
class LocalFit {
 public:
  /// Kernel half-width; the measured reason is in local_fit.cc.
  static constexpr double kBandwidthOctaves = 0.75;

  /// `sizes` ascending; `skip[i]` leaves out a size decided by its own
  /// comparison (a model exception). `grid` must outlive this.
  LocalFit(std::span<const SizeComparison> sizes, const std::vector<bool>& skip,
           const WeightedSizes& grid);

  /// Sizes the fit rests on.
  std::size_t Sizes() const { return x_.size(); }
  /// Of the k-th fitted size: its index among the compared sizes, and its
  /// log ratios' residuals from the fit (observed - fitted).
  std::size_t SizeIndex(std::size_t k) const { return index_[k]; }
  double CpuResidual(std::size_t k) const { return cpu_[k] - cpu_fit_[k]; }
  double ThrResidual(std::size_t k) const { return thr_[k] - thr_fit_[k]; }

  /// The ratios on the grid.
  const Evaluated& Point() const { return point_; }
  /// The ratios at one size (bytes) within the fitted range.
  void At(double size, double& cpu_ratio, double& thr_ratio) const;

  /// Refits on the fitted values plus resampled residuals (standardised by
  /// each size's sample counts; a size's CPU and throughput residuals go
  /// together, as one probe's errors do).
  std::vector<Evaluated> Bootstrap(std::size_t replicates, std::mt19937_64& rng) const;

 private:
  std::vector<double> Row(double x) const;
  static double Apply(const std::vector<double>& row, const std::vector<double>& y);

  std::vector<std::size_t> index_;  // into the compared sizes
  std::vector<double> x_;       // log2 size of each fitted size
  std::vector<double> weight_;  // effective sample count
  std::vector<double> cpu_, thr_;  // log ratios
  std::vector<std::vector<double>> grid_rows_;
  std::vector<double> cpu_fit_, thr_fit_;        // at the fitted sizes
  std::vector<double> cpu_unit_, thr_unit_;      // residuals of one sample
  Evaluated point_;
};

}  // namespace zcal::calibrator::detail
