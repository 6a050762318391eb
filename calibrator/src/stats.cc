#include "zcal/calibrator/stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace zcal::calibrator {

double Median(std::span<const double> values) {
  if (values.empty()) return 0;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t mid = sorted.size() / 2;
  if (sorted.size() % 2 == 1) return sorted[mid];
  return (sorted[mid - 1] + sorted[mid]) / 2;
}

double ScaledMad(std::span<const double> values) {
  if (values.size() < 2) return 0;
  const double median = Median(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::fabs(v - median));
  // 1.4826 makes the MAD a consistent estimator of sigma for normal data.
  return 1.4826 * Median(deviations);
}

namespace {

// The MAD of a handful of values can be near zero by chance (two of three
// samples close together), which would make any difference look decisive.
// Below six samples the range, scaled to sigma by Tippett's d2(n), is the
// better estimator; from six on, the larger of the scaled MAD and half the
// range scaled by d2(6) (a floor that keeps a lucky MAD from vanishing).
double Spread(const std::vector<double>& values) {
  static constexpr double kD2[] = {0, 0, 1.128, 1.693, 2.059, 2.326, 2.534};
  const std::size_t n = values.size();
  if (n < 2) return 0;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  const double range_sigma = (*hi - *lo) / kD2[std::min<std::size_t>(n, 6)];
  if (n < 6) return range_sigma;
  return std::max(ScaledMad(values), range_sigma / 2);
}

Estimate Estimated(const std::vector<double>& values) {
  return Estimate{Median(values), Spread(values)};
}

}  // namespace

SizeStats Aggregate(std::span<const Sample> samples) {
  SizeStats stats;
  std::vector<double> throughput;
  std::vector<double> cpu;
  std::uint64_t completions = 0;
  std::uint64_t copied = 0;
  for (const Sample& sample : samples) {
    assert(stats.size_bytes == 0 || stats.size_bytes == sample.size_bytes);
    stats.size_bytes = sample.size_bytes;
    if (!sample.ok()) continue;
    throughput.push_back(sample.ThroughputBytesPerSecond());
    cpu.push_back(sample.CpuNsPerByte());
    completions += sample.zc_completions;
    copied += sample.zc_copied;
    stats.enobufs += sample.enobufs;
  }
  stats.samples = static_cast<std::uint32_t>(throughput.size());
  stats.throughput_bytes_per_second = Estimated(throughput);
  stats.cpu_ns_per_byte = Estimated(cpu);
  if (completions > 0) {
    stats.copied_fraction =
        static_cast<double>(copied) / static_cast<double>(completions);
  }
  return stats;
}

}  // namespace zcal::calibrator
