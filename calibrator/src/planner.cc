#include "zcal/calibrator/planner.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>
#include <utility>

#include "planner_stop.h"
#include "zcal/calibrator/decision.h"

namespace zcal::calibrator {

namespace {

constexpr std::size_t kMaxRefinementRounds = 64;
constexpr std::uint32_t kPlanningReplicates = 100;
constexpr std::uint32_t kNoiseRounds = 2;

bool Requested(const PlannerOptions& options, Method method) {
  return std::find(options.methods.begin(), options.methods.end(), method) !=
         options.methods.end();
}

// Successful samples of `method` at `size`; a zerocopy method's at `depth`
// only (the baselines have no depth).
std::uint32_t OkCount(const std::vector<Sample>& samples, Method method,
                      std::uint64_t size, std::uint32_t depth) {
  std::uint32_t n = 0;
  for (const Sample& s : samples) {
    n += (s.method == method && s.size_bytes == size && s.ok() &&
          (!IsZerocopy(method) || s.depth == depth))
             ? 1
             : 0;
  }
  return n;
}


}  // namespace

std::string_view StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kResolution: return "resolution";
    case StopReason::kNoise: return "noise";
    case StopReason::kProbes: return "probes";
    case StopReason::kBudget: return "budget";
  }
  return "resolution";
}

std::optional<StopReason> ParseStopReason(std::string_view name) {
  for (StopReason r : {StopReason::kResolution, StopReason::kNoise, StopReason::kProbes,
                       StopReason::kBudget}) {
    if (StopReasonName(r) == name) return r;
  }
  return std::nullopt;
}

Result<void> ValidatePlannerOptions(const PlannerOptions& o) {
  const auto bad = [](std::string why) {
    return Fail(Errc::kInvalidArgument, std::move(why));
  };
  if (o.methods.empty()) return bad("methods: at least one method is required");
  if (o.min_size < 1) return bad("min_size: must be at least 1 byte");
  if (o.max_size < o.min_size) {
    return bad("max_size (" + std::to_string(o.max_size) +
               ") must be at least min_size (" + std::to_string(o.min_size) + ")");
  }
  if (!(o.growth > 1.0) || o.growth > 16) return bad("growth: must be in (1, 16]");
  if (!(o.resolution > 0) || o.resolution >= 1) {
    return bad("resolution: must be in (0, 1)");
  }
  if (!(o.regret_resolution >= 0) || o.regret_resolution >= 1) {
    return bad("regret_resolution: must be in [0, 1)");
  }
  if (o.repeats < 1) return bad("repeats: must be at least 1");
  if (o.max_repeats < o.repeats) return bad("max_repeats: must be >= repeats");
  if (o.max_probes < 1) return bad("max_probes: must be at least 1");
  if (o.size_alignment < 1) return bad("size_alignment: must be at least 1");
  return ValidateDecisionOptions(o.decision);
}

std::vector<std::uint64_t> CoarseGrid(const PlannerOptions& options) {
  assert(ValidatePlannerOptions(options));
  std::vector<std::uint64_t> grid;
  double size = static_cast<double>(options.min_size);
  while (static_cast<std::uint64_t>(size) < options.max_size) {
    grid.push_back(static_cast<std::uint64_t>(size));
    size = std::ceil(size * options.growth);
  }
  grid.push_back(options.max_size);
  return grid;
}

SweepPlanner::SweepPlanner(PlannerOptions options)
    : options_(std::move(options)), grid_(CoarseGrid(options_)) {}

bool SweepPlanner::Active(Method method) const {
  if (dropped_.contains(method)) return false;
  if (IsZerocopy(method)) return true;
  // A baseline is worth probing only while a zerocopy method still needs it
  // (or when the caller asked for baselines alone).
  bool any_zerocopy_requested = false;
  for (Method m : options_.methods) {
    if (!IsZerocopy(m)) continue;
    any_zerocopy_requested = true;
    if (dropped_.contains(m)) continue;
    Method base = NativeBaseline(m);
    if (!Requested(options_, base) || dropped_.contains(base)) {
      base = Method::kCopy;
    }
    if (base == method) return true;
  }
  return !any_zerocopy_requested;
}

