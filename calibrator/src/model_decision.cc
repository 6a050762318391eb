#include "model_decision.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cost_fit.h"
#include "exception_costs.h"
#include "least_cost.h"
#include "local_fit.h"
#include "measured_bracket.h"
#include "zcal/common/text.h"

namespace zcal::calibrator::detail {

namespace {

// Under the efficiency objective a throughput shortfall counts only when it
// lies beyond this many standard errors. Per size that is 2; on the curves
// the line rate is one parameter shared by all large sizes, so a false
// shortfall would strike them all at once: 3 (0.13 % one-sided).
constexpr double kNonInferioritySigmas = 3.0;
constexpr std::size_t kLiftStride = 2;
// A replicate agrees with the published threshold when that costs it at most
// this much more (expected excess cost, 0.005 = half a percentage point)
// than the replicate's own best threshold.
constexpr double kRegretSlack = 0.005;


// The bootstrap's seed: the same samples give the same replicates, and so
// the same interval, run after run.
std::uint64_t SeedOf(const Observations& a, const Observations& b) {
  std::uint64_t hash = common::kFnv1aBasis;
  for (const Observations* obs : {&a, &b}) {
    hash = common::Fnv1a(MethodName(obs->method), hash);
    hash = HashValues(obs->cpu, HashValues(obs->thr, HashValues(obs->size, hash)));
  }
  return hash;
}

std::size_t DistinctIn(const Observations& obs, double lo, double hi) {
  std::size_t n = 0;
  for (std::size_t g = 0; g < obs.Sizes(); ++g) {
    const double s = obs.size[obs.groups[g]];
    n += (s >= lo && s <= hi) ? 1 : 0;
  }
  return n;
}

// Resamples the relative residuals onto the fitted values: the design stays,
// the scatter (outliers included) is drawn from what was observed. Residuals
// are inflated for the two parameters fitted to them.
class ResidualBootstrap {
 public:
  ResidualBootstrap(const Observations& obs, const Curve& curve) : obs_(obs) {
    cpu_residual_ = CpuResiduals(obs, curve);
    thr_residual_ = ThroughputResiduals(obs, curve);
    const double n = static_cast<double>(obs.size.size());
    const double inflate = n > 2 ? std::sqrt(n / (n - 2)) : 1.0;
    for (double& r : cpu_residual_) r *= inflate;
    for (double& r : thr_residual_) r *= inflate;
    for (std::size_t i = 0; i < obs.size.size(); ++i) {
      cpu_fit_.push_back(curve.Cpu(obs.size[i]));
      thr_fit_.push_back(curve.Throughput(obs.size[i]));
    }
  }

  Observations Draw(std::mt19937_64& rng) const {
    const std::size_t n = obs_.size.size();
    std::vector<double> cpu(n);
    std::vector<double> thr(n);
    for (std::size_t i = 0; i < n; ++i) {
      // One index for both: a probe's CPU and throughput errors go together.
      const std::size_t j = static_cast<std::size_t>(rng() % n);
      cpu[i] = cpu_fit_[i] * std::max(1 + cpu_residual_[j], 1e-3);
      thr[i] = thr_fit_[i] * std::max(1 + thr_residual_[j], 1e-3);
    }
    return WithValues(obs_, std::move(cpu), std::move(thr));
  }

