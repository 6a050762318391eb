// Samples as CSV: what `zcal analyze` reads and `zcal calibrate
// --samples-out` writes.
//
// Reading: a header row, then one row per sample. Required columns, in any
// order: method, size, mb_per_s (10^6 bytes per second), cpu_pct (sender CPU
// in percent of one core; may exceed 100). Optional: path, copied_pct (share
// of zerocopy completions reported copied, 0-100), repeat, and the exact raw
// columns written by WriteSamplesCsv (bytes, wall_ns, cpu_ns, host_cpu_ns,
// zc_completions, zc_copied, enobufs, status, error), which take precedence
// over the derived ones when present. Unknown columns are ignored.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/common/result.h"
#include "zcal/calibrator/sample.h"

namespace zcal::calibrator {

/// Parses CSV text. `source` names the input in error messages, which read
/// "SOURCE:LINE:COLUMN: what was wrong; what was expected". Fails on: empty
/// input, binary data, a missing header or required column, a non-number,
/// a size that is zero or negative, an unknown method, no baseline rows
/// (copy or uring_send) among the ok samples.
Result<std::vector<Sample>> ParseSamplesCsv(std::string_view text,
                                           std::string_view source);

/// Writes the samples with every column ParseSamplesCsv understands, such
/// that parsing the output gives back equal samples.
std::string WriteSamplesCsv(std::span<const Sample> samples);

}  // namespace zcal::calibrator
