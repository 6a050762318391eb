// What the probed sizes themselves say about the threshold: which
// comparisons are clear beyond their noise, the bracket they set, and the
// sizes a threshold overrules (internal to the calibrator; the rule is in
// docs/calibrator.md, "Measured sizes bound the threshold").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "least_cost.h"
#include "zcal/calibrator/decision_options.h"
#include "zcal/calibrator/method_result.h"

namespace zcal::calibrator::detail {

/// The noise of a sample, pooled over the compared sizes: the median
/// relative spread of each method's CPU per byte and throughput at the sizes
/// with repeats of both. Absent (no size has repeats) it is unknown.
struct SampleNoise {
  bool known = false;
  double zc_cpu = 0, base_cpu = 0, zc_thr = 0, base_thr = 0;
};
SampleNoise PooledSampleNoise(std::span<const SizeComparison> sizes);

/// Clear beyond its noise: the ratio judged lies more than three
/// standard errors from the objective's bar on the side of the outcome. The
/// standard error is the larger of the size's own (from its repeats) and
/// the pooled one for its sample counts, so that two samples that agree by
/// chance do not make a comparison clear. Where no size has repeats, the
/// margin stands in for the noise: a win is clear (its bar includes the
/// margin), a loss when it loses by more than the margin (zerocopy's CPU per
/// byte at least 1 + margin of the baseline's, or its throughput short of
/// the tolerance; under the throughput objective at most 1 - margin of the
/// baseline's).
bool ClearWin(const SizeComparison& c, const SampleNoise& noise, const DecisionOptions& options);
bool ClearLoss(const SizeComparison& c, const SampleNoise& noise, const DecisionOptions& options);

/// The losing head's largest clear loss and the winning tail's smallest
/// clear win (MeasuredBracket) of ascending comparisons.
MeasuredBracket BracketOf(std::span<const SizeComparison> sizes, const DecisionOptions& options);

/// The bracket as LeastCost's bounds.
Bounds BoundsOf(const MeasuredBracket& bracket);

/// Rounds a threshold up to 1/32 of its power of two (under 3 %, far below
/// the resolution the planner aims at) into [lo, hi] and within `bounds`: at
/// most bounds.at_most (that size itself, unrounded, if rounding would pass
/// it), and above bounds.above (the next step of 1/32 above it).
std::uint64_t RoundThreshold(double bytes, std::uint64_t lo, std::uint64_t hi,
                             const Bounds& bounds = {});

/// The sizes of `sizes` with their clear comparisons that `fitted_cost`
/// (zerocopy's relative cost on the curves at each size) contradicts;
/// `skip[i]` leaves out a size the curves do not decide (an exception).
std::vector<CurveDisagreement> Disagreements(std::span<const SizeComparison> sizes,
                                             std::span<const double> fitted_cost,
                                             const std::vector<bool>& skip,
                                             const MeasuredBracket& bracket,
                                             const DecisionOptions& options);

/// The comparisons on the other side of `threshold` (nullopt: never) than
/// their own outcome, with what each costs there.
std::vector<OverruledSize> Overruled(std::span<const SizeComparison> sizes,
                                     std::optional<std::uint64_t> threshold,
                                     const DecisionOptions& options);

/// The winning tail's first clear size (MeasuredBracket::at_most_bytes)
/// of a result that is inconclusive for noise, when the options settle on
/// it; nullopt otherwise.
std::optional<std::uint64_t> WinningTailBound(const MethodResult& r,
                                              const DecisionOptions& options);

/// Turns that inconclusive result into a threshold at `bound` (always when
/// it is the smallest compared size): where the noise leaves the least-cost
/// threshold in doubt, a size from which zerocopy wins clearly at every
/// larger probed size is a threshold the measurement supports on its own.
/// It may give up savings below it, but never uses zerocopy where it
/// clearly loses; without it a transport falls back to its own default,
/// often never, whatever the clear wins. `regret` is the bound's expected
/// excess cost under the rule that decided (curves or probed sizes). The
/// confidence stays the placement's, so that hysteresis still waits for
/// agreement; regret_excess is dropped (it described the least-cost
/// threshold), so the planner keeps probing.
void SettleOnTheWinningTail(MethodResult& r, std::uint64_t bound, double regret);

}  // namespace zcal::calibrator::detail
