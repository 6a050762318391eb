// The threshold on generated tables of shapes the cost model a + b/size does
// not have (docs/calibrator.md, "When the model is rejected"): a knee in
// copy's cost (bytes beyond a cache size cost more), zerocopy's per-send
// part falling as size^-p with p far from 1, a step in copy's cost at one
// size, and their combinations. Tables as a user pastes them: a fine grid
// of factor 2^(1/4) from 2 to 256 KiB, 3 repeats, uniform noise of 3-10 %
// on every figure. The truth is the least-cost threshold on the noiseless
// costs, by the calibrator's own regret (sizes weighted uniformly in log
// size). Two sets of 20 tables from two seed families: one the rule was
// tuned on, one held out. The figures are printed per table and per set.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "simulated_host.h"
#include "zcal/calibrator/decision.h"

namespace zcal::calibrator::stepped_tables_test {
namespace {

using testing::GeometricSizes;
using testing::SimCost;
using testing::SimKnee;
using testing::SimulatedHost;

constexpr Method kMzc = Method::kMsgZerocopy;
constexpr Method kCopy = Method::kCopy;
constexpr std::uint64_t kLo = 2048;
constexpr std::uint64_t kHi = 262144;
constexpr int kTables = 20;

struct Shape {
  std::string name;
  SimulatedHost host;
};

enum Family : unsigned { kKnee = 1, kPower = 2, kStep = 4 };
// Every family alone and in pairs, in turn.
constexpr std::array<unsigned, 6> kFamilies = {kKnee, kPower, kStep, kKnee | kPower,
                                               kPower | kStep, kKnee | kStep};

double LogUniform(std::mt19937_64& rng, double lo, double hi) {
  return std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng));
}

double Uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

// Zerocopy's relative cost under the default objective on a CPU-bound host
// where it is not slower: its CPU per byte over 0.97 of copy's.
double NoiselessCost(const SimulatedHost& host, double size) {
  const auto s = static_cast<std::uint64_t>(size);
  return host.CpuPerByte(kMzc, s) / (0.97 * host.CpuPerByte(kCopy, s));
}

// One host of the family, its crossover placed near a size drawn
// log-uniformly in 4-96 KiB. Draws are repeated until zerocopy loses
// clearly at the smallest size and wins clearly at the largest, so that the
// truth is a threshold inside the range (with p < 1 zerocopy's slowly
// falling overhead can undercut copy's per-send cost at small sizes).
Shape Draw(unsigned family, std::mt19937_64& rng) {
  for (;;) {
    Shape shape;
    SimulatedHost& host = shape.host;
    host.cpu_bound = true;
    host.line_rate_bytes_per_ns = 12.0;
    host.noise = Uniform(rng, 0.03, 0.10);
    const double a_copy = Uniform(rng, 0.12, 0.30);
    host.costs[kCopy] = {a_copy, LogUniform(rng, 300, 1500)};
    char text[160];
    std::snprintf(text, sizeof text, "noise %2.0f%%", 100 * host.noise);
    shape.name = text;
    if (family & kKnee) {
      const SimKnee knee{static_cast<std::uint64_t>(LogUniform(rng, 8192, 131072)),
                         Uniform(rng, 0.3, 1.0) * a_copy};
      host.knee[kCopy] = knee;
      std::snprintf(text, sizeof text, ", knee at %.1f KiB +%.0f%%",
                    static_cast<double>(knee.size_bytes) / 1024,
                    100 * knee.extra_per_byte_ns / a_copy);
      shape.name += text;
    }
    const double target = LogUniform(rng, 4096, 98304);
    if (family & kStep) {
      const auto at = static_cast<std::uint64_t>(LogUniform(rng, target / 2, target * 2));
      const double factor =
          std::bernoulli_distribution(0.5)(rng) ? Uniform(rng, 0.6, 0.85) : Uniform(rng, 1.15, 1.4);
      host.step[kCopy] = {at, factor};
      std::snprintf(text, sizeof text, ", step at %.1f KiB x%.2f",
                    static_cast<double>(at) / 1024, factor);
      shape.name += text;
    }
    SimCost zc{Uniform(rng, 0.2, 0.5) * a_copy, 0, 1};
    if (family & kPower) {
      constexpr std::array<double, 4> kExponents = {0.5, 0.7, 1.5, 2.0};
      zc.per_send_exponent = kExponents[rng() % kExponents.size()];
      std::snprintf(text, sizeof text, ", zerocopy ~ size^-%.1f", zc.per_send_exponent);
      shape.name += text;
    }
    // zerocopy's CPU per byte at the target is 0.97 of copy's there.
    const double copy_at_target = host.CpuPerByte(kCopy, static_cast<std::uint64_t>(target));
    zc.per_send_ns =
        (0.97 * copy_at_target - zc.per_byte_ns) * std::pow(target, zc.per_send_exponent);
    host.costs[kMzc] = zc;
    if (zc.per_send_ns > 0 && NoiselessCost(host, kLo) >= 1.1 && NoiselessCost(host, kHi) <= 0.9) {
      return shape;
    }
  }
}

