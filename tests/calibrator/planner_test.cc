#include "zcal/calibrator/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "simulated_host.h"
#include "zcal/calibrator/decision.h"

namespace zcal::calibrator::planner_test {
namespace {

using testing::Calibrate;
using testing::Calibration;
using testing::SimulatedHost;

// Copy at 0.30 ns per byte + 1500 ns per send, zerocopy at 0.25 + 2400:
// a crossover at ~23 KiB with a quarter of the usual slope, under `noise`.
SimulatedHost FlatCrossover(double noise) {
  SimulatedHost host;
  host.noise = noise;
  host.costs[Method::kMsgZerocopy] = {0.25, 2400};
  return host;
}

PlannerOptions TwoMethods() {
  PlannerOptions options;
  options.methods = {Method::kCopy, Method::kMsgZerocopy};
  return options;
}

// The coarse grid of TwoMethods(): 9 sizes, 2 methods, 2 repeats.
void ProbeTheCoarseGrid(SweepPlanner& planner, const SimulatedHost& host, std::mt19937_64& rng) {
  for (int i = 0; i < 36; ++i) {
    const auto request = planner.Next();
    ASSERT_TRUE(request.has_value());
    planner.Record(host.Probe(*request, rng));
  }
}

const MethodResult& Zerocopy(const Calibration& run) {
  return run.analysis.paths.at("default").methods.at(Method::kMsgZerocopy);
}

bool WithinResolution(double found, double truth) {
  return std::fabs(found - truth) <= PlannerOptions{}.resolution * std::max(truth, found);
}

// The host of the calibrator's first test: a known crossover between 2 and
// 108 KiB, +-20 % uniform noise on every probe's throughput and CPU.
TEST(SweepPlanner, FindsKnownCrossoverWithinTheResolutionUnderNoise) {
  constexpr int kSeeds = 200;
  int within_step = 0;
  int within_resolution = 0;
  int inconclusive = 0;
  int covered = 0;
  std::size_t probes = 0;
  std::vector<double> ratio;
  std::mt19937_64 pick(1);
  std::uniform_real_distribution<double> per_send(1800, 20000);
  for (int seed = 0; seed < kSeeds; ++seed) {
    SimulatedHost host;
    host.costs[Method::kMsgZerocopy].per_send_ns = per_send(pick);
    const double truth = host.TrueThreshold(Method::kMsgZerocopy, Method::kCopy);
    const Calibration run = Calibrate(host, TwoMethods(), 1000 + seed);
    probes += run.probes;
    const MethodResult& r = Zerocopy(run);
    if (r.verdict == Verdict::kInconclusive) ++inconclusive;
    if (!r.threshold_bytes) {
      std::printf("miss: truth %.0f bytes, verdict %s\n", truth,
                  std::string(VerdictName(r.verdict)).c_str());
      continue;
    }
    const double found = static_cast<double>(*r.threshold_bytes);
    ratio.push_back(found / truth);
    if (WithinResolution(found, truth)) ++within_resolution;
    if (r.interval && r.interval->high_bytes &&
        static_cast<double>(r.interval->low_bytes) <= truth &&
        static_cast<double>(*r.interval->high_bytes) >= truth) {
      ++covered;
    }
    if (found >= truth / 2 && found <= truth * 2) {
      ++within_step;
    } else {
      std::printf("miss: truth %.0f bytes, found %.0f\n", truth, found);
    }
  }
  std::sort(ratio.begin(), ratio.end());
  const double rate = static_cast<double>(within_step) / kSeeds;
  const double fine = static_cast<double>(within_resolution) / kSeeds;
  const double per_calibration = static_cast<double>(probes) / kSeeds;
  std::printf("within one coarse step of the truth: %d of %d seeds (%.1f %%); "
              "within 1/8: %.1f %%; interval covers the truth: %.1f %%; "
              "median found/truth %.3f; inconclusive %d; %.1f probes per "
              "calibration\n",
              within_step, kSeeds, 100 * rate, 100 * fine, 100.0 * covered / kSeeds,
              ratio.empty() ? 0 : ratio[ratio.size() / 2], inconclusive, per_calibration);
  EXPECT_GE(rate, 0.99);
  EXPECT_GE(fine, 0.95);
  EXPECT_LE(per_calibration, 106);
}

TEST(SweepPlanner, ReportsNeverWhenZerocopyNeverWinsUnderNoise) {
  SimulatedHost host;
  host.costs[Method::kMsgZerocopy].per_byte_ns = 0.35;  // dearer per byte and per send
  const Calibration run = Calibrate(host, TwoMethods(), 5);
  EXPECT_EQ(Zerocopy(run).verdict, Verdict::kNever);
  EXPECT_EQ(Zerocopy(run).reason, Reason::kSlower);
  EXPECT_EQ(Zerocopy(run).rule, Rule::kModel);
  EXPECT_LT(run.probes, 36u + 54u) << "a settled never stops early";
}

TEST(SweepPlanner, StopsWhenTheIntervalIsWithinTheResolution) {
  SimulatedHost host;
  host.noise = 0.05;
  const Calibration run = Calibrate(host, TwoMethods(), 11);
  const MethodResult& r = Zerocopy(run);
  std::printf("+-5 %% noise: %zu probes, %s\n", run.probes, r.detail.c_str());
  ASSERT_EQ(r.verdict, Verdict::kThreshold);
  ASSERT_TRUE(r.interval && r.interval->high_bytes);
  const double t = static_cast<double>(*r.threshold_bytes);
  EXPECT_GE(static_cast<double>(r.interval->low_bytes), t / 1.125);
  EXPECT_LE(static_cast<double>(*r.interval->high_bytes), t * 1.125);
  EXPECT_LT(run.probes, 36u + 54u) << "low noise: the budget is not needed";
  EXPECT_TRUE(WithinResolution(t, host.TrueThreshold(Method::kMsgZerocopy, Method::kCopy)));
}

// What a threshold really costs on the simulated host: its expected excess
// over the truth's, uniform in log size over 1 KiB to 256 KiB, on the
// host's true costs.
double TrueExcess(const SimulatedHost& host, double threshold) {
  double excess = 0;
  constexpr int kPoints = 801;
  for (int i = 0; i < kPoints; ++i) {
    const double size = 1024 * std::exp2(8.0 * i / (kPoints - 1));
    const auto bytes = static_cast<std::uint64_t>(size);
    const double cost = host.CpuPerByte(Method::kMsgZerocopy, bytes) /
                        host.CpuPerByte(Method::kCopy, bytes) / 0.97;
    excess += (size >= threshold ? std::max(0.0, cost - 1) : std::max(0.0, 1 / cost - 1));
  }
  return excess / kPoints;
}

// Costs that run close together around the crossover: copy 0.30 ns/B +
// 1500 ns per send, zerocopy 0.25 + 2400, crossing at ~23 KiB with a
// quarter of the usual slope. The threshold's interval narrows slowly, but
// the thresholds in it soon cost next to nothing more than the best: the
// planner stops on what the threshold costs, and what it publishes costs
// little more than the truth's threshold.
TEST(SweepPlanner, StopsWhenTheThresholdCostsNoMoreThanTheRegretResolution) {
  const SimulatedHost host = FlatCrossover(0.05);
  PlannerOptions interval_only = TwoMethods();
  interval_only.regret_resolution = 0;
  constexpr int kSeeds = 40;
  std::size_t probes = 0, probes_interval_only = 0;
  int cheap = 0, truly_cheap = 0, within = 0;
  std::vector<double> excess;
  for (int seed = 0; seed < kSeeds; ++seed) {
    const Calibration run = Calibrate(host, TwoMethods(), 20 + seed);
    probes += run.probes;
    probes_interval_only += Calibrate(host, interval_only, 20 + seed).probes;
    const MethodResult& r = Zerocopy(run);
    ASSERT_TRUE(r.threshold_bytes && r.regret_excess) << r.detail;
    const double t = static_cast<double>(*r.threshold_bytes);
    cheap += *r.regret_excess <= PlannerOptions{}.regret_resolution ? 1 : 0;
    excess.push_back(TrueExcess(host, t));
    truly_cheap += excess.back() <= PlannerOptions{}.regret_resolution ? 1 : 0;
    within += WithinResolution(t, host.TrueThreshold(Method::kMsgZerocopy, Method::kCopy));
  }
  std::sort(excess.begin(), excess.end());
  std::printf("close costs (+-5 %% noise, %d seeds): %.1f probes (interval only: %.1f); "
              "regret_excess within %.2f pp in %d; true excess within it in %d (median "
              "%.3f pp, max %.3f pp); threshold within 1/8 of the truth in %d\n",
              kSeeds, static_cast<double>(probes) / kSeeds,
              static_cast<double>(probes_interval_only) / kSeeds,
              100 * PlannerOptions{}.regret_resolution, cheap, truly_cheap,
              100 * excess[excess.size() / 2], 100 * excess.back(), within);
  EXPECT_LT(probes, probes_interval_only);
  EXPECT_GE(truly_cheap, kSeeds * 8 / 10);
}

// The same close costs under +-20 % noise, with room for 1000 refinement
// probes: the interval narrows so slowly that the allowance would not get
// it to the resolution, and the planner stops once the rate at which its
// probes narrow it says so, with a sentence, instead of spending the rest.
TEST(SweepPlanner, StopsWhenMoreProbesCannotReachTheResolution) {
  const SimulatedHost host = FlatCrossover(0.20);
  PlannerOptions options = TwoMethods();
  options.refine_probes = 1000;
  options.max_repeats = 16;
  constexpr int kSeeds = 20;
  std::size_t probes = 0;
  int noise = 0;
  int inconclusive = 0;
  std::vector<double> excess;
  for (int seed = 0; seed < kSeeds; ++seed) {
    const Calibration run = Calibrate(host, options, 100 + seed);
    probes += run.probes;
    const MethodResult& r = Zerocopy(run);
    ASSERT_TRUE(r.stop.has_value()) << "every refined method says why its probes ended";
    ASSERT_NE(r.stop->reason, StopReason::kBudget) << "the planner has no clock";
    if (r.stop->reason != StopReason::kNoise) continue;
    ++noise;
    EXPECT_EQ(r.stop->detail.rfind("resolution limited by noise (", 0), 0u) << r.stop->detail;
    EXPECT_NE(r.stop->detail.find(" pp more than the best (stated: 0.05 pp)"), std::string::npos)
        << r.stop->detail;
    // At this noise a stop may leave the comparison itself within it: an
    // inconclusive verdict that says so is as honest an end.
    if (!r.threshold_bytes) {
      EXPECT_EQ(r.verdict, Verdict::kInconclusive) << r.detail;
      EXPECT_EQ(r.reason, Reason::kNoisy) << r.detail;
      ++inconclusive;
      continue;
    }
    excess.push_back(TrueExcess(host, static_cast<double>(*r.threshold_bytes)));
  }
  EXPECT_LE(inconclusive, kSeeds / 10);
  std::sort(excess.begin(), excess.end());
  std::printf("close costs (+-20 %% noise, %d seeds, 1000 refinement probes allowed): %.1f "
              "probes; stopped for noise in %d, their thresholds' true excess cost median "
              "%.3f pp, max %.3f pp\n",
              kSeeds, static_cast<double>(probes) / kSeeds, noise,
              excess.empty() ? 0.0 : 100 * excess[excess.size() / 2],
              excess.empty() ? 0.0 : 100 * excess.back());
  EXPECT_GE(noise, kSeeds / 2);
  EXPECT_LT(probes / kSeeds, 36u + 1000u / 2) << "most of the allowance is left unspent";
}

// The same close costs under +-20 % noise, with a clock that leaves 40
// probes after the coarse grid (as the runner's on the discard path): the
// scatter says the method needs far more, and the planner ends it itself
// at the first refinement rounds, with the figures (scatter, samples now,
// samples needed, what is left), instead of letting the clock end it.
TEST(SweepPlanner, EndsAMethodItsTimeCannotBringToItsResolution) {
  const SimulatedHost host = FlatCrossover(0.20);
  PlannerOptions options = TwoMethods();
  options.refine_probes = 1000;
  options.max_repeats = 16;
  constexpr int kSeeds = 20;
  constexpr std::size_t kClock = 36 + 40;
  int ended = 0, clock_ended = 0, resolved = 0;
  std::size_t probes = 0;
  std::vector<double> excess;
  for (int seed = 0; seed < kSeeds; ++seed) {
    const Calibration run = Calibrate(host, options, 100 + seed, kClock);
    probes += run.probes;
    const MethodResult& r = Zerocopy(run);
    if (run.clock_ended) {
      ++clock_ended;
      continue;
    }
    ASSERT_TRUE(r.stop.has_value());
    if (r.stop->reason == StopReason::kResolution) {
      ++resolved;
      continue;
    }
    ASSERT_TRUE(r.stop->reason == StopReason::kNoise || r.stop->reason == StopReason::kBudget)
        << r.stop->detail;
    ++ended;
    EXPECT_EQ(r.stop->detail.rfind("resolution limited by ", 0), 0u) << r.stop->detail;
    EXPECT_NE(r.stop->detail.find("% scatter between repeats"), std::string::npos)
        << r.stop->detail;
    EXPECT_NE(r.stop->detail.find(" samples ("), std::string::npos) << r.stop->detail;
    EXPECT_NE(r.stop->detail.find("it would need about "), std::string::npos) << r.stop->detail;
    EXPECT_NE(r.stop->detail.find("the calibration's time leaves "), std::string::npos)
        << r.stop->detail;
    // Where the replicates do not agree on a threshold, none is published.
    if (r.threshold_bytes) {
      excess.push_back(TrueExcess(host, static_cast<double>(*r.threshold_bytes)));
    }
  }
  std::sort(excess.begin(), excess.end());
  std::printf("close costs (+-20 %% noise, %d seeds, a clock of %zu probes): %.1f probes; "
              "ended by the planner in %d (their thresholds' true excess cost median %.3f pp, "
              "max %.3f pp), at the resolution in %d, by the clock in %d\n",
              kSeeds, kClock, static_cast<double>(probes) / kSeeds, ended,
              excess.empty() ? 0.0 : 100 * excess[excess.size() / 2],
              excess.empty() ? 0.0 : 100 * excess.back(), resolved, clock_ended);
  EXPECT_GE(ended, kSeeds * 3 / 4);
  EXPECT_LE(clock_ended, kSeeds / 10);
}

// A flat crossover under +-12 % noise with as many probes left, once as
// the clock's (the calibration's time is short) and once as the
// refinement allowance (time to spare): the noise stop ends a method that
// would need more than twice what the clock leaves, but only one that
// would need more than eight times its allowance. Probes that cannot
// reach the resolution still improve the threshold where nothing else
// waits for the time.
TEST(SweepPlanner, TheClockEndsAHopelessMethodSoonerThanItsAllowance) {
  const SimulatedHost host = FlatCrossover(0.12);
  PlannerOptions options = TwoMethods();
  options.max_repeats = 16;
  constexpr int kSeeds = 20;
  constexpr std::size_t kLeft = 40;
  int by_clock = 0, by_allowance = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    options.refine_probes = 1000;
    const Calibration timed = Calibrate(host, options, 100 + seed, 36 + kLeft);
    const MethodResult& t = Zerocopy(timed);
    by_clock += t.stop && t.stop->reason == StopReason::kNoise ? 1 : 0;
    options.refine_probes = kLeft;
    const Calibration allowed = Calibrate(host, options, 100 + seed);
    const MethodResult& a = Zerocopy(allowed);
    by_allowance += a.stop && a.stop->reason == StopReason::kNoise ? 1 : 0;
  }
  std::printf("%zu probes left, %d seeds: ended by the noise %d times against the clock, "
              "%d against the allowance\n",
              kLeft, kSeeds, by_clock, by_allowance);
  EXPECT_GE(by_clock, kSeeds * 3 / 4);
  EXPECT_LE(by_allowance * 2, by_clock);
}

// The host of the first test (+-20 % noise, crossovers from 2 to 108 KiB):
// a run without a clock (and room for 400 refinement probes) says how many
// probes each seed needs to reach the resolution. With a clock that leaves
// a quarter more than that, the early stop must not end the method: the
// probes, identical up to where a stop could fire, would get it there.
TEST(SweepPlanner, KeepsProbingAMethodItsTimeCanBringToItsResolution) {
  constexpr int kSeeds = 100;
  std::mt19937_64 pick(2);
  std::uniform_real_distribution<double> per_send(1800, 20000);
  PlannerOptions options = TwoMethods();
  options.refine_probes = 400;
  options.max_repeats = 16;
  int reachable = 0, kept = 0, ended = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    SimulatedHost host;
    host.costs[Method::kMsgZerocopy].per_send_ns = per_send(pick);
    const Calibration free = Calibrate(host, options, 2000 + seed);
    const MethodResult& f = Zerocopy(free);
    if (!f.stop || f.stop->reason != StopReason::kResolution) continue;
    ++reachable;
    const Calibration timed = Calibrate(host, options, 2000 + seed, free.probes * 5 / 4);
    const MethodResult& t = Zerocopy(timed);
    if (t.stop && t.stop->reason == StopReason::kResolution) {
      ++kept;
    } else {
      ++ended;
      std::printf("ended: %s (without a clock: at the resolution after %zu probes)\n",
                  t.stop ? t.stop->detail.c_str() : "by the clock", free.probes);
    }
  }
  std::printf("%d of %d seeds reach the resolution without a clock; with a clock of 5/4 of "
              "their probes %d still do, %d were ended\n",
              reachable, kSeeds, kept, ended);
  EXPECT_GE(reachable, kSeeds * 9 / 10);
  EXPECT_GE(kept, reachable * 95 / 100);
}