 private:
  const Observations& obs_;
  std::vector<double> cpu_residual_, thr_residual_, cpu_fit_, thr_fit_;
};

Evaluated Evaluate(const WeightedSizes& grid, const Curve& z, const Curve& b) {
  Evaluated e;
  e.cpu_ratio.reserve(grid.size.size());
  e.thr_ratio.reserve(grid.size.size());
  for (double s : grid.size) {
    e.cpu_ratio.push_back(z.Cpu(s) / b.Cpu(s));
    e.thr_ratio.push_back(z.Throughput(s) / b.Throughput(s));
  }
  return e;
}

// Costs on the grid from the curves, except where an exception's own
// per-size cost stands.
// `acceptable`: the efficiency objective's throughput verdict per grid
// point; `cells`: per grid point, the compared size whose own cost stands
// there (an exception), or -1; `measured_cost`: per compared size, its own
// relative cost (the point estimate, or a bootstrap replicate's draw).
std::vector<double> Costs(const Evaluated& e, const std::vector<bool>& acceptable,
                          const std::vector<std::ptrdiff_t>& cells,
                          std::span<const double> measured_cost,
                          const DecisionOptions& options) {
  std::vector<double> cost(e.cpu_ratio.size());
  for (std::size_t k = 0; k < cost.size(); ++k) {
    cost[k] = cells[k] >= 0
                  ? measured_cost[static_cast<std::size_t>(cells[k])]
                  : RelativeCost(e.cpu_ratio[k], e.thr_ratio[k], acceptable[k], options);
  }
  return cost;
}

double Quantile(std::vector<double>& values, double q) {
  const auto k = static_cast<std::ptrdiff_t>(q * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + k, values.end());
  return values[static_cast<std::size_t>(k)];
}

// exp(2 sigma) of the log of positive values, sigma from the central 68 %:
// ignores the odd replicate fitted to a bad draw.
double Lift(std::vector<double>& ratios) {
  const double lo = Quantile(ratios, 0.159);
  const double hi = Quantile(ratios, 0.841);
  return std::pow(hi / lo, kNonInferioritySigmas / 2);
}

// Bootstrap moments of the parameters, for MethodFit's standard errors.
struct Moments {
  std::vector<double> a, b, line, cores;

  void Add(const Curve& c) {
    a.push_back(c.cpu.a);
    b.push_back(c.cpu.b);
    if (std::isfinite(c.log_line)) line.push_back(std::exp(c.log_line));
    if (std::isfinite(c.log_cores)) cores.push_back(std::exp(c.log_cores));
  }

  static double Mean(const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0 : sum / static_cast<double>(v.size());
  }
  static double Cov(const std::vector<double>& x, const std::vector<double>& y) {
    if (x.size() < 2) return 0;
    const double mx = Mean(x), my = Mean(y);
    double sum = 0;
    for (std::size_t i = 0; i < x.size(); ++i) sum += (x[i] - mx) * (y[i] - my);
    return sum / static_cast<double>(x.size() - 1);
  }

