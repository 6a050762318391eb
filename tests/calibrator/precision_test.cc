// Precision and stability of the threshold on generated tables, as a user
// pasting benchmark results into `zcal analyze` would get them. The figures
// are printed; the assertions are the targets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "simulated_host.h"
#include "zcal/calibrator/decision.h"

namespace zcal::calibrator::precision_test {
namespace {

using testing::GeometricSizes;
using testing::SimulatedHost;

constexpr Method kMzc = Method::kMsgZerocopy;
constexpr Method kCopy = Method::kCopy;

// A host whose crossover (under the default efficiency objective) lies at
// `truth` bytes: a CPU-bound sender below a 12 GB/s line rate, as in the
// shipped xeon-cx6 example, zerocopy cheaper per byte, dearer per send.
SimulatedHost HostWithCrossover(double truth) {
  SimulatedHost host;
  host.cpu_bound = true;
  host.line_rate_bytes_per_ns = 12.0;
  host.costs[kCopy] = {0.08, 900};
  const double k = 0.97;
  host.costs[kMzc] = {0.03, k * 900 + (k * 0.08 - 0.03) * truth};
  return host;
}

double Quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))];
}

struct FineGridFigures {
  int tables = 0;
  int within_step = 0;
  int inconclusive = 0;
  int per_size = 0;
  std::vector<double> ratio;  // found / truth
};

// Tables as the issue describes them: +-20 % uniform noise on every figure,
// a fine grid of factor 2^(1/4) from 2 KiB to 256 KiB, `repeats` samples
// per size, a known truth between 3 and 128 KiB.
FineGridFigures RunFineGrid(int repeats, int tables) {
  FineGridFigures f;
  const auto sizes = GeometricSizes(2048, 262144, 4);
  std::mt19937_64 pick(17);
  std::uniform_real_distribution<double> log_truth(std::log(3072.0), std::log(131072.0));
  for (int t = 0; t < tables; ++t) {
    const double truth = std::exp(log_truth(pick));
    const SimulatedHost host = HostWithCrossover(truth);
    std::mt19937_64 rng(500 + t);
    const auto r = Decide(host.Table({kCopy, kMzc}, sizes, repeats, rng), kMzc, {});
    ++f.tables;
    f.per_size += r.rule == Rule::kPerSize ? 1 : 0;
    if (!r.threshold_bytes) {
      ++f.inconclusive;
      continue;
    }
    const double found = static_cast<double>(*r.threshold_bytes);
    f.ratio.push_back(found / truth);
    if (std::fabs(std::log2(found / truth)) <= 0.25 + 1e-9) ++f.within_step;
  }
  return f;
}

void Print(const char* what, const FineGridFigures& f) {
  std::printf("%s: within one grid step (2^(1/4)) of the truth in %d of %d tables "
              "(%.1f %%); no threshold in %d; per-size rule in %d; found/truth "
              "median %.3f, 5 %% %.3f, 95 %% %.3f\n",
              what, f.within_step, f.tables, 100.0 * f.within_step / f.tables,
              f.inconclusive, f.per_size, Quantile(f.ratio, 0.5), Quantile(f.ratio, 0.05),
              Quantile(f.ratio, 0.95));
}

// With three repeats the comparisons' own noise is known, the bracket of
// the probed sizes rarely binds, and the curves place the threshold.
TEST(Precision, FineGridTablesLandWithinOneGridStepWithoutBias) {
  const FineGridFigures f = RunFineGrid(3, 200);
  Print("fine grid, 3 repeats", f);
  EXPECT_GE(static_cast<double>(f.within_step) / f.tables, 0.90);
  EXPECT_NEAR(Quantile(f.ratio, 0.5), 1.0, 0.05);
}

// The seeds' style: one sample per size. The model takes the noise from the
// scatter around its curves, but the sizes themselves bound the threshold
// with the margin as their only noise (docs/calibrator.md, "Measured sizes
// bound the threshold"): at +-20 % on every figure a size above the truth
// often loses by more than the margin while every smaller one loses too,
// and the threshold then stays above it. That is what the table says, so
// the median found/truth sits above 1 here by about a twentieth.
TEST(Precision, OneSamplePerSizeTablesStillFindTheCrossover) {
  const FineGridFigures f = RunFineGrid(1, 200);
  Print("fine grid, 1 sample per size", f);
  EXPECT_GE(static_cast<double>(f.within_step) / f.tables, 0.60);
  EXPECT_NEAR(Quantile(f.ratio, 0.5), 1.0, 0.08);
}

// What a threshold decided on one run costs on another run of the same
// truth, in percentage points of expected excess cost over the best single
// threshold of the truth (both judged on the other run's per-size costs).
struct Stability {
  std::vector<double> model;  // the published threshold
  std::vector<double> tail;   // the winning tail (tail_threshold_bytes), for comparison
  std::vector<double> fixed;  // a fixed 10 KB default
  std::vector<double> model_on_truth;
};