// Each way a method's probes end has its reason: the resolution reached,
// or the refinement probes spent.
TEST(SweepPlanner, SaysWhyItStoppedProbingEachMethod) {
  SimulatedHost quiet;
  quiet.noise = 0.05;
  const MethodResult settled = Zerocopy(Calibrate(quiet, TwoMethods(), 11));
  ASSERT_TRUE(settled.stop.has_value());
  EXPECT_EQ(settled.stop->reason, StopReason::kResolution) << settled.stop->detail;

  SimulatedHost noisy;
  PlannerOptions few = TwoMethods();
  few.refine_probes = 6;
  const Calibration run = Calibrate(noisy, few, 3);
  EXPECT_LE(run.probes, 36u + 6u);
  const MethodResult& spent = Zerocopy(run);
  ASSERT_TRUE(spent.stop.has_value());
  EXPECT_EQ(spent.stop->reason, StopReason::kProbes) << spent.stop->detail;
  EXPECT_NE(spent.stop->detail.find("refinement probes"), std::string::npos);

  // An analysis of samples alone (no planner) has no stop.
  EXPECT_FALSE(Analyze(run.samples, few.decision, few.depth).paths.at("default").methods.at(Method::kMsgZerocopy)
                   .stop.has_value());
}

// A probe hit by a burst of load at a size probed once rejects the model
// (one sample cannot tell an outlier from a dip); the planner probes both
// methods there again before it settles for the per-size rule.
TEST(SweepPlanner, ProbesAgainWhereOneSampleRejectedTheModel) {
  SimulatedHost host;
  host.noise = 0.02;
  SweepPlanner planner(TwoMethods());
  std::mt19937_64 rng(5);
  ProbeTheCoarseGrid(planner, host, rng);
  constexpr std::uint64_t kWild = 12032;
  for (Method m : {Method::kCopy, Method::kMsgZerocopy}) {
    Sample s = host.Probe({m, kWild, 0}, rng);
    if (m == Method::kCopy) s.cpu_ns = s.cpu_ns * 2;  // copy's probe ran on a busy core
    planner.Record(s);
  }
  const MethodResult before = planner.Result().paths.at("default").methods.at(Method::kMsgZerocopy);
  ASSERT_TRUE(before.model.has_value());
  ASSERT_FALSE(before.model->accepted) << "one wild sample rejects the model";
  EXPECT_FALSE(before.model->rejection_confirmed);
  EXPECT_LE(before.model->rejected_min_size_bytes, kWild);
  EXPECT_GE(before.model->rejected_max_size_bytes, kWild);
  std::map<Method, int> again;
  for (int i = 0; i < 8; ++i) {
    const auto request = planner.Next();
    if (!request) break;
    if (request->size_bytes == kWild) ++again[request->method];
    planner.Record(host.Probe(*request, rng));
  }
  EXPECT_EQ(again[Method::kCopy], 1);
  EXPECT_EQ(again[Method::kMsgZerocopy], 1);
}

