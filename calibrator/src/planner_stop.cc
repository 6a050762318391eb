// The sweep planner's stops: when a method is at its resolution, when the
// noise keeps it from getting there (docs/calibrator.md, "The sweep
// planner"), and what is left to it (its allowance, the caller's clock).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "planner_stop.h"
#include "zcal/calibrator/planner.h"

namespace zcal::calibrator {

namespace {

// The noise-limited stop (docs/calibrator.md, "The sweep planner"). Each
// measure of a method's resolution is the median of three rounds (they
// come from 100 bootstrap replicates and scatter from round to round).
// Once the method's samples have doubled since an earlier round, what more
// probes can do is projected at the rate the measure fell since then, at
// most a rate that the probes' placement could explain (they go where the
// threshold is uncertain, so they narrow it faster than 1/n: the excess
// cost as 1/n^2, the interval as 1/n at best). The projection must miss the
// stop by kNoiseMargin: stopping is for methods that clearly cannot get
// there, not for those that might.
constexpr std::size_t kProgressRounds = 3;
constexpr double kProgressSpan = 2.0;
constexpr double kExcessRate = 2.0;
constexpr double kWidthRate = 1.0;
constexpr double kNoiseMargin = 1.5;
// The early noise stop, from the first refinement rounds: each measure
// narrows with the samples at the sizes the threshold is decided on, the
// excess cost (quadratic in the threshold's error) as 1/n and the interval
// as 1/sqrt(n), at the scatter the repeats show. Taken at the smaller of
// the last two rounds' measures (bootstrap figures that scatter), the
// method ends for the noise where it would need more than a margin times
// the samples left to it: kNeedMargin times its refinement allowance, or
// kClockMargin times what the caller's clock leaves where that is less.
//
// Against the allowance (time to spare): on the simulator's noisy hosts
// (planner_test.cc, calibration_budget_test.cc) 2 and 3 lose a few
// methods that more probes would have brought within 1/8 of the truth
// (96.0 % of the seeds at 8, 95.5 % at 3, 94.5 % at 2), 4 none; on the
// real discard path at 6 s (the agent's budget), default classes, sets of
// 8 runs interleaved, (method, class) results at the resolution 92 and 91
// of 96 at 8 against 68, 85 and 81 at 2.
//
// Against the clock (its time, not its probes, is what is short): the
// probes a method that cannot reach its resolution takes are the time of
// the classes after it. With the discard path's grid of three sizes per
// octave (docs/calibrator.md, "The discard path's grid"), default classes
// at 2 s, 30 runs each, interleaved (2026-12-07 18:45-19:00 UTC): results
// neither at the resolution nor ended by the noise 45 with 8 against 21
// with 2 (ended by the budget 34 against 11; 3 ended as many by the
// budget as 8), the thresholds as stable (series within x1.25 of their
// median in 14 of 15 runs: 7 and 5 of 12 at 8, 6 and 6 at 2). Probes that
// cannot reach the resolution still improve a threshold (on the octave
// grid 8 did better than 4 at 2 s too), and the clock ends those between
// the margin and the time left.
constexpr double kNeedMargin = 8.0;
constexpr double kClockMargin = 2.0;

std::string Rounded(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

// The median of the entries of `values` from `first` to `last` that are set;
// nullopt when one is not.
std::optional<double> MedianOf(const std::vector<std::optional<double>>& values,
                               std::size_t first, std::size_t last) {
  std::vector<double> set;
  for (std::size_t i = first; i <= last && i < values.size(); ++i) {
    if (!values[i]) return std::nullopt;
    set.push_back(*values[i]);
  }
  if (set.empty()) return std::nullopt;
  std::sort(set.begin(), set.end());
  return set[set.size() / 2];
}

// What `left` more samples make of a measure that is `now` at `n_now`
// samples: at `ideal`, the rate pure noise allows, or where it was
// `before` at `n_before` samples, at the rate since then if that is slower
// (a measure that grew is taken as stuck).
double Projected(std::optional<double> before, double now, double n_before, double n_now,
                 double left, double ideal) {
  double rate = ideal;
  if (before && *before > 0 && now > 0 && n_now > n_before) {
    rate = std::clamp(std::log(*before / now) / std::log(n_now / n_before), 0.0, ideal);
  }
  return now * std::pow(n_now / (n_now + left), rate);
}

// The median relative spread of CPU per byte between repeats, over the
// sizes of both methods probed more than once whose comparison is within
// its noise (all sizes when none is): the noise that keeps the threshold
// open. `undecided` says which sizes those were.
std::optional<double> Scatter(const MethodResult& result, bool& undecided) {
  undecided = std::any_of(result.sizes.begin(), result.sizes.end(),
                          [](const SizeComparison& c) { return !c.decisive; });
  std::vector<double> spreads;
  for (const SizeComparison& c : result.sizes) {
    if (undecided && c.decisive) continue;
    for (const SizeStats* s : {&c.zerocopy, &c.baseline}) {
      if (s->samples >= 2 && s->cpu_ns_per_byte.median > 0) {
        spreads.push_back(s->cpu_ns_per_byte.spread / s->cpu_ns_per_byte.median);
      }
    }
  }
  if (spreads.empty()) return std::nullopt;
  std::nth_element(spreads.begin(), spreads.begin() + static_cast<std::ptrdiff_t>(spreads.size() / 2),
                   spreads.end());
  return spreads[spreads.size() / 2];
}

// The model's interval's half-width relative to the threshold; nullopt for
// the per-size rule (its bracket is bisected, not narrowed by repeats) and
// for an open or absent interval.
std::optional<double> HalfWidth(const MethodResult& r) {
  if (r.rule != Rule::kModel || !r.interval || !r.interval->high_bytes || !r.threshold_bytes ||
      r.interval->low_bytes == 0 || *r.threshold_bytes == 0) {
    return std::nullopt;
  }
  const double t = static_cast<double>(*r.threshold_bytes);
  return std::max(t / static_cast<double>(r.interval->low_bytes),
                  static_cast<double>(*r.interval->high_bytes) / t) - 1;
}

// Samples of both sends at the sizes the threshold is decided on: inside
// the model's interval (widened by the resolution), else at the sizes whose
// comparison is within its noise, else at every size.
double SamplesNear(const MethodResult& r, double resolution) {
  double near = 0;
  if (r.rule == Rule::kModel && r.interval && r.interval->high_bytes) {
    const double low = static_cast<double>(r.interval->low_bytes) / (1 + resolution);
    const double high = static_cast<double>(*r.interval->high_bytes) * (1 + resolution);
    for (const SizeComparison& c : r.sizes) {
      const auto size = static_cast<double>(c.size_bytes);
      if (size >= low && size <= high) near += c.zerocopy.samples + c.baseline.samples;
    }
    if (near > 0) return near;
  }
  const bool undecided = std::any_of(r.sizes.begin(), r.sizes.end(),
                                     [](const SizeComparison& c) { return !c.decisive; });
  for (const SizeComparison& c : r.sizes) {
    if (!undecided || !c.decisive) near += c.zerocopy.samples + c.baseline.samples;
  }
  return near;
}

// The per-size bracket's width below its threshold, (t - low) / t, as the
// planner bisects it; nullopt without a per-size threshold.
std::optional<double> BracketWidth(const MethodResult& r) {
  if (r.rule == Rule::kModel || !r.threshold_bytes || !r.interval || *r.threshold_bytes == 0 ||
      r.interval->low_bytes > *r.threshold_bytes) {
    return std::nullopt;
  }
  return 1 - static_cast<double>(r.interval->low_bytes) / static_cast<double>(*r.threshold_bytes);
}

// Whether the comparisons at both ends of a per-size bracket (the probed
// size below the threshold, and it) are beyond their noise.
bool BracketDecided(const MethodResult& r) {
  std::size_t decided = 0;
  for (const SizeComparison& c : r.sizes) {
    if ((c.size_bytes == r.interval->low_bytes || c.size_bytes == *r.threshold_bytes) &&
        c.decisive) {
      ++decided;
    }
  }
  return decided == 2;
}

}  // namespace

bool SweepPlanner::PerSizeResolved(const MethodResult& result) const {
  if (result.regret_excess && *result.regret_excess <= options_.regret_resolution) return true;
  if (result.sizes.empty()) return true;
  // The sizes the verdict rests on: the bracket's ends, or for always and
  // never the ends of the range.
  std::vector<std::uint64_t> ends = {result.sizes.front().size_bytes,
                                     result.sizes.back().size_bytes};
  if (result.interval && result.interval->high_bytes) {
    ends = {result.interval->low_bytes, *result.interval->high_bytes};
  }
  for (const SizeComparison& c : result.sizes) {
    if (std::find(ends.begin(), ends.end(), c.size_bytes) != ends.end() && !c.decisive) {
      return false;
    }
  }
  return true;
}

std::string SweepPlanner::RepeatsSpent(const MethodResult& result) const {
  std::string why = "resolution limited by noise";
  bool undecided = false;
  if (const auto scatter = Scatter(result, undecided)) {
    why += " (" + Rounded(100 * *scatter, 0) + " % scatter between repeats" +
           (undecided ? " at the sizes within their noise)" : ")");
  }
  why += ": the sizes the threshold rests on stay within their noise after " +
         std::to_string(options_.max_repeats) + " repeats";
  if (result.regret_excess) {
    why += ", and the threshold may cost " + Rounded(100 * *result.regret_excess, 2) +
           " pp more than the best (stated: " + Rounded(100 * options_.regret_resolution, 2) +
           " pp)";
  }
  return why;
}

bool AtStatedResolution(const MethodResult& r, double resolution, double regret_resolution) {
  const auto bracket = BracketWidth(r);
  if (bracket && *bracket > resolution) return false;
  if (r.regret_excess && *r.regret_excess <= regret_resolution) return true;
  // A bracket whose sizes were probed once each has no excess to draw (the
  // per-size bootstrap needs repeats); both of its comparisons beyond their
  // noise place the threshold within it, as the planner's own stop for the
  // per-size rule says (PerSizeResolved).
  if (bracket && !r.regret_excess && BracketDecided(r)) return true;
  const auto half = HalfWidth(r);
  return half && *half <= resolution;
}

std::optional<std::string> WiderThanStated(const MethodResult& r, double resolution,
                                           double regret_resolution) {
  if (AtStatedResolution(r, resolution, regret_resolution)) return std::nullopt;
  std::string what;
  if (const auto bracket = BracketWidth(r); bracket && *bracket > resolution) {
    what = "the published bracket " + std::to_string(r.interval->low_bytes) + ".." +
           std::to_string(*r.threshold_bytes) + " bytes is " + Rounded(100 * *bracket, 1) +
           " % wide (stated: " + Rounded(100 * resolution, 1) + " %)";
  } else if (const auto half = HalfWidth(r)) {
    what = "the published interval reaches " + Rounded(100 * *half, 1) +
           " % from the threshold (stated: " + Rounded(100 * resolution, 1) + " %)";
  } else {
    what = "the published result has no interval within the resolution";
  }
  if (r.regret_excess) {
    // Three decimals: a miss by a few thousandths must not read as equal.
    what += ", and the threshold may cost " + Rounded(100 * *r.regret_excess, 3) +
            " pp more than the best (stated: " + Rounded(100 * regret_resolution, 3) + " pp)";
  }
  return what;
}

PlannerStop PublishedStop(PlannerStop stop, const MethodResult& result,
                          const PlannerOptions& options) {
  if (stop.reason != StopReason::kResolution) return stop;
  if (const auto wider = WiderThanStated(result, options.resolution, options.regret_resolution)) {
    stop.detail = "its probes ended at the stated resolution by the planner's estimate, but " +
                  *wider;
  }
  return stop;
}

bool LostItsResolution(const PlannerStop& stop, const MethodResult& result,
                       const PlannerOptions& options) {
  return stop.reason == StopReason::kResolution &&
         !AtStatedResolution(result, options.resolution, options.regret_resolution);
}

bool SweepPlanner::WithinResolution(const MethodResult& result) const {
  return AtStatedResolution(result, options_.resolution, options_.regret_resolution);
}

std::size_t SweepPlanner::RefinementLeft(Method method) const {
  const auto spent = [&](Method m) {
    const auto it = refined_.find(m);
    return it == refined_.end() ? std::size_t{0} : it->second;
  };
  const std::size_t own = options_.refine_probes - std::min(spent(method), options_.refine_probes);
  if (!options_.refine_probes_shared) return own;
  // One allowance for all: what is left of it, shared by the methods that
  // still draw on it.
  std::size_t all = 0;
  std::size_t drawing = 0;
  for (Method m : options_.methods) {
    if (!IsZerocopy(m)) continue;
    all += spent(m);
    drawing += Active(m) && !exhausted_.contains(m) ? 1 : 0;
  }
  const std::size_t left = options_.refine_probes - std::min(all, options_.refine_probes);
  return std::min(own, left / std::max<std::size_t>(drawing, 1));
}

std::optional<std::size_t> SweepPlanner::ClockLeft() const {
  if (!clock_left_) return std::nullopt;
  // Shared by the methods still refined; one at its resolution draws on
  // it only when a baseline's new probes move it out again.
  std::size_t drawing = 0;
  for (Method m : options_.methods) {
    drawing += IsZerocopy(m) && Active(m) && !exhausted_.contains(m) && !reached_.contains(m) ? 1 : 0;
  }
  return *clock_left_ / std::max<std::size_t>(drawing, 1);
}

SweepPlanner::Progress SweepPlanner::ProgressOf(const MethodResult& result) const {
  Progress now;
  for (const SizeComparison& c : result.sizes) {
    now.samples += c.zerocopy.samples + c.baseline.samples;
  }
  now.excess = result.regret_excess;
  now.half_width = HalfWidth(result);
  return now;
}

std::optional<std::size_t> SweepPlanner::RateReference(const std::vector<Progress>& history) {
  const double samples_now = history.back().samples;
  for (std::size_t i = history.size(); i-- > 0;) {
    if (history[i].samples * kProgressSpan <= samples_now) return i;
  }
  return std::nullopt;
}

std::optional<PlannerStop> SweepPlanner::NoiseLimited(const MethodResult& result,
                                                      std::size_t left) {
  const Progress now = ProgressOf(result);
  // Rounds are compared whichever rule decided them. Where the model is
  // rejected in some rounds and not in others, the per-size rule's excess
  // (drawn per size) is the larger: a method that ends up there after the
  // model's smaller figures is not narrowing, and one that moves to the
  // model is, which is what more probes would find out too.
  std::vector<Progress>& history = progress_[result.method];
  history.push_back(now);
  if (history.size() < kProgressRounds) return std::nullopt;
  const std::optional<std::size_t> ref = RateReference(history);
  if (!ref) return std::nullopt;
  const std::size_t last = history.size() - 1;
  std::vector<std::optional<double>> excess;
  std::vector<std::optional<double>> width;
  for (const Progress& p : history) {
    excess.push_back(p.excess);
    width.push_back(p.half_width);
  }
  const auto around = [&](const std::vector<std::optional<double>>& v) {
    return MedianOf(v, *ref == 0 ? 0 : *ref - 1, std::min(*ref + 1, last));
  };
  const double n_ref = history[*ref].samples;
  const double n_now = now.samples;
  const double n_left = static_cast<double>(left);
  // The excess cost: with no measure of it (one sample per size) there is
  // no telling what more probes would do.
  const auto excess_now = MedianOf(excess, last - (kProgressRounds - 1), last);
  const auto excess_before = around(excess);
  if (!excess_now || !excess_before || options_.regret_resolution <= 0) return std::nullopt;
  const double excess_stop = kStopShare * options_.regret_resolution;
  const double excess_end =
      Projected(excess_before, *excess_now, n_ref, n_now, n_left, kExcessRate);
  if (excess_end <= kNoiseMargin * excess_stop) return std::nullopt;
  // The interval (model only).
  const double width_stop = kStopShare * options_.resolution;
  const auto width_now = MedianOf(width, last - (kProgressRounds - 1), last);
  if (width_now &&
      Projected(around(width), *width_now, n_ref, n_now, n_left, kWidthRate) <=
          kNoiseMargin * width_stop) {
    return std::nullopt;
  }
  const double narrowed = *excess_before > 0 ? 1 - *excess_now / *excess_before : 0;
  return PlannerStop{StopReason::kNoise,
                     NoiseSentence(result, now, n_now - n_ref, left, narrowed,
                                   excess_end / *excess_now)};
}

std::optional<PlannerStop> SweepPlanner::NoiseNeeds(const MethodResult& result,
                                                    std::size_t allowance,
                                                    std::optional<std::size_t> clock) const {
  const auto it = progress_.find(result.method);
  if (it == progress_.end() || it->second.empty() || options_.regret_resolution <= 0) {
    return std::nullopt;
  }
  // The first refinement round has one measure only; the clock may leave
  // no time for a second.
  const Progress& now = it->second.back();
  const Progress& before = it->second[it->second.size() < 2 ? 0 : it->second.size() - 2];
  if (!now.excess || !before.excess) return std::nullopt;
  // The per-size rule first bisects its bracket, which narrows the excess
  // cost by about four each round, not as 1/n: its repeats are judged once
  // the bracket is within the resolution (the real discard path's steps
  // put it there in most rounds; at 1/n from the first rounds, 2026-12-07,
  // it ended most of them with intervals of +-100 % and more).
  if (result.rule != Rule::kModel && result.interval && result.interval->high_bytes) {
    const auto high = static_cast<double>(*result.interval->high_bytes);
    if (high - static_cast<double>(result.interval->low_bytes) > options_.resolution * high) {
      return std::nullopt;
    }
  }
  const double excess = std::min(*now.excess, *before.excess);
  const double excess_stop = kStopShare * options_.regret_resolution;
  const double near = SamplesNear(result, options_.resolution);
  if (excess <= excess_stop || near <= 0) return std::nullopt;
  double needed = near * (excess / excess_stop - 1);
  std::optional<double> width;
  if (now.half_width && before.half_width) {
    width = std::min(*now.half_width, *before.half_width);
    const double share = *width / (kStopShare * options_.resolution);
    needed = std::min(needed, near * (share * share - 1));
  }
  const bool clock_short = clock && *clock < allowance;
  const std::size_t left = clock_short ? *clock : allowance;
  if (needed <= (clock_short ? kClockMargin : kNeedMargin) * static_cast<double>(left)) {
    return std::nullopt;
  }
  std::string why = "resolution limited by noise";
  bool undecided = false;
  if (const auto scatter = Scatter(result, undecided)) {
    why += " (" + Rounded(100 * *scatter, 0) + " % scatter between repeats" +
           (undecided ? " at the sizes within their noise)" : ")");
  }
  why += ": after " + Rounded(now.samples, 0) + " samples (" + Rounded(near, 0) +
         " at the sizes the threshold rests on) the threshold may cost " +
         Rounded(100 * excess, 2) + " pp more than the best (stated: " +
         Rounded(100 * options_.regret_resolution, 2) + " pp)";
  if (width) {
    why += " and its interval is +-" + Rounded(100 * *width, 0) + " % (stated: " +
           Rounded(100 * options_.resolution, 1) + " %)";
  }
  why += "; at that scatter it would need about " + Rounded(needed, 0) +
         " more samples there, and ";
  if (clock_short) {
    why += "the calibration's time leaves " + std::to_string(left) +
           (left == 1 ? " probe for it" : " probes for it");
  } else {
    why += "its refinement probes leave " + std::to_string(left);
  }
  return PlannerStop{StopReason::kNoise, std::move(why)};
}

std::string SweepPlanner::NoiseSentence(const MethodResult& result, const Progress& now,
                                        double span, std::size_t left, double narrowed,
                                        double factor) const {
  // Said with this round's figures (the medians above decide; the
  // figures a reader can check are the result's own).
  std::string why = "resolution limited by noise";
  bool undecided = false;
  if (const auto scatter = Scatter(result, undecided)) {
    why += " (" + Rounded(100 * *scatter, 0) + " % scatter between repeats" +
           (undecided ? " at the sizes within their noise)" : ")");
  }
  const double excess_here = now.excess.value_or(0);
  why += ": after " + Rounded(now.samples, 0) + " samples the threshold may cost " +
         Rounded(100 * excess_here, 2) + " pp more than the best (stated: " +
         Rounded(100 * options_.regret_resolution, 2) + " pp)";
  if (now.half_width) {
    why += " and its interval is +-" + Rounded(100 * *now.half_width, 0) + " % (stated: " +
           Rounded(100 * options_.resolution, 1) + " %)";
  }
  if (narrowed < 0.05) {
    why += "; the last " + Rounded(span, 0) + " samples did not narrow it";
  } else {
    why += "; at the rate the last " + Rounded(span, 0) +
           " samples narrowed it, the " + std::to_string(left) +
           " probes left would bring that to about " +
           Rounded(100 * excess_here * factor, 2) + " pp";
  }
  return why;
}

}  // namespace zcal::calibrator
