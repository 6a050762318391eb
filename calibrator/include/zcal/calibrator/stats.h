// Robust aggregation of repeated samples of one method at one size.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "zcal/calibrator/sample.h"

namespace zcal::calibrator {

/// Median of the values; 0 for an empty span. Does not modify the input.
double Median(std::span<const double> values);

/// The standard error of a median of n normal values, per standard
/// deviation over sqrt(n) (large n).
inline constexpr double kMedianEfficiency = 1.2533;

/// Median absolute deviation from the median, scaled by 1.4826 so that it
/// estimates the standard deviation of normally distributed data.
double ScaledMad(std::span<const double> values);

/// Median and robust spread of one quantity.
struct Estimate {
  double median = 0;
  /// Estimated standard deviation: range / d2(n) below six samples, else
  /// the larger of the scaled MAD and half that (see stats.cc).
  double spread = 0;
  /// Spread relative to the median (0 when the median is 0).
  double Relative() const { return median != 0 ? spread / median : 0; }
};

/// The successful samples of one (path, method, size), aggregated.
struct SizeStats {
  std::uint64_t size_bytes = 0;
  std::uint32_t samples = 0;  ///< successful samples aggregated
  Estimate throughput_bytes_per_second;
  Estimate cpu_ns_per_byte;
  std::optional<double> copied_fraction;  ///< over all completions
  std::uint64_t enobufs = 0;
};

/// Aggregates the ok() samples; samples with another status are ignored.
/// All samples must share path, method and size.
SizeStats Aggregate(std::span<const Sample> samples);

}  // namespace zcal::calibrator
