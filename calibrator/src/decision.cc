#include "zcal/calibrator/decision.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <random>

#include "class_offset.h"
#include "drift.h"
#include "least_cost.h"
#include "measured_bracket.h"
#include "model_decision.h"
#include "zcal/common/text.h"
#include "zcal/zcal_codes.h"

namespace zcal::calibrator {

std::string_view ObjectiveName(Objective objective) {
  switch (objective) {
    case Objective::kEfficiency: return "efficiency";
    case Objective::kThroughput: return "throughput";
    case Objective::kCpu: return "cpu";
  }
  return "unknown";
}

std::optional<Objective> ParseObjective(std::string_view name) {
  for (Objective o :
       {Objective::kEfficiency, Objective::kThroughput, Objective::kCpu}) {
    if (ObjectiveName(o) == name) return o;
  }
  return std::nullopt;
}

// Verdicts and reasons have their codes in the segment, and the names
// libzcal gives those codes (one table, as for methods: method.cc).
static_assert(static_cast<int>(Verdict::kThreshold) == ZCAL_VERDICT_THRESHOLD);
static_assert(static_cast<int>(Verdict::kAlways) == ZCAL_VERDICT_ALWAYS);
static_assert(static_cast<int>(Verdict::kNever) == ZCAL_VERDICT_NEVER);
static_assert(static_cast<int>(Verdict::kInconclusive) == ZCAL_VERDICT_INCONCLUSIVE);
static_assert(static_cast<int>(Reason::kNone) == ZCAL_REASON_NONE);
static_assert(static_cast<int>(Reason::kSlower) == ZCAL_REASON_SLOWER);
static_assert(static_cast<int>(Reason::kKernelCopied) == ZCAL_REASON_KERNEL_COPIED);
static_assert(static_cast<int>(Reason::kUnsupported) == ZCAL_REASON_UNSUPPORTED);
static_assert(static_cast<int>(Reason::kFailed) == ZCAL_REASON_FAILED);
static_assert(static_cast<int>(Reason::kNoisy) == ZCAL_REASON_NOISY);
static_assert(static_cast<int>(Reason::kNoBaseline) == ZCAL_REASON_NO_BASELINE);

std::string_view VerdictName(Verdict verdict) {
  return zcal_verdict_name(static_cast<std::uint8_t>(verdict));
}

std::string_view ReasonName(Reason reason) {
  return zcal_reason_name(static_cast<std::uint8_t>(reason));
}

std::optional<Verdict> ParseVerdict(std::string_view name) {
  for (Verdict v : {Verdict::kThreshold, Verdict::kAlways, Verdict::kNever, Verdict::kInconclusive}) {
    if (VerdictName(v) == name) return v;
  }
  return std::nullopt;
}

std::optional<Reason> ParseReason(std::string_view name) {
  for (Reason r : {Reason::kNone, Reason::kSlower, Reason::kKernelCopied, Reason::kUnsupported,
                   Reason::kFailed, Reason::kNoisy, Reason::kNoBaseline}) {
    if (ReasonName(r) == name) return r;
  }
  return std::nullopt;
}

std::string_view RuleName(Rule rule) {
  switch (rule) {
    case Rule::kNone: return "";
    case Rule::kModel: return "model";
    case Rule::kPerSize: return "per_size";
  }
  return "unknown";
}

namespace {

// The first thing wrong with the options, or "".
std::string FirstProblem(const DecisionOptions& d) {
  if (!(d.tolerance >= 0 && d.tolerance < 1)) {
    return "tolerance: must be in [0, 1) as a fraction";
  }
  if (!(d.margin >= 0 && d.margin < 1)) {
    return "margin: must be in [0, 1) as a fraction";
  }
  if (!(d.kernel_copied_fraction >= 0 && d.kernel_copied_fraction <= 1)) {
    return "kernel_copied_fraction: must be in [0, 1]";
  }
  if (d.bootstrap_replicates < 20) {
    return "bootstrap_replicates: at least 20 (200 by default)";
  }
  double total = 0;
  for (const TrafficBin& bin : d.traffic) {
    if (bin.size_bytes < 1) return "traffic: a bin's size must be at least 1 byte";
    if (!(bin.weight >= 0) || !std::isfinite(bin.weight)) {
      return "traffic: the weight of the bin at " + std::to_string(bin.size_bytes) +
             " bytes must be a finite number >= 0";
    }
    total += bin.weight;
  }
  if (!d.traffic.empty() && !(total > 0)) {
    return "traffic: the weights must not all be zero";
  }
  return {};
}

}  // namespace

Result<void> ValidateDecisionOptions(const DecisionOptions& options) {
  if (std::string why = FirstProblem(options); !why.empty()) {
    return Fail(Errc::kInvalidArgument, why);
  }
  return {};
}

std::optional<std::size_t> WinningTailStart(
    std::span<const SizeComparison> sizes) {
  std::optional<std::size_t> start;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (!sizes[i].zerocopy_wins) break;
    start = i;
  }
  return start;
}

