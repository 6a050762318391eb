#include "cost_fit.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace zcal::calibrator::detail {

namespace {

constexpr double kNsPerSecond = 1e9;
// Assignment rounds between the CPU-bound and the line-rate branch.
constexpr int kBranchRounds = 4;
// How clearly a throughput cap must show before it is fitted.
constexpr double kBranchSigmas = 3.0;

std::string AbsPercent(double fraction) {
  return std::to_string(static_cast<int>(std::lround(std::fabs(fraction) * 100))) + " %";
}

std::string OneDecimal(double value) {
  const long tenths = std::lround(value * 10);
  return std::to_string(tenths / 10) + "." + std::to_string(std::labs(tenths % 10));
}

// Throughput in logs: z = ln thr, q = ln(1e9 / cpu per byte); the model is
// z = min(line, cores + q).
struct LogThroughput {
  std::vector<double> z;
  std::vector<double> q;
};

LogThroughput LogsOf(const Observations& obs, const Line& cpu) {
  LogThroughput logs;
  logs.z.reserve(obs.thr.size());
  logs.q.resize(obs.thr.size());
  for (double thr : obs.thr) logs.z.push_back(std::log(thr));
  // q depends on the size only: once per size.
  for (std::size_t g = 0; g < obs.Sizes(); ++g) {
    const std::size_t first = obs.groups[g];
    const double q = std::log(kNsPerSecond / std::max(cpu.At(obs.inv_size[first]), 1e-300));
    std::fill(logs.q.begin() + static_cast<std::ptrdiff_t>(first),
              logs.q.begin() + static_cast<std::ptrdiff_t>(obs.groups[g + 1]), q);
  }
  return logs;
}

double Predict(double line, double cores, double q) { return std::min(line, cores + q); }

// Re-estimates both branches from the samples each one binds, until the
// assignment settles (a few rounds at most).
void RefineBranches(const LogThroughput& logs, Curve& curve, bool fixed_scales) {
  double& line = curve.log_line;
  double& cores = curve.log_cores;
  std::vector<double> bound;
  std::vector<double> capped;
  std::vector<bool> assignment(logs.z.size());
  for (int round = 0; round < kBranchRounds; ++round) {
    bool changed = round == 0;
    for (std::size_t i = 0; i < logs.z.size(); ++i) {
      const bool is_bound = cores + logs.q[i] < line;
      changed |= assignment[i] != is_bound;
      assignment[i] = is_bound;
    }
    if (!changed) break;
    bound.clear();
    capped.clear();
    for (std::size_t i = 0; i < logs.z.size(); ++i) {
      if (assignment[i]) {
        bound.push_back(logs.z[i] - logs.q[i]);
      } else {
        capped.push_back(logs.z[i]);
      }
    }
    const auto scale = [&](double s) { return fixed_scales && s > 0 ? std::optional(s) : std::nullopt; };
    cores = bound.empty() ? kInf
                          : HuberLocation(bound, std::isfinite(cores) ? std::optional(cores) : std::nullopt,
                                          scale(curve.cores_scale), &curve.cores_scale);
    line = capped.empty() ? kInf
                          : HuberLocation(capped, std::isfinite(line) ? std::optional(line) : std::nullopt,
                                          scale(curve.line_scale), &curve.line_scale);
  }
}

// A cap is kept only where the data show it: the CPU-bound samples lie
// clearly below the line rate, and the line-rate samples clearly below what
// the CPU bound would allow. Otherwise a split fits noise: with a constant
// throughput, the low samples at small sizes would make a "CPU-bound"
// branch and lift the line rate above its true value.
void KeepBranchesThatShow(const LogThroughput& logs, Curve& curve) {
  if (!std::isfinite(curve.log_line) || !std::isfinite(curve.log_cores)) return;
  std::vector<double> residual;
  double below_line = 0, below_bound = 0;
  std::size_t bound = 0, capped = 0;
  for (std::size_t i = 0; i < logs.z.size(); ++i) {
    const double cpu_limit = curve.log_cores + logs.q[i];
    residual.push_back(logs.z[i] - std::min(curve.log_line, cpu_limit));
    if (cpu_limit < curve.log_line) {
      below_line += curve.log_line - logs.z[i];
      ++bound;
    } else {
      below_bound += cpu_limit - logs.z[i];
      ++capped;
    }
  }
  const double scale = RobustScale(residual);
  const auto clear = [&](double sum, std::size_t n) {
    return n > 0 && sum / static_cast<double>(n) >
                        kBranchSigmas * scale / std::sqrt(static_cast<double>(n));
  };
  if (!clear(below_line, bound)) {
    curve.log_cores = kInf;
    curve.log_line = kInf;  // refit as a line rate alone
  } else if (!clear(below_bound, capped)) {
    curve.log_line = kInf;
  } else {
    return;
  }
  std::vector<double> values;
  for (std::size_t i = 0; i < logs.z.size(); ++i) {
    values.push_back(std::isfinite(curve.log_cores) ? logs.z[i] - logs.q[i] : logs.z[i]);
  }
  (std::isfinite(curve.log_cores) ? curve.log_cores : curve.log_line) =
      HuberLocation(values, std::nullopt, std::nullopt,
                    std::isfinite(curve.log_cores) ? &curve.cores_scale : &curve.line_scale);
}

// The split of the size groups into a CPU-bound part below and a line-rate
// part above that fits best (least absolute deviations, medians per part).
void SearchBranches(const Observations& obs, const LogThroughput& logs, double& line,
                    double& cores) {
  const std::size_t groups = obs.Sizes();
  double best = kInf;
  std::vector<double> part;
  for (std::size_t k = 0; k <= groups; ++k) {
    const std::size_t split = obs.groups[k];
    part.clear();
    for (std::size_t i = 0; i < split; ++i) part.push_back(logs.z[i] - logs.q[i]);
    const double c = part.empty() ? kInf : MedianInPlace(part);
    part.clear();
    for (std::size_t i = split; i < logs.z.size(); ++i) part.push_back(logs.z[i]);
    const double l = part.empty() ? kInf : MedianInPlace(part);
    double loss = 0;
    for (std::size_t i = 0; i < logs.z.size(); ++i) {
      loss += std::fabs(logs.z[i] - Predict(l, c, logs.q[i]));
    }
    // Ties go to the fewer CPU-bound groups: a constant throughput needs no
    // CPU bound.
    if (loss < best - 1e-12) {
      best = loss;
      line = l;
      cores = c;
    }
  }
}

// sqrt(dof / chi2 5 % quantile): a standard deviation estimated with `dof`
// degrees of freedom is below the true one by this factor 5 % of the time
// (Wilson-Hilferty's approximation of the quantile).
double UpperScaleFactor(std::size_t dof) {
  const double nu = static_cast<double>(dof);
  const double h = 2 / (9 * nu);
  const double quantile = nu * std::pow(1 - h - 1.645 * std::sqrt(h), 3);
  return std::sqrt(nu / std::max(quantile, 1e-3 * nu));
}

// Groups whose median residual deviates, as (first group, last group,
// deviation, standard errors).
struct Deviation {
  std::size_t first = 0;
  std::size_t last = 0;
  double mean = 0;
  double sigmas = 0;
};

}  // namespace

