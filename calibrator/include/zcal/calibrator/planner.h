// The sweep planner: decides which probe to run next.
//
// It is a pure object. The caller loops:
//
//   SweepPlanner planner(options);
//   while (auto request = planner.Next()) {
//     planner.Record(RunProbe(*request));   // the caller's measurement
//   }
//   Analysis result = planner.Result();
//
// Plan: a coarse geometric grid of sizes (min_size, min_size*growth, ...,
// max_size), every method at every size, `repeats` times. Within a round the
// methods are interleaved at each size and sizes are visited in order, and
// rounds repeat the whole grid, so slow drift on a shared machine affects all
// methods alike. Then, in rounds, for each zerocopy method whose verdict
// rests on the cost model: a probe of it and of its baseline at the
// estimated threshold, where a probe narrows the interval most, and halfway
// to each end of the interval, until the interval lies within 0.8 times
// `resolution` of the threshold (or, for always/never, of the end of the
// range), or the threshold costs at most 0.8 times `regret_resolution` more
// than the best one (95 %), or the method has spent `refine_probes`; an
// exception of the model near the threshold is repeated and the gaps
// around it probed halfway. Where the per-size rule decides (the model was
// rejected), it bisects between the two probed sizes around the threshold
// until they are closer than `resolution` times the upper one, and adds
// repeats (up to max_repeats) at deciding sizes whose comparison is not
// decisive and at sizes where zerocopy wins below or loses above the
// threshold, and while the threshold may cost more than
// `regret_resolution` over the best, at every size whose comparison is not
// decisive. Every round judges every method again (a shared baseline's new
// probes can change a verdict); a method that reached the resolution stays
// stopped while it is within it. A spent `refine_probes` ends a method for
// good, and so does the noise, two rounds in a row: from the first
// refinement rounds on, a method whose regret_excess and interval, at the
// scatter its repeats show, would need more than eight times the samples
// its probes leave, or twice what its time leaves (the samples near the
// threshold narrow them as 1/n and 1/sqrt(n)), or, once its samples have
// doubled since an earlier round, whose measures projected at the rate
// they fell since then would still miss the stop, ends "limited by noise" with the figures a reader
// can check (scatter, samples now, samples needed, what is left). With a
// clock (SetProbesLeft) that leaves less than the allowance, the clock is
// what is left, and a method judged noise-limited against it ends at once.
// Stops() says why each
// method's probes ended. A method that reports unsupported, fails, or whose
// sends the kernel copied is not probed again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "zcal/calibrator/decision_options.h"
#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/method_result.h"
#include "zcal/calibrator/sample.h"

namespace zcal::calibrator {

struct PlannerOptions {
  std::string path = "default";     ///< copied into requests and results
  std::vector<Method> methods = {kAllMethods.begin(), kAllMethods.end()};
  std::uint64_t min_size = 1024;        ///< bytes, >= 1
  std::uint64_t max_size = 256 * 1024;  ///< bytes, >= min_size
  double growth = 2.0;                  ///< coarse grid factor, > 1
  /// Stop refining when the threshold's interval lies within this fraction
  /// of it (model), or the bracketing sizes are this close (per size).
  double resolution = 0.125;
  /// Or stop when the threshold costs at most this much more than the best
  /// one (MethodResult::regret_excess, a fraction), whatever its interval:
  /// where both sends cost about the same around the crossover the interval
  /// stays wide although any threshold in it is as cheap. 0.0005 (0.05
  /// percentage points of expected excess cost) is what an error of 1/8
  /// costs at a typical crossover (docs/calibrator.md), so neither rule is
  /// looser than the other. 0: only the interval stops.
  double regret_resolution = 0.0005;
  /// Repeats per size on the coarse grid. Two suffice for the model, which
  /// pools all sizes; the repeats give the noise its own estimate.
  std::uint32_t repeats = 2;
  std::uint32_t max_repeats = 9;  ///< per size, when adding repeats (per size)
  /// Probes after the coarse grid per zerocopy method, its baseline's
  /// included. 54 by default: one pair then costs at most 36 + 54 = 90
  /// probes with the default grid (9 sizes, 2 repeats). The discard path
  /// raises it to what its budget leaves (probes::PlannerOptionsFor).
  std::size_t refine_probes = 54;
  /// Whether refine_probes is one allowance for all methods together (the
  /// discard path: its probes have a fixed length, so the time budget is
  /// what the refinement may use, whichever method spends it) rather than
  /// one each. It only changes what the noise-limited stop counts as left.
  bool refine_probes_shared = false;
  std::size_t max_probes = 2000;  ///< hard cap on Next() requests
  std::uint64_t size_alignment = 256;  ///< bisection sizes rounded to this
  DecisionOptions decision;
  /// The depth class the zerocopy probes are sent at (depth.h): the planner
  /// decides on the samples of that class (and every baseline sample).
  std::uint32_t depth = kStreamDepth;
  /// Per zerocopy method, the sizes of the coarse grid it is probed at
  /// (each rounded onto the grid); a method not named here gets the whole
  /// grid. A depth class between two others needs only the sizes where
  /// they disagree (probes/calibration: the range's ends and the sizes
  /// between the neighbours' thresholds); the refinement is not limited.
  std::map<Method, std::vector<std::uint64_t>> coarse_sizes;
  /// Place and stop on the analysis as it is published (every bootstrap
  /// replicate of `decision`, settled on the winning tail) instead of the
  /// planning analysis (half the replicates, not settled): for a
  /// calibration's revisit of methods that lost their resolution, whose
  /// stop must hold for the published result (LostItsResolution). About
  /// twice the planning's cost a round.
  bool plan_on_published = false;
};

/// Checks the options, the decision options among them. Errors:
/// Errc::kInvalidArgument with a sentence that names the bad field and its
/// range ("resolution: must be in (0, 1)").
Result<void> ValidatePlannerOptions(const PlannerOptions& options);

struct ProbeRequest {
  Method method = Method::kCopy;
  std::uint64_t size_bytes = 0;
  std::uint32_t repeat = 0;
};

/// The coarse grid's sizes: min_size, min_size*growth, ... up to and
/// including max_size. Options must be valid.
std::vector<std::uint64_t> CoarseGrid(const PlannerOptions& options);

class SweepPlanner {
 public:
  /// Options must be valid (ValidatePlannerOptions succeeds).
  explicit SweepPlanner(PlannerOptions options);