namespace {

using SamplesBySize = std::map<std::uint64_t, std::vector<Sample>>;

SamplesBySize SamplesOf(std::span<const Sample> samples, Method method) {
  SamplesBySize by_size;
  for (const Sample& s : samples) {
    if (s.method == method) by_size[s.size_bytes].push_back(s);
  }
  return by_size;
}

bool HasOk(const SamplesBySize& by_size) {
  for (const auto& [size, samples] : by_size) {
    for (const Sample& s : samples) {
      if (s.ok()) return true;
    }
  }
  return false;
}

// The outcome of judging one ratio against its bar (Judge): whether it
// passes, and whether its distance to the bar exceeds the noise.
struct Criterion {
  bool passes;
  bool decisive;
};

// Two standard errors: a comparison is decisive at about 95 % confidence.
// One is not enough: the threshold needs a win at every larger size, so a
// per-size false loss rate of 16 % would break most tails.
constexpr double kDecisiveSigmas = 2.0;

// `higher_wins`: values at or above the bar pass, else at or below it.
Criterion Judge(double value, double bar, bool higher_wins, double noise,
                bool noise_known) {
  const bool passes = higher_wins ? value >= bar : value <= bar;
  const bool decisive =
      !noise_known || std::fabs(value - bar) > kDecisiveSigmas * noise;
  return {passes, decisive};
}

void JudgeSize(SizeComparison& c, const DecisionOptions& options) {
  const SizeStats& z = c.zerocopy;
  const SizeStats& b = c.baseline;
  const double bt = b.throughput_bytes_per_second.median;
  const double bc = b.cpu_ns_per_byte.median;
  c.throughput_ratio = bt > 0 ? z.throughput_bytes_per_second.median / bt : 0;
  c.cpu_ratio = bc > 0 ? z.cpu_ns_per_byte.median / bc : 0;
  const bool noise_known = z.samples >= 2 && b.samples >= 2;
  const double thr_noise =
      detail::RatioNoise(z.throughput_bytes_per_second, z.samples,
                 b.throughput_bytes_per_second, b.samples);
  const double cpu_noise =
      detail::RatioNoise(z.cpu_ns_per_byte, z.samples, b.cpu_ns_per_byte, b.samples);

  // "Not lower by more than the tolerance" is a non-inferiority test: a
  // throughput shortfall counts only when it exceeds the noise, otherwise
  // equal links measured on a noisy host would lose at random sizes.
  Criterion thr_ok = Judge(c.throughput_ratio, 1 - options.tolerance, true,
                           thr_noise, noise_known);
  if (!thr_ok.passes && !thr_ok.decisive) thr_ok.passes = true;
  const Criterion thr_gain = Judge(c.throughput_ratio, 1 + options.margin,
                                   true, thr_noise, noise_known);
  const Criterion cpu_gain = Judge(c.cpu_ratio, 1 - options.margin, false,
                                   cpu_noise, noise_known);
  c.throughput_acceptable = thr_ok.passes;
  c.relative_cost = detail::RelativeCost(c.cpu_ratio, c.throughput_ratio,
                                         thr_ok.passes, options);
  switch (options.objective) {
    case Objective::kEfficiency:
      c.zerocopy_wins = thr_ok.passes && cpu_gain.passes;
      if (c.zerocopy_wins) {
        // Throughput passed as "not clearly lower"; what the win rests on
        // is the CPU saving.
        c.decisive = cpu_gain.decisive;
      } else {
        // A loss is decisive when some failing criterion fails clearly.
        c.decisive = (!thr_ok.passes && thr_ok.decisive) ||
                     (!cpu_gain.passes && cpu_gain.decisive);
      }
      break;
    case Objective::kThroughput:
      c.zerocopy_wins = thr_gain.passes;
      c.decisive = thr_gain.decisive;
      break;
    case Objective::kCpu:
      c.zerocopy_wins = cpu_gain.passes;
      c.decisive = cpu_gain.decisive;
      break;
  }
}

std::string FirstError(const SamplesBySize& by_size, SampleStatus status) {
  for (const auto& [size, samples] : by_size) {
    for (const Sample& s : samples) {
      if (s.status == status && !s.error.empty()) return s.error;
    }
  }
  return {};
}

std::optional<double> OverallCopiedFraction(const SamplesBySize& by_size) {
  std::uint64_t completions = 0;
  std::uint64_t copied = 0;
  for (const auto& [size, samples] : by_size) {
    for (const Sample& s : samples) {
      if (!s.ok()) continue;
      completions += s.zc_completions;
      copied += s.zc_copied;
    }
  }
  if (completions == 0) return std::nullopt;
  return static_cast<double>(copied) / static_cast<double>(completions);
}

std::string Percent(double fraction) {
  return std::to_string(static_cast<int>(std::lround(fraction * 100))) + " %";
}

std::vector<double> SizesOf(std::span<const SizeComparison> sizes) {
  std::vector<double> out;
  for (const SizeComparison& c : sizes) out.push_back(static_cast<double>(c.size_bytes));
  return out;
}

std::vector<double> CostsOf(std::span<const SizeComparison> sizes) {
  std::vector<double> out;
  for (const SizeComparison& c : sizes) out.push_back(c.relative_cost);
  return out;
}

// What the per-size threshold may cost over the best one, as the model's
// regret_excess: each size's cost redrawn from its own noise (at least 200
// replicates, seeded from the costs, so the same samples give the same
// figure), the published threshold's excess over each replicate's
// own least-cost threshold, its 95 % quantile. It covers the probed sizes
// only: between two of them the bracket (the interval) says what is not
// known.
double PerSizeRegretExcess(const MethodResult& r, const detail::WeightedSizes& cells,
                           const detail::Choice& choice, const DecisionOptions& options) {
  std::vector<double> values;
  for (const SizeComparison& c : r.sizes) {
    values.insert(values.end(),
                  {static_cast<double>(c.size_bytes), c.cpu_ratio, c.throughput_ratio});
  }
  std::mt19937_64 rng(detail::HashValues(values, common::kFnv1aBasis));
  // At least the published default, also when the planner asks for fewer
  // (it does, to save the model's refits): without curves to fit this is
  // cheap, and the planner's stop then sees the figure that is published.
  const std::size_t replicates =
      std::max<std::uint32_t>(options.bootstrap_replicates, DecisionOptions{}.bootstrap_replicates);
  std::vector<double> excess;
  excess.reserve(replicates);
  std::vector<double> cost(r.sizes.size());
  for (std::size_t i = 0; i < replicates; ++i) {
    for (std::size_t k = 0; k < r.sizes.size(); ++k) {
      cost[k] = detail::DrawRelativeCost(r.sizes[k], rng, options);
    }
    const detail::Choice own = detail::LeastCost(cells, cost, false);
    excess.push_back(std::max(0.0, detail::Regret(cells, cost, choice.threshold) - own.regret));
  }
  std::sort(excess.begin(), excess.end());
  return detail::LevelQuantile(excess);
}

// The verdict, threshold and interval of the least-cost split over the
// probed sizes; returns whether the comparisons it rests on are decisive.
bool SetPerSizeVerdict(MethodResult& r, std::size_t split) {
  const auto& sizes = r.sizes;
  const SizeComparison& largest = sizes.back();
  ThresholdInterval interval;
  bool conclusive = true;
  if (split == sizes.size()) {
    r.verdict = Verdict::kNever;
    r.reason = Reason::kSlower;
    r.detail = "zerocopy does not beat " + std::string(MethodName(r.baseline)) +
               " where it would matter: never using it costs least (largest "
               "probed size " + std::to_string(largest.size_bytes) + " bytes)";
    interval.low_bytes = largest.size_bytes;
    conclusive = largest.decisive;
  } else if (split == 0) {
    r.verdict = Verdict::kAlways;
    r.threshold_bytes = sizes.front().size_bytes;
    r.detail = "zerocopy costs least at every probed size";
    interval.low_bytes = interval.high_bytes.emplace(sizes.front().size_bytes);
    conclusive = sizes.front().decisive || largest.decisive;
  } else {
    r.verdict = Verdict::kThreshold;
    r.threshold_bytes = sizes[split].size_bytes;
    r.detail = "zerocopy costs least from " + std::to_string(*r.threshold_bytes) +
               " bytes on";
    interval.low_bytes = sizes[split - 1].size_bytes;
    interval.high_bytes = sizes[split].size_bytes;
    // The threshold stands when the top is a clear win and some size below
    // the threshold is a clear loss; where exactly it lies between them is
    // the planner's resolution.
    bool clear_loss_below = false;
    for (std::size_t i = 0; i < split; ++i) {
      clear_loss_below |= !sizes[i].zerocopy_wins && sizes[i].decisive;
    }
    conclusive = largest.decisive && clear_loss_below;
  }
  r.interval = interval;
  return conclusive;
}

bool OneSamplePerSize(std::span<const SizeComparison> sizes) {
  bool single = true;
  for (const SizeComparison& c : sizes) {
    single &= c.zerocopy.samples < 2 || c.baseline.samples < 2;
  }
  return single;
}

// Where the comparisons the verdict rests on are not decisive: inconclusive,
// unless zerocopy wins clearly on a tail of the probed sizes.
void WithholdNoisyPerSize(MethodResult& r, const detail::WeightedSizes& cells,
                          const DecisionOptions& options) {
  r.detail = "the dispersion of repeated samples at the deciding sizes "
             "exceeds the difference being judged (would have been: " +
             std::string(VerdictName(r.verdict)) + ")";
  r.verdict = Verdict::kInconclusive;
  r.threshold_bytes.reset();
  r.reason = Reason::kNoisy;
  if (const auto t = detail::WinningTailBound(r, options)) {
    detail::SettleOnTheWinningTail(r, *t, detail::Regret(cells, CostsOf(r.sizes),
                                                         static_cast<double>(*t)));
  }
}

// The least-cost threshold over the probed sizes: verdict, threshold,
// interval and regrets; inconclusive when the comparisons it rests on are
// not decisive.
void DecidePerSize(MethodResult& r, const DecisionOptions& options) {
  const auto& sizes = r.sizes;
  const detail::WeightedSizes cells =
      detail::CellSizes(SizesOf(sizes), options.traffic);
  // The unbounded least cost on these sizes lies within the bracket too,
  // except where weights of zero leave it a tie.
  const detail::Choice choice = detail::LeastCost(
      cells, CostsOf(sizes), false, detail::BoundsOf(r.measured_bracket.value_or(MeasuredBracket{})));
  r.rule = Rule::kPerSize;
  r.regret = choice.regret;
  r.regret_never = choice.regret_never;
  r.regret_always = choice.regret_always;
  const bool conclusive = SetPerSizeVerdict(r, choice.split);
  if (OneSamplePerSize(sizes)) {
    r.confidence.reset();  // one sample per size: decided on the values
    return;
  }
  std::size_t decisive = 0;
  for (const SizeComparison& c : sizes) decisive += c.decisive ? 1 : 0;
  r.confidence = static_cast<double>(decisive) /
                 static_cast<double>(sizes.size());
  r.regret_excess = PerSizeRegretExcess(r, cells, choice, options);
  if (!conclusive) WithholdNoisyPerSize(r, cells, options);
}

// The price of a single threshold, size by size.
void ListOverruled(MethodResult& r, const DecisionOptions& options) {
  if (r.verdict == Verdict::kInconclusive) return;
  r.overruled = detail::Overruled(r.sizes, r.threshold_bytes, options);
  for (const OverruledSize& o : r.overruled) {
    (o.zerocopy_wins ? r.wins_below : r.losses_above).push_back(o.size_bytes);
  }
  r.overruled_cost = ExcessCost(r.sizes, r.threshold_bytes, options);
}

}  // namespace

