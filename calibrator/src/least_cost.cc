#include "least_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace zcal::calibrator::detail {

namespace {

constexpr double kPointsPerOctave = 8;
constexpr std::size_t kMaxPoints = 8 * 40 + 1;

std::size_t Nearest(const std::vector<double>& sizes, double size) {
  const double target = std::log(std::max(size, 1.0));
  std::size_t best = 0;
  for (std::size_t i = 1; i < sizes.size(); ++i) {
    if (std::fabs(std::log(sizes[i]) - target) < std::fabs(std::log(sizes[best]) - target)) {
      best = i;
    }
  }
  return best;
}

void Normalize(std::vector<double>& weight) {
  double total = 0;
  for (double w : weight) total += w;
  if (total <= 0) {
    std::fill(weight.begin(), weight.end(), 1.0 / static_cast<double>(weight.size()));
    return;
  }
  for (double& w : weight) w /= total;
}

bool Place(WeightedSizes& out, std::span<const TrafficBin> traffic) {
  if (traffic.empty()) return false;
  out.weight.assign(out.size.size(), 0);
  for (const TrafficBin& bin : traffic) {
    out.weight[Nearest(out.size, static_cast<double>(bin.size_bytes))] += bin.weight;
  }
  Normalize(out.weight);
  return true;
}

double ExcessOfBaseline(double cost) { return cost < 1 ? 1 / cost - 1 : 0; }
double ExcessOfZerocopy(double cost) { return cost > 1 ? cost - 1 : 0; }

}  // namespace

double RatioNoise(const Estimate& a, std::uint32_t na, const Estimate& b, std::uint32_t nb) {
  if (na < 2 || nb < 2) return 0;
  const double ra = a.Relative();
  const double rb = b.Relative();
  return 1.2533 * std::sqrt(ra * ra / na + rb * rb / nb);
}

double DrawRelativeCost(const SizeComparison& c, std::mt19937_64& rng,
                        const DecisionOptions& options) {
  const double cpu = RatioNoise(c.zerocopy.cpu_ns_per_byte, c.zerocopy.samples,
                                c.baseline.cpu_ns_per_byte, c.baseline.samples);
  const double thr = RatioNoise(c.zerocopy.throughput_bytes_per_second, c.zerocopy.samples,
                                c.baseline.throughput_bytes_per_second, c.baseline.samples);
  std::normal_distribution<double> normal;
  const double z_cpu = normal(rng);
  const double z_thr = normal(rng);
  return RelativeCost(c.cpu_ratio * std::exp(cpu * z_cpu),
                      c.throughput_ratio * std::exp(thr * z_thr), c.throughput_acceptable,
                      options);
}

WeightedSizes DenseSizes(double lo, double hi, std::span<const TrafficBin> traffic) {
  WeightedSizes out;
  const double octaves = std::log2(hi / lo);
  const std::size_t points = std::min(
      kMaxPoints, static_cast<std::size_t>(std::ceil(octaves * kPointsPerOctave)) + 1);
  for (std::size_t i = 0; i < points; ++i) {
    const double t = points == 1 ? 0 : static_cast<double>(i) / static_cast<double>(points - 1);
    out.size.push_back(lo * std::exp2(t * octaves));
  }
  out.size.back() = hi;
  // A bin gets a point of its own: on the nearest point of the geometric
  // grid a bin at a probed size (8192 B on a grid from 1024 B to 65435 B
  // falls on 8185 B) would be costed just beside the size that was
  // measured, on the other side of a bracket bound set there.
  for (const TrafficBin& bin : traffic) {
    const double size = static_cast<double>(bin.size_bytes);
    if (!(size > lo && size < hi)) continue;
    const auto at = std::lower_bound(out.size.begin(), out.size.end(), size);
    if (*at != size) out.size.insert(at, size);
  }
  if (!Place(out, traffic)) {
    out.weight.assign(points, 1);
    if (points > 1) out.weight.front() = out.weight.back() = 0.5;
    Normalize(out.weight);
  }
  return out;
}

WeightedSizes CellSizes(std::span<const double> sizes, std::span<const TrafficBin> traffic) {
  WeightedSizes out;
  out.size.assign(sizes.begin(), sizes.end());
  if (!Place(out, traffic)) {
    out.weight.assign(sizes.size(), 0);
    for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
      const double half = std::log(sizes[i + 1] / sizes[i]) / 2;
      out.weight[i] += half;
      out.weight[i + 1] += half;
    }
    Normalize(out.weight);
  }
  return out;
}

double RelativeCost(double cpu_ratio, double throughput_ratio, bool throughput_acceptable,
                    const DecisionOptions& options) {
  const double tiny = 1e-12;
  switch (options.objective) {
    case Objective::kCpu:
      return cpu_ratio / (1 - options.margin);
    case Objective::kThroughput:
      return (1 + options.margin) / std::max(throughput_ratio, tiny);
    case Objective::kEfficiency: {
      const double cpu = cpu_ratio / (1 - options.margin);
      if (throughput_acceptable) return cpu;
      // A shortfall beyond the tolerance makes zerocopy the dearer choice
      // by that shortfall at least, however much CPU it saves.
      return std::max(1.0, cpu) * (1 - options.tolerance) / std::max(throughput_ratio, tiny);
    }
  }
  return cpu_ratio;
}

