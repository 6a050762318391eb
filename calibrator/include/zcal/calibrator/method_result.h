// What the decision rule says of a zerocopy method on a path: the verdict,
// the threshold and its interval, and the evidence behind them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/calibrator/cost_model.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/stats.h"

namespace zcal::calibrator {

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
/// The inverses of the names; nullopt for a name that is none of them.
std::optional<Verdict> ParseVerdict(std::string_view name);
std::optional<Reason> ParseReason(std::string_view name);  ///< "" is kNone

/// Which rule decided a verdict.
enum class Rule : std::uint8_t {
  /// No statistical rule: unsupported, failed, kernel-copied, no baseline.
  kNone = 0,
  /// The least-cost threshold on the fitted cost model's curves.
  kModel = 1,
  /// The least-cost threshold over the probed sizes' own comparisons (the
  /// model was rejected, too few sizes, or use_model was false).
  kPerSize = 2,
};

std::string_view RuleName(Rule rule);  ///< "", "model", "per_size"

/// Where the threshold plausibly lies. A threshold is a size in the
/// compared range [smallest, largest size]; "always" is the smallest size.
struct ThresholdInterval {
  std::uint64_t low_bytes = 0;
  /// nullopt: zerocopy may not pay off anywhere in the compared range.
  std::optional<std::uint64_t> high_bytes;
  /// Coverage: the model's central bootstrap interval (0.95); for per-size
  /// verdicts 0, as it only brackets the threshold between two probed sizes
  /// (the largest size below it and it).
  double level = 0;
};

/// Zerocopy against baseline at one size.
struct SizeComparison {
  std::uint64_t size_bytes = 0;
  SizeStats zerocopy;
  SizeStats baseline;
  double throughput_ratio = 0;  ///< zerocopy / baseline, medians
  double cpu_ratio = 0;         ///< zerocopy / baseline CPU per byte
  /// Zerocopy's cost relative to the baseline's under the objective, margin
  /// included (docs/calibrator.md): below 1 zerocopy is the cheaper send.
  double relative_cost = 0;
  /// Efficiency objective: throughput not clearly below the tolerance (the
  /// non-inferiority test at this size); relative_cost was computed with it.
  bool throughput_acceptable = true;
  bool zerocopy_wins = false;
  /// True when the difference judged exceeds the combined dispersion, or
  /// when there is one sample per method (confidence unknown).
  bool decisive = true;
};

/// The bracket the probed sizes set for the threshold (docs/calibrator.md,
/// "Measured sizes bound the threshold"). A size's comparison is *clear*
/// when it lies beyond its noise: with repeats of both methods, decisive;
/// with one sample of either, beyond the objective's margin (a win passes
/// the margin by definition; a loss must cost more than the margin over the
/// baseline, or fall short of the throughput tolerance).
struct MeasuredBracket {
  /// The largest probed size at which zerocopy loses clearly and loses at
  /// every smaller probed size: the threshold lies above it. nullopt: none.
  std::optional<std::uint64_t> above_bytes;
  /// The smallest probed size at which zerocopy wins clearly and wins at
  /// every larger probed size: the threshold lies at or below it (so never
  /// is excluded). nullopt: none.
  std::optional<std::uint64_t> at_most_bytes;

  bool operator==(const MeasuredBracket&) const = default;
};

/// A probed size whose own comparison, clear beyond its noise, says the
/// opposite of the fitted curves at that size.
struct CurveDisagreement {
  std::uint64_t size_bytes = 0;
  bool zerocopy_wins = false;       ///< as measured
  double relative_cost = 0;         ///< as measured (SizeComparison)
  double fitted_relative_cost = 0;  ///< on the fitted curves at this size
  /// The size is one of those that bound the threshold (the losing head or
  /// the winning tail of MeasuredBracket), so the measurement decides there.
  bool bounds_threshold = false;

  bool operator==(const CurveDisagreement&) const = default;
};

/// A probed size on the other side of the threshold than its own
/// comparison says (it wins below the threshold or loses at or above it),
/// and what using the threshold's choice there costs, as measured.
struct OverruledSize {
  std::uint64_t size_bytes = 0;
  bool zerocopy_wins = false;  ///< as measured
  bool clear = false;          ///< beyond its noise (see MeasuredBracket)
  double relative_cost = 0;    ///< as measured
  /// The send the threshold picks there costs this fraction more than the
  /// other one (0.05 = 5 %), as measured.
  double excess_cost = 0;

