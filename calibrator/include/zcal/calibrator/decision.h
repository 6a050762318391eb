// The decision rule: from which message size a zerocopy method beats the
// copying send of its transport (docs/calibrator.md; docs/architecture.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/calibrator/method.h"
#include "zcal/calibrator/sample.h"
#include "zcal/calibrator/stats.h"

namespace zcal::calibrator {

/// What "zerocopy wins at a size" means.
enum class Objective : std::uint8_t {
  /// Throughput not lower than the baseline's by more than the tolerance,
  /// and CPU per byte lower by at least the margin. The default.
  kEfficiency = 0,
  /// Throughput higher by at least the margin.
  kThroughput = 1,
  /// CPU per byte lower by at least the margin; throughput ignored.
  kCpu = 2,
};

std::string_view ObjectiveName(Objective objective);
std::optional<Objective> ParseObjective(std::string_view name);

struct DecisionOptions {
  Objective objective = Objective::kEfficiency;
  double tolerance = 0.02;  ///< allowed throughput loss, fraction (0.02=2 %)
  double margin = 0.03;     ///< required gain, fraction (0.03 = 3 %)
  /// A method whose completions were reported copied for at least this
  /// share is "never / kernel_copied".
  double kernel_copied_fraction = 0.5;

  bool operator==(const DecisionOptions&) const = default;
};

enum class Verdict : std::uint8_t {
  kThreshold = 0,     ///< zerocopy wins from threshold_bytes on
  kAlways = 1,        ///< wins at every probed size, the smallest included
  kNever = 2,         ///< loses at the largest size; see reason
  kInconclusive = 3,  ///< noise exceeds the difference at deciding sizes
};

enum class Reason : std::uint8_t {
  kNone = 0,
  kSlower = 1,         ///< measured, zerocopy does not win
  kKernelCopied = 2,   ///< the kernel copied the "zerocopy" sends
  kUnsupported = 3,    ///< the method cannot run here
  kFailed = 4,         ///< probes failed
  kNoisy = 5,          ///< (inconclusive) dispersion too large
  kNoBaseline = 6,     ///< no baseline samples to compare against
};

std::string_view VerdictName(Verdict verdict);
std::string_view ReasonName(Reason reason);  ///< "" for kNone

/// Zerocopy against baseline at one size.
struct SizeComparison {
  std::uint64_t size_bytes = 0;
  SizeStats zerocopy;
  SizeStats baseline;
  double throughput_ratio = 0;  ///< zerocopy / baseline, medians
  double cpu_ratio = 0;         ///< zerocopy / baseline CPU per byte
  bool zerocopy_wins = false;
  /// True when the difference judged exceeds the combined dispersion, or
  /// when there is one sample per method (confidence unknown).
  bool decisive = true;
};

/// The verdict for one zerocopy method on one path.
struct MethodResult {
  Method method = Method::kMsgZerocopy;
  Method baseline = Method::kCopy;
  bool baseline_substituted = false;  ///< copy stood in for uring_send
  Verdict verdict = Verdict::kNever;
  std::optional<std::uint64_t> threshold_bytes;  ///< with kThreshold/kAlways
  Reason reason = Reason::kNone;
  std::string detail;  ///< a sentence for people, e.g. the probe error
  /// In [0,1]: share of the compared sizes whose comparison was decisive.
  /// nullopt when there was only one sample per size ("unknown").
  std::optional<double> confidence;
  std::vector<SizeComparison> sizes;  ///< ascending size
};

struct PathResult {
  std::string path;
  std::map<Method, MethodResult> methods;  ///< zerocopy methods present
};

/// Every path found in the samples, by name.
struct Analysis {
  std::map<std::string, PathResult> paths;
};

/// Index of the first size of the winning tail: every size from it on is a
/// win. nullopt when the largest size loses (or there are no sizes).
std::optional<std::size_t> WinningTailStart(
    std::span<const SizeComparison> sizes);

/// Judges `method` (a zerocopy method) against its baseline using the
/// samples of one path (samples of other methods are used as baselines,
/// others ignored).
MethodResult Decide(std::span<const Sample> path_samples, Method method,
                    const DecisionOptions& options);

/// Groups samples by path and decides every zerocopy method that appears.
Analysis Analyze(std::span<const Sample> samples,
                 const DecisionOptions& options);

}  // namespace zcal::calibrator