// An exception near the threshold (copy dearer at exactly 8 KiB) was
// measured at its own size only; how far it reaches into the unmeasured
// gaps around it moves the threshold. The planner probes halfway into each
// gap and repeats the exception, and the interval narrows.
TEST(SweepPlanner, ProbesTheGapsAroundAnExceptionNearTheThreshold) {
  SimulatedHost host;
  host.noise = 0.05;
  host.costs[Method::kMsgZerocopy] = {0.12, 3336};  // crossover near 11 KiB
  host.local_factor[{Method::kCopy, 8192}] = 1.3;
  SweepPlanner planner(TwoMethods());
  std::mt19937_64 rng(11);
  ProbeTheCoarseGrid(planner, host, rng);
  // Three repeats confirm the exception (two leave it to chance whether
  // its scatter passes for structure).
  for (Method m : {Method::kCopy, Method::kMsgZerocopy}) planner.Record(host.Probe({m, 8192, 2}, rng));
  const MethodResult before = planner.Result().paths.at("default").methods.at(Method::kMsgZerocopy);
  ASSERT_EQ(before.rule, Rule::kModel) << before.rule_detail;
  ASSERT_TRUE(before.model.has_value());
  ASSERT_EQ(before.model->exceptions.size(), 1u) << before.rule_detail;
  std::map<std::uint64_t, int> next;
  for (int i = 0; i < 12; ++i) {
    const auto request = planner.Next();
    if (!request) break;
    ++next[request->size_bytes];
    planner.Record(host.Probe(*request, rng));
  }
  EXPECT_EQ(next[5888], 2) << "halfway (in log size) from 4096 to 8192, both methods";
  EXPECT_EQ(next[11520], 2) << "halfway from 8192 to 16384";
  EXPECT_GE(next[8192], 2) << "the exception again";
  while (const auto request = planner.Next()) planner.Record(host.Probe(*request, rng));
  const MethodResult after = planner.Result().paths.at("default").methods.at(Method::kMsgZerocopy);
  ASSERT_TRUE(before.interval && before.interval->high_bytes && after.interval &&
              after.interval->high_bytes && after.threshold_bytes);
  const double t = static_cast<double>(*after.threshold_bytes);
  const double half = std::max(t / static_cast<double>(after.interval->low_bytes),
                               static_cast<double>(*after.interval->high_bytes) / t) - 1;
  std::printf("exception at 8 KiB: before [%llu, %llu]; after %zu probes, %llu in [%llu, %llu], "
              "regret_excess %.4f pp; %s\n",
              static_cast<unsigned long long>(before.interval->low_bytes),
              static_cast<unsigned long long>(*before.interval->high_bytes), planner.issued(),
              static_cast<unsigned long long>(*after.threshold_bytes),
              static_cast<unsigned long long>(after.interval->low_bytes),
              static_cast<unsigned long long>(*after.interval->high_bytes),
              100 * after.regret_excess.value_or(-1), after.rule_detail.c_str());
  // Ended at the stated resolution, not on a spent budget: the interval
  // within 1/8, or (here: just below the exception, or from where the
  // curves cross, cost the same) the threshold as cheap as the best.
  const PlannerOptions defaults;
  EXPECT_TRUE(half <= defaults.resolution ||
              after.regret_excess.value_or(1) <= defaults.regret_resolution)
      << half;
  EXPECT_GT(*after.threshold_bytes, 7000u);
  EXPECT_LT(*after.threshold_bytes, 12500u);
}