std::optional<std::uint64_t> TruthsBestThreshold(const SimulatedHost& host,
                                                 const std::vector<std::uint64_t>& sizes) {
  SimulatedHost exact = host;
  exact.noise = 0;
  std::mt19937_64 rng(0);
  DecisionOptions per_size;
  per_size.use_model = false;
  const auto r = Decide(exact.Table({kCopy, kMzc}, sizes, 1, rng), kMzc, per_size);
  return r.threshold_bytes;
}

Stability RunPairs(const SimulatedHost& host, int pairs, std::uint64_t seed) {
  const auto sizes = GeometricSizes(2048, 262144, 4);
  const auto best = TruthsBestThreshold(host, sizes);
  SimulatedHost exact = host;
  exact.noise = 0;
  std::mt19937_64 zero(0);
  DecisionOptions per_size;
  per_size.use_model = false;
  const auto truth = Decide(exact.Table({kCopy, kMzc}, sizes, 1, zero), kMzc, per_size);
  Stability out;
  for (int p = 0; p < pairs; ++p) {
    std::mt19937_64 rng(seed + p);
    const auto a = Decide(host.Table({kCopy, kMzc}, sizes, 3, rng), kMzc, {});
    const auto b = Decide(host.Table({kCopy, kMzc}, sizes, 3, rng), kMzc, per_size);
    const auto judged = [&](std::optional<std::uint64_t> t) {
      return 100 * (ExcessCost(b.sizes, t, {}) - ExcessCost(b.sizes, best, {}));
    };
    const std::optional<std::uint64_t> published =
        a.verdict == Verdict::kInconclusive ? std::nullopt : a.threshold_bytes;
    out.model.push_back(judged(published));
    out.tail.push_back(judged(a.tail_threshold_bytes));
    out.fixed.push_back(judged(10000));
    out.model_on_truth.push_back(
        100 * (ExcessCost(truth.sizes, published, {}) - ExcessCost(truth.sizes, best, {})));
  }
  return out;
}

double ShareAtMost(const std::vector<double>& v, double bound) {
  return static_cast<double>(std::count_if(v.begin(), v.end(),
                                           [&](double x) { return x <= bound; })) /
         static_cast<double>(v.size());
}

void PrintDistribution(const char* what, const std::vector<double>& pp) {
  std::printf("  %-28s extra cost (pp): median %5.2f, 90 %% %5.2f, 95 %% %5.2f, "
              "99 %% %5.2f, max %5.2f; <= 1 pp in %.1f %% of pairs\n",
              what, Quantile(pp, 0.5), Quantile(pp, 0.9), Quantile(pp, 0.95),
              Quantile(pp, 0.99), Quantile(pp, 1.0), 100 * ShareAtMost(pp, 1.0));
}

struct Scenario {
  const char* name;
  bool cpu_bound;
  bool dip;
  double judged_on_other_run;  // the share asserted, <= 1 pp
};

// Pairs of independent runs (fine grid, 3 repeats, +-20 %) of a truth with
// its crossover at 8 KiB: monotone, and with a local dip (copy 25 % cheaper
// per byte at 16 KiB, inside the winning range, so that the baseline wins
// there). On a CPU-bound host the dip also makes copy a third faster at
// 16 KiB; the truth's two best thresholds (8-9.5 KiB, and just above the
// dip) then differ by only 0.63 pp, and the other run's own noise (three
// repeats of +-20 %) decides which of the two looks cheaper on it. That
// judge is noisy in itself: a fixed 10 KB, one grid step from the truth's
// best, stays within 1 pp in only 91-95 % of these pairs. Hence the lower
// bar for that case on the other run; on the truth every case is held to
// 95 %.
TEST(Precision, ThresholdFromOneRunCostsAtMostOnePointMoreOnAnother) {
  constexpr int kPairs = 150;
  const Scenario scenarios[] = {
      {"monotone, CPU-bound host", true, false, 0.95},
      {"dip at 16 KiB, line-rate host", false, true, 0.95},
      {"dip at 16 KiB, CPU-bound host", true, true, 0.90},
  };
  std::uint64_t seed = 7000;
  for (const Scenario& scenario : scenarios) {
    SimulatedHost host = HostWithCrossover(8192);
    host.cpu_bound = scenario.cpu_bound;
    if (scenario.dip) host.local_factor[{kCopy, 16384}] = 0.75;
    const Stability s = RunPairs(host, kPairs, seed += 1000);
    std::printf("stability, truth at 8 KiB, %s, %d pairs:\n", scenario.name, kPairs);
    PrintDistribution("published threshold", s.model);
    PrintDistribution("winning tail", s.tail);
    PrintDistribution("fixed 10 KB", s.fixed);
    PrintDistribution("published, judged on truth", s.model_on_truth);
    EXPECT_GE(ShareAtMost(s.model, 1.0), scenario.judged_on_other_run) << scenario.name;
    EXPECT_GE(ShareAtMost(s.model_on_truth, 1.0), 0.95) << scenario.name;
  }
}

}  // namespace
}  // namespace zcal::calibrator::precision_test
