#include "robust_fit.h"

#include <algorithm>
#include <cmath>

namespace zcal::calibrator::detail {

namespace {

// Huber's constant: 95 % efficiency at normal errors, bounded influence.
constexpr double kHuber = 1.345;
// A relative scale below this is a perfect fit (hand-made tables); keeps
// the weights finite.
constexpr double kMinRelativeScale = 1e-4;
constexpr int kMaxIterations = 30;
constexpr int kScaleRounds = 2;

double HuberWeight(double standardized) {
  const double u = std::fabs(standardized);
  return u <= kHuber ? 1.0 : kHuber / u;
}

// Weighted least squares for y = a + b x with a, b >= 0.
Line SolveWeighted(std::span<const double> x, std::span<const double> y,
                   std::span<const double> w) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sw += w[i];
    sx += w[i] * x[i];
    sy += w[i] * y[i];
    sxx += w[i] * x[i] * x[i];
    sxy += w[i] * x[i] * y[i];
  }
  const double det = sw * sxx - sx * sx;
  Line line;
  if (det > 1e-12 * sw * sxx) {
    line.a = (sxx * sy - sx * sxy) / det;
    line.b = (sw * sxy - sx * sy) / det;
  } else {
    line.a = -1;  // one distinct x: fall through to the constrained forms
  }
  if (line.a < 0 || line.b < 0) {
    // The cost per byte and the cost per send are not negative; on the
    // boundary one of them is zero. Keep the better of the two.
    const Line per_send{0, sxx > 0 ? sxy / sxx : 0};
    const Line per_byte{sw > 0 ? sy / sw : 0, 0};
    auto loss = [&](const Line& l) {
      double sum = 0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double e = y[i] - l.At(x[i]);
        sum += w[i] * e * e;
      }
      return sum;
    };
    line = loss(per_send) < loss(per_byte) ? per_send : per_byte;
  }
  return line;
}

}  // namespace

double MedianInPlace(std::vector<double>& values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid),
                   values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double RobustScale(std::span<const double> values) {
  std::vector<double> magnitudes;
  magnitudes.reserve(values.size());
  for (double v : values) magnitudes.push_back(std::fabs(v));
  return 1.4826 * MedianInPlace(magnitudes);
}

double HuberLocation(std::span<const double> values, std::optional<double> start,
                     std::optional<double> fixed_scale, double* scale_out) {
  double location = 0;
  double scale = 0;
  if (fixed_scale && start && values.size() >= 3) {
    location = *start;
    scale = *fixed_scale;
  } else {
    std::vector<double> scratch(values.begin(), values.end());
    const double median = MedianInPlace(scratch);
    if (values.size() < 3) return median;
    location = start ? *start : median;
    // The scale is fixed from the median once: re-estimating it each round
    // costs a selection per round and changes the estimate very little.
    for (std::size_t i = 0; i < values.size(); ++i) scratch[i] = values[i] - median;
    scale = fixed_scale ? *fixed_scale
                        : std::max(RobustScale(scratch), 1e-12 * (std::fabs(median) + 1e-300));
    if (scale_out != nullptr) *scale_out = scale;
  }
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    double sw = 0, swv = 0;
    for (double v : values) {
      const double w = HuberWeight((v - location) / scale);
      sw += w;
      swv += w * v;
    }
    const double next = swv / sw;
    const bool done = std::fabs(next - location) <= 1e-4 * scale;
    location = next;
    if (done) break;
  }
  return location;
}

Line FitLine(std::span<const double> x, std::span<const double> y,
             std::optional<Line> start, std::optional<double> fixed_scale, double* scale_out) {
  std::vector<double> w(x.size());
  Line line;
  if (start) {
    line = *start;
  } else {
    // Relative errors around the data themselves as a first guess.
    for (std::size_t i = 0; i < x.size(); ++i) w[i] = 1 / (y[i] * y[i]);
    line = SolveWeighted(x, y, w);
  }
  const double x_max = *std::max_element(x.begin(), x.end());
  std::vector<double> relative(x.size());
  double scale = fixed_scale.value_or(0);
  const int scale_rounds = fixed_scale ? 0 : kScaleRounds;
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double fit = std::max(line.At(x[i]), 1e-300);
      relative[i] = y[i] / fit - 1;
    }
    // The scale follows the fit for the first rounds, then stays fixed so
    // that the iteration converges (and costs no selection per round).
    if (iteration < scale_rounds) scale = std::max(RobustScale(relative), kMinRelativeScale);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double fit = std::max(line.At(x[i]), 1e-300);
      w[i] = HuberWeight(relative[i] / scale) / (fit * fit);
    }
    const Line next = SolveWeighted(x, y, w);
    const double change = std::fabs(next.a - line.a) + std::fabs(next.b - line.b) * x_max;
    line = next;
    if (iteration >= scale_rounds && change <= 1e-5 * (line.a + line.b * x_max)) break;
  }
  if (scale_out != nullptr) *scale_out = scale;
  return line;
}

}  // namespace zcal::calibrator::detail
