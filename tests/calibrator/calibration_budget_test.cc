// A full calibration of one path with all five methods, with the probe
// durations the runner would use (probes/src/calibration.cc), on the
// simulated host: how many probes fit a time budget, how long the planner
// needs to reach its resolution, and how close the thresholds get.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "simulated_host.h"
#include "zcal/calibrator/planner.h"

namespace zcal::calibrator {
namespace {

using testing::SimulatedHost;

// The runner's probe durations (probes/src/calibration.cc): each probe gets
// the budget left times kBudgetShare over the probes the planner still
// expects, clamped to [kMinProbe, kMaxProbe]; the calibration ends when less
// than two probe durations are left.
constexpr double kMinProbe = 0.02;
constexpr double kMaxProbe = 0.25;
constexpr double kBudgetShare = 0.85;
// Not measured here: connection setup, drain and sink hand-over per probe.
// 10 ms is an assumption, to be replaced by the discard path's figure.
constexpr double kOverheadPerProbe = 0.010;

constexpr Method kZerocopy[] = {Method::kMsgZerocopy, Method::kUringSendZc,
                                Method::kUringSendZcFixed};

SimulatedHost FiveMethodHost() {
  SimulatedHost host;
  host.costs = {{Method::kCopy, {0.30, 1500}},
                {Method::kMsgZerocopy, {0.12, 3500}},
                {Method::kUringSend, {0.25, 1200}},
                {Method::kUringSendZc, {0.10, 3000}},
                {Method::kUringSendZcFixed, {0.10, 2000}}};
  return host;
}

struct BudgetRun {
  std::size_t probes = 0;
  double seconds = 0;
  int within_resolution = 0;  // zerocopy methods whose interval is within 1/8
  int near_truth = 0;         // ... whose threshold is within 1/8 of the truth
  double worst_interval = 0;  // largest interval half-width, relative
};

BudgetRun Simulate(const SimulatedHost& host, double budget_seconds, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  SweepPlanner planner(PlannerOptions{});
  BudgetRun run;
  while (auto request = planner.Next()) {
    const double remaining = budget_seconds - run.seconds;
    const std::size_t total = std::max(planner.EstimatedTotal(), planner.issued());
    const double left = static_cast<double>(total - planner.issued() + 1);
    const double duration = std::clamp(remaining * kBudgetShare / left, kMinProbe, kMaxProbe);
    if (remaining < duration * 2) break;
    planner.Record(host.Probe(*request, rng));
    run.seconds += duration + kOverheadPerProbe;
    ++run.probes;
  }
  const auto methods = planner.Result().paths.at("default").methods;
  for (Method m : kZerocopy) {
    const MethodResult& r = methods.at(m);
    const double truth = host.TrueThreshold(m, NativeBaseline(m));
    if (!r.threshold_bytes || !r.interval || !r.interval->high_bytes) {
      run.worst_interval = INFINITY;
      continue;
    }
    const double t = static_cast<double>(*r.threshold_bytes);
    const double half = std::max(t / static_cast<double>(r.interval->low_bytes),
                                 static_cast<double>(*r.interval->high_bytes) / t) - 1;
    run.worst_interval = std::max(run.worst_interval, half);
    run.within_resolution += half <= 0.125 ? 1 : 0;
    run.near_truth += std::fabs(t - truth) <= 0.125 * std::max(t, truth) ? 1 : 0;
  }
  return run;
}

TEST(CalibrationBudget, FiveMethodsOnOnePathWithTheRunnersProbeDurations) {
  const SimulatedHost host = FiveMethodHost();
  constexpr int kSeeds = 8;
  // 1000 s: no budget limit; the planner stops on its own.
  for (const double budget : {3.0, 5.0, 8.0, 1000.0}) {
    std::size_t probes = 0;
    double seconds = 0;
    double worst = 0;
    int within = 0;
    int near = 0;
    for (int seed = 0; seed < kSeeds; ++seed) {
      const BudgetRun run = Simulate(host, budget, 300 + seed);
      probes += run.probes;
      seconds += run.seconds;
      worst = std::max(worst, run.worst_interval);
      within += run.within_resolution;
      near += run.near_truth;
    }
    const int methods = kSeeds * 3;
    std::printf("budget %6.0f s: %.0f probes, %.2f s per calibration; interval within "
                "1/8 for %d of %d methods (widest +-%.0f %%), threshold within 1/8 "
                "of the truth for %d of %d\n",
                budget, static_cast<double>(probes) / kSeeds, seconds / kSeeds, within,
                methods, 100 * worst, near, methods);
    EXPECT_LE(seconds / kSeeds, budget);
    if (budget >= 5) {
      EXPECT_GE(near, methods * 8 / 10) << budget;
    }
  }
}

}  // namespace
}  // namespace zcal::calibrator
