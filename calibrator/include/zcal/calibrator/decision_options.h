// What "zerocopy wins at a size" means, and the traffic it is judged for:
// the options of the decision rule (docs/calibrator.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "zcal/common/result.h"

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

/// One bin of a traffic size histogram: the share of the bytes an
/// application sends in messages of about `size_bytes`.
struct TrafficBin {
  std::uint64_t size_bytes = 0;  ///< >= 1
  double weight = 0;             ///< >= 0, finite; bins need not sum to 1

  bool operator==(const TrafficBin&) const = default;
};

struct DecisionOptions {
  Objective objective = Objective::kEfficiency;
  double tolerance = 0.02;  ///< allowed throughput loss, fraction (0.02=2 %)
  double margin = 0.03;     ///< required gain, fraction (0.03 = 3 %)
  /// A method whose completions were reported copied for at least this
  /// share is "never / kernel_copied".
  double kernel_copied_fraction = 0.5;
  /// How the expected excess cost weighs sizes: empty = uniform in log size
  /// over the compared range; otherwise this histogram (bins outside the
  /// range count at its nearer end). The weights must not all be zero.
  std::vector<TrafficBin> traffic;
  /// Fit the cost model (true) or decide from per-size comparisons only.
  bool use_model = true;
  /// Where the curves a + b/size are rejected and the probed sizes lie
  /// three or more to the octave: decide on a local fit of the probed
  /// sizes' costs (true), or on each size's own comparison (false, as
  /// before; docs/calibrator.md, "When the model is rejected").
  bool local_fit = true;
  /// Bootstrap replicates for the model's interval and confidence, >= 20.
  std::uint32_t bootstrap_replicates = 200;
  /// Where the noise leaves the threshold in doubt, publish the measured
  /// bracket's winning tail (docs/calibrator.md, "The verdict") instead of
  /// inconclusive. The sweep planner turns it off: it probes where the
  /// doubt lies, not around that conservative answer.
  bool settle_on_winning_tail = true;
  /// Decide a numeric depth class with the stream class's samples moved by
  /// the class's measured cost per send, where that cost is the same at
  /// every size (ClassOffset; docs/calibrator.md, "Depth"). Off: each
  /// class on its own zerocopy samples alone.
  bool class_offset = true;
  /// Where the samples carry their probe order (Sample::seq) and the host's
  /// speed moved during the calibration beyond kDriftApplyRatio, put them
  /// on one scale before deciding (HostDrift; docs/calibrator.md, "When
  /// the host's speed moves").
  bool correct_drift = true;

  bool operator==(const DecisionOptions&) const = default;
};

/// Parses a traffic histogram, "SIZE:WEIGHT[,SIZE:WEIGHT...]" with sizes in
/// the size grammar (4096, 4KiB, 64k) and weights >= 0 in any unit (bytes
/// sent, a share): "4KiB:30,64KiB:70". Errc::kInvalidArgument naming the
/// bad entry (the message does not name the option or key: the caller
/// adds it). The one grammar of `--traffic` and the configuration's
/// `decision.traffic`.
Result<std::vector<TrafficBin>> ParseTraffic(std::string_view text);

/// Checks the options. Errors: Errc::kInvalidArgument with a sentence that
/// names the bad field and its range ("margin: must be in [0, 1) as a
/// fraction").
Result<void> ValidateDecisionOptions(const DecisionOptions& options);

}  // namespace zcal::calibrator