Observations Collect(std::span<const Sample> samples, Method method) {
  std::vector<const Sample*> picked;
  for (const Sample& s : samples) {
    if (s.method == method && s.ok() && s.bytes > 0 && s.wall_ns > 0 && s.cpu_ns > 0 &&
        s.size_bytes > 0) {
      picked.push_back(&s);
    }
  }
  std::stable_sort(picked.begin(), picked.end(), [](const Sample* a, const Sample* b) {
    return a->size_bytes < b->size_bytes;
  });
  Observations obs;
  obs.method = method;
  for (std::size_t i = 0; i < picked.size(); ++i) {
    const Sample& s = *picked[i];
    if (i == 0 || s.size_bytes != picked[i - 1]->size_bytes) obs.groups.push_back(i);
    const double size = static_cast<double>(s.size_bytes);
    obs.size.push_back(size);
    obs.inv_size.push_back(1 / size);
    obs.cpu.push_back(s.CpuNsPerByte());
    obs.thr.push_back(s.ThroughputBytesPerSecond());
  }
  obs.groups.push_back(picked.size());
  return obs;
}

Observations WithValues(const Observations& design, std::vector<double> cpu,
                        std::vector<double> thr) {
  Observations obs;
  obs.method = design.method;
  obs.size = design.size;
  obs.inv_size = design.inv_size;
  obs.groups = design.groups;
  obs.cpu = std::move(cpu);
  obs.thr = std::move(thr);
  return obs;
}

double Curve::Throughput(double size) const {
  return std::min(line, cores * kNsPerSecond / std::max(Cpu(size), 1e-300));
}

void Curve::Finish() {
  line = std::exp(log_line);
  cores = std::exp(log_cores);
}