TEST(SweepPlanner, ProbesTheModelRejectedCaseSizeBySize) {
  SimulatedHost host;
  host.noise = 0.03;
  // The copy path gets 40 % dearer per byte from 48 KiB on: no a + b/size
  // follows that, and zerocopy's advantage jumps there.
  host.costs[Method::kMsgZerocopy] = {0.25, 4000};
  host.step[Method::kCopy] = {48 * 1024, 1.4};
  const Calibration run = Calibrate(host, TwoMethods(), 3);
  const MethodResult& r = Zerocopy(run);
  std::printf("step at 48 KiB: %zu probes, %s; %s\n", run.probes, r.detail.c_str(),
              r.rule_detail.c_str());
  EXPECT_EQ(r.rule, Rule::kPerSize);
  EXPECT_EQ(r.rule_detail.rfind("model rejected: copy CPU per byte", 0), 0u) << r.rule_detail;
  ASSERT_EQ(r.verdict, Verdict::kThreshold) << r.detail;
  ASSERT_TRUE(r.interval && r.interval->high_bytes);
  // Bisected down to the step: the bracketing sizes are within 1/8.
  const double hi = static_cast<double>(*r.interval->high_bytes);
  EXPECT_LE(hi - static_cast<double>(r.interval->low_bytes), 0.125 * hi);
  EXPECT_GE(hi, 48 * 1024 * 0.875);
  EXPECT_LE(hi, 48 * 1024 * 1.125);
}