  void Into(MethodFit& fit) const {
    fit.per_byte_ns_se = std::sqrt(Cov(a, a));
    fit.per_send_ns_se = std::sqrt(Cov(b, b));
    fit.per_byte_per_send_cov = Cov(a, b);
    if (fit.line_rate_bytes_per_second && line.size() >= 2) {
      fit.line_rate_se = std::sqrt(Cov(line, line));
    }
    if (fit.cpu_bound_cores && cores.size() >= 2) fit.cpu_bound_cores_se = std::sqrt(Cov(cores, cores));
  }
};

Structure StructureOf(const Observations& obs, const Curve& curve,
                      const DecisionOptions& options) {
  Structure found = FindStructure(obs, CpuResiduals(obs, curve), "CPU per byte");
  if (found.reason.empty() && options.objective != Objective::kCpu) {
    found = FindStructure(obs, ThroughputResiduals(obs, curve), "throughput");
  }
  return found;
}

// The local fit pools neighbours, and smooths what lies between them. It
// decides only where the probed sizes are at most this far apart (in
// octaves, everywhere in the compared range): three or more per octave.
// On the planner's grid (an octave apart, refined near the threshold) it
// would smooth a step between two sizes far apart that the per-size rule
// and its bisection locate; on the real calibrations in tests/data/tables
// (a step in the ratio at exactly 8 KiB) it cost more on the other runs
// than the per-size rule (RealTables.TheLocalFit...).
constexpr double kMaxLocalSpacing = 0.4;

double WidestGapOctaves(std::span<const SizeComparison> sizes) {
  double widest = 0;
  for (std::size_t i = 1; i < sizes.size(); ++i) {
    widest = std::max(widest, std::log2(static_cast<double>(sizes[i].size_bytes) /
                                        static_cast<double>(sizes[i - 1].size_bytes)));
  }
  return widest;
}

// Local exceptions: at most this many, of at most this many adjacent sizes.
constexpr std::size_t kMaxExceptions = 2;
constexpr std::size_t kMaxExceptionSizes = 2;

// Fits both methods, leaving out the exceptions found on the way. Returns
// the structure that rejects the model ("" reason when it fits).
Structure FitWithExceptions(Observations& zc, Observations& base, Curve& cz, Curve& cb,
                            std::vector<ModelException>& exceptions,
                            const DecisionOptions& options) {
  for (;;) {
    cz = FitCurve(zc);
    cb = FitCurve(base);
    Observations* where = &zc;
    Structure found = StructureOf(zc, cz, options);
    if (found.reason.empty()) {
      where = &base;
      found = StructureOf(base, cb, options);
    }
    if (found.reason.empty()) return found;
    // A deviation at one or two sizes that repeats confirm, with fitted
    // sizes on both sides, is a feature of those sizes (their own
    // comparison decides there). With one sample per size it cannot be told
    // from an outlier; a longer run, or one at an end of the range, is a
    // shape the curves do not have: these reject the model.
    const bool local = found.repeated && found.interior && found.sizes <= kMaxExceptionSizes &&
                       exceptions.size() < kMaxExceptions &&
                       where->Sizes() - found.sizes >= kMinModelSizes;
    if (!local) return found;
    exceptions.push_back({static_cast<std::uint64_t>(found.first_size),
                          static_cast<std::uint64_t>(found.last_size), found.reason});
    zc = Without(zc, found.first_size, found.last_size);
    base = Without(base, found.first_size, found.last_size);
  }
}

std::string ThresholdText(std::optional<std::uint64_t> t) {
  return t ? "from " + std::to_string(*t) + " bytes on" : std::string("never");
}

// Per compared size: whether an exception of the model decides it by its
// own comparison.
std::vector<bool> InExceptions(std::span<const SizeComparison> sizes,
                               const std::vector<ModelException>& exceptions) {
  std::vector<bool> in(sizes.size(), false);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    for (const ModelException& e : exceptions) {
      in[i] = in[i] || (sizes[i].size_bytes >= e.min_size_bytes &&
                        sizes[i].size_bytes <= e.max_size_bytes);
    }
  }
  return in;
}

// Sizes at which the local fit is off: up to this many, one size each.
constexpr std::size_t kMaxLocalExceptions = 4;

std::string PercentText(double fraction) {
  return std::to_string(static_cast<int>(std::lround(std::fabs(fraction) * 100))) + " %";
}

// The local fit, with the sizes whose own comparison lies off it beyond
// their noise (kRejectEffect and kRejectSigmas, as for the curves; repeats
// of both sends, and probed sizes on both sides) left out and added to
// `exceptions`, the most significant first: the real copy path costs a
// quarter more at exactly 8 KiB than at 7.5 or 8.5 KiB, and pooled with its
// neighbours that size would move the threshold where nothing costs what
// the fit says (on the real tables' other runs, 0.71 pp over the best
// against the per-size rule's 0.51 pp, before this).
LocalFit FitLocally(std::span<const SizeComparison> sizes, std::vector<ModelException>& exceptions,
                    const WeightedSizes& grid, const MethodResult& r,
                    const DecisionOptions& options) {
  const SampleNoise noise = PooledSampleNoise(sizes);
  for (;;) {
    LocalFit fit(sizes, InExceptions(sizes, exceptions), grid);
    if (!noise.known || exceptions.size() >= kMaxLocalExceptions ||
        fit.Sizes() <= kMinModelSizes) {
      return fit;
    }
    double worst_sigmas = 0, worst_deviation = 0;
    std::size_t worst = 0;
    const char* worst_quantity = "";
    for (std::size_t k = 1; k + 1 < fit.Sizes(); ++k) {
      const SizeComparison& c = sizes[fit.SizeIndex(k)];
      if (c.zerocopy.samples < 2 || c.baseline.samples < 2) continue;
      const double nz = c.zerocopy.samples, nb = c.baseline.samples;
      const auto check = [&](double deviation, double own, double zc, double base,
                             const char* quantity) {
        const double se = std::max(own, 1.2533 * std::sqrt(zc * zc / nz + base * base / nb));
        const double sigmas = std::fabs(deviation) / std::max(se, 1e-12);
        if (std::fabs(deviation) > kRejectEffect && sigmas > kRejectSigmas &&
            sigmas > worst_sigmas) {
          worst_sigmas = sigmas;
          worst_deviation = deviation;
          worst = fit.SizeIndex(k);
          worst_quantity = quantity;
        }
      };
      check(fit.CpuResidual(k),
            RatioNoise(c.zerocopy.cpu_ns_per_byte, c.zerocopy.samples, c.baseline.cpu_ns_per_byte,
                       c.baseline.samples),
            noise.zc_cpu, noise.base_cpu, "CPU per byte");
      if (options.objective != Objective::kCpu) {
        check(fit.ThrResidual(k),
              RatioNoise(c.zerocopy.throughput_bytes_per_second, c.zerocopy.samples,
                         c.baseline.throughput_bytes_per_second, c.baseline.samples),
              noise.zc_thr, noise.base_thr, "throughput");
      }
    }
    if (worst_sigmas == 0) return fit;
    const std::uint64_t at = sizes[worst].size_bytes;
    const long tenths = std::lround(worst_sigmas * 10);
    exceptions.push_back(
        {at, at,
         std::string(MethodName(r.method)) + "/" + std::string(MethodName(r.baseline)) + " " +
             worst_quantity + " at " + std::to_string(at) + " bytes is " +
             PercentText(std::expm1(worst_deviation)) +
             (worst_deviation < 0 ? " below" : " above") + " the local fit (" +
             std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) +
             " standard errors)"});
    std::sort(exceptions.begin(), exceptions.end(),
              [](const ModelException& x, const ModelException& y) {
                return x.min_size_bytes < y.min_size_bytes;
              });
  }
}