namespace {

// No probe of the method succeeded: never, for the reason the probes gave
// (unsupported, or failed) and with the first error they reported.
void SetProbesFailed(MethodResult& r, const SamplesBySize& mine) {
  r.verdict = Verdict::kNever;
  bool any_unsupported = false;
  for (const auto& [size, samples] : mine) {
    for (const Sample& s : samples) {
      any_unsupported |= s.status == SampleStatus::kUnsupported;
    }
  }
  r.reason = any_unsupported ? Reason::kUnsupported : Reason::kFailed;
  // Not a statistical judgement: the probe itself said so.
  r.confidence = 1.0;
  r.detail = FirstError(mine, any_unsupported ? SampleStatus::kUnsupported
                                              : SampleStatus::kFailed);
  if (r.detail.empty()) r.detail = "no successful probe";
}

// The baseline `method` is judged against: its native one, or copy where
// the native one has no successful probe.
Method BaselineIn(std::span<const Sample> path_samples, Method method) {
  const Method native = NativeBaseline(method);
  return HasOk(SamplesOf(path_samples, native)) ? native : Method::kCopy;
}

// The baseline's samples (BaselineIn; r says where copy stood in).
SamplesBySize BaselineSamples(std::span<const Sample> path_samples, MethodResult& r) {
  const Method base = BaselineIn(path_samples, r.method);
  r.baseline_substituted = base != r.baseline;
  r.baseline = base;
  return SamplesOf(path_samples, base);
}

// One comparison, judged, per size with samples of both sends.
void CompareSizes(MethodResult& r, const SamplesBySize& mine, const SamplesBySize& base,
                  const DecisionOptions& options) {
  for (const auto& [size, samples] : mine) {
    const auto it = base.find(size);
    if (it == base.end()) continue;
    SizeComparison c;
    c.size_bytes = size;
    c.zerocopy = Aggregate(samples);
    c.baseline = Aggregate(it->second);
    if (c.zerocopy.samples == 0 || c.baseline.samples == 0) continue;
    JudgeSize(c, options);
    r.sizes.push_back(c);
  }
}

// Never, when the kernel reported at least kernel_copied_fraction of the
// zerocopy completions as copied; returns whether it did.
bool KernelCopied(MethodResult& r, const SamplesBySize& mine, const DecisionOptions& options) {
  const std::optional<double> copied = OverallCopiedFraction(mine);
  if (!copied || *copied < options.kernel_copied_fraction) return false;
  r.verdict = Verdict::kNever;
  r.reason = Reason::kKernelCopied;
  r.confidence = 1.0;  // the kernel's own report, not a statistic
  r.detail = "the kernel reported " + Percent(*copied) +
             " of zerocopy completions as copied (local delivery or a "
             "device without scatter-gather)";
  return true;
}

}  // namespace