namespace {

// The splits whose threshold can lie within the bounds: zerocopy at some
// point above `above` and none at or below it, and the baseline at no point
// at or above `at_most`. A point within rounding of a bound counts as on it.
struct SplitRange {
  std::size_t min_split = 0, max_split = 0;
};

SplitRange SplitsWithin(const WeightedSizes& sizes, const Bounds& bounds) {
  const std::size_t n = sizes.size.size();
  const double slack = 1e-9;
  SplitRange range;
  while (range.min_split < n && !(sizes.size[range.min_split] > bounds.above * (1 + slack))) {
    ++range.min_split;
  }
  range.max_split = n;
  if (std::isfinite(bounds.at_most)) {
    range.max_split = 0;
    while (range.max_split < n && sizes.size[range.max_split] < bounds.at_most * (1 - slack)) {
      ++range.max_split;
    }
    range.max_split = std::min(range.max_split, n - 1);
  }
  range.max_split = std::max(range.max_split, range.min_split);
  return range;
}

// The regret of a split (the baseline below `split`, zerocopy
// from it on), summed afresh: a running sum drifts by rounding, and a regret
// of -1e-16 reads badly.
double RegretOfSplit(const WeightedSizes& sizes, std::span<const double> cost,
                     std::size_t split) {
  double sum = 0;
  for (std::size_t i = 0; i < sizes.size.size(); ++i) {
    sum += sizes.weight[i] * (i < split ? ExcessOfBaseline(cost[i]) : ExcessOfZerocopy(cost[i]));
  }
  return sum;
}

// The split of least regret within `range`; among equal regrets (sizes
// without weight), one where the cost actually crosses 1, the honest
// threshold. regret(split) = sum over i < split of baseline excess + over
// i >= split of zerocopy excess, computed for every split in one pass.
std::size_t LeastRegretSplit(const WeightedSizes& sizes, std::span<const double> cost,
                             const SplitRange& range) {
  const std::size_t n = sizes.size.size();
  double regret = RegretOfSplit(sizes, cost, 0);
  double best_regret = 0;
  std::size_t best_split = 0;
  bool have_best = false;
  bool best_at_crossing = false;
  for (std::size_t split = 0; split <= range.max_split; ++split) {
    if (split > 0) {
      const std::size_t i = split - 1;
      regret += sizes.weight[i] * (ExcessOfBaseline(cost[i]) - ExcessOfZerocopy(cost[i]));
    }
    if (split < range.min_split) continue;
    const bool crossing = split == 0 ? n > 0 && cost[0] <= 1
                                     : cost[split - 1] > 1 && (split == n || cost[split] <= 1);
    const double tie = 1e-12;
    if (!have_best || regret < best_regret - tie ||
        (regret <= best_regret + tie && crossing && !best_at_crossing)) {
      best_regret = regret;
      best_split = split;
      best_at_crossing = crossing;
      have_best = true;
    }
  }
  return best_split;
}

// The threshold of an interior split: the point above it, or where the cost
// crosses 1 between the two points (`interpolate`), kept within the bounds.
double ThresholdBetween(const WeightedSizes& sizes, std::span<const double> cost,
                        std::size_t split, bool interpolate, const Bounds& bounds) {
  const std::size_t lo = split - 1;
  const std::size_t hi = split;
  double threshold = sizes.size[hi];
  if (interpolate && cost[lo] > 1 && cost[hi] <= 1) {
    const double a = std::log(cost[lo]);
    const double b = std::log(std::max(cost[hi], 1e-300));
    const double t = a / (a - b);
    threshold = sizes.size[lo] * std::pow(sizes.size[hi] / sizes.size[lo], t);
  }
  // Any threshold between the two points costs the same on these points;
  // within the bounds is the one the measurement allows.
  threshold = std::min(threshold, bounds.at_most);
  if (threshold <= bounds.above) {
    threshold = std::min(std::nextafter(bounds.above, kInf), sizes.size[hi]);
  }
  return threshold;
}

}  // namespace

Choice LeastCost(const WeightedSizes& sizes, std::span<const double> cost, bool interpolate,
                 const Bounds& bounds) {
  const std::size_t n = sizes.size.size();
  Choice best;
  best.split = LeastRegretSplit(sizes, cost, SplitsWithin(sizes, bounds));
  best.regret = RegretOfSplit(sizes, cost, best.split);
  best.regret_never = RegretOfSplit(sizes, cost, n);
  best.regret_always = RegretOfSplit(sizes, cost, 0);
  if (best.split == n) {
    best.threshold = kInf;
  } else if (best.split == 0) {
    best.threshold = sizes.size.front();
  } else {
    best.threshold = ThresholdBetween(sizes, cost, best.split, interpolate, bounds);
  }
  return best;
}

double Regret(const WeightedSizes& sizes, std::span<const double> cost, double threshold) {
  double regret = 0;
  for (std::size_t i = 0; i < sizes.size.size(); ++i) {
    regret += sizes.weight[i] * (sizes.size[i] >= threshold ? ExcessOfZerocopy(cost[i])
                                                            : ExcessOfBaseline(cost[i]));
  }
  return regret;
}

}  // namespace zcal::calibrator::detail