// Where the fitted curves alone would put the threshold, and which probed
// sizes they contradict. `point_cost` and `acceptable` are the point
// estimate's costs and throughput verdicts on `grid`; `ratios_at(size,
// cpu_ratio, thr_ratio)` the curves' ratios at a probed size.
template <typename RatiosAt>
void CompareWithCurves(MethodResult& r, const WeightedSizes& grid,
                       std::span<const double> point_cost, const RatiosAt& ratios_at,
                       const std::vector<bool>& acceptable, const DecisionOptions& options) {
  const CostModel& model = *r.model;
  const Choice free = LeastCost(grid, point_cost, true);
  const std::optional<std::uint64_t> free_t =
      std::isfinite(free.threshold)
          ? std::optional(RoundThreshold(free.threshold, model.min_size_bytes, model.max_size_bytes))
          : std::nullopt;
  if (free_t != r.threshold_bytes) {
    r.curve_choice = CurveChoice{free_t, free.regret};
    const MeasuredBracket& bracket = *r.measured_bracket;
    const bool capped = r.threshold_bytes && bracket.at_most_bytes &&
                        *r.threshold_bytes == *bracket.at_most_bytes;
    const std::string why =
        capped ? "zerocopy wins clearly at " + std::to_string(*bracket.at_most_bytes) +
                     " bytes and at every larger probed size"
               : "zerocopy loses clearly at " + std::to_string(bracket.above_bytes.value_or(0)) +
                     " bytes and at every smaller probed size";
    r.detail = std::string(model.local_fit ? "on the local fit" : "on the fitted curves") +
               " alone zerocopy costs least " + ThresholdText(free_t) +
               ", but " + why + ": within what the probed sizes allow it costs least " +
               ThresholdText(r.threshold_bytes);
  }
  std::vector<double> fitted(r.sizes.size());
  const std::vector<bool> skip = InExceptions(r.sizes, model.exceptions);
  for (std::size_t i = 0; i < r.sizes.size(); ++i) {
    const double s = static_cast<double>(r.sizes[i].size_bytes);
    std::size_t nearest = 0;
    for (std::size_t k = 1; k < grid.size.size(); ++k) {
      if (std::fabs(std::log(grid.size[k] / s)) < std::fabs(std::log(grid.size[nearest] / s))) {
        nearest = k;
      }
    }
    double cpu_ratio = 0, thr_ratio = 0;
    ratios_at(s, cpu_ratio, thr_ratio);
    fitted[i] = RelativeCost(cpu_ratio, thr_ratio, acceptable[nearest], options);
  }
  r.curve_disagreements = Disagreements(r.sizes, fitted, skip, *r.measured_bracket, options);
}

}  // namespace

