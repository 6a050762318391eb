#include "zcal/probes/calibration/calibration.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "zcal/calibrator/planner.h"
#include "zcal/probes/calibration/path_runner.h"
#include "zcal/probes/discard/discard.h"

#include "zcal/probes/calibration/depth_classes.h"

namespace zcal::probes {

namespace {

using calibrator::Method;
using calibrator::Sample;
using calibrator::SampleStatus;
using Clock = PathClock;
using Seconds = PathSeconds;
using namespace std::chrono_literals;

// Repeats per size the planner may add on the discard path (its default: 9);
// docs/probes.md has why.
constexpr std::uint32_t kDiscardMaxRepeats = 16;
// The discard path's coarse grids (docs/calibrator.md, "The discard
// path's grid"). The first class is probed at three sizes per octave, once
// each: its gaps are narrower than the 0.4 octave from which the local fit
// decides where the real path's steps reject the curves, and neighbours
// pool their noise there as repeats would. The classes after it measure
// one number, their cost per send over the first class's
// (calibrator::ClassOffset), whose samples moved by it give them the dense
// grid too, so they are probed at every third of its sizes.
constexpr double kDenseGrowth = 1.2599;  // 2^(1/3)
constexpr std::size_t kEveryThird = 3;

bool DenseGrid(const CalibrationOptions& options) {
  return options.target.kind == TargetKind::kDiscard;
}
// What the end of a calibration takes after its last probe (the final
// analysis, 10-30 ms with five methods): kept out of the budget, so that a
// calibration that runs to its budget still ends within it.
constexpr Seconds kFinishReserve{0.05};
// The revisit (Revisit, below): the least time it starts with, in probes
// (a round of refinement and its baseline), and the share of the budget the
// classes leave it. On this VM's discard path, default classes at 2 s, two
// sets of 15 runs each interleaved with the build before (2026-12-08): runs
// with every result at the resolution or stopped by the noise 13 and 14 of
// 15 at 5 %, 10 and 13 at 10 %, 7 and 9 with no revisit; results short of
// both 3 in 30 runs at 5 %, 23 at 10 % (more ended by the budget), 26
// without. Where no method lost its resolution the share goes unspent, and
// the calibration ends that much sooner.
constexpr std::size_t kRevisitProbes = 6;
// A revisit's baseline probes can move a class revisited before it in the
// same pass; a second pass takes that one up (a third has found nothing
// more in the simulated calibrations of calibration_revisit_test.cc).
constexpr std::size_t kRevisitPasses = 3;
constexpr double kRevisitShare = 0.05;

std::vector<Method> MethodsOf(const CalibrationOptions& options) {
  std::vector<Method> methods;
  const auto& wanted = options.methods.empty()
                           ? std::vector<Method>(calibrator::kAllMethods.begin(),
                                                 calibrator::kAllMethods.end())
                           : options.methods;
  for (Method m : wanted) {
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
  }
  return methods;
}

std::optional<SizeClamp> MaxSizeClamp(const CalibrationOptions& options) {
  const TargetTraits& path = TraitsOf(options.target.kind);
  if (path.max_message_bytes == 0 || options.max_size <= path.max_message_bytes) {
    return std::nullopt;
  }
  return SizeClamp{options.max_size, path.max_message_bytes, std::string(path.max_message_why)};
}

std::string NoProbeMessage(const CalibrationOptions& options,
                           const std::vector<Sample>& samples) {
  std::string text = "no probe could run on path " + options.PathName() + ":";
  std::set<std::string> seen;
  for (const Sample& s : samples) {
    if (s.ok() || !seen.insert(s.error).second) continue;
    text += "\n  " + std::string(calibrator::MethodName(s.method)) + ": " + s.error;
  }
  if (samples.empty()) text += " the budget ended before the first probe";
  return text;
}

Sample UnsupportedSample(const CalibrationOptions& options,
                         const calibrator::ProbeRequest& request, const std::string& reason) {
  Sample sample;
  sample.path = options.PathName();
  sample.method = request.method;
  sample.size_bytes = request.size_bytes;
  sample.repeat = request.repeat;
  sample.status = SampleStatus::kUnsupported;
  sample.error = reason;
  return sample;
}

}  // namespace

calibrator::PlannerOptions PlannerOptionsFor(const CalibrationOptions& options,
                                             std::uint32_t depth) {
  calibrator::PlannerOptions planner;
  planner.path = options.PathName();
  planner.methods = MethodsOf(options);
  planner.min_size = options.min_size;
  const auto clamp = MaxSizeClamp(options);
  planner.max_size = clamp ? clamp->used_bytes : options.max_size;
  planner.decision = options.decision;
  planner.depth = depth;
  // Bad sizes are ValidateCalibrationOptions's to report, not this sizing's.
  if (DenseGrid(options)) {
    planner.growth = kDenseGrowth;
    planner.repeats = 1;
  }
  if (options.target.kind == TargetKind::kDiscard && calibrator::ValidatePlannerOptions(planner)) {
    // A discard probe has a fixed length, so the budget says how many
    // probes fit: the refinement may use what the coarse grid leaves, up to
    // the planner's own stop (the threshold at the stated resolution).
    // Each method may use all of it, not a share: one whose crossover is
    // flat needs more than one that settles after a few rounds, and the
    // budget's end stops the calibration anyway.
    std::size_t zerocopy = 0;
    for (Method m : planner.methods) zerocopy += calibrator::IsZerocopy(m) ? 1 : 0;
    const std::size_t coarse =
        calibrator::CoarseGrid(planner).size() * planner.methods.size() * planner.repeats;
    const auto fit = static_cast<std::size_t>(options.budget_seconds * kBudgetShareForProbes /
                                              (kDiscardProbe + kDiscardOverhead).count());
    if (zerocopy > 0 && fit > coarse) {
      planner.refine_probes = std::max(planner.refine_probes, fit - coarse);
      planner.refine_probes_shared = true;
      // A flat crossover needs more repeats of the sizes around it than
      // the planner's default to reach the regret resolution.
      planner.max_repeats = std::max<std::uint32_t>(planner.max_repeats, kDiscardMaxRepeats);
    }
  }
  return planner;
}

Result<void> ValidateCalibrationOptions(const CalibrationOptions& options) {
  if (!(options.budget_seconds > 0) || !std::isfinite(options.budget_seconds) ||
      options.budget_seconds > 86400) {
    return Fail(Errc::kInvalidArgument, "budget: must be more than 0 and at most 86400 seconds");
  }
  if (options.max_size > (1ULL << 30)) return Fail(Errc::kInvalidArgument, "max_size: at most 1 GiB");
  if (!options.depths.empty()) {
    if (auto classes = calibrator::NormalizeDepthClasses(options.depths); !classes) {
      return Fail(Errc::kInvalidArgument, classes.error().message);
    }
  }
  if (const TargetTraits& path = TraitsOf(options.target.kind);
      path.max_message_bytes != 0 && options.min_size > path.max_message_bytes) {
    return Fail(Errc::kInvalidArgument,
                "min_size: at most " + std::to_string(path.max_message_bytes) + " bytes on the " +
                    std::string(path.name) + " path (" + std::string(path.max_message_why) + ")");
  }
  if (Result<void> planner = calibrator::ValidatePlannerOptions(PlannerOptionsFor(options));
      !planner) {
    return Fail(Errc::kInvalidArgument, planner.error().message);
  }
  return {};
}

namespace {

// The probe the planner asked for, on this calibration's path and depth,
// for `duration` and, under a rate cap, the bytes that fit it.
ProbeOptions ProbeFor(const CalibrationOptions& options, const calibrator::ProbeRequest& request,
                      std::uint32_t depth, Seconds duration) {
  ProbeOptions probe;
  probe.method = request.method;
  probe.size_bytes = request.size_bytes;
  probe.repeat = request.repeat;
  probe.depth = depth;
  probe.path = options.PathName();
  probe.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(duration);
  if (options.max_bytes_per_second != 0) {
    probe.max_bytes = std::max<std::uint64_t>(
        static_cast<std::uint64_t>(static_cast<double>(options.max_bytes_per_second) *
                                   duration.count()),
        request.size_bytes);
  }
  probe.cancel = options.cancel;
  probe.root = options.root;
  probe.buffers = options.buffers;
  return probe;
}

bool Cancelled(const CalibrationOptions& options) {
  return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
}

// Under a rate cap, a probe that hit its byte cap early rests until its
// bytes fit the average rate.
void RestForTheRate(const CalibrationOptions& options, Clock::time_point probe_start,
                    const Sample& sample) {
  if (options.max_bytes_per_second == 0) return;
  const Seconds earliest_next(static_cast<double>(sample.bytes) /
                              static_cast<double>(options.max_bytes_per_second));
  const auto resume = probe_start + std::chrono::duration_cast<Clock::duration>(earliest_next);
  while (Clock::now() < resume && !Cancelled(options)) {
    std::this_thread::sleep_for(std::min<Clock::duration>(resume - Clock::now(), 50ms));
  }
}

// One depth class's share of a run: its own planner over the samples
// measured so far, its probes until its planner is done or its share of the
// budget is spent.
struct ClassRun {
  std::uint32_t depth = calibrator::kStreamDepth;
  Clock::time_point deadline;
  calibrator::PlannerOptions planner;
};

// Why the probes stopped before every planner was done; nullopt: they
// did not.
enum class Stop { kNone, kCancelled, kLost, kNoRoom };

// What the probes of one class work with; `done` numbers the run's probes
// for progress.
struct ClassProbes {
  const CalibrationOptions& options;
  const ClassRun& run;
  PathRunner& path;
  std::map<Method, Support>& support;
  HostLoadMeter& load;
  CalibrationReport& report;
  calibrator::SweepPlanner& planner;
  std::size_t& done;
};

void Record(ClassProbes& c, const ProbeOutcome& outcome) {
  if (outcome.sample.status == SampleStatus::kFailed) {
    assert(outcome.failure.has_value());
    c.report.probe_failures.push_back(
        {c.report.samples.size(), outcome.failure.value_or(PeerFailure::kLocalError)});
  }
  c.planner.Record(outcome.sample);
  c.report.samples.push_back(c.planner.samples().back());
  ++c.done;
}

// A method the path cannot run is recorded as such, not probed: true when
// `request` was one.
bool RecordIfUnsupported(ClassProbes& c, const calibrator::ProbeRequest& request) {
  auto [it, added] = c.support.try_emplace(request.method);
  if (added) it->second = c.path.SupportOf(request.method, c.options.root);
  if (it->second.supported) return false;
  Sample unsupported = UnsupportedSample(c.options, request, it->second.reason);
  if (calibrator::IsZerocopy(request.method)) unsupported.depth = c.run.depth;
  Record(c, {std::move(unsupported), std::nullopt});
  return true;
}

// Runs and records one probe; why the probes stop after it (kNone: they
// go on). `unfinished` is set where the path had no room for it.
Stop ProbeOne(ClassProbes& c, const calibrator::ProbeRequest& request, Seconds duration,
              std::size_t left, std::string& unfinished) {
  ProbeOptions probe = ProbeFor(c.options, request, c.run.depth, duration);
  if (auto room = c.path.Prepare(probe, left); !room) {
    unfinished = std::move(room.error().message);
    return Stop::kNoRoom;
  }
  c.load.Sample();
  const auto probe_start = Clock::now();
  PathProbe probed = c.path.Probe(probe);
  if (probed.loss) {
    c.report.session_lost = std::move(probed.loss);
    Record(c, probed.outcome);
    return Stop::kLost;
  }
  const Sample& sample = probed.outcome.sample;
  RestForTheRate(c.options, probe_start, sample);
  if (!sample.ok() && Cancelled(c.options)) return Stop::kCancelled;  // cut short: meaningless
  if (sample.status != SampleStatus::kUnsupported) ++c.report.probes_run;
  Record(c, probed.outcome);
  return Stop::kNone;
}

// How many more probes the time left holds, on a path whose probes have a
// fixed length (the discard path); nullopt where the probes are sized to
// the time left instead. The loop below stops once less than two probes'
// time and the finish reserve are left.
std::optional<std::size_t> ProbesThatFit(const CalibrationOptions& options, Seconds remaining) {
  if (options.target.kind != TargetKind::kDiscard) return std::nullopt;
  const double fit = (remaining - kFinishReserve).count() / (kDiscardProbe + kDiscardOverhead).count();
  return fit < 2 ? 0 : static_cast<std::size_t>(fit) - 1;
}

// Runs one class's probes, appending to `report` (samples, failures,
// probes_run). `done` and `total` number the run's probes for progress.
Stop ProbeClass(const CalibrationOptions& options, const ClassRun& run, PathRunner& path,
                std::map<Method, Support>& support, HostLoadMeter& load,
                CalibrationReport& report, ClassAnalysis& analysis, std::size_t& done,
                const std::function<void(const CalibrationProgress&)>& on_progress) {
  calibrator::SweepPlanner planner(run.planner);
  // Whatever ends the probes, each method says why its probes ended.
  struct Account {
    const calibrator::SweepPlanner& planner;
    ClassAnalysis& analysis;
    std::string unfinished;  // set where the time (or the path's room) ran out
    ~Account() {
      analysis.stops = planner.Stops();
      if (unfinished.empty()) return;
      for (Method m : planner.Unfinished()) {
        analysis.stops[m] = {calibrator::StopReason::kBudget, unfinished};
      }
    }
  } account{planner, analysis, {}};
  planner.Seed(report.samples);
  ClassProbes c{options, run, path, support, load, report, planner, done};
  for (;;) {
    planner.SetProbesLeft(ProbesThatFit(options, run.deadline - Clock::now()));
    const auto request = planner.Next();
    if (!request) break;
    if (Cancelled(options)) return Stop::kCancelled;
    const Seconds remaining = run.deadline - Clock::now();
    const std::size_t total = std::max(planner.EstimatedTotal(), planner.issued());
    const std::size_t left = total - planner.issued() + 1;
    const Seconds duration = path.ProbeDuration(remaining, left);
    if (remaining < duration * 2 + kFinishReserve) {  // the share is spent
      account.unfinished = "the calibration's time ran out first";
      break;
    }
    if (on_progress) {
      on_progress({done, done + left, request->method, request->size_bytes});
    }
    if (RecordIfUnsupported(c, *request)) continue;
    if (const Stop stop = ProbeOne(c, *request, duration, left, account.unfinished);
        stop != Stop::kNone) {
      return stop;
    }
  }
  return Stop::kNone;
}

// The zerocopy methods of a class's verdicts, as what later classes know.
void Learn(const calibrator::Analysis& analysis, std::uint32_t depth,
           depth_classes::KnownClasses& known) {
  for (const auto& [path, result] : analysis.paths) {
    for (const auto& [method, r] : result.methods) {
      known[depth][method] = depth_classes::KnownOf(r, depth);
    }
  }
}

// What class `depth` probes after the classes in `known`: the methods
// (with the baselines they need) and, where its neighbours bound a method's
// answer, the sizes it is probed at. It does not depend on the budget, so it
// is chosen once, before the class's share of the budget (which depends on
// how many methods it probes) is known.
struct ClassPlan {
  bool after_the_first = false;  ///< a class before it was decided
  std::vector<Method> methods;
  std::map<Method, std::vector<std::uint64_t>> coarse_sizes;
};

// The coarse grid of a class after the first: `planner`'s, or on the
// dense grid (the discard path, whose senders never wait) every third size
// of it, an octave apart, and its end. There a class's samples measure one
// number, its cost per send over the first class's
// (calibrator::ClassOffset), pooled over the sizes both measured, and the
// first class's samples moved by it carry the noise and the shape, so one
// round at a few of the first class's sizes does. Elsewhere (a peer's
// sink) a class may have to be decided on its own samples, and has the
// planner's grid and two rounds (CoarseRepeatsAfterTheFirst).
std::vector<std::uint64_t> GridAfterTheFirst(const CalibrationOptions& options,
                                             const calibrator::PlannerOptions& planner) {
  std::vector<std::uint64_t> grid = calibrator::CoarseGrid(planner);
  if (!DenseGrid(options)) return grid;
  std::vector<std::uint64_t> every_third;
  for (std::size_t i = 0; i < grid.size(); i += kEveryThird) every_third.push_back(grid[i]);
  if (every_third.back() != grid.back()) every_third.push_back(grid.back());
  return every_third;
}

// The coarse grid's rounds of a class after the first: one where its
// senders never wait (above), the planner's two elsewhere.
std::uint32_t CoarseRepeatsAfterTheFirst(const CalibrationOptions& options) {
  return TraitsOf(options.target.kind).senders_never_wait ? 1
                                                          : calibrator::PlannerOptions{}.repeats;
}

// The methods not probed go into `skipped` with why, and the answer they
// take into `inferred`.
ClassPlan PlanClass(const CalibrationOptions& options, std::uint32_t depth,
                    const depth_classes::KnownClasses& known, ClassAnalysis& skipped,
                    std::map<Method, depth_classes::Known>& inferred) {
  const calibrator::PlannerOptions all = PlannerOptionsFor(options, depth);
  ClassPlan plan;
  if (known.empty()) {
    plan.methods = all.methods;
    return plan;
  }
  plan.after_the_first = true;
  const std::vector<std::uint64_t> grid = GridAfterTheFirst(options, all);
  for (Method m : all.methods) {
    if (!calibrator::IsZerocopy(m)) continue;
    const depth_classes::Placement place = depth_classes::Place(m, depth, known, grid);
    if (place.skip) {
      skipped.not_probed[m] = *place.skip;
      if (place.inferred) inferred[m] = *place.inferred;
      continue;
    }
    plan.methods.push_back(m);
    plan.coarse_sizes[m] = place.sizes.empty() ? grid : place.sizes;
  }
  // Their baselines (the native one, or copy where it was not asked for),
  // whose probes so far the planner is seeded with.
  const auto asked = [&](Method m) {
    return std::find(all.methods.begin(), all.methods.end(), m) != all.methods.end();
  };
  const std::size_t zerocopy = plan.methods.size();
  for (std::size_t i = 0; i < zerocopy; ++i) {
    const Method z = plan.methods[i];
    const Method base = asked(calibrator::NativeBaseline(z)) ? calibrator::NativeBaseline(z)
                                                             : Method::kCopy;
    if (asked(base) &&
        std::find(plan.methods.begin(), plan.methods.end(), base) == plan.methods.end()) {
      plan.methods.push_back(base);
    }
  }
  return plan;
}

// The planner of a class's plan, sized by its share of the budget.
calibrator::PlannerOptions PlannerOf(const CalibrationOptions& options, std::uint32_t depth,
                                     double budget_seconds, const ClassPlan& plan) {
  CalibrationOptions share = options;
  share.budget_seconds = budget_seconds;
  calibrator::PlannerOptions planner = PlannerOptionsFor(share, depth);
  if (plan.after_the_first) planner.repeats = CoarseRepeatsAfterTheFirst(options);
  planner.methods = plan.methods;
  for (const auto& [method, sizes] : plan.coarse_sizes) planner.coarse_sizes[method] = sizes;
  return planner;
}

// What a revisit of class `c` probes: its methods that lost their
// resolution (the first `zerocopy` of plan.methods), each kept to the sizes
// the class measured it at, then the baselines they were decided against.
// Classes with no stop at the resolution are not analysed again.
ClassPlan RevisitPlan(const CalibrationOptions& options, const CalibrationReport& report,
                      const ClassAnalysis& c, std::size_t& zerocopy) {
  ClassPlan plan;
  zerocopy = 0;
  if (std::none_of(c.stops.begin(), c.stops.end(), [](const auto& stop) {
        return stop.second.reason == calibrator::StopReason::kResolution;
      })) {
    return plan;
  }
  const calibrator::Analysis now = calibrator::Analyze(report.samples, options.decision, c.depth);
  const auto on_path = now.paths.find(options.PathName());
  if (on_path == now.paths.end()) return plan;
  const calibrator::PlannerOptions stated = PlannerOptionsFor(options, c.depth);
  // report.classes is in calibration order until Finish sorts it.
  plan.after_the_first = &c != &report.classes.front();
  std::set<Method> baselines;
  for (const auto& [method, why] : c.stops) {
    const auto it = on_path->second.methods.find(method);
    if (it == on_path->second.methods.end() ||
        !calibrator::LostItsResolution(why, it->second, stated)) {
      continue;
    }
    plan.methods.push_back(method);
    // Its own samples' sizes (a numeric class's analysis compares the
    // stream's moved samples at the sizes between).
    std::set<std::uint64_t> own;
    for (const Sample& s : report.samples) {
      if (s.ok() && s.method == method && s.depth == c.depth) own.insert(s.size_bytes);
    }
    plan.coarse_sizes[method].assign(own.begin(), own.end());
    baselines.insert(it->second.baseline);  // the one it was decided against
  }
  zerocopy = plan.methods.size();
  plan.methods.insert(plan.methods.end(), baselines.begin(), baselines.end());
  return plan;
}

// The time the classes left, spent on the methods that lost their
// resolution after their class ended. A class's planner stops a method
// once its threshold is at the stated resolution on the samples of that
// moment; the classes after it probe the baselines they share (copy,
// uring_send) at their own sizes, and the final analysis, on every sample,
// can then find it wider (on this VM's discard path at 2 s, default
// classes: 34 of the 53 results short of the resolution in 60 runs were
// such; re-analysed without the later classes' baseline samples, each of
// those looked at was at its resolution again, most of them the io_uring
// methods at depth 1 after depths 16 and 4 had probed uring_send between
// 32 and 41 KiB). Each such class, in the order they were
// calibrated, gets a planner of its own for those methods, seeded with
// every sample and kept to the sizes the class already measured for its
// coarse grid (so it only refines), until it is done or the budget ends;
// the stops it gives replace theirs. Nothing is probed where no method lost
// its resolution, or where less than a refinement round's time is left.
Stop Revisit(const CalibrationOptions& options, PathRunner& path,
             std::map<Method, Support>& support, HostLoadMeter& load, CalibrationReport& report,
             std::size_t& done, const std::function<void(const CalibrationProgress&)>& on_progress,
             Clock::time_point budget_end) {
  for (std::size_t pass = 0; pass < kRevisitPasses; ++pass) {
    bool revisited = false;
    for (ClassAnalysis& c : report.classes) {
      const Seconds remaining = budget_end - Clock::now();
      if (remaining < path.ProbeDuration(remaining, kRevisitProbes) *
                              static_cast<double>(kRevisitProbes) +
                          kFinishReserve) {
        return Stop::kNone;
      }
      std::size_t zerocopy = 0;
      const ClassPlan plan = RevisitPlan(options, report, c, zerocopy);
      if (zerocopy == 0) continue;
      ClassRun run;
      run.depth = c.depth;
      run.deadline = budget_end;
      run.planner = PlannerOf(options, c.depth, remaining.count(), plan);
      run.planner.plan_on_published = true;
      ClassAnalysis again;
      again.depth = c.depth;
      const Stop stop = ProbeClass(options, run, path, support, load, report, again, done,
                                   on_progress);
      for (std::size_t i = 0; i < zerocopy; ++i) {
        const Method m = plan.methods[i];
        if (const auto it = again.stops.find(m); it != again.stops.end()) c.stops[m] = it->second;
      }
      if (stop != Stop::kNone) return stop;
      revisited = true;
    }
    if (!revisited) break;
  }
  return Stop::kNone;
}

// The report once the probes ended: the path closed, every class decided on
// every sample, or why no probe measured.
Result<CalibrationReport, CalibrationError> Finish(const CalibrationOptions& options,
                                                   CalibrationReport report, PathRunner& path,
                                                   Clock::time_point start) {
  const bool ended_early = report.cancelled || report.session_lost.has_value();
  if (auto loss = path.Close(report.samples, ended_early)) report.session_lost = std::move(loss);
  // Reported as the classes are listed everywhere (ParseDepthClasses):
  // numeric ascending, stream last.
  std::sort(report.classes.begin(), report.classes.end(),
            [](const ClassAnalysis& a, const ClassAnalysis& b) { return a.depth - 1 < b.depth - 1; });
  for (ClassAnalysis& c : report.classes) {
    c.analysis = calibrator::Analyze(report.samples, options.decision, c.depth);
    for (auto& [name, result] : c.analysis.paths) {
      for (const auto& [method, why] : c.not_probed) result.methods.erase(method);
      // Judged against the planner's stated resolution, which the
      // calibration does not change.
      const calibrator::PlannerOptions planner;
      for (const auto& [method, why] : c.stops) {
        if (const auto it = result.methods.find(method); it != result.methods.end()) {
          it->second.stop = calibrator::PublishedStop(why, it->second, planner);
        }
      }
    }
  }
  report.analysis = report.classes.front().analysis;
  for (const ClassAnalysis& c : report.classes) {
    if (c.depth == calibrator::kStreamDepth) report.analysis = c.analysis;
  }
  report.duration_seconds = Seconds(Clock::now() - start).count();
  const bool any_ok = std::any_of(report.samples.begin(), report.samples.end(),
                                  [](const Sample& s) { return s.ok(); });
  if (any_ok || report.cancelled) return report;
  if (report.session_lost) {
    return FailCalibration(Errc::kFailed,
                           "the session with the sink of path " + options.PathName() +
                               " was lost before a probe measured: " +
                               report.session_lost->message,
                           report.session_lost->failure);
  }
  return FailCalibration(Errc::kUnsupported, NoProbeMessage(options, report.samples));
}

// The probes of the coarse grid a class's planner asks for: its methods at
// their sizes, `repeats` times, less the baselines' probes it is seeded
// with (the classes before measured them).
std::size_t CoarseProbesOf(const calibrator::PlannerOptions& planner,
                           const std::vector<Sample>& seeded) {
  const std::vector<std::uint64_t> grid = calibrator::CoarseGrid(planner);
  std::size_t probes = 0;
  for (Method m : planner.methods) {
    const auto only = planner.coarse_sizes.find(m);
    for (std::uint64_t size : only == planner.coarse_sizes.end() ? grid : only->second) {
      std::uint32_t have = 0;
      for (const Sample& s : seeded) {
        have += !calibrator::IsZerocopy(m) && s.method == m && s.size_bytes == size && s.ok() ? 1 : 0;
      }
      probes += planner.repeats - std::min(have, planner.repeats);
    }
  }
  return probes;
}

// What a class after the first probes of the coarse grid, per zerocopy
// method: its neighbours leave it the sizes between their thresholds and
// the range's ends, about half the grid (on this VM's discard path 3 to 5
// of 7 sizes at depth 1, 3 to 4 at 4 and 16).
std::size_t CoarseProbesAfter(const CalibrationOptions& options,
                              const calibrator::PlannerOptions& planner) {
  return (GridAfterTheFirst(options, planner).size() / 2 + 1) * CoarseRepeatsAfterTheFirst(options);
}

// The calibration on an opened path, from `start` (what counts against the
// budget: the path's opening too).
Result<CalibrationReport, CalibrationError> Calibrate(
    const CalibrationOptions& options, CalibrationReport report, PathRunner& path,
    Clock::time_point start, const std::function<void(const CalibrationProgress&)>& on_progress) {
  report.max_size_clamp = MaxSizeClamp(options);
  const auto budget_end =
      std::min(path.Deadline(),
               start + std::chrono::duration_cast<Clock::duration>(Seconds(options.budget_seconds)));
  // The classes end this much before the budget: the revisit's time.
  const auto classes_end =
      budget_end - std::chrono::duration_cast<Clock::duration>(
                       (budget_end - start) * kRevisitShare);

  const std::vector<std::uint32_t> order = depth_classes::CalibrationOrder(options.depths);
  std::size_t zerocopy = 0;
  for (Method m : MethodsOf(options)) zerocopy += calibrator::IsZerocopy(m) ? 1 : 0;
  std::map<Method, Support> support;
  depth_classes::KnownClasses known;
  HostLoadMeter load(options.root);
  load.Start();
  std::size_t done = 0;
  Stop stop = Stop::kNone;
  for (std::size_t k = 0; k < order.size(); ++k) {
    ClassAnalysis& c = report.classes.emplace_back();
    c.depth = order[k];
    if (stop != Stop::kNone) continue;
    const Seconds remaining = classes_end - Clock::now();
    ClassRun run;
    run.depth = c.depth;
    std::map<Method, depth_classes::Known> inferred;
    const ClassPlan plan = PlanClass(options, c.depth, known, c, inferred);
    const std::size_t methods = plan.methods.size();
    if (methods != 0) {  // else every method's answer is its neighbours'
      const std::size_t after = order.size() - k - 1;
      // The coarse grids' probes, as time where the probes have a fixed
      // length; elsewhere they are sized to the time left.
      const calibrator::PlannerOptions sizing = PlannerOf(options, c.depth, remaining.count(), plan);
      const Seconds per_probe =
          options.target.kind == TargetKind::kDiscard ? kDiscardProbe + kDiscardOverhead : Seconds{0};
      const Seconds coarse = per_probe * static_cast<double>(CoarseProbesOf(sizing, report.samples));
      const Seconds coarse_after =
          per_probe * static_cast<double>(zerocopy * after * CoarseProbesAfter(options, sizing));
      const double share = depth_classes::ShareOf(methods, zerocopy * after, remaining.count(),
                                                  coarse.count(), coarse_after.count());
      run.planner = PlannerOf(options, c.depth, share, plan);
      // The refinement allowance is what the share leaves after this
      // class's own coarse grid (PlannerOptionsFor counts every method at
      // every size, which a class after the first, seeded and kept to the
      // sizes its neighbours leave open, does not probe).
      if (per_probe.count() > 0 && run.planner.refine_probes_shared) {
        const auto fit = static_cast<std::size_t>(share * kBudgetShareForProbes / per_probe.count());
        const std::size_t own = CoarseProbesOf(run.planner, report.samples);
        if (fit > own) run.planner.refine_probes = std::max(run.planner.refine_probes, fit - own);
      }
      run.deadline = k + 1 == order.size()
                         ? classes_end
                         : Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                              Seconds(share));
      stop = ProbeClass(options, run, path, support, load, report, c, done, on_progress);
    }
    Learn(calibrator::Analyze(report.samples, options.decision, c.depth), c.depth, known);
    for (const auto& [method, answer] : inferred) known[c.depth][method] = answer;
  }
  if (stop == Stop::kNone) {
    stop = Revisit(options, path, support, load, report, done, on_progress, budget_end);
  }
  report.cancelled = stop == Stop::kCancelled;
  report.load = load.Finish();
  return Finish(options, std::move(report), path, start);
}

}  // namespace

Result<CalibrationReport, CalibrationError> RunCalibration(
    const CalibrationOptions& options,
    const std::function<void(const CalibrationProgress&)>& on_progress) {
  if (auto valid = ValidateCalibrationOptions(options); !valid) {
    return FailCalibration(valid.error().code, valid.error().message);
  }
  const auto start = Clock::now();
  CalibrationReport report;
  if (options.read_host) report.host = CollectPathFacts({options.root, "", options.target});
  auto opened = OpenPath(options);
  if (!opened) return tl::unexpected(opened.error());
  return Calibrate(options, std::move(report), **opened, start, on_progress);
}

Result<CalibrationReport, CalibrationError> RunCalibrationOn(
    const CalibrationOptions& options, PathRunner& path,
    const std::function<void(const CalibrationProgress&)>& on_progress) {
  if (auto valid = ValidateCalibrationOptions(options); !valid) {
    return FailCalibration(valid.error().code, valid.error().message);
  }
  return Calibrate(options, CalibrationReport{}, path, Clock::now(), on_progress);
}

}  // namespace zcal::probes