void SweepPlanner::PlanCoarse() {
  coarse_planned_ = true;
  const std::size_t n = options_.methods.size();
  for (std::uint32_t r = 0; r < options_.repeats; ++r) {
    for (std::size_t i = 0; i < grid_.size(); ++i) {
      // Rotate the method order from size to size and round to round, so
      // that no method always runs first (after idle) or last.
      for (std::size_t k = 0; k < n; ++k) {
        const Method m = options_.methods[(k + i + r) % n];
        // A seeded calibration (another depth class's) probed it already.
        if (OkCount(samples_, m, grid_[i], options_.depth) > r) continue;
        if (const auto only = options_.coarse_sizes.find(m);
            only != options_.coarse_sizes.end() &&
            std::find(only->second.begin(), only->second.end(), grid_[i]) == only->second.end()) {
          continue;
        }
        queue_.push_back({m, grid_[i], r});
      }
    }
  }
}

std::uint64_t SweepPlanner::Aligned(double size) const {
  const double a = static_cast<double>(options_.size_alignment);
  const double lo = static_cast<double>(options_.min_size);
  const double hi = static_cast<double>(options_.max_size);
  const double rounded = std::round(std::clamp(size, lo, hi) / a) * a;
  return static_cast<std::uint64_t>(std::clamp(rounded, lo, hi));
}

// Adds probes of a zerocopy method and its baseline to a plan, within an
// allowance of probes: earlier calls have priority, and what does not fit
// is left out.
class SweepPlanner::PlanBudget {
 public:
  PlanBudget(const MethodResult& result, std::size_t allowance, Planned& planned)
      : method_(result.method), baseline_(result.baseline), allowance_(allowance),
        planned_(planned) {}

  // At least `count` probes of both sends at `size`.
  void Add(std::uint64_t size, std::uint32_t count) {
    std::size_t cost = 0;
    for (Method m : {method_, baseline_}) {
      const auto it = planned_.find({m, size});
      cost += count - std::min(count, it == planned_.end() ? 0u : it->second);
    }
    if (spent_ + cost > allowance_) return;
    spent_ += cost;
    for (Method m : {method_, baseline_}) {
      auto& n = planned_[{m, size}];
      n = std::max(n, count);
    }
  }

 private:
  Method method_;
  Method baseline_;
  std::size_t allowance_;
  std::size_t spent_ = 0;
  Planned& planned_;
};

void SweepPlanner::PlanFor(const MethodResult& result, std::size_t allowance,
                           Planned& planned) {
  PlanBudget budget(result, allowance, planned);
  const bool settled = result.rule == Rule::kModel && result.interval && result.model
                           ? PlanAroundModel(result, budget)
                           : PlanPerSize(result, budget, planned);
  if (settled) settled_.insert(result.method);
}