std::uint64_t HashValues(const std::vector<double>& values, std::uint64_t hash) {
  return common::Fnv1a(std::string_view(reinterpret_cast<const char*>(values.data()),
                                        values.size() * sizeof(double)),
                       hash);
}

namespace {

// The fitted curves of both sends, with their structure checked. Returns
// false (with the reason in r.rule_detail, and the rejected model in
// r.model) where the model cannot decide.
struct FittedModel {
  Observations zc, base;
  Curve cz, cb;
  CostModel model;
  double lo = 0, hi = 0;  ///< the sizes both sends were probed over
};

enum class Fit { kNone, kRejected, kAccepted };

Fit FitModel(std::span<const Sample> samples, MethodResult& r, const DecisionOptions& options,
             FittedModel& f) {
  f.zc = Collect(samples, r.method);
  f.base = Collect(samples, r.baseline);
  if (f.zc.size.empty() || f.base.size.empty()) return Fit::kNone;
  f.lo = std::max(f.zc.size.front(), f.base.size.front());
  f.hi = std::min(f.zc.size.back(), f.base.size.back());
  const std::size_t sizes =
      std::min(DistinctIn(f.zc, f.lo, f.hi), DistinctIn(f.base, f.lo, f.hi));
  if (sizes < kMinModelSizes) {
    r.rule_detail = "too few sizes for the cost model: " + std::to_string(sizes) +
                    " compared (it needs " + std::to_string(kMinModelSizes) + ")";
    return Fit::kNone;
  }
  CostModel& model = f.model;
  const Structure structure =
      FitWithExceptions(f.zc, f.base, f.cz, f.cb, model.exceptions, options);
  model.rejection = structure.reason;
  if (!structure.reason.empty()) {
    model.rejected_min_size_bytes = static_cast<std::uint64_t>(structure.first_size);
    model.rejected_max_size_bytes = static_cast<std::uint64_t>(structure.last_size);
    model.rejection_confirmed = structure.repeated;
  }
  model.zerocopy = ToMethodFit(f.zc, f.cz);
  model.baseline = ToMethodFit(f.base, f.cb);
  model.min_size_bytes = static_cast<std::uint64_t>(f.lo);
  model.max_size_bytes = static_cast<std::uint64_t>(f.hi);
  if (!model.rejection.empty()) {
    r.rule_detail = "model rejected: " + model.rejection;
    return Fit::kRejected;
  }
  model.accepted = true;
  return Fit::kAccepted;
}

// The curves refitted on residual-bootstrap draws, evaluated on the grid;
// their spread goes into the model's fits.
std::vector<Evaluated> BootstrapCurves(FittedModel& f, const WeightedSizes& grid,
                                       std::size_t replicates, std::mt19937_64& rng) {
  const ResidualBootstrap draw_zc(f.zc, f.cz);
  const ResidualBootstrap draw_base(f.base, f.cb);
  std::vector<Evaluated> boot;
  boot.reserve(replicates);
  Moments moments_zc, moments_base;
  for (std::size_t i = 0; i < replicates; ++i) {
    const Curve z = FitCurve(draw_zc.Draw(rng), &f.cz);
    const Curve b = FitCurve(draw_base.Draw(rng), &f.cb);
    moments_zc.Add(z);
    moments_base.Add(b);
    boot.push_back(Evaluate(grid, z, b));
  }
  moments_zc.Into(f.model.zerocopy);
  moments_base.Into(f.model.baseline);
  f.model.bootstrap_replicates = static_cast<std::uint32_t>(replicates);
  return boot;
}

// Where zerocopy's throughput is acceptable (objective efficiency: not
// lower than the baseline's by more than the tolerance, beyond
// kNonInferioritySigmas of its bootstrap spread). The test is made once, on
// the fitted curves with their spread; the replicates then share its
// outcome, since testing each replicate again would count the same noise
// twice.
std::vector<bool> AcceptableSizes(const WeightedSizes& grid, const Evaluated& point,
                                  const std::vector<Evaluated>& boot,
                                  const DecisionOptions& options) {
  const std::size_t n = grid.size.size();
  std::vector<double> lift(n, 1.0);
  if (options.objective == Objective::kEfficiency) {
    // The spread changes slowly with size: every quarter octave, and
    // interpolated in between.
    std::vector<double> column(boot.size());
    std::size_t previous = 0;
    for (std::size_t k = 0; k < n; k = (k + 1 == n) ? n : std::min(k + kLiftStride, n - 1)) {
      for (std::size_t i = 0; i < boot.size(); ++i) column[i] = boot[i].thr_ratio[k];
      lift[k] = Lift(column);
      for (std::size_t j = previous + 1; j < k; ++j) {
        const double t = static_cast<double>(j - previous) / static_cast<double>(k - previous);
        lift[j] = lift[previous] + t * (lift[k] - lift[previous]);
      }
      previous = k;
    }
  }
  std::vector<bool> acceptable(n);
  for (std::size_t k = 0; k < n; ++k) {
    acceptable[k] = point.thr_ratio[k] * lift[k] >= 1 - options.tolerance;
  }
  return acceptable;
}

// Each replicate's own least-cost threshold, the excess cost of the chosen
// one under it, and in how many replicates the chosen one is the cheap
// choice (within kRegretSlack).
struct ReplicateChoices {
  std::vector<double> thresholds;  ///< sorted
  std::vector<double> excess;      ///< sorted
  std::size_t agree = 0;
};

// The interval and regret_excess count every source of noise, the
// exceptions' reach and own cost included: they say how precisely the
// threshold is placed, and the planner probes on until they are narrow.
// The confidence asks another question: do the curves leave the verdict in
// doubt? An exception has passed its own test (5 % and 4 standard errors
// off the curve, confirmed by repeats); how deep and how wide it is may
// move the threshold, which is what the interval reports, not a reason to
// withhold the verdict (docs/calibrator.md, "When the model is rejected").
template <typename FixedCosts>
ReplicateChoices ChooseInReplicates(const WeightedSizes& grid, const std::vector<Evaluated>& boot,
                                    const std::vector<bool>& acceptable,
                                    const ExceptionCosts& exceptions, const FixedCosts& fixed_costs,
                                    const Bounds& bounds, const Choice& choice,
                                    const DecisionOptions& options, std::mt19937_64& rng) {
  ReplicateChoices out;
  out.thresholds.reserve(boot.size());
  out.excess.reserve(boot.size());
  for (const Evaluated& e : boot) {
    const std::vector<double> fixed = fixed_costs(e);
    std::vector<double> cost = fixed;
    if (exceptions.Any()) {
      const ExceptionCosts::Drawn d = exceptions.Draw(rng);
      cost = Costs(e, acceptable, d.cells, d.cost, options);
    }
    const Choice own = LeastCost(grid, cost, true, bounds);
    out.thresholds.push_back(own.threshold);
    out.excess.push_back(std::max(0.0, Regret(grid, cost, choice.threshold) - own.regret));
    const double fixed_excess =
        exceptions.Any()
            ? Regret(grid, fixed, choice.threshold) - LeastCost(grid, fixed, true, bounds).regret
            : out.excess.back();
    out.agree += fixed_excess <= kRegretSlack ? 1 : 0;
  }
  std::sort(out.thresholds.begin(), out.thresholds.end());
  std::sort(out.excess.begin(), out.excess.end());
  return out;
}

// The kIntervalLevel interval of the replicates' thresholds, rounded as
// the threshold is.
ThresholdInterval IntervalOf(const std::vector<double>& thresholds, std::uint64_t lo_bytes,
                             std::uint64_t hi_bytes, const Bounds& bounds) {
  const double replicates = static_cast<double>(thresholds.size());
  const double tail = (1 - kIntervalLevel) / 2;
  const double low = thresholds[static_cast<std::size_t>(tail * replicates)];
  const double high =
      thresholds[static_cast<std::size_t>(std::ceil((1 - tail) * replicates)) - 1];
  ThresholdInterval interval;
  interval.level = kIntervalLevel;
  interval.low_bytes = RoundThreshold(low, lo_bytes, hi_bytes, bounds);
  if (std::isfinite(high)) interval.high_bytes = RoundThreshold(high, lo_bytes, hi_bytes, bounds);
  return interval;
}

// The verdict of the least-cost choice on the fitted curves (or the local
// fit, `basis`).
void SetModelVerdict(MethodResult& r, const Choice& choice, std::uint64_t lo_bytes,
                     std::uint64_t hi_bytes, const Bounds& bounds, const std::string& basis) {
  const std::string baseline(MethodName(r.baseline));
  if (!std::isfinite(choice.threshold)) {
    r.verdict = Verdict::kNever;
    r.reason = Reason::kSlower;
    r.detail = "on " + basis + " zerocopy costs more than " + baseline +
               " wherever it would matter: never using it costs least";
    return;
  }
  const std::uint64_t t = RoundThreshold(choice.threshold, lo_bytes, hi_bytes, bounds);
  r.threshold_bytes = t;
  if (t <= lo_bytes) {
    r.verdict = Verdict::kAlways;
    r.detail = "on " + basis + " zerocopy is the cheaper send from the smallest "
               "compared size (" + std::to_string(t) + " bytes) on";
  } else {
    r.verdict = Verdict::kThreshold;
    r.detail = "on " + basis + " zerocopy costs least from " + std::to_string(t) +
               " bytes on";
  }
}

// What the decision rests on: the point estimate of the ratios on the grid
// and their bootstrap replicates, from the fitted curves or, where those are
// rejected, from a local fit of the probed sizes' costs (then `local` holds it).
struct Basis {
  Evaluated point;
  std::vector<Evaluated> boot;
  std::optional<LocalFit> local;