TEST(SweepPlanner, StopsProbingAMethodOnceTheKernelCopiedIt) {
  SimulatedHost host;
  host.kernel_copies = true;
  PlannerOptions options;  // all five methods
  const Calibration run = Calibrate(host, options, 3);
  std::map<Method, int> per_method;
  for (const Sample& s : run.samples) ++per_method[s.method];
  for (Method m : {Method::kMsgZerocopy, Method::kUringSendZc,
                   Method::kUringSendZcFixed}) {
    EXPECT_EQ(per_method[m], 1) << MethodName(m);
    EXPECT_EQ(run.analysis.paths.at("default").methods.at(m).reason,
              Reason::kKernelCopied);
  }
  // With every zerocopy method out, the baselines are not probed further.
  EXPECT_LE(run.samples.size(), 10u);
}

TEST(SweepPlanner, InterleavesMethodsAtEverySize) {
  PlannerOptions options = TwoMethods();
  options.repeats = 2;
  SweepPlanner planner(options);
  std::vector<ProbeRequest> first;
  for (int i = 0; i < 4; ++i) {
    auto r = planner.Next();
    ASSERT_TRUE(r.has_value());
    first.push_back(*r);
    Sample s;
    s.method = r->method;
    s.size_bytes = r->size_bytes;
    s.bytes = 1000;
    s.wall_ns = 1000;
    s.cpu_ns = 1000;
    planner.Record(s);
  }
  EXPECT_EQ(first[0].size_bytes, first[1].size_bytes);
  EXPECT_NE(first[0].method, first[1].method);
  EXPECT_EQ(first[2].size_bytes, first[3].size_bytes);
  EXPECT_GT(first[2].size_bytes, first[0].size_bytes);
  EXPECT_NE(first[0].method, first[2].method) << "order rotates by size";
}