Curve FitCurve(const Observations& obs, const Curve* start) {
  Curve curve;
  if (start) {
    curve.cpu = FitLine(obs.inv_size, obs.cpu, start->cpu, start->cpu_scale);
    curve.cpu_scale = start->cpu_scale;
    curve.line_scale = start->line_scale;
    curve.cores_scale = start->cores_scale;
  } else {
    curve.cpu = FitLine(obs.inv_size, obs.cpu, std::nullopt, std::nullopt, &curve.cpu_scale);
  }
  const LogThroughput logs = LogsOf(obs, curve.cpu);
  if (start) {
    curve.log_line = start->log_line;
    curve.log_cores = start->log_cores;
  } else {
    SearchBranches(obs, logs, curve.log_line, curve.log_cores);
  }
  RefineBranches(logs, curve, start != nullptr);
  if (!start) KeepBranchesThatShow(logs, curve);
  if (!std::isfinite(curve.log_line) && !std::isfinite(curve.log_cores)) {
    curve.log_line = HuberLocation(logs.z);  // unreachable with samples; keeps it finite
  }
  for (std::size_t g = 0; g < obs.Sizes(); ++g) {
    const std::size_t i = obs.groups[g];
    if (curve.log_cores + logs.q[i] < curve.log_line) curve.cpu_bound_groups = g + 1;
  }
  curve.Finish();
  return curve;
}