  void RatiosAt(const FittedModel& f, double s, double& cpu_ratio, double& thr_ratio) const {
    if (local) return local->At(s, cpu_ratio, thr_ratio);
    cpu_ratio = f.cz.Cpu(s) / f.cb.Cpu(s);
    thr_ratio = f.cz.Throughput(s) / f.cb.Throughput(s);
  }
};

// Where the curves a + b/size do not hold, a local fit of the probed sizes'
// own costs decides, so that a step or a knee does not leave each size to
// its own few samples; but only where the probed sizes lie close enough and
// enough of them are left outside the exceptions. Returns false otherwise.
bool BasisOfLocalFit(FittedModel& f, MethodResult& r, const WeightedSizes& grid,
                     std::size_t replicates, std::mt19937_64& rng,
                     const DecisionOptions& options, Basis& basis) {
  if (WidestGapOctaves(r.sizes) > kMaxLocalSpacing) return false;
  basis.local.emplace(FitLocally(r.sizes, f.model.exceptions, grid, r, options));
  if (basis.local->Sizes() < kMinModelSizes) return false;
  f.model.local_fit = true;
  f.model.bootstrap_replicates = static_cast<std::uint32_t>(replicates);
  r.rule_detail += "; decided on a local fit of the probed sizes' costs";
  basis.boot = basis.local->Bootstrap(replicates, rng);
  basis.point = basis.local->Point();
  return true;
}

// Records the least-cost choice, its interval, regrets and confidence, and
// the model, in r.
void RecordModelChoice(MethodResult& r, FittedModel& f, const Basis& basis, const Choice& choice,
                       const ReplicateChoices& replicated, std::size_t replicates,
                       const Bounds& bounds) {
  const auto lo_bytes = static_cast<std::uint64_t>(f.lo);
  const auto hi_bytes = static_cast<std::uint64_t>(f.hi);
  r.rule = Rule::kModel;
  for (const ModelException& e : f.model.exceptions) {
    r.rule_detail += std::string(r.rule_detail.empty() ? "" : "; ") + "decided by its own " +
                     "comparison: " + e.reason;
  }
  r.model = std::move(f.model);
  r.interval = IntervalOf(replicated.thresholds, lo_bytes, hi_bytes, bounds);
  r.regret = choice.regret;
  r.regret_never = choice.regret_never;
  r.regret_always = choice.regret_always;
  r.regret_excess = LevelQuantile(replicated.excess);
  r.confidence = static_cast<double>(replicated.agree) / static_cast<double>(replicates);
  SetModelVerdict(r, choice, lo_bytes, hi_bytes, bounds,
                  basis.local ? "a local fit of the probed sizes' costs" : "the fitted curves");
}

// Below kMinConfidence the verdict is withheld (inconclusive), unless
// zerocopy wins clearly on a tail of the probed sizes: then that tail's
// bound is published.
void WithholdUnlessConfident(MethodResult& r, const ReplicateChoices& replicated,
                             std::size_t replicates, const WeightedSizes& grid,
                             std::span<const double> point_cost, const DecisionOptions& options) {
  if (*r.confidence >= kMinConfidence) return;
  r.detail = "the threshold is not the cheap choice in enough bootstrap replicates (" +
             std::to_string(replicated.agree) + " of " + std::to_string(replicates) +
             "; would have been: " + std::string(VerdictName(r.verdict)) + ")";
  r.verdict = Verdict::kInconclusive;
  r.reason = Reason::kNoisy;
  r.threshold_bytes.reset();
  if (const auto t = WinningTailBound(r, options)) {
    SettleOnTheWinningTail(r, *t, Regret(grid, point_cost, static_cast<double>(*t)));
  }
}

}  // namespace

