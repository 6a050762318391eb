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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/common/result.h"
#include "zcal/calibrator/sample.h"

namespace zcal::calibrator {

/// Bounds of a streamed read.
struct SamplesCsvLimits {
  /// One record (a row, with its quoted newlines) may have at most this many
  /// bytes; a longer one is an error (a file without line ends).
  std::size_t max_record_bytes = 1 << 20;
  /// The header may have at most this many columns, and a row as many
  /// fields: a record of empty fields costs some 50 bytes of memory per
  /// byte of input, so the bound keeps one record's memory near 200 KiB.
  std::size_t max_columns = 4096;
  /// Samples kept per (path, method, size): past this many rows, a uniform
  /// random subset of this size (fixed seed: the same file always gives the
  /// same result). Memory grows with the number of groups, not of rows.
  std::size_t max_samples_per_group = 256;
};

/// Reads samples as the bytes arrive, in any chunks, aggregating as it goes.
/// Not thread-safe. Errors as ParseSamplesCsv; the first one ends the input.
class SamplesCsvReader {
 public:
  explicit SamplesCsvReader(std::string source, SamplesCsvLimits limits = {});
  ~SamplesCsvReader();
  SamplesCsvReader(const SamplesCsvReader&) = delete;
  SamplesCsvReader& operator=(const SamplesCsvReader&) = delete;

  Result<void> Feed(std::string_view chunk);
  /// The kept samples, in the order of their rows.
  Result<std::vector<Sample>> Finish();

  std::uint64_t rows() const;   ///< data rows read so far
  std::size_t groups() const;   ///< distinct (path, method, size) so far

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Parses CSV text (SamplesCsvReader with the default limits). `source`
/// names the input in error messages, which read
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
