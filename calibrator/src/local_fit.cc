#include "local_fit.h"

#include <algorithm>
#include <cmath>

namespace zcal::calibrator::detail {

namespace {

// A point between two probed sizes far apart (the coarse grid's octave)
// reaches both: the half-width is at least this many times its distance to
// the farther of the nearest size below and above it.
constexpr double kCover = 1.5;
constexpr double kTiny = 1e-300;

double Tricube(double u) {
  const double a = std::fabs(u);
  if (a >= 1) return 0;
  const double c = 1 - a * a * a;
  return c * c * c;
}

}  // namespace

LocalFit::LocalFit(std::span<const SizeComparison> sizes, const std::vector<bool>& skip,
                   const WeightedSizes& grid) {
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const SizeComparison& c = sizes[i];
    if (skip[i] || !(c.cpu_ratio > 0) || !(c.throughput_ratio > 0)) continue;
    index_.push_back(i);
    x_.push_back(std::log2(static_cast<double>(c.size_bytes)));
    const double nz = std::max<double>(c.zerocopy.samples, 1);
    const double nb = std::max<double>(c.baseline.samples, 1);
    // The log ratio's variance goes with 1/nz + 1/nb; one sample each is 1.
    weight_.push_back(2 / (1 / nz + 1 / nb));
    cpu_.push_back(std::log(c.cpu_ratio));
    thr_.push_back(std::log(c.throughput_ratio));
  }
  if (x_.empty()) return;
  for (double s : grid.size) grid_rows_.push_back(Row(std::log2(s)));
  for (const auto& row : grid_rows_) {
    point_.cpu_ratio.push_back(std::exp(Apply(row, cpu_)));
    point_.thr_ratio.push_back(std::exp(Apply(row, thr_)));
  }
  // Residuals of one sample: scaled by the size's counts and by what its
  // own weight in the fit at its size hides (the leverage).
  const std::size_t n = x_.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<double> row = Row(x_[i]);
    cpu_fit_.push_back(Apply(row, cpu_));
    thr_fit_.push_back(Apply(row, thr_));
    const double keep = std::sqrt(weight_[i] / std::max(1 - row[i], 0.05));
    cpu_unit_.push_back((cpu_[i] - cpu_fit_[i]) * keep);
    thr_unit_.push_back((thr_[i] - thr_fit_[i]) * keep);
  }
}

std::vector<double> LocalFit::Row(double x) const {
  const std::size_t n = x_.size();
  double below = 0, above = 0;
  bool have_below = false, have_above = false;
  for (double xi : x_) {
    const double d = xi - x;
    if (d <= 0 && (!have_below || -d < below)) below = -d, have_below = true;
    if (d >= 0 && (!have_above || d < above)) above = d, have_above = true;
  }
  const double h = std::max(kBandwidthOctaves, kCover * std::max(below, above)) + 1e-9;
  std::vector<double> k(n);
  double s0 = 0, s1 = 0, s2 = 0;
  for (std::size_t j = 0; j < n; ++j) {
    const double d = x_[j] - x;
    k[j] = weight_[j] * Tricube(d / h);
    s0 += k[j];
    s1 += k[j] * d;
    s2 += k[j] * d * d;
  }
  const double det = s0 * s2 - s1 * s1;
  std::vector<double> row(n, 0);
  if (s0 <= kTiny) return row;
  for (std::size_t j = 0; j < n; ++j) {
    // One distinct size in reach: its weighted mean, not a line.
    row[j] = det > 1e-9 * s0 * s2 ? k[j] * (s2 - s1 * (x_[j] - x)) / det : k[j] / s0;
  }
  return row;
}

double LocalFit::Apply(const std::vector<double>& row, const std::vector<double>& y) {
  double sum = 0;
  for (std::size_t j = 0; j < row.size(); ++j) sum += row[j] * y[j];
  return sum;
}

void LocalFit::At(double size, double& cpu_ratio, double& thr_ratio) const {
  const std::vector<double> row = Row(std::log2(size));
  cpu_ratio = std::exp(Apply(row, cpu_));
  thr_ratio = std::exp(Apply(row, thr_));
}

std::vector<Evaluated> LocalFit::Bootstrap(std::size_t replicates, std::mt19937_64& rng) const {
  const std::size_t n = x_.size();
  std::vector<Evaluated> boot;
  if (n == 0) return boot;
  boot.reserve(replicates);
  std::vector<double> cpu(n), thr(n);
  for (std::size_t r = 0; r < replicates; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t j = static_cast<std::size_t>(rng() % n);
      const double scale = 1 / std::sqrt(weight_[i]);
      cpu[i] = cpu_fit_[i] + cpu_unit_[j] * scale;
      thr[i] = thr_fit_[i] + thr_unit_[j] * scale;
    }
    Evaluated e;
    e.cpu_ratio.reserve(grid_rows_.size());
    e.thr_ratio.reserve(grid_rows_.size());
    for (const auto& row : grid_rows_) {
      e.cpu_ratio.push_back(std::exp(Apply(row, cpu)));
      e.thr_ratio.push_back(std::exp(Apply(row, thr)));
    }
    boot.push_back(std::move(e));
  }
  return boot;
}

}  // namespace zcal::calibrator::detail