// The least-cost threshold on the noiseless costs, 32 points per octave,
// by the calibrator's own regret (ExcessCost: log cells around each size);
// `crossings` counts where zerocopy's relative cost crosses 1 there.
std::optional<double> Truth(const SimulatedHost& host, int& crossings) {
  SimulatedHost exact = host;
  exact.noise = 0;
  std::mt19937_64 rng(0);
  DecisionOptions per_size;
  per_size.use_model = false;
  const auto r = Decide(exact.Table({kCopy, kMzc}, GeometricSizes(kLo, kHi, 32), 1, rng), kMzc,
                        per_size);
  crossings = 0;
  for (std::size_t i = 1; i < r.sizes.size(); ++i) {
    crossings += (r.sizes[i - 1].relative_cost > 1) != (r.sizes[i].relative_cost > 1) ? 1 : 0;
  }
  std::optional<std::uint64_t> best;
  double best_cost = ExcessCost(r.sizes, std::nullopt, per_size);
  for (const SizeComparison& c : r.sizes) {
    const double cost = ExcessCost(r.sizes, c.size_bytes, per_size);
    if (cost < best_cost - 1e-12) {
      best_cost = cost;
      best = c.size_bytes;
    }
  }
  if (!best) return std::nullopt;
  return static_cast<double>(*best);
}

struct Figures {
  int tables = 0;
  int within_step = 0;
  int above = 0;  // found above the truth (within a step or not)
  int below = 0;
  int none = 0;   // no threshold (inconclusive or never)
  int per_size = 0;
  std::vector<double> ratio;  // found / truth
};

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Figures RunSet(const char* set, std::uint64_t seed) {
  Figures f;
  const auto sizes = GeometricSizes(kLo, kHi, 4);
  for (int t = 0; t < kTables; ++t) {
    std::mt19937_64 rng(seed + static_cast<std::uint64_t>(t));
    const Shape shape = Draw(kFamilies[static_cast<std::size_t>(t) % kFamilies.size()], rng);
    int crossings = 0;
    const std::optional<double> truth = Truth(shape.host, crossings);
    if (!truth) {
      ADD_FAILURE() << set << " table " << t << ": no threshold in the noiseless costs ("
                    << shape.name << ")";
      continue;
    }
    const MethodResult r = Decide(shape.host.Table({kCopy, kMzc}, sizes, 3, rng), kMzc, {});
    ++f.tables;
    f.per_size += r.rule == Rule::kPerSize ? 1 : 0;
    std::string found_text = "-";
    if (r.threshold_bytes) {
      const double found = static_cast<double>(*r.threshold_bytes);
      f.ratio.push_back(found / *truth);
      const double octaves = std::log2(found / *truth);
      if (std::fabs(octaves) <= 0.25 + 1e-9) ++f.within_step;
      f.above += octaves > 0 ? 1 : 0;
      f.below += octaves < 0 ? 1 : 0;
      found_text = std::to_string(*r.threshold_bytes);
    } else {
      ++f.none;
    }
    std::printf("%s %2d: truth %6.0f (crossings %d) found %6s (%5.2f)  %-8s %-12s %s\n", set, t,
                *truth, crossings,
                found_text.c_str(),
                r.threshold_bytes ? static_cast<double>(*r.threshold_bytes) / *truth : 0.0,
                std::string(RuleName(r.rule)).c_str(), std::string(VerdictName(r.verdict)).c_str(),
                shape.name.c_str());
    if (!r.rule_detail.empty()) std::printf("      %s\n", r.rule_detail.c_str());
  }
  std::printf("%s: within one fine step (2^(1/4)) of the truth in %d of %d tables; above the "
              "truth %d, below %d, no threshold %d; per-size rule in %d; found/truth median "
              "%.3f\n",
              set, f.within_step, f.tables, f.above, f.below, f.none, f.per_size,
              Median(f.ratio));
  return f;
}

// The target: within one fine step in >= 18 of 20, without bias to
// one side (before the local fit: 15 of 20 in both sets, 16 of 20 above the
// truth, median found/truth 1.10-1.13).
void ExpectTheTarget(const Figures& f) {
  EXPECT_EQ(f.tables, kTables);
  EXPECT_GE(f.within_step, 18);
  EXPECT_LE(f.above, 14) << "biased above the truth";
  EXPECT_LE(f.below, 14) << "biased below the truth";
  EXPECT_NEAR(Median(f.ratio), 1.0, 0.05);
}

TEST(SteppedTables, TheTuningSetLandsWithinOneFineStepOfTheTruth) {
  ExpectTheTarget(RunSet("tuning", 31000));
}

TEST(SteppedTables, TheHeldOutSetLandsWithinOneFineStepOfTheTruth) {
  ExpectTheTarget(RunSet("held-out", 131000));
}

}  // namespace
}  // namespace zcal::calibrator::stepped_tables_test