bool DecideByModel(std::span<const Sample> samples, MethodResult& r,
                   const DecisionOptions& options) {
  FittedModel f;
  const Fit fit = FitModel(samples, r, options, f);
  if (fit == Fit::kNone) return false;
  if (fit == Fit::kRejected && !options.local_fit) {
    r.model = std::move(f.model);
    return false;
  }

  const WeightedSizes grid = DenseSizes(f.lo, f.hi, options.traffic);
  const std::size_t replicates = std::max<std::uint32_t>(options.bootstrap_replicates, 20);
  std::mt19937_64 rng(SeedOf(f.zc, f.base));
  Basis basis;
  if (fit == Fit::kAccepted) {
    basis.boot = BootstrapCurves(f, grid, replicates, rng);
    basis.point = Evaluate(grid, f.cz, f.cb);
  } else if (!BasisOfLocalFit(f, r, grid, replicates, rng, options, basis)) {
    r.model = std::move(f.model);
    return false;
  }

  const std::vector<bool> acceptable = AcceptableSizes(grid, basis.point, basis.boot, options);
  const ExceptionCosts exceptions(grid, f.model.exceptions, r.sizes, options);
  const auto fixed_costs = [&](const Evaluated& e) {
    return Costs(e, acceptable, exceptions.PointCells(), exceptions.PointCosts(), options);
  };
  const std::vector<double> point_cost = fixed_costs(basis.point);
  const Bounds bounds = BoundsOf(r.measured_bracket.value_or(MeasuredBracket{}));
  const Choice choice = LeastCost(grid, point_cost, true, bounds);
  const ReplicateChoices replicated = ChooseInReplicates(
      grid, basis.boot, acceptable, exceptions, fixed_costs, bounds, choice, options, rng);

  RecordModelChoice(r, f, basis, choice, replicated, replicates, bounds);
  const auto ratios_at = [&](double s, double& cpu_ratio, double& thr_ratio) {
    basis.RatiosAt(f, s, cpu_ratio, thr_ratio);
  };
  CompareWithCurves(r, grid, point_cost, ratios_at, acceptable, options);
  WithholdUnlessConfident(r, replicated, replicates, grid, point_cost, options);
  return true;
}

}  // namespace zcal::calibrator::detail