bool SweepPlanner::PlanAroundModel(const MethodResult& result, PlanBudget& budget) const {
  const auto& sizes = result.sizes;
  const double res = options_.resolution;
  const ThresholdInterval& in = *result.interval;
  const double hi = static_cast<double>(result.model->max_size_bytes);
  const double low = static_cast<double>(in.low_bytes);
  // An open interval (zerocopy may never pay off) reaches past the range.
  const double high = in.high_bytes ? static_cast<double>(*in.high_bytes) : hi * 2;
  // The centre: the threshold, the smallest size for always, the largest
  // for never, the interval's middle when undecided.
  double centre = std::sqrt(low * std::min(high, hi));
  if (result.threshold_bytes) centre = static_cast<double>(*result.threshold_bytes);
  if (result.verdict == Verdict::kNever) centre = hi;
  // The interval is itself estimated, and stopping at the first narrow one
  // favours intervals that are narrow by chance: stop only inside
  // kStopShare of the resolution.
  const double band = 1 + kStopShare * res;
  if (ModelSettled(result, low, high, hi, centre, band)) return true;
  // An exception near the threshold (one or two sizes decided by their
  // own comparison) was measured at its own sizes only: how far it
  // reaches towards the fitted sizes around it, and its cost within its
  // own noise, move the threshold (the interval counts both). Probe
  // halfway (in log size) into each unmeasured gap wider than the
  // resolution, and the exception itself again, up to max_repeats.
  for (const ModelException& e : result.model->exceptions) {
    if (static_cast<double>(e.max_size_bytes) * band < low ||
        static_cast<double>(e.min_size_bytes) > std::min(high, hi) * band) {
      continue;
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::uint64_t s = sizes[i].size_bytes;
      if (s < e.min_size_bytes || s > e.max_size_bytes) continue;
      const double here = static_cast<double>(s);
      if (s == e.min_size_bytes && i > 0) {
        const double below = static_cast<double>(sizes[i - 1].size_bytes);
        if (here > below * (1 + res)) budget.Add(Aligned(std::sqrt(here * below)), 1);
      }
      if (s == e.max_size_bytes && i + 1 < sizes.size()) {
        const double above = static_cast<double>(sizes[i + 1].size_bytes);
        if (above > here * (1 + res)) budget.Add(Aligned(std::sqrt(here * above)), 1);
      }
      if (std::min(sizes[i].zerocopy.samples, sizes[i].baseline.samples) <
          options_.max_repeats) {
        budget.Add(s, 1);
      }
    }
  }
  // A probe pair at the threshold narrows the fitted cost difference
  // there most; one more pair on each side of it, halfway (in log size)
  // to the interval's ends, finds out a centre that is off and keeps the
  // curves' slope honest.
  budget.Add(Aligned(centre), 1);
  budget.Add(Aligned(std::sqrt(centre * std::min(high, hi))), 1);
  budget.Add(Aligned(std::sqrt(centre * low)), 1);
  return false;
}

bool SweepPlanner::ModelSettled(const MethodResult& result, double low, double high, double hi,
                                double centre, double band) const {
  // A never that rests on throughput alone (efficiency, and zerocopy's CPU
  // curve the cheaper one at the top of the range) is a test made after
  // every round on a line rate still being measured: one unlucky round
  // must not end the calibration there, so it is probed on.
  const MethodFit& z = result.model->zerocopy;
  const MethodFit& b = result.model->baseline;
  const bool cpu_wins_at_top =
      options_.decision.objective == Objective::kEfficiency &&
      z.CpuNsPerByte(hi) <= (1 - options_.decision.margin) * b.CpuNsPerByte(hi);
  const bool never = result.verdict == Verdict::kNever && !cpu_wins_at_top;
  // What matters is what the threshold costs: where both sends cost about
  // the same around the crossover, its interval stays wide long after any
  // threshold in it is as cheap as the best (within regret_resolution).
  const bool cheap = result.regret_excess &&
                     *result.regret_excess <= kStopShare * options_.regret_resolution &&
                     (result.verdict != Verdict::kNever || never);
  return cheap || (low >= centre / band && (never || high <= centre * band));
}