TEST(SweepPlanner, RefinementKeepsMethodsInterleaved) {
  SimulatedHost host;
  const Calibration run = Calibrate(host, TwoMethods(), 8);
  ASSERT_GT(run.samples.size(), 36u);
  // After the coarse grid every refinement probe of zerocopy has its
  // baseline probe at the same size next to it.
  for (std::size_t i = 36; i + 1 < run.samples.size(); i += 2) {
    EXPECT_EQ(run.samples[i].size_bytes, run.samples[i + 1].size_bytes) << i;
    EXPECT_NE(run.samples[i].method, run.samples[i + 1].method) << i;
  }
}

// A second depth class's planner, seeded with the first class's samples,
// does not probe the baseline again where the seeds have it, and probes
// its zerocopy method at its own depth only at the sizes it was given.
TEST(SweepPlanner, ASeededClassReusesTheBaselinesAndKeepsToItsSizes) {
  SimulatedHost host;
  std::mt19937_64 rng(5);
  SweepPlanner first(TwoMethods());
  ProbeTheCoarseGrid(first, host, rng);

  PlannerOptions options = TwoMethods();
  options.depth = 4;
  const std::vector<std::uint64_t> grid = CoarseGrid(options);
  options.coarse_sizes[Method::kMsgZerocopy] = {grid.front(), grid[4], grid.back()};
  SweepPlanner second(options);
  second.Seed(first.samples());
  EXPECT_EQ(second.samples().size(), first.samples().size());
  std::vector<ProbeRequest> coarse;
  for (int i = 0; i < 6; ++i) {
    const auto request = second.Next();
    ASSERT_TRUE(request.has_value());
    coarse.push_back(*request);
    Sample sample = host.Probe(*request, rng);
    sample.depth = 4;
    second.Record(sample);
  }
  for (const ProbeRequest& r : coarse) {
    EXPECT_EQ(r.method, Method::kMsgZerocopy) << "the baseline is seeded at every grid size";
  }
  std::vector<std::uint64_t> sizes;
  for (const ProbeRequest& r : coarse) sizes.push_back(r.size_bytes);
  // Two rounds of the grid, each at the three sizes given.
  EXPECT_EQ(sizes, (std::vector<std::uint64_t>{grid.front(), grid[4], grid.back(), grid.front(),
                                               grid[4], grid.back()}));
  // The decision is the class's own: the seeded stream samples of the
  // zerocopy method do not count at depth 4. (They would, moved by the
  // class's cost per send, on a host whose senders are bound by one CPU:
  // class_offset_test.cc. The simulated host's CPU counts cores.)
  const Analysis analysis = second.Result();
  const auto& result = analysis.paths.at("default").methods.at(Method::kMsgZerocopy);
  std::size_t counted = 0;
  for (const SizeComparison& c : result.sizes) counted += c.zerocopy.samples;
  EXPECT_EQ(counted, 6u);
  ASSERT_TRUE(result.class_offset.has_value());
  EXPECT_NE(result.class_offset->rejected.find("of the wall time"), std::string::npos)
      << result.class_offset->rejected;
}