MethodResult Decide(std::span<const Sample> path_samples, Method method,
                    const DecisionOptions& options) {
  MethodResult r;
  r.method = method;
  r.baseline = NativeBaseline(method);
  const SamplesBySize mine = SamplesOf(path_samples, method);
  if (!HasOk(mine)) {
    SetProbesFailed(r, mine);
    return r;
  }
  const SamplesBySize base = BaselineSamples(path_samples, r);
  CompareSizes(r, mine, base, options);
  if (KernelCopied(r, mine, options)) return r;
  if (r.sizes.empty()) {
    r.verdict = Verdict::kInconclusive;
    r.reason = Reason::kNoBaseline;
    r.detail = "no size has successful samples of both " +
               std::string(MethodName(method)) + " and its baseline " +
               std::string(MethodName(r.baseline));
    return r;
  }
  if (const auto tail = WinningTailStart(r.sizes)) {
    r.tail_threshold_bytes = r.sizes[*tail].size_bytes;
  }
  r.measured_bracket = detail::BracketOf(r.sizes, options);
  if (!options.use_model) {
    r.rule_detail = "the cost model is off (use_model = false)";
  } else if (detail::DecideByModel(path_samples, r, options)) {
    ListOverruled(r, options);
    return r;
  }
  DecidePerSize(r, options);
  ListOverruled(r, options);
  return r;
}