  bool operator==(const OverruledSize&) const = default;
};

/// Where the fitted curves alone put the threshold, when the measured
/// bracket moved the published one.
struct CurveChoice {
  std::optional<std::uint64_t> threshold_bytes;  ///< nullopt: never
  /// Its expected excess cost on the curves; the published threshold's is
  /// MethodResult::regret.
  double regret = 0;

  bool operator==(const CurveChoice&) const = default;
};

/// Why a calibration stopped probing a method: the planner's account, not
/// the decision rule's (an analysis of a samples file has none).
enum class StopReason : std::uint8_t {
  /// The threshold reached the stated resolution: its interval within
  /// PlannerOptions::resolution, or what it may cost over the best within
  /// regret_resolution.
  kResolution = 0,
  /// More probes could not reach the resolution within what the budget
  /// leaves: at the rate the last probes narrowed it, the noise the run
  /// shows would need more of them than are left (docs/calibrator.md).
  kNoise = 1,
  /// The method's refinement probes (PlannerOptions::refine_probes, or the
  /// planner's cap on rounds and probes) were spent first.
  kProbes = 2,
  /// The calibration's time ran out before the planner was done.
  kBudget = 3,
};

std::string_view StopReasonName(StopReason reason);  ///< "resolution", "noise", ...
std::optional<StopReason> ParseStopReason(std::string_view name);

struct PlannerStop {
  StopReason reason = StopReason::kResolution;
  /// A sentence for people: "resolution limited by noise: 9 % scatter; ...".
  std::string detail;

  bool operator==(const PlannerStop&) const = default;
};

/// A depth class's zerocopy cost read as the stream class's plus a cost per
/// send (docs/calibrator.md, "Depth", "A cost per send"): waiting for each
/// send's completion adds about the same CPU to a send of any size. Measured
/// as the class's own samples' CPU per send less the stream samples' median
/// at the same size; where that holds, the stream class's samples, each
/// moved by it, decide the class together with its own.
struct ClassOffset {
  double ns_per_send = 0;       ///< the class's CPU per send over the stream's (median)
  double standard_error = 0;    ///< of ns_per_send
  std::size_t samples = 0;      ///< the class's own samples it rests on
  std::size_t sizes = 0;        ///< ... at this many sizes
  std::size_t translated = 0;   ///< stream samples moved into the class; 0 where `rejected`
  /// Why the class is decided on its own samples alone; empty: it is not.
  std::string rejected;
  /// The threshold with the offset 1.96 standard errors lower and higher
  /// (nullopt: never); the published interval spans them.
  std::optional<std::uint64_t> threshold_low_bytes, threshold_high_bytes;
  /// The sizes whose own cost per send lies off the number, each where the
  /// class's figure and the moved stream's there both lie clearly on one
  /// side of the baseline's (so the comparison there reads the same from
  /// either): set aside, not a refusal. Empty: none.
  std::string set_aside;
  /// Half the 95 % interval of ns_per_send (normal: 1.96 standard errors).
  double Reach95() const { return 1.96 * standard_error; }
  bool operator==(const ClassOffset&) const = default;
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
  /// In [0,1]. Model: the share of bootstrap replicates in which this
  /// threshold costs at most 0.5 percentage points more (expected excess
  /// cost) than the replicate's own best threshold; below 0.8 the verdict is
  /// inconclusive, unless the measured bracket's winning tail settles it
  /// (then the threshold is at_most_bytes and the confidence stays low).
  /// Per size: the share of compared sizes whose comparison was decisive;
  /// nullopt with one sample per size.
  std::optional<double> confidence;
  std::vector<SizeComparison> sizes;  ///< ascending size