TEST(SweepPlanner, DropsUnsupportedMethodAfterOneProbe) {
  PlannerOptions options;
  options.methods = {Method::kCopy, Method::kMsgZerocopy, Method::kUringSend,
                     Method::kUringSendZc};
  SweepPlanner planner(options);
  std::mt19937_64 rng(9);
  SimulatedHost host;
  int uring_probes = 0;
  while (auto r = planner.Next()) {
    Sample s = host.Probe(*r, rng);
    if (r->method == Method::kUringSend || r->method == Method::kUringSendZc) {
      ++uring_probes;
      s.status = SampleStatus::kUnsupported;
      s.error = "io_uring_setup: EPERM (kernel.io_uring_disabled=2)";
    }
    planner.Record(s);
  }
  EXPECT_EQ(uring_probes, 2);
  const auto result = planner.Result().paths.at("default").methods;
  EXPECT_EQ(result.at(Method::kUringSendZc).reason, Reason::kUnsupported);
  EXPECT_NE(result.at(Method::kMsgZerocopy).verdict, Verdict::kInconclusive);
}

TEST(SweepPlanner, HonoursProbeCap) {
  PlannerOptions options = TwoMethods();
  options.max_probes = 7;
  const Calibration run = Calibrate(SimulatedHost{}, options, 1);
  EXPECT_EQ(run.probes, 7u);
}

