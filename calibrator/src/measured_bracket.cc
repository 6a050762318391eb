#include "measured_bracket.h"

#include <algorithm>
#include <cmath>

namespace zcal::calibrator::detail {

namespace {

// A clear size overrules the curves, and each of the many probed sizes is
// a chance to do so falsely: 3 standard errors (0.13 % one-sided), as the
// curves' own throughput test, not the 2 of one size's decisiveness. At 2
// the planner's test host (+-20 % noise) lost 1/8-precision in 3 % of its
// calibrations to throughput shortfalls of single probes near the
// crossover.
constexpr double kClearSigmas = 3.0;

// The standard error of a ratio of medians of na and nb samples with
// relative spreads ra and rb (RatioNoise; one sample is its own median).
double PooledRatioNoise(double ra, std::uint32_t na, double rb, std::uint32_t nb) {
  const double factor = na >= 2 && nb >= 2 ? 1.2533 : 1.0;
  return factor * std::sqrt(ra * ra / na + rb * rb / nb);
}

struct RatioNoises {
  double cpu = 0;
  double thr = 0;
};

RatioNoises NoiseOf(const SizeComparison& c, const SampleNoise& pooled) {
  const std::uint32_t nz = std::max<std::uint32_t>(c.zerocopy.samples, 1);
  const std::uint32_t nb = std::max<std::uint32_t>(c.baseline.samples, 1);
  return {std::max(RatioNoise(c.zerocopy.cpu_ns_per_byte, nz, c.baseline.cpu_ns_per_byte, nb),
                   PooledRatioNoise(pooled.zc_cpu, nz, pooled.base_cpu, nb)),
          std::max(RatioNoise(c.zerocopy.throughput_bytes_per_second, nz,
                              c.baseline.throughput_bytes_per_second, nb),
                   PooledRatioNoise(pooled.zc_thr, nz, pooled.base_thr, nb))};
}

// Whether `value` lies beyond the noise on the passing side of `bar`
// (`higher`: above it passes), beyond it on the failing side, or within.
enum class Side { kPasses, kFails, kWithin };
Side Against(double value, double bar, bool higher, double noise) {
  if (std::fabs(value - bar) <= kClearSigmas * noise) return Side::kWithin;
  return (higher ? value >= bar : value <= bar) ? Side::kPasses : Side::kFails;
}

}  // namespace

SampleNoise PooledSampleNoise(std::span<const SizeComparison> sizes) {
  std::vector<double> zc_cpu, zc_thr, base_cpu, base_thr;
  for (const SizeComparison& c : sizes) {
    if (c.zerocopy.samples < 2 || c.baseline.samples < 2) continue;
    zc_cpu.push_back(c.zerocopy.cpu_ns_per_byte.Relative());
    zc_thr.push_back(c.zerocopy.throughput_bytes_per_second.Relative());
    base_cpu.push_back(c.baseline.cpu_ns_per_byte.Relative());
    base_thr.push_back(c.baseline.throughput_bytes_per_second.Relative());
  }
  SampleNoise noise;
  if (zc_cpu.empty()) return noise;
  noise.known = true;
  noise.zc_cpu = Median(zc_cpu);
  noise.base_cpu = Median(base_cpu);
  noise.zc_thr = Median(zc_thr);
  noise.base_thr = Median(base_thr);
  return noise;
}

bool ClearWin(const SizeComparison& c, const SampleNoise& noise, const DecisionOptions& options) {
  if (!c.zerocopy_wins) return false;
  if (!noise.known) return true;
  const RatioNoises n = NoiseOf(c, noise);
  if (options.objective == Objective::kThroughput) {
    return Against(c.throughput_ratio, 1 + options.margin, true, n.thr) == Side::kPasses;
  }
  return Against(c.cpu_ratio, 1 - options.margin, false, n.cpu) == Side::kPasses;
}

bool ClearLoss(const SizeComparison& c, const SampleNoise& noise, const DecisionOptions& options) {
  if (c.zerocopy_wins) return false;
  const double m = options.margin;
  if (!noise.known) {
    switch (options.objective) {
      case Objective::kEfficiency:
        return !c.throughput_acceptable || c.cpu_ratio >= 1 + m;
      case Objective::kCpu:
        return c.cpu_ratio >= 1 + m;
      case Objective::kThroughput:
        return c.throughput_ratio <= 1 - m;
    }
    return false;
  }
  const RatioNoises n = NoiseOf(c, noise);
  const bool cpu_fails = Against(c.cpu_ratio, 1 - m, false, n.cpu) == Side::kFails;
  switch (options.objective) {
    case Objective::kEfficiency:
      return cpu_fails ||
             Against(c.throughput_ratio, 1 - options.tolerance, true, n.thr) == Side::kFails;
    case Objective::kCpu:
      return cpu_fails;
    case Objective::kThroughput:
      return Against(c.throughput_ratio, 1 + m, true, n.thr) == Side::kFails;
  }
  return false;
}

MeasuredBracket BracketOf(std::span<const SizeComparison> sizes, const DecisionOptions& options) {
  const SampleNoise noise = PooledSampleNoise(sizes);
  MeasuredBracket bracket;
  for (const SizeComparison& c : sizes) {
    if (c.zerocopy_wins) break;
    if (ClearLoss(c, noise, options)) bracket.above_bytes = c.size_bytes;
  }
  for (std::size_t i = sizes.size(); i-- > 0;) {
    if (!sizes[i].zerocopy_wins) break;
    if (ClearWin(sizes[i], noise, options)) bracket.at_most_bytes = sizes[i].size_bytes;
  }
  return bracket;
}

Bounds BoundsOf(const MeasuredBracket& bracket) {
  Bounds bounds;
  if (bracket.above_bytes) bounds.above = static_cast<double>(*bracket.above_bytes);
  if (bracket.at_most_bytes) bounds.at_most = static_cast<double>(*bracket.at_most_bytes);
  return bounds;
}

std::uint64_t RoundThreshold(double bytes, std::uint64_t lo, std::uint64_t hi,
                             const Bounds& bounds) {
  const auto step_of = [](double b) { return std::max(1.0, std::exp2(std::floor(std::log2(b))) / 32); };
  std::uint64_t t = lo;
  if (bytes >= static_cast<double>(hi)) {
    t = hi;
  } else if (bytes > static_cast<double>(lo)) {
    // Up to the step at or above it: the sizes below a crossover are the
    // baseline's. The kernel's own steps sit just above a power of two
    // (a 32768-byte UDP payload fits where 32769 bytes do not: on this VM's
    // discard path uring_send_zc costs 15 % more than uring_send at 32768
    // bytes and 13 % less at 32808), and rounding to the nearest step put
    // such a threshold on the power of two itself, a size applications
    // send, on the side of the step where zerocopy loses.
    const double step = step_of(bytes);
    t = std::clamp(static_cast<std::uint64_t>(std::ceil(bytes / step - 1e-9) * step), lo, hi);
  }
  if (static_cast<double>(t) > bounds.at_most) t = static_cast<std::uint64_t>(bounds.at_most);
  if (static_cast<double>(t) <= bounds.above) {
    const double step = step_of(bounds.above);
    const double next = (std::floor(bounds.above / step) + 1) * step;
    t = static_cast<std::uint64_t>(std::min({next, bounds.at_most, static_cast<double>(hi)}));
  }
  return t;
}

std::vector<CurveDisagreement> Disagreements(std::span<const SizeComparison> sizes,
                                             std::span<const double> fitted_cost,
                                             const std::vector<bool>& skip,
                                             const MeasuredBracket& bracket,
                                             const DecisionOptions& options) {
  const SampleNoise noise = PooledSampleNoise(sizes);
  std::vector<CurveDisagreement> out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const SizeComparison& c = sizes[i];
    if (skip[i]) continue;
    const bool fitted_wins = fitted_cost[i] <= 1;
    const bool clear_win = ClearWin(c, noise, options);
    const bool clear_loss = ClearLoss(c, noise, options);
    if (!(clear_win && !fitted_wins) && !(clear_loss && fitted_wins)) continue;
    CurveDisagreement d;
    d.size_bytes = c.size_bytes;
    d.zerocopy_wins = c.zerocopy_wins;
    d.relative_cost = c.relative_cost;
    d.fitted_relative_cost = fitted_cost[i];
    d.bounds_threshold =
        clear_win ? bracket.at_most_bytes && c.size_bytes >= *bracket.at_most_bytes
                  : bracket.above_bytes && c.size_bytes <= *bracket.above_bytes;
    out.push_back(d);
  }
  return out;
}