  /// The next probe to run, or nullopt when the plan is complete.
  std::optional<ProbeRequest> Next();

  /// Feeds the result of the request last returned by Next(). A sample
  /// without its place in the probe order (Sample::seq) is given the next.
  void Record(const Sample& sample);

  /// Before the first Next(): samples measured already on this path, by the
  /// calibration of another depth class. Baseline probes they hold are not
  /// planned again (the coarse grid's sizes and repeats they cover), and a
  /// baseline they found unsupported or failing is dropped as if recorded
  /// here. They count in samples() but not in issued().
  void Seed(std::span<const Sample> samples);

  /// What the caller's clock leaves for this planner's probes (its share
  /// of the budget, as probes of the path's length), given before each
  /// Next(); nullopt (the default): no clock, only refine_probes. The noise
  /// stop counts no more than this as left, shared by the methods still
  /// refined: a method the time cannot bring to its resolution at the
  /// scatter measured ends "limited by noise", with the figures, before the
  /// clock ends it.
  void SetProbesLeft(std::optional<std::size_t> probes) { clock_left_ = probes; }

  /// Everything recorded so far.
  const std::vector<Sample>& samples() const { return samples_; }

  /// The analysis of the samples recorded so far (decision options of the
  /// planner; path from the options), with each method's `stop` for those
  /// the planner has stopped probing (Stops()).
  Analysis Result() const;

  /// The zerocopy methods whose refinement ended, and why: at the stated
  /// resolution, limited by noise, or their refinement probes spent. A
  /// method still being refined is absent: a caller that stops early (its
  /// time is up) says so itself (StopReason::kBudget).
  const std::map<Method, PlannerStop>& Stops() const { return stops_; }

  /// The zerocopy methods the planner still refines (no stop yet, and
  /// neither unsupported, failed twice nor kernel-copied).
  std::vector<Method> Unfinished() const;

  /// Probes issued so far and a rough estimate of the total, for progress.
  std::size_t issued() const { return issued_; }
  std::size_t EstimatedTotal() const;

  const PlannerOptions& options() const { return options_; }