bool SweepPlanner::PlanPerSize(const MethodResult& result, PlanBudget& budget,
                               Planned& planned) const {
  const auto& sizes = result.sizes;
  const bool confirming = ConfirmRejection(result, budget);
  // Per-size rule: where the verdict rests are the largest size and the two
  // sizes around the threshold.
  std::vector<std::size_t> deciding = {sizes.size() - 1};
  std::size_t split = sizes.size();
  if (result.threshold_bytes) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i].size_bytes == *result.threshold_bytes) split = i;
    }
  }
  bool bisecting = false;
  if (split < sizes.size() && split > 0) {
    deciding.push_back(split);
    deciding.push_back(split - 1);
    bisecting = Bisect(sizes[split - 1].size_bytes, sizes[split].size_bytes, budget);
  } else if (split == 0) {
    deciding.push_back(0);
  }
  // A win below the threshold or a loss above it is either real or an
  // outlier that the spread of a few samples did not expose; more repeats
  // tell which, even when it looks decisive.
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const bool exception = sizes[i].zerocopy_wins == (i < split);
    if (exception) deciding.push_back(i);
  }
  // Repeats until every deciding comparison is decisive are not needed
  // where the threshold already costs no more than the best one within
  // regret_resolution (by the per-size bootstrap): at a crossover the two
  // costs are equal by definition, and no number of repeats makes that
  // comparison decisive.
  const bool cheap = result.regret_excess &&
                     *result.regret_excess <= kStopShare * options_.regret_resolution;
  if (!confirming && !bisecting && cheap) {
    planned.clear();
    return true;
  }
  // Otherwise any size whose comparison is within its noise may be where
  // the best threshold lies (a flat crossover: costs within a few percent
  // over an octave): those are repeated too, deciding sizes first.
  if (result.regret_excess) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (!sizes[i].decisive) deciding.push_back(i);
    }
  }
  bool repeating = false;
  for (std::size_t i : deciding) {
    const SizeComparison& c = sizes[i];
    const std::uint32_t have = std::min(c.zerocopy.samples, c.baseline.samples);
    const bool exception = c.zerocopy_wins == (i < split);
    if ((!c.decisive || exception) && have < options_.max_repeats) {
      budget.Add(c.size_bytes, 1);
      repeating = true;
    }
  }
  return !confirming && !bisecting && !repeating;
}

bool SweepPlanner::ConfirmRejection(const MethodResult& result, PlanBudget& budget) const {
  // A rejection at sizes with one sample may be one wild probe (on a shared
  // machine, a burst of load): one more probe of both methods there tells
  // it from a shape the curves cannot follow, and the model decides again.
  bool confirming = false;
  if (result.model && !result.model->accepted && !result.model->rejection_confirmed) {
    for (const SizeComparison& c : result.sizes) {
      if (c.size_bytes < result.model->rejected_min_size_bytes ||
          c.size_bytes > result.model->rejected_max_size_bytes ||
          std::min(c.zerocopy.samples, c.baseline.samples) >= 2) {
        continue;
      }
      budget.Add(c.size_bytes, 1);
      confirming = true;
    }
  }
  return confirming;
}

bool SweepPlanner::Bisect(std::uint64_t lo, std::uint64_t hi, PlanBudget& budget) const {
  if (static_cast<double>(hi - lo) <= options_.resolution * static_cast<double>(hi)) return false;
  const std::uint64_t a = options_.size_alignment;
  const std::uint64_t mid = (lo + hi) / 2 / a * a;
  if (mid <= lo || mid >= hi) return false;
  budget.Add(mid, options_.repeats);
  return true;
}

void SweepPlanner::PlanRefinement() {
  if (++refinements_ > kMaxRefinementRounds) return;
  const Analysis analysis = AnalyzeForPlanning();
  const auto path = analysis.paths.find(options_.path);
  if (path == analysis.paths.end()) return;
  // A method at its resolution is judged again every round: probes of a
  // baseline it shares with another method (uring_send) can change its
  // verdict, e.g. reveal a step that rejects its model. Only a spent
  // refinement budget ends a method for good.
  settled_ = exhausted_;
  std::erase_if(stops_, [](const auto& stop) {
    return stop.second.reason == StopReason::kResolution;
  });
  Planned planned;
  for (const auto& [method, result] : path->second.methods) {
    if (!Active(method) || result.sizes.empty() || settled_.contains(method)) continue;
    Planned mine;
    if (!RefineMethod(method, result, mine)) continue;
    for (const auto& [key, count] : mine) {
      refined_[method] += count;
      auto& n = planned[key];
      n = std::max(n, count);
    }
  }
  QueueInterleaved(planned);
}