std::vector<OverruledSize> Overruled(std::span<const SizeComparison> sizes,
                                     std::optional<std::uint64_t> threshold,
                                     const DecisionOptions& options) {
  const SampleNoise noise = PooledSampleNoise(sizes);
  std::vector<OverruledSize> out;
  const std::uint64_t t = threshold.value_or(UINT64_MAX);
  for (const SizeComparison& c : sizes) {
    const bool zerocopy_used = c.size_bytes >= t;
    if (zerocopy_used == c.zerocopy_wins) continue;
    OverruledSize o;
    o.size_bytes = c.size_bytes;
    o.zerocopy_wins = c.zerocopy_wins;
    o.clear = c.zerocopy_wins ? ClearWin(c, noise, options) : ClearLoss(c, noise, options);
    o.relative_cost = c.relative_cost;
    // As least_cost.cc counts it: the baseline where zerocopy's relative
    // cost r is below 1 costs 1/r - 1 more, zerocopy where r is above 1
    // costs r - 1 more.
    o.excess_cost = zerocopy_used ? std::max(0.0, c.relative_cost - 1)
                                  : (c.relative_cost > 0 ? std::max(0.0, 1 / c.relative_cost - 1) : 0);
    out.push_back(o);
  }
  return out;
}

std::optional<std::uint64_t> WinningTailBound(const MethodResult& r,
                                              const DecisionOptions& options) {
  if (!options.settle_on_winning_tail) return std::nullopt;
  if (r.verdict != Verdict::kInconclusive || r.reason != Reason::kNoisy) return std::nullopt;
  if (!r.measured_bracket || r.sizes.empty()) return std::nullopt;
  return r.measured_bracket->at_most_bytes;
}

void SettleOnTheWinningTail(MethodResult& r, std::uint64_t bound, double regret) {
  r.verdict = bound <= r.sizes.front().size_bytes ? Verdict::kAlways : Verdict::kThreshold;
  r.threshold_bytes = bound;
  r.reason = Reason::kNone;
  r.detail = "the least-cost threshold is in doubt (" + r.detail + "), but zerocopy wins " +
             "clearly at " + std::to_string(bound) + " bytes and at every larger probed " +
             "size: it is used from there on";
  r.rule_detail += std::string(r.rule_detail.empty() ? "" : "; ") +
                   "settled on the winning tail of probed sizes";
  // Both rules chose within the bracket, so the interval's low end already
  // lies at or below the bound.
  if (r.interval) r.interval->high_bytes = bound;
  r.regret = regret;
  r.regret_excess.reset();
}

}  // namespace zcal::calibrator::detail