 private:
  void PlanCoarse();
  void PlanRefinement();
  bool Active(Method method) const;
  /// Whether `method` needs more probes, and if so where: adds at most
  /// `allowance` probes to `planned` as (method, size) -> count.
  using Planned = std::map<std::pair<Method, std::uint64_t>, std::uint32_t>;
  /// The samples analysed as the planner needs them (fewer replicates, no
  /// settling on the winning tail).
  Analysis AnalyzeForPlanning() const;
  /// One method's refinement this round: true with its probes in `mine`,
  /// or false where it needs none (settled, or ended with a stop).
  bool RefineMethod(Method method, const MethodResult& result, Planned& mine);
  /// Ends a method's refinement for good, with the stop `reason` and `why`.
  void End(Method method, StopReason reason, std::string why);
  class PlanBudget;
  // Plans the next probes of one method within `allowance` probes; marks
  // the method settled when it needs no more. The steps return whether it
  // is settled.
  void PlanFor(const MethodResult& result, std::size_t allowance, Planned& planned);
  bool PlanAroundModel(const MethodResult& result, PlanBudget& budget) const;
  bool ModelSettled(const MethodResult& result, double low, double high, double hi,
                    double centre, double band) const;
  bool PlanPerSize(const MethodResult& result, PlanBudget& budget, Planned& planned) const;
  bool ConfirmRejection(const MethodResult& result, PlanBudget& budget) const;
  bool Bisect(std::uint64_t lo, std::uint64_t hi, PlanBudget& budget) const;
  std::uint64_t Aligned(double size) const;
  /// How far a method got, round by round, for the noise-limited stop.
  struct Progress {
    double samples = 0;                 ///< of the method and its baseline
    std::optional<double> excess;       ///< regret_excess
    std::optional<double> half_width;   ///< of the model's interval, relative
  };
  Progress ProgressOf(const MethodResult& result) const;
  /// The latest round at which the method had at most 1/kProgressSpan of
  /// the samples it has in the last round of `history`, if any: the
  /// measured rate is taken over what the probes since then did.
  static std::optional<std::size_t> RateReference(const std::vector<Progress>& history);
  std::optional<PlannerStop> NoiseLimited(const MethodResult& result, std::size_t left);
  /// The noise stop's sentence, with this round's figures: `span` samples
  /// since the round the rate was measured from, `narrowed` the share by
  /// which the excess cost fell over them, `factor` what the probes left
  /// would make of it.
  std::string NoiseSentence(const MethodResult& result, const Progress& now, double span,
                            std::size_t left, double narrowed, double factor) const;
  /// The early noise stop: what the scatter and the samples near the
  /// threshold say the method needs, against its refinement `allowance`
  /// or the caller's `clock` (probes), whichever leaves fewer.
  std::optional<PlannerStop> NoiseNeeds(const MethodResult& result, std::size_t allowance,
                                        std::optional<std::size_t> clock) const;
  void QueueInterleaved(const Planned& planned);
  std::size_t RefinementLeft(Method method) const;
  /// The probes the caller's clock leaves one method still refined: the
  /// clock's share, nullopt without a clock.
  std::optional<std::size_t> ClockLeft() const;
  /// regret_excess within regret_resolution, or the model's interval within
  /// resolution of the threshold (the stated resolution, not the stop's
  /// share of it).
  bool WithinResolution(const MethodResult& result) const;
  /// Per-size rule: regret_excess within regret_resolution, or every size
  /// the verdict rests on decisive.
  bool PerSizeResolved(const MethodResult& result) const;
  /// The noise stop's sentence for a per-size verdict whose deciding sizes
  /// have every repeat they may get.
  std::string RepeatsSpent(const MethodResult& result) const;
  /// Gives every zerocopy method still being refined the stop `why`
  /// (StopReason::kProbes): the planner's own caps ended it.
  void EndUnfinished(const std::string& why);
  /// Gives `sample` the probe order's next place where it has none, and
  /// keeps the next place past the one it has.
  void Number(Sample& sample);

  PlannerOptions options_;
  std::vector<std::uint64_t> grid_;
  std::deque<ProbeRequest> queue_;
  std::vector<Sample> samples_;
  std::uint64_t next_seq_ = 0;  // the probe order's next place (Number)
  std::set<Method> dropped_;
  std::map<Method, std::uint32_t> failures_;
  std::map<Method, std::size_t> refined_;  ///< refinement probes per zc method
  std::set<Method> exhausted_;             ///< zc methods whose refinement budget is spent
  std::set<Method> settled_;               ///< zc methods needing no more
  std::map<Method, PlannerStop> stops_;    ///< why a method's refinement ended
  std::set<Method> reached_;               ///< zc methods settled in an earlier round
  std::map<Method, std::vector<Progress>> progress_;
  std::map<Method, std::uint32_t> noise_rounds_;  ///< rounds in a row judged noise-limited
  std::optional<std::size_t> clock_left_;
  std::size_t issued_ = 0;
  std::size_t refinements_ = 0;
  bool coarse_planned_ = false;
};

/// `stop` as published with `result`, the final analysis of the method it
/// ended: a stop at the resolution (judged on the planning analysis, which
/// later probes of a shared baseline can move) whose `result` is wider than
/// `options`' stated resolution keeps its reason, and its detail says by
/// how much (docs/calibrator.md, "The sweep planner").
PlannerStop PublishedStop(PlannerStop stop, const MethodResult& result,
                          const PlannerOptions& options);

/// Whether `stop` ended a method at the resolution by its planner's
/// estimate while `result`, its analysis on every sample since, is wider
/// than `options`' stated resolution: the probes of a baseline it shares
/// with a later depth class (or another method) moved it. A calibration
/// spends the time its classes left on such methods (docs/calibrator.md,
/// "The sweep planner").
bool LostItsResolution(const PlannerStop& stop, const MethodResult& result,
                       const PlannerOptions& options);

}  // namespace zcal::calibrator
