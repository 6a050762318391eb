// One grammar for sizes, rates and durations, used by the command line, the
// YAML configuration and the sample CSV alike, so that the same words mean
// the same bytes everywhere. docs/units.md is the user's description.
//
// Size:      NUMBER [UNIT]        "4096", "64K", "64KiB", "1.5MiB", "10kB"
//   no unit or B               1
//   K  KiB   (any case)        1024        M  MiB   2^20
//   G  GiB                     2^30        T  TiB   2^40
//   kB KB    (a B without i)   1000        MB 10^6  GB 10^9  TB 10^12
// Rate:      SIZE["/s"] bytes per second, or NUMBER BITUNIT with
//   bit/s kbit/s Mbit/s Gbit/s (also bps kbps Mbps Gbps), powers of 1000
//   "100M" = "100M/s" = 104,857,600 B/s;  "10Gbit/s" = 1,250,000,000 B/s
// Duration:  NUMBER [UNIT]        plain number = seconds
//   ms s m (or min) h d        "500ms", "30s", "1.5h"
// NUMBER is decimal digits with at most one '.', at most one space may stand
// before the unit, and surrounding blanks are ignored. A size or rate must
// come out as a whole number of bytes; a duration is rounded to whole
// milliseconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "zcal/common/result.h"

namespace zcal::common {

/// Bytes. Errc::kInvalidArgument naming the text and the grammar on a
/// malformed value, an unknown unit, a fraction of a byte or overflow.
Result<std::uint64_t> ParseSize(std::string_view text);

/// Bytes per second, with the same errors.
Result<std::uint64_t> ParseRate(std::string_view text);

/// A non-negative duration of at most ten years, rounded to milliseconds.
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

/// The shortest exact binary spelling that ParseSize reads back: "256KiB",
/// "1000B", "0B".
std::string FormatSize(std::uint64_t bytes);

/// A size for people, not exact: "16 KiB", "1.5 MiB", "300 B".
std::string FormatSizeApprox(double bytes);

/// The shortest exact spelling that ParseRate reads back: "100MiB/s".
std::string FormatRate(std::uint64_t bytes_per_second);

/// The shortest exact spelling that ParseDuration reads back: "6h", "90s",
/// "1500ms", "0s".
std::string FormatDuration(std::chrono::milliseconds duration);

}  // namespace zcal::common
