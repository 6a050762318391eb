// Robust estimators behind the cost model (internal to the calibrator).
#pragma once

#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace zcal::calibrator::detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Median of the values; reorders them. 0 for none.
double MedianInPlace(std::vector<double>& values);

/// 1.4826 times the median of |values|: the standard deviation of centred,
/// normally distributed values, robust to a minority of outliers. 0 for none.
double RobustScale(std::span<const double> values);

/// Location of the values that down-weights outliers (Huber's M-estimate,
/// tuning constant 1.345). The median for fewer than three values. `start`
/// is a first guess (the median if absent). `scale` fixes the scale; absent,
/// it is RobustScale around the median, and stored there if `scale_out`.
double HuberLocation(std::span<const double> values,
                     std::optional<double> start = std::nullopt,
                     std::optional<double> scale = std::nullopt,
                     double* scale_out = nullptr);

/// y = a + b * x with a, b >= 0 and errors proportional to y, fitted by
/// iteratively reweighted least squares with Huber weights on the relative
/// residuals. x and y have the same length (>= 1), y > 0.
struct Line {
  double a = 0;
  double b = 0;
  double At(double x) const { return a + b * x; }
};
/// `scale` fixes the scale of the relative residuals (as the bootstrap's
/// refits do, from the first fit); absent, it is estimated, and stored in
/// `scale_out` if given.
Line FitLine(std::span<const double> x, std::span<const double> y,
             std::optional<Line> start = std::nullopt,
             std::optional<double> scale = std::nullopt, double* scale_out = nullptr);

}  // namespace zcal::calibrator::detail