TEST(SweepPlanner, EstimatedTotalBoundsWhatIsIssued) {
  PlannerOptions options;  // five methods
  SweepPlanner planner(options);
  const std::size_t first = planner.EstimatedTotal();
  EXPECT_EQ(first, 9u * 5 * 2 + 3 * 54) << "coarse grid plus each refinement budget";
  std::mt19937_64 rng(4);
  SimulatedHost host;
  for (Method m : {Method::kUringSend, Method::kUringSendZc, Method::kUringSendZcFixed}) {
    host.costs[m] = host.costs[m == Method::kUringSend ? Method::kCopy : Method::kMsgZerocopy];
  }
  while (auto r = planner.Next()) {
    EXPECT_LE(planner.issued(), planner.EstimatedTotal());
    planner.Record(host.Probe(*r, rng));
  }
  EXPECT_LE(planner.issued(), first);
}

TEST(SweepPlanner, CoarseGridIsGeometricAndEndsAtMax) {
  PlannerOptions options;
  options.methods = {Method::kCopy};
  options.min_size = 1000;
  options.max_size = 5000;
  options.repeats = 1;
  SweepPlanner planner(options);
  std::vector<std::uint64_t> sizes;
  while (auto r = planner.Next()) {
    sizes.push_back(r->size_bytes);
    Sample s;
    s.method = r->method;
    s.size_bytes = r->size_bytes;
    planner.Record(s);
  }
  EXPECT_EQ(sizes, (std::vector<std::uint64_t>{1000, 2000, 4000, 5000}));
}

// The first problem, as the error's message ("" when valid).
std::string Problem(const PlannerOptions& options) {
  const Result<void> valid = ValidatePlannerOptions(options);
  if (valid) return "";
  EXPECT_EQ(valid.error().code, Errc::kInvalidArgument);
  return valid.error().message;
}

TEST(ValidatePlannerOptions, NamesTheBadField) {
  PlannerOptions options;
  options.max_size = 10;
  EXPECT_NE(Problem(options).find("max_size"), std::string::npos);
  options = {};
  options.resolution = 0;
  EXPECT_NE(Problem(options).find("resolution"), std::string::npos);
  options = {};
  options.regret_resolution = -0.1;
  EXPECT_NE(Problem(options).find("regret_resolution"), std::string::npos);
  options = {};
  options.decision.traffic = {{4096, -1}};
  EXPECT_NE(Problem(options).find("traffic"), std::string::npos);
  EXPECT_EQ(Problem(PlannerOptions{}), "");
}

}  // namespace
}  // namespace zcal::calibrator::planner_test