Analysis SweepPlanner::AnalyzeForPlanning() const {
  if (options_.plan_on_published) return Analyze(samples_, options_.decision, options_.depth);
  // Where to probe next needs the interval, not its last digit: half the
  // bootstrap replicates of the published result, at half the cost.
  DecisionOptions planning = options_.decision;
  planning.bootstrap_replicates = std::min(planning.bootstrap_replicates, kPlanningReplicates);
  // Where the placement is in doubt, the uncertain interval is where to
  // probe, not the winning tail the published result may settle on.
  planning.settle_on_winning_tail = false;
  return Analyze(samples_, planning, options_.depth);
}

void SweepPlanner::End(Method method, StopReason reason, std::string why) {
  exhausted_.insert(method);
  settled_.insert(method);
  stops_[method] = {reason, std::move(why)};
}

bool SweepPlanner::RefineMethod(Method method, const MethodResult& result, Planned& mine) {
  if (refined_[method] >= options_.refine_probes) {
    End(method, StopReason::kProbes,
        "its refinement probes (" + std::to_string(options_.refine_probes) + ") were spent");
    return false;
  }
  PlanFor(result, options_.refine_probes - refined_[method], mine);
  // A method stops inside kStopShare of the resolution; once it has, it
  // stays stopped while it is still within the resolution itself, so
  // that one that hovers at the line does not take the rest of the
  // budget one round at a time.
  if (!settled_.contains(method) && reached_.contains(method) && WithinResolution(result)) {
    settled_.insert(method);
    mine.clear();
  }
  // The per-size rule also ends where no repeat is left to add (each
  // size that decides has max_repeats): that is the noise, not the
  // resolution.
  if (settled_.contains(method) && result.rule != Rule::kModel && !PerSizeResolved(result)) {
    End(method, StopReason::kNoise, RepeatsSpent(result));
    return false;
  }
  if (settled_.contains(method)) {
    reached_.insert(method);
    stops_[method] = {StopReason::kResolution, "the threshold is at the stated resolution"};
    return false;
  }
  if (mine.empty()) {  // what it needs exceeds its budget
    End(method, StopReason::kProbes,
        "its next probes would exceed the " +
            std::to_string(options_.refine_probes - refined_[method]) +
            " refinement probes it has left");
    return false;
  }
  // What is left: its refinement allowance, or less where the caller's
  // clock leaves less.
  const std::size_t allowance = RefinementLeft(method);
  const std::optional<std::size_t> clock = ClockLeft();
  const std::size_t left = clock ? std::min(*clock, allowance) : allowance;
  // Judged twice in a row: a measure that stalled over one doubling of
  // the samples by chance has usually moved again by the next round.
  auto noise = NoiseLimited(result, left);
  if (!noise) {
    noise = NoiseNeeds(result, allowance, clock);
    // The clock does not wait for a second round: where it leaves less
    // than the projection needs, the next round may not fit in it.
    if (noise && left < allowance) {
      End(method, noise->reason, std::move(noise->detail));
      return false;
    }
  }
  if (noise) {
    if (++noise_rounds_[method] >= kNoiseRounds) {
      End(method, noise->reason, std::move(noise->detail));
      return false;
    }
  } else {
    noise_rounds_[method] = 0;
  }
  return true;
}

void SweepPlanner::QueueInterleaved(const Planned& planned) {
  // One probe of every planned (method, size) per round, sizes in order,
  // the methods at a size in an order that rotates.
  std::uint32_t rounds = 0;
  for (const auto& [key, count] : planned) rounds = std::max(rounds, count);
  std::map<std::uint64_t, std::vector<Method>> by_size;
  for (const auto& [key, count] : planned) by_size[key.second].push_back(key.first);
  for (std::uint32_t r = 0; r < rounds; ++r) {
    std::size_t turn = refinements_ + r;
    for (const auto& [size, methods] : by_size) {
      for (std::size_t k = 0; k < methods.size(); ++k) {
        const Method method = methods[(k + turn) % methods.size()];
        if (r >= planned.at({method, size})) continue;
        queue_.push_back({method, size, OkCount(samples_, method, size, options_.depth) + r});
      }
      ++turn;
    }
  }
}