double ExcessCost(std::span<const SizeComparison> sizes,
                  std::optional<std::uint64_t> threshold,
                  const DecisionOptions& options) {
  if (sizes.empty()) return 0;
  const detail::WeightedSizes cells =
      detail::CellSizes(SizesOf(sizes), options.traffic);
  return detail::Regret(cells, CostsOf(sizes),
                        threshold ? static_cast<double>(*threshold) : detail::kInf);
}

std::vector<Sample> SamplesAtDepth(std::span<const Sample> samples, std::uint32_t depth) {
  std::vector<Sample> kept;
  for (const Sample& s : samples) {
    if (!IsZerocopy(s.method) || s.depth == depth) kept.push_back(s);
  }
  return kept;
}

std::vector<std::uint32_t> DepthsOf(std::span<const Sample> samples) {
  std::vector<std::uint32_t> depths;
  for (const Sample& s : samples) {
    if (IsZerocopy(s.method) &&
        std::find(depths.begin(), depths.end(), s.depth) == depths.end()) {
      depths.push_back(s.depth);
    }
  }
  if (depths.empty()) return {kStreamDepth};
  // Numeric classes ascending, stream (0) last: 0 - 1 wraps to the largest.
  std::sort(depths.begin(), depths.end(),
            [](std::uint32_t a, std::uint32_t b) { return a - 1 < b - 1; });
  return depths;
}

