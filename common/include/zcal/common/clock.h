// Clock readings in the units zcal stores and publishes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace zcal::common {

/// CLOCK_REALTIME in nanoseconds since the Unix epoch: the time stamps of
/// the segment, the state file and the metrics.
std::uint64_t RealtimeNs();

/// CLOCK_REALTIME in seconds since the Unix epoch, with a fraction.
double RealtimeSeconds();

/// CLOCK_MONOTONIC in nanoseconds: for intervals that must not jump.
std::uint64_t MonotonicNs();

/// A realtime stamp (ns since the epoch) as UTC text: `format` is for
/// strftime(3) ("%Y-%m-%dT%H:%M:%SZ"); `zero` is the text for 0 (no time,
/// "never" or "unknown").
std::string FormatUtc(std::uint64_t ns, const char* format, std::string_view zero);

/// Nanoseconds as seconds.
inline double NsToSeconds(std::uint64_t ns) {
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace zcal::common