std::vector<Method> SweepPlanner::Unfinished() const {
  std::vector<Method> methods;
  for (Method m : options_.methods) {
    if (IsZerocopy(m) && Active(m) && !stops_.contains(m)) methods.push_back(m);
  }
  return methods;
}

void SweepPlanner::EndUnfinished(const std::string& why) {
  for (Method m : Unfinished()) stops_[m] = {StopReason::kProbes, why};
}

std::optional<ProbeRequest> SweepPlanner::Next() {
  if (!coarse_planned_) PlanCoarse();
  while (issued_ < options_.max_probes) {
    while (!queue_.empty() && !Active(queue_.front().method)) {
      queue_.pop_front();
    }
    if (queue_.empty()) {
      PlanRefinement();
      if (queue_.empty()) {
        if (refinements_ > kMaxRefinementRounds) {
          EndUnfinished("the planner's " + std::to_string(kMaxRefinementRounds) +
                        " refinement rounds were spent");
        }
        return std::nullopt;
      }
      continue;
    }
    const ProbeRequest request = queue_.front();
    queue_.pop_front();
    ++issued_;
    return request;
  }
  EndUnfinished("the cap of " + std::to_string(options_.max_probes) + " probes was reached");
  return std::nullopt;
}

void SweepPlanner::Seed(std::span<const Sample> samples) {
  assert(!coarse_planned_);
  for (const Sample& s : samples) {
    // Another class's zerocopy samples say nothing of this one's (its
    // analysis leaves them out); a baseline's do, also that it cannot run.
    if (IsZerocopy(s.method) && s.depth != options_.depth) {
      Sample kept = s;
      kept.path = options_.path;
      Number(kept);
      samples_.push_back(std::move(kept));
      continue;
    }
    Record(s);
  }
}

void SweepPlanner::Number(Sample& sample) {
  if (!sample.seq) sample.seq = next_seq_;
  next_seq_ = std::max(next_seq_, *sample.seq + 1);
}

void SweepPlanner::Record(const Sample& sample) {
  Sample s = sample;
  s.path = options_.path;
  Number(s);
  switch (s.status) {
    case SampleStatus::kUnsupported:
      dropped_.insert(s.method);
      break;
    case SampleStatus::kFailed:
      // One failure may be transient (a peer restarting); two are not.
      if (++failures_[s.method] >= 2) dropped_.insert(s.method);
      break;
    case SampleStatus::kOk: {
      const auto copied = s.CopiedFraction();
      if (IsZerocopy(s.method) && copied &&
          *copied >= options_.decision.kernel_copied_fraction) {
        dropped_.insert(s.method);
      }
      break;
    }
  }
  samples_.push_back(std::move(s));
}

Analysis SweepPlanner::Result() const {
  Analysis analysis = Analyze(samples_, options_.decision, options_.depth);
  for (auto& [name, path] : analysis.paths) {
    for (auto& [method, result] : path.methods) {
      const auto it = stops_.find(method);
      if (it != stops_.end()) result.stop = PublishedStop(it->second, result, options_);
    }
  }
  return analysis;
}

std::size_t SweepPlanner::EstimatedTotal() const {
  std::size_t active = 0;
  std::size_t remaining = queue_.size();
  for (Method m : options_.methods) {
    if (!Active(m)) continue;
    ++active;
    if (IsZerocopy(m) && !settled_.contains(m)) {
      const auto it = refined_.find(m);
      const std::size_t spent = it == refined_.end() ? 0 : it->second;
      remaining += options_.refine_probes - std::min(spent, options_.refine_probes);
    }
  }
  if (!coarse_planned_) remaining += grid_.size() * active * options_.repeats;
  return std::min(options_.max_probes, issued_ + remaining);
}

}  // namespace zcal::calibrator