  Rule rule = Rule::kNone;
  /// Why the per-size rule decided: "model rejected: ..." or too few sizes.
  std::string rule_detail;
  /// The model behind the verdict, also when rejected; nullopt when no fit
  /// was made (too few sizes, or no statistical verdict).
  std::optional<CostModel> model;
  std::optional<ThresholdInterval> interval;
  /// Expected excess cost, as a fraction (0.01 = 1 %) of the cheaper send's
  /// cost, of using zerocopy from the threshold on (never: nowhere) rather
  /// than the cheaper send at every size, weighted as DecisionOptions says.
  std::optional<double> regret;
  std::optional<double> regret_never;   ///< the same for never using it
  std::optional<double> regret_always;  ///< ... for using it at every size
  /// What choosing this threshold may cost over the best one, as a
  /// fraction: the interval's level (95 %) quantile, over the bootstrap
  /// replicates, of its expected excess cost over the replicate's own
  /// least-cost threshold. Small where the threshold's interval is wide only
  /// because the costs of both sends run close together around it
  /// (docs/calibrator.md, "The sweep planner"). Model: the residual
  /// bootstrap, exceptions' reach and cost drawn too; per size: each size's
  /// cost drawn from its own noise (over the probed sizes only). nullopt
  /// with one sample per size under the per-size rule.
  std::optional<double> regret_excess;
  /// Diagnostic: the smallest probed size from which zerocopy wins at every
  /// larger probed size (the winning-tail rule).
  std::optional<std::uint64_t> tail_threshold_bytes;
  /// Probed sizes below the threshold where zerocopy wins, and at or above
  /// it where it loses (per-size comparisons; the price of one threshold).
  std::vector<std::uint64_t> wins_below;
  std::vector<std::uint64_t> losses_above;
  /// The bracket the probed sizes set; nullopt for no statistical verdict.
  std::optional<MeasuredBracket> measured_bracket;
  /// Model: set when the bracket moved the threshold off the curves' own
  /// least-cost choice.
  std::optional<CurveChoice> curve_choice;
  /// Model: probed sizes (outside the model's exceptions) whose clear
  /// comparison the fitted curves contradict, ascending.
  std::vector<CurveDisagreement> curve_disagreements;
  /// wins_below and losses_above with what each costs, ascending; and their
  /// total, the threshold's expected excess cost on the per-size
  /// comparisons (ExcessCost). Not for inconclusive verdicts.
  std::vector<OverruledSize> overruled;
  std::optional<double> overruled_cost;
  /// Set by a calibration (SweepPlanner::Result, probes::RunCalibration):
  /// why its probes of this method ended. nullopt for a method the planner
  /// did not refine (unsupported, failed, kernel-copied: the verdict says
  /// why) and for an analysis of samples alone.
  std::optional<PlannerStop> stop;
  /// Of a numeric depth class with samples of the stream class to compare
  /// with: its cost per send over the stream's, and whether it decided.
  std::optional<ClassOffset> class_offset;
};

/// How the host's speed moved during the calibration of one path, as its
/// own samples measure it (docs/calibrator.md, "When the host's speed
/// moves"): each sample's cost is its (method, depth, size)'s times the
/// host's level when it ran, the level measured by the samples of a
/// (method, depth, size) probed at times apart.
struct HostDrift {
  std::size_t samples = 0;  ///< successful samples, in probe order
  std::size_t linked = 0;   ///< ... whose (method, depth, size) was probed
                            ///< at times apart; the others take the level
                            ///< of the nearest of these before them
  double cpu_low = 1;       ///< the cheapest level of CPU per byte, as a
                            ///< factor of the run's
  double cpu_high = 1;      ///< the dearest
  double wall_low = 1;      ///< the same for wall time per byte
  double wall_high = 1;
  /// The standard error of one level (log), from the scatter the levels
  /// leave: the larger of CPU's and wall time's.
  double noise = 0;
  /// Whether the samples were put on one scale before deciding: done where
  /// the dearest level over the cheapest exceeds kDriftApplyRatio, for CPU
  /// or for wall time, and spans six of their standard errors.
  bool applied = false;

  bool operator==(const HostDrift&) const = default;
};

/// The spread of levels (dearest over cheapest) from which a
/// calibration's samples are put on one scale. Quiet runs on the discard
/// path stay below 1.10 (eleven runs, 2026-12-07); a host whose speed
/// stepped by a quarter mid-run reads 1.42.
inline constexpr double kDriftApplyRatio = 1.15;

struct PathResult {
  std::string path;
  std::map<Method, MethodResult> methods;  ///< zerocopy methods present
  /// Set where every sample of the path carries its place in the probe
  /// order (Sample::seq) and the correction is on
  /// (DecisionOptions::correct_drift).
  std::optional<HostDrift> drift;
};

/// Every path found in the samples, by name.
struct Analysis {
  std::map<std::string, PathResult> paths;
};

}  // namespace zcal::calibrator