namespace {

// A class's own samples and the stream's, moved into it by `ns_per_send`;
// `moved` counts the latter.
std::vector<Sample> WithStreamMoved(const std::vector<Sample>& own,
                                    std::span<const Sample> every_depth, Method method,
                                    std::uint32_t depth, double ns_per_send,
                                    std::size_t* moved = nullptr) {
  std::vector<Sample> samples = own;
  std::vector<Sample> more = detail::MovedIntoClass(every_depth, method, depth, ns_per_send);
  if (moved) *moved = more.size();
  samples.insert(samples.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
  return samples;
}

// The threshold where the class's cost per send is `ns_per_send` over the
// stream's; nullopt: never (or no threshold at all).
std::optional<std::uint64_t> ThresholdWithOffset(const std::vector<Sample>& own,
                                                 std::span<const Sample> every_depth,
                                                 Method method, std::uint32_t depth,
                                                 double ns_per_send, DecisionOptions options) {
  // Only the point is wanted, not its interval.
  options.bootstrap_replicates = 20;
  const MethodResult r =
      Decide(WithStreamMoved(own, every_depth, method, depth, ns_per_send), method, options);
  const bool wins = r.verdict == Verdict::kThreshold || r.verdict == Verdict::kAlways;
  return wins ? r.threshold_bytes : std::nullopt;
}

// A numeric class's method, decided with the stream class's samples moved
// by its cost per send where that holds (ClassOffset); its interval spans
// the thresholds at that cost's 95 % bounds too.
MethodResult DecideClass(const std::vector<Sample>& own, std::span<const Sample> every_depth,
                         Method method, std::uint32_t depth, const DecisionOptions& options) {
  std::optional<ClassOffset> offset;
  if (options.class_offset) {
    offset = detail::MeasureClassOffset(every_depth, method, depth, BaselineIn(every_depth, method));
  }
  if (!offset || !offset->rejected.empty()) {
    MethodResult r = Decide(own, method, options);
    r.class_offset = std::move(offset);
    return r;
  }
  MethodResult r = Decide(WithStreamMoved(own, every_depth, method, depth, offset->ns_per_send,
                                          &offset->translated),
                          method, options);
  const double reach = offset->Reach95();
  if (reach > 0 && (r.verdict == Verdict::kThreshold || r.verdict == Verdict::kAlways)) {
    offset->threshold_low_bytes =
        ThresholdWithOffset(own, every_depth, method, depth, offset->ns_per_send - reach, options);
    offset->threshold_high_bytes =
        ThresholdWithOffset(own, every_depth, method, depth, offset->ns_per_send + reach, options);
    if (r.interval) {
      if (offset->threshold_low_bytes) {
        r.interval->low_bytes = std::min(r.interval->low_bytes, *offset->threshold_low_bytes);
      }
      if (!offset->threshold_high_bytes) {
        r.interval->high_bytes.reset();
      } else if (r.interval->high_bytes) {
        r.interval->high_bytes = std::max(*r.interval->high_bytes, *offset->threshold_high_bytes);
      }
    }
  }
  r.class_offset = std::move(offset);
  return r;
}

}  // namespace

Analysis Analyze(std::span<const Sample> samples,
                 const DecisionOptions& options,
                 std::uint32_t depth) {
  // Every depth's samples of a path: the host's speed is measured on all of
  // them, and a numeric class rests on the stream class's too (DecideClass).
  std::map<std::string, std::vector<Sample>> every_depth;
  for (const Sample& s : samples) every_depth[s.path].push_back(s);
  Analysis analysis;
  for (auto& [path, all] : every_depth) {
    const std::optional<HostDrift> drift =
        options.correct_drift ? detail::CorrectDrift(all) : std::nullopt;
    const std::vector<Sample> path_samples = SamplesAtDepth(all, depth);
    if (path_samples.empty()) continue;
    PathResult& result = analysis.paths[path];
    result.path = path;
    result.drift = drift;
    for (Method method : kAllMethods) {
      if (!IsZerocopy(method)) continue;
      const bool present =
          std::any_of(path_samples.begin(), path_samples.end(),
                      [&](const Sample& s) { return s.method == method; });
      if (!present) continue;
      result.methods[method] =
          depth == kStreamDepth
              ? Decide(path_samples, method, options)
              : DecideClass(path_samples, all, method, depth, options);
    }
  }
  return analysis;
}

}  // namespace zcal::calibrator