std::vector<double> CpuResiduals(const Observations& obs, const Curve& curve) {
  std::vector<double> r(obs.cpu.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = obs.cpu[i] / curve.Cpu(obs.size[i]) - 1;
  return r;
}

std::vector<double> ThroughputResiduals(const Observations& obs, const Curve& curve) {
  std::vector<double> r(obs.thr.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    r[i] = obs.thr[i] / curve.Throughput(obs.size[i]) - 1;
  }
  return r;
}

namespace {

// Per size: what its samples' residuals agree on, and how many there are;
// and the scatter of the samples around their own size's mean.
struct GroupResiduals {
  std::vector<double> median, count;
  double within = 0;    ///< squared deviations from the group means
  std::size_t dof = 0;  ///< their degrees of freedom
};

GroupResiduals Group(const Observations& obs, std::span<const double> residuals) {
  const std::size_t groups = obs.Sizes();
  GroupResiduals out;
  out.median.resize(groups);
  out.count.resize(groups);
  std::vector<double> scratch;
  for (std::size_t g = 0; g < groups; ++g) {
    scratch.assign(residuals.begin() + static_cast<std::ptrdiff_t>(obs.groups[g]),
                   residuals.begin() + static_cast<std::ptrdiff_t>(obs.groups[g + 1]));
    double mean = 0;
    for (double r : scratch) mean += r / static_cast<double>(scratch.size());
    for (double r : scratch) out.within += (r - mean) * (r - mean);
    out.dof += scratch.size() - 1;
    // What the samples of a size agree on: the median from three on; of two
    // the one nearer the curve, so that one wild probe does not make a dip.
    out.median[g] = scratch.size() == 2
                        ? (std::fabs(scratch[0]) < std::fabs(scratch[1]) ? scratch[0] : scratch[1])
                        : MedianInPlace(scratch);
    out.count[g] = static_cast<double>(scratch.size());
  }
  return out;
}

// The noise of one sample: from the repeats when most sizes have them
// (independent of the fit, so structure cannot hide in it), else from the
// scatter around the fit (two parameters fitted to it). Two or three
// repeats per size estimate it loosely, and an estimate low by chance would
// reject good fits: it is taken at the upper end of its 90 % interval.
double OneSampleNoise(std::span<const double> residuals, const GroupResiduals& grouped) {
  const std::size_t n = residuals.size();
  double scale = RobustScale(residuals) * std::sqrt(double(n) / double(n - 2));
  if (2 * grouped.dof >= n) {
    scale = std::sqrt(grouped.within / static_cast<double>(grouped.dof)) *
            UpperScaleFactor(grouped.dof);
  }
  return std::max(scale, 0.25 * kRejectEffect / kRejectSigmas);
}

// The run of adjacent sizes whose pooled median residual lies furthest off
// the curve beyond kRejectEffect and kRejectSigmas (sigmas 0: none does).
Deviation WorstRun(const GroupResiduals& grouped, double scale) {
  const std::size_t groups = grouped.median.size();
  Deviation worst;
  for (std::size_t first = 0; first < groups; ++first) {
    double weight = 0;
    double sum = 0;
    double variance = 0;
    for (std::size_t last = first; last < groups; ++last) {
      weight += grouped.count[last];
      sum += grouped.count[last] * grouped.median[last];
      // The median of three or more samples has up to ~1.35 times the
      // mean's error (1.16 for normal, 1.34 for uniform errors of three).
      const double inflation = grouped.count[last] >= 3 ? 1.35 * 1.35 : 1.0;
      variance += grouped.count[last] * inflation;
      const double mean = sum / weight;
      const double se = scale * std::sqrt(variance) / weight;
      const double sigmas = std::fabs(mean) / se;
      if (std::fabs(mean) > kRejectEffect && sigmas > kRejectSigmas && sigmas > worst.sigmas) {
        worst = {first, last, mean, sigmas};
      }
    }
  }
  return worst;
}

Structure StructureOfRun(const Observations& obs, const Deviation& worst,
                         const GroupResiduals& grouped, std::string_view quantity) {
  Structure found;
  found.first_size = obs.size[obs.groups[worst.first]];
  found.last_size = obs.size[obs.groups[worst.last]];
  found.sizes = worst.last - worst.first + 1;
  found.repeated = true;
  for (std::size_t g = worst.first; g <= worst.last; ++g) found.repeated &= grouped.count[g] >= 2;
  found.interior = worst.first > 0 && worst.last + 1 < obs.Sizes();
  const auto bytes = [&](std::size_t g) {
    return std::to_string(static_cast<std::uint64_t>(obs.size[obs.groups[g]]));
  };
  const std::string where = worst.first == worst.last
                                ? "at " + bytes(worst.first) + " bytes"
                                : "from " + bytes(worst.first) + " to " + bytes(worst.last) +
                                      " bytes";
  found.reason = std::string(MethodName(obs.method)) + " " + std::string(quantity) + " " +
                 where + " is " + AbsPercent(worst.mean) + (worst.mean < 0 ? " below" : " above") +
                 " the fitted curve (" + OneDecimal(worst.sigmas) + " standard errors)";
  return found;
}

}  // namespace

Structure FindStructure(const Observations& obs, std::span<const double> residuals,
                        std::string_view quantity) {
  if (obs.Sizes() < 3 || residuals.size() < 4) return {};
  const GroupResiduals grouped = Group(obs, residuals);
  const Deviation worst = WorstRun(grouped, OneSampleNoise(residuals, grouped));
  if (worst.sigmas == 0) return {};
  return StructureOfRun(obs, worst, grouped, quantity);
}

Observations Without(const Observations& obs, double lo, double hi) {
  Observations out;
  out.method = obs.method;
  for (std::size_t i = 0; i < obs.size.size(); ++i) {
    if (obs.size[i] >= lo && obs.size[i] <= hi) continue;
    if (out.size.empty() || obs.size[i] != out.size.back()) out.groups.push_back(out.size.size());
    out.size.push_back(obs.size[i]);
    out.inv_size.push_back(obs.inv_size[i]);
    out.cpu.push_back(obs.cpu[i]);
    out.thr.push_back(obs.thr[i]);
  }
  out.groups.push_back(out.size.size());
  return out;
}

MethodFit ToMethodFit(const Observations& obs, const Curve& curve) {
  MethodFit fit;
  fit.method = obs.method;
  fit.per_byte_ns = curve.cpu.a;
  fit.per_send_ns = curve.cpu.b;
  if (std::isfinite(curve.log_line)) fit.line_rate_bytes_per_second = std::exp(curve.log_line);
  if (std::isfinite(curve.log_cores)) fit.cpu_bound_cores = std::exp(curve.log_cores);
  fit.cpu_residual = RobustScale(CpuResiduals(obs, curve));
  fit.throughput_residual = RobustScale(ThroughputResiduals(obs, curve));
  fit.samples = static_cast<std::uint32_t>(obs.size.size());
  fit.sizes = static_cast<std::uint32_t>(obs.Sizes());
  if (!obs.size.empty()) {
    fit.min_size_bytes = static_cast<std::uint64_t>(obs.size.front());
    fit.max_size_bytes = static_cast<std::uint64_t>(obs.size.back());
  }
  return fit;
}

}  // namespace zcal::calibrator::detail

namespace zcal::calibrator {

double MethodFit::CpuNsPerByte(double size_bytes) const {
  return per_byte_ns + per_send_ns / size_bytes;
}

double MethodFit::ThroughputBytesPerSecond(double size_bytes) const {
  double rate = line_rate_bytes_per_second.value_or(detail::kInf);
  if (cpu_bound_cores) rate = std::min(rate, *cpu_bound_cores * 1e9 / CpuNsPerByte(size_bytes));
  return rate;
}

}  // namespace zcal::calibrator
