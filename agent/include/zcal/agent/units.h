// Sizes and durations as people write them in the configuration.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "zcal/calibrator/result.h"

namespace zcal::agent {

/// Parses "64KiB", "1MiB", "4096", "10kB" into bytes. Binary (KiB, MiB,
/// GiB) and decimal (kB, MB, GB) units and B are accepted, with at most one
/// space before the unit. kInvalidArgument on anything else or overflow.
Result<std::uint64_t> ParseSize(std::string_view text);

/// Parses "500ms", "30s", "5m", "6h", "1d", or a plain number of seconds
/// (fractions allowed, e.g. "0.5"). Rounds to whole milliseconds.
/// kInvalidArgument on anything else, a negative value or overflow.
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

/// The shortest exact spelling that ParseDuration reads back: "6h", "90s",
/// "1500ms", "0s".
std::string FormatDuration(std::chrono::milliseconds duration);

/// "256KiB", "1000B": the shortest exact binary spelling of a size.
std::string FormatSize(std::uint64_t bytes);

}  // namespace zcal::agent
