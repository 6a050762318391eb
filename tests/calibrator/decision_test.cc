#include "zcal/calibrator/decision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "sample_builders.h"
#include "zcal/zcal.h"

namespace zcal::calibrator::decision_test {
namespace {

using testing::Pair;
using testing::Row;
using testing::Table;

constexpr Method kMzc = Method::kMsgZerocopy;
constexpr Method kCopy = Method::kCopy;

// Throughput equal; zerocopy's CPU/byte falls below copy's from 16 KiB on.
std::vector<Sample> CleanCrossover() {
  return Table(kMzc, kCopy,
               {{1024, 1000, 100, 1000, 60},
                {4096, 3000, 100, 3000, 80},
                {8192, 5000, 100, 5000, 90},
                {16384, 8000, 70, 8000, 100},
                {32768, 9000, 55, 9000, 100},
                {65536, 9500, 45, 9500, 100}});
}

// The clean crossover three times, each repeat's CPU a little apart (so
// the spread is small but not zero).
std::vector<Sample> CleanCrossoverThreeTimes() {
  std::vector<Sample> samples;
  for (int i = 0; i < 3; ++i) {
    for (const Sample& s : CleanCrossover()) {
      Sample jittered = s;
      jittered.cpu_ns += static_cast<std::uint64_t>(i) * 1'000'000;
      samples.push_back(jittered);
    }
  }
  return samples;
}

DecisionOptions PerSizeOnly() {
  DecisionOptions options;
  options.use_model = false;
  return options;
}

// The model places the threshold between the probed sizes where the fitted
// curves cross; the per-size rule can only name a probed size.
TEST(Decide, FindsCleanCrossover) {
  const auto r = Decide(CleanCrossover(), kMzc, {});
  EXPECT_EQ(r.verdict, Verdict::kThreshold);
  EXPECT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  ASSERT_TRUE(r.threshold_bytes.has_value());
  EXPECT_GT(*r.threshold_bytes, 8192u) << "zerocopy loses at 8 KiB";
  EXPECT_LT(*r.threshold_bytes, 16384u) << "and wins clearly at 16 KiB";
  ASSERT_TRUE(r.interval && r.interval->high_bytes);
  EXPECT_LE(r.interval->low_bytes, *r.threshold_bytes);
  EXPECT_GE(*r.interval->high_bytes, *r.threshold_bytes);
  EXPECT_DOUBLE_EQ(r.interval->level, 0.95);
  EXPECT_EQ(r.reason, Reason::kNone);
  EXPECT_EQ(r.baseline, kCopy);
  EXPECT_FALSE(r.baseline_substituted);
  // One sample per size: the spread comes from the scatter around the
  // curves (the residual bootstrap), so even a pasted table has one.
  ASSERT_TRUE(r.confidence.has_value());
  ASSERT_EQ(r.sizes.size(), 6u);
  EXPECT_FALSE(r.sizes[2].zerocopy_wins);
  EXPECT_TRUE(r.sizes[3].zerocopy_wins);
  EXPECT_EQ(r.tail_threshold_bytes, 16384u);
  EXPECT_TRUE(r.wins_below.empty());
  EXPECT_TRUE(r.losses_above.empty());
  ASSERT_TRUE(r.regret.has_value());
  EXPECT_LT(*r.regret, *r.regret_never);
  EXPECT_LT(*r.regret, *r.regret_always);

  const auto per_size = Decide(CleanCrossover(), kMzc, PerSizeOnly());
  EXPECT_EQ(per_size.rule, Rule::kPerSize);
  EXPECT_EQ(per_size.threshold_bytes.value_or(0), 16384u);
  EXPECT_FALSE(per_size.confidence.has_value()) << "one sample per size: unknown";
  EXPECT_EQ(per_size.interval->low_bytes, 8192u);
  EXPECT_EQ(per_size.interval->high_bytes.value_or(0), 16384u);
  EXPECT_DOUBLE_EQ(per_size.interval->level, 0.0);
  EXPECT_FALSE(per_size.regret_excess.has_value()) << "no noise estimate, no bootstrap";
}

TEST(Decide, ReportsNeverWhenZerocopyNeverWins) {
  const auto samples = Table(kMzc, kCopy,
                             {{1024, 1000, 120, 1000, 60},
                              {16384, 8000, 110, 8000, 100},
                              {65536, 9000, 105, 9500, 100}});
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.verdict, Verdict::kNever);
  EXPECT_EQ(r.reason, Reason::kSlower);
  EXPECT_FALSE(r.threshold_bytes.has_value());
}

TEST(Decide, ReportsAlwaysWhenZerocopyWinsAtSmallestSize) {
  const auto samples = Table(kMzc, kCopy,
                             {{1024, 1000, 50, 1000, 60},
                              {16384, 8000, 50, 8000, 100},
                              {65536, 9500, 40, 9500, 100}});
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.verdict, Verdict::kAlways);
  ASSERT_TRUE(r.threshold_bytes.has_value());
  EXPECT_EQ(*r.threshold_bytes, 1024u);
}

// This table once encoded the winning-tail rule ("from 16 KiB, where zerocopy
// wins at every larger size"). Under the least-cost rule its answer follows
// from its costs: with weights uniform in log size, starting at 8 KiB pays
// zerocopy's excess at 12 KiB (CPU per byte 0.1667 against 0.1583, 8.6 %
// with the margin) over that size's log cell (0.50 octave), while starting
// at 16 KiB gives up zerocopy's saving at 8 KiB (0.160 against 0.180, 9.1 %)
// over its cell (0.79 octave): 8 KiB costs least. The residuals also show
// the structure no a + b/size follows, so the model is rejected and the
// per-size comparisons decide.
TEST(Decide, NonMonotoneCostsRejectTheModelAndTakeTheLeastCostThreshold) {
  const auto samples = Table(kMzc, kCopy,
                             {{4096, 3000, 100, 3000, 80},
                              {8192, 5000, 80, 5000, 90},     // wins
                              {12288, 6000, 100, 6000, 95},   // loses
                              {16384, 8000, 70, 8000, 100},   // wins on
                              {32768, 9000, 55, 9000, 100}});
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.rule, Rule::kPerSize);
  EXPECT_EQ(r.rule_detail.rfind("model rejected: ", 0), 0u) << r.rule_detail;
  ASSERT_TRUE(r.model.has_value()) << "the rejected fit is still reported";
  EXPECT_FALSE(r.model->accepted);
  EXPECT_EQ(r.verdict, Verdict::kThreshold);
  EXPECT_EQ(r.threshold_bytes.value_or(0), 8192u);
  EXPECT_EQ(r.tail_threshold_bytes, 16384u) << "the winning tail, as a diagnostic";
  EXPECT_TRUE(r.wins_below.empty());
  EXPECT_EQ(r.losses_above, (std::vector<std::uint64_t>{12288}));
  // The regret of 8 KiB is 12 KiB's excess over its share of log size.
  const double cell_12k = std::log2(16384.0 / 12288) / 2 + std::log2(12288.0 / 8192) / 2;
  const double share = cell_12k / std::log2(32768.0 / 4096);
  EXPECT_NEAR(*r.regret, share * ((100.0 / 6000) / (95.0 / 6000) / 0.97 - 1), 1e-9);
  EXPECT_NEAR(ExcessCost(r.sizes, 16384, {}), *r.regret_never - 0, 1) << "defined";
  EXPECT_GT(ExcessCost(r.sizes, 16384, {}), *r.regret);
}

// Where the traffic goes decides what a dip costs: all bytes at 12 KiB make
// zerocopy's loss there the only thing that matters.
TEST(Decide, TrafficHistogramWeighsTheSizes) {
  const auto samples = Table(kMzc, kCopy,
                             {{4096, 3000, 100, 3000, 80},
                              {8192, 5000, 80, 5000, 90},
                              {12288, 6000, 100, 6000, 95},
                              {16384, 8000, 70, 8000, 100},
                              {32768, 9000, 55, 9000, 100}});
  DecisionOptions at_12k = PerSizeOnly();
  at_12k.traffic = {{12288, 1.0}, {32768, 1.0}};
  auto r = Decide(samples, kMzc, at_12k);
  EXPECT_EQ(r.threshold_bytes.value_or(0), 16384u);
  EXPECT_EQ(r.regret.value_or(1), 0.0);
  EXPECT_EQ(r.wins_below, (std::vector<std::uint64_t>{8192})) << "the price, listed";
  DecisionOptions at_8k = PerSizeOnly();
  at_8k.traffic = {{8192, 3.0}, {12288, 1.0}};
  EXPECT_EQ(Decide(samples, kMzc, at_8k).threshold_bytes.value_or(0), 8192u);
  // Bins outside the probed range count at its ends: all traffic at 4 KiB,
  // where zerocopy loses. Every threshold above costs nothing then; the
  // first where zerocopy's cost actually crosses below the baseline's is
  // the one published.
  DecisionOptions small = PerSizeOnly();
  small.traffic = {{100, 1.0}};
  r = Decide(samples, kMzc, small);
  EXPECT_EQ(r.threshold_bytes.value_or(0), 8192u);
  EXPECT_EQ(r.regret.value_or(1), 0.0);
  EXPECT_GT(r.regret_always.value_or(0), 0.0);
}

TEST(Decide, TrafficHistogramMovesTheModelThreshold) {
  // A clean crossover near 12 KiB on the model: traffic only above it or
  // only below it leaves the crossing where it is (the least-cost threshold
  // is where the curves cross, whatever the weights, when they cross once).
  std::vector<Sample> samples;
  for (std::uint64_t size = 1024; size <= 262144; size *= 2) {
    const double s = static_cast<double>(size);
    const double zc = 0.12 + 3500 / s;
    const double copy = 0.30 + 1500 / s;
    samples.push_back(Row(kMzc, size, 5000, 5000e6 * zc / 1e7));
    samples.push_back(Row(kCopy, size, 5000, 5000e6 * copy / 1e7));
  }
  const auto uniform = Decide(samples, kMzc, {});
  DecisionOptions weighted;
  weighted.traffic = {{4096, 1}, {65536, 5}};
  const auto r = Decide(samples, kMzc, weighted);
  ASSERT_EQ(uniform.rule, Rule::kModel);
  EXPECT_EQ(r.threshold_bytes, uniform.threshold_bytes);
  EXPECT_NE(r.regret_never, uniform.regret_never) << "but the regrets are weighed anew";
}

// A CPU-bound sender: both burn a whole core; zerocopy moves more bytes
// from 32 KiB on, and below that moves fewer bytes at a similar CPU/byte.
std::vector<Sample> CpuBound() {
  return Table(kMzc, kCopy,
               {{8192, 4000, 100, 4400, 100},
                {16384, 5200, 100, 5500, 100},
                {32768, 7000, 100, 6000, 100},
                {65536, 9000, 100, 6500, 100}});
}

TEST(Decide, ThroughputObjectiveDecidesCpuBoundCase) {
  DecisionOptions throughput;
  throughput.objective = Objective::kThroughput;
  const auto r = Decide(CpuBound(), kMzc, throughput);
  EXPECT_EQ(r.verdict, Verdict::kThreshold);
  EXPECT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  // Fewer bytes at 16 KiB (5200 against 5500 MB/s), 17 % more at 32 KiB:
  // the fitted curves cross in between.
  EXPECT_GT(r.threshold_bytes.value_or(0), 8192u);
  EXPECT_LE(r.threshold_bytes.value_or(0), 32768u);
  ASSERT_TRUE(r.model.has_value());
  EXPECT_FALSE(r.model->zerocopy.line_rate_bytes_per_second.has_value())
      << "CPU-bound at every size: no line rate reached";
  EXPECT_NEAR(r.model->zerocopy.cpu_bound_cores.value_or(0), 1.0, 0.02);
  throughput.use_model = false;
  EXPECT_EQ(Decide(CpuBound(), kMzc, throughput).threshold_bytes.value_or(0), 32768u);
}

TEST(Decide, EfficiencyRejectsThroughputLossBeyondTolerance) {
  // CPU/byte 5 % lower but throughput 2.5 % lower: no win at 2 % tolerance,
  // a win at 3 %.
  const auto samples = Table(kMzc, kCopy, {{65536, 9750, 95, 10000, 102.6}});
  EXPECT_EQ(Decide(samples, kMzc, {}).verdict, Verdict::kNever);
  DecisionOptions lenient;
  lenient.tolerance = 0.03;
  EXPECT_EQ(Decide(samples, kMzc, lenient).verdict, Verdict::kAlways);
}

TEST(Decide, CpuObjectiveIgnoresThroughput) {
  DecisionOptions cpu;
  cpu.objective = Objective::kCpu;
  // Half the throughput but a quarter of the CPU per byte.
  const auto samples = Table(kMzc, kCopy, {{65536, 5000, 25, 10000, 100}});
  EXPECT_EQ(Decide(samples, kMzc, cpu).verdict, Verdict::kAlways);
  EXPECT_EQ(Decide(samples, kMzc, {}).verdict, Verdict::kNever);
}

TEST(Decide, ReportsKernelCopiedWhenHalfTheCompletionsWereCopied) {
  std::vector<Sample> samples;
  for (std::uint64_t size : {1024u, 65536u}) {
    samples.push_back(Row(kMzc, size, 9000, 10, /*copied_pct=*/100));
    samples.push_back(Row(kCopy, size, 9000, 100));
  }
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.verdict, Verdict::kNever);
  EXPECT_EQ(r.reason, Reason::kKernelCopied);
  EXPECT_EQ(r.sizes.size(), 2u) << "the measurements are still reported";
}

TEST(Decide, BelowHalfCopiedIsJudgedOnTheNumbers) {
  std::vector<Sample> samples = {Row(kMzc, 65536, 9000, 10, 49),
                                 Row(kCopy, 65536, 9000, 100)};
  EXPECT_EQ(Decide(samples, kMzc, {}).verdict, Verdict::kAlways);
}

TEST(Decide, ReportsInconclusiveWhenNoiseExceedsDifference) {
  // Five repeats per size; CPU/byte of either method scatters by +-40 %
  // around nearly the same value.
  std::vector<Sample> samples;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(0.6, 1.4);
  for (std::uint64_t size : {4096u, 16384u, 65536u}) {
    for (int i = 0; i < 5; ++i) {
      samples.push_back(Row(kMzc, size, 8000 * noise(rng), 95 * noise(rng)));
      samples.push_back(Row(kCopy, size, 8000 * noise(rng), 100 * noise(rng)));
    }
  }
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, Reason::kNoisy);
  // Three sizes are too few to fit curves to: the per-size rule decides.
  EXPECT_EQ(r.rule, Rule::kPerSize);
  EXPECT_EQ(r.rule_detail, "too few sizes for the cost model: 3 compared (it needs 4)");
  ASSERT_TRUE(r.confidence.has_value());
  EXPECT_LT(*r.confidence, 0.5);
}

TEST(Decide, ModelIsInconclusiveWhenItsReplicatesDisagree) {
  // Zerocopy saves exactly the margin (3 %) at every size, with +-40 %
  // noise: each sample pair shares its noise, so the fitted curves sit
  // exactly on the bar, and the bootstrap replicates (which draw each
  // method's scatter on its own) fall on either side of it.
  std::vector<Sample> samples;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(0.6, 1.4);
  for (std::uint64_t size = 4096; size <= 131072; size *= 2) {
    for (int i = 0; i < 5; ++i) {
      const double mbps = 8000 * noise(rng);
      const double cpu = noise(rng);
      samples.push_back(Row(kMzc, size, mbps, 97 * cpu));
      samples.push_back(Row(kCopy, size, mbps, 100 * cpu));
    }
  }
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  EXPECT_EQ(r.verdict, Verdict::kInconclusive) << r.detail;
  EXPECT_EQ(r.reason, Reason::kNoisy);
  EXPECT_FALSE(r.threshold_bytes.has_value());
  // The model's confidence is the share of bootstrap replicates that agree
  // on whether zerocopy pays off at all; below 0.8 is inconclusive.
  ASSERT_TRUE(r.confidence.has_value());
  EXPECT_LT(*r.confidence, 0.8);
  EXPECT_NE(r.detail.find("would have been"), std::string::npos);
}

TEST(Decide, AClearWinningTailSettlesWhatTheNoiseLeavesInDoubt) {
  // At the two smaller sizes zerocopy costs 5 % more, with both methods
  // scattering by +-40 % (each repeat's pair shares its scatter, so the
  // medians keep the 5 %: a loss, but not beyond the noise);
  // from 64 KiB on zerocopy takes a third of copy's CPU per byte, +-5 %.
  // Where below 64 KiB zerocopy starts to pay is in doubt, that it pays
  // from 64 KiB on is not: the threshold is 64 KiB, not inconclusive. The
  // per-size rule decides (the model's own case is a real table's,
  // RealTables.ANoisyTableSettlesOnItsClearWinningTail).
  std::vector<Sample> samples;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> wide(0.6, 1.4);
  std::uniform_real_distribution<double> narrow(0.95, 1.05);
  for (std::uint64_t size : {4096u, 16384u}) {
    for (int i = 0; i < 5; ++i) {
      const double mbps = 8000 * wide(rng);
      const double cpu = wide(rng);
      samples.push_back(Row(kMzc, size, mbps, 105 * cpu));
      samples.push_back(Row(kCopy, size, mbps, 100 * cpu));
    }
  }
  for (std::uint64_t size : {65536u, 131072u, 262144u}) {
    for (int i = 0; i < 5; ++i) {
      samples.push_back(Row(kMzc, size, 9000 * narrow(rng), 33 * narrow(rng)));
      samples.push_back(Row(kCopy, size, 9000 * narrow(rng), 100 * narrow(rng)));
    }
  }
  DecisionOptions per_size;
  per_size.use_model = false;
  const auto r = Decide(samples, kMzc, per_size);
  EXPECT_EQ(r.rule, Rule::kPerSize);
  ASSERT_TRUE(r.measured_bracket && r.measured_bracket->at_most_bytes);
  EXPECT_EQ(*r.measured_bracket->at_most_bytes, 65536u);
  EXPECT_EQ(r.verdict, Verdict::kThreshold) << r.detail;
  EXPECT_EQ(r.reason, Reason::kNone);
  EXPECT_EQ(r.threshold_bytes.value_or(0), 65536u);
  EXPECT_NE(r.detail.find("in doubt"), std::string::npos) << r.detail;
  EXPECT_NE(r.rule_detail.find("settled on the winning tail"), std::string::npos);
  // The confidence is still the placement's; what the least-cost
  // threshold may cost over the best one no longer describes this one.
  ASSERT_TRUE(r.confidence.has_value());
  EXPECT_LT(*r.confidence, 0.8);
  EXPECT_FALSE(r.regret_excess.has_value());
  ASSERT_TRUE(r.regret.has_value());
  EXPECT_DOUBLE_EQ(*r.regret, ExcessCost(r.sizes, 65536u, per_size));
  // The planner asks without settling: it probes where the doubt lies.
  per_size.settle_on_winning_tail = false;
  const auto doubt = Decide(samples, kMzc, per_size);
  EXPECT_EQ(doubt.verdict, Verdict::kInconclusive);
  EXPECT_EQ(doubt.reason, Reason::kNoisy);
}

TEST(Decide, RepeatedCleanSamplesGiveFullConfidence) {
  const std::vector<Sample> samples = CleanCrossoverThreeTimes();
  // The hand-made table is CPU-bound up to 8 KiB and then not: no
  // a + b/size follows that, which one sample per size cannot show but
  // three tight repeats do. The model is rejected and the per-size
  // comparisons, all decisive, give 16 KiB.
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.rule, Rule::kPerSize);
  EXPECT_EQ(r.rule_detail.rfind("model rejected: msg_zerocopy ", 0), 0u)
      << r.rule_detail;
  EXPECT_EQ(r.verdict, Verdict::kThreshold);
  EXPECT_EQ(r.threshold_bytes.value_or(0), 16384u);
  ASSERT_TRUE(r.confidence.has_value());
  EXPECT_DOUBLE_EQ(*r.confidence, 1.0);
}

// The per-size rule reports what its threshold may cost over the best one
// (regret_excess, the planner's second stopping measure) from a bootstrap
// of each size's own noise: nothing where every comparison is clear, more
// where the costs around the threshold are within their noise.
TEST(Decide, PerSizeRegretExcessComesFromEachSizesNoise) {
  const std::vector<Sample> clear = CleanCrossoverThreeTimes();
  const auto sharp = Decide(clear, kMzc, PerSizeOnly());
  EXPECT_EQ(sharp.threshold_bytes.value_or(0), 16384u);
  ASSERT_TRUE(sharp.regret_excess.has_value());
  EXPECT_LT(*sharp.regret_excess, 1e-6);

  // Zerocopy's CPU per byte within a few percent of copy's over 8-32 KiB,
  // +-15 % noise per probe, 3 repeats: which of those sizes is the best
  // threshold is a matter of chance, and the excess says so.
  std::vector<Sample> flat;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> noise(0.85, 1.15);
  const std::pair<std::uint64_t, double> zc_cpu[] = {
      {2048, 130}, {4096, 115}, {8192, 99}, {12288, 96}, {16384, 95}, {24576, 93},
      {32768, 90}, {65536, 70}};
  for (const auto& [size, cpu] : zc_cpu) {
    for (int i = 0; i < 3; ++i) {
      flat.push_back(Row(kMzc, size, 8000, cpu * noise(rng)));
      flat.push_back(Row(kCopy, size, 8000, 100 * noise(rng)));
    }
  }
  const auto unsure = Decide(flat, kMzc, PerSizeOnly());
  ASSERT_TRUE(unsure.regret_excess.has_value());
  EXPECT_GT(*unsure.regret_excess, 0.001);
  EXPECT_EQ(Decide(flat, kMzc, PerSizeOnly()).regret_excess, unsure.regret_excess)
      << "seeded from the samples: the same figure every time";
}

TEST(Decide, CopyStandsInForMissingUringSend) {
  const auto samples = Table(Method::kUringSendZc, kCopy,
                             {{65536, 9500, 40, 9500, 100}});
  const auto r = Decide(samples, Method::kUringSendZc, {});
  EXPECT_EQ(r.baseline, kCopy);
  EXPECT_TRUE(r.baseline_substituted);
  EXPECT_EQ(r.verdict, Verdict::kAlways);
}

TEST(Decide, UringMethodsAreJudgedAgainstUringSend) {
  auto samples = Table(Method::kUringSendZcFixed, Method::kUringSend,
                       {{65536, 9500, 40, 9500, 100}});
  // A copy that is far cheaper must not be used when uring_send exists.
  samples.push_back(Row(kCopy, 65536, 9500, 10));
  const auto r = Decide(samples, Method::kUringSendZcFixed, {});
  EXPECT_EQ(r.baseline, Method::kUringSend);
  EXPECT_FALSE(r.baseline_substituted);
  EXPECT_EQ(r.verdict, Verdict::kAlways);
}

TEST(Decide, UnsupportedMethodCarriesTheProbeReason) {
  Sample s;
  s.method = Method::kUringSendZcFixed;
  s.size_bytes = 4096;
  s.status = SampleStatus::kUnsupported;
  s.error = "registered buffers exceed RLIMIT_MEMLOCK (ENOMEM)";
  std::vector<Sample> samples = {s, Row(Method::kUringSend, 4096, 1000, 50)};
  const auto r = Decide(samples, Method::kUringSendZcFixed, {});
  EXPECT_EQ(r.verdict, Verdict::kNever);
  EXPECT_EQ(r.reason, Reason::kUnsupported);
  EXPECT_EQ(r.detail, s.error);
}

TEST(Decide, FailedProbesGiveNeverFailed) {
  Sample s;
  s.method = kMzc;
  s.size_bytes = 4096;
  s.status = SampleStatus::kFailed;
  s.error = "peer 192.0.2.1:7 closed the connection";
  std::vector<Sample> samples = {s, Row(kCopy, 4096, 1000, 50)};
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.reason, Reason::kFailed);
  EXPECT_EQ(r.detail, s.error);
}

TEST(Analyze, GroupsByPathAndDecidesEachZerocopyMethod) {
  auto a = CleanCrossover();
  auto b = Table(Method::kUringSendZc, Method::kUringSend,
                 {{65536, 9500, 40, 9500, 100}});
  for (Sample& s : b) s.path = "peer-a";
  a.insert(a.end(), b.begin(), b.end());
  const Analysis analysis = Analyze(a, {});
  ASSERT_EQ(analysis.paths.size(), 2u);
  EXPECT_EQ(analysis.paths.at("default").methods.size(), 1u);
  EXPECT_EQ(analysis.paths.at("peer-a").methods.at(Method::kUringSendZc).verdict,
            Verdict::kAlways);
}

TEST(Names, RoundTrip) {
  for (Method m : kAllMethods) EXPECT_EQ(ParseMethod(MethodName(m)), m);
  EXPECT_FALSE(ParseMethod("sendfile").has_value());
  EXPECT_EQ(ParseObjective("cpu"), Objective::kCpu);
  EXPECT_FALSE(ParseObjective("fast").has_value());
}

// One table of names: what the calibrator writes (CSV, JSON, the state
// file) is what a reader of the segment prints for the same code.
TEST(Names, AreTheSegmentReadersNamesOfTheSameCodes) {
  for (Method m : kAllMethods) {
    EXPECT_EQ(MethodName(m), zcal_method_name(static_cast<std::uint8_t>(m)));
  }
  EXPECT_EQ(MethodName(Method::kUringSendZcFixed), "uring_send_zc_fixed");
  for (Verdict v : {Verdict::kThreshold, Verdict::kAlways, Verdict::kNever,
                    Verdict::kInconclusive}) {
    EXPECT_EQ(VerdictName(v), zcal_verdict_name(static_cast<std::uint8_t>(v)));
    EXPECT_EQ(ParseVerdict(VerdictName(v)), v);
  }
  for (Reason r : {Reason::kNone, Reason::kSlower, Reason::kKernelCopied, Reason::kUnsupported,
                   Reason::kFailed, Reason::kNoisy, Reason::kNoBaseline}) {
    EXPECT_EQ(ReasonName(r), zcal_reason_name(static_cast<std::uint8_t>(r)));
    EXPECT_EQ(ParseReason(ReasonName(r)), r);
  }
  EXPECT_EQ(ReasonName(Reason::kNone), "");
  EXPECT_EQ(MethodName(static_cast<Method>(200)), "unknown");
}

// Each depth class is judged on its own zerocopy samples against every
// baseline sample: at depth 1 zerocopy costs more per byte, so its
// threshold lies higher than the stream's.
TEST(Analyze, DecidesEachDepthClassOnItsOwnSamplesAgainstAllBaselines) {
  std::vector<Sample> samples = CleanCrossoverThreeTimes();  // stream
  for (const Sample& s : CleanCrossoverThreeTimes()) {
    if (s.method != kMzc) continue;
    Sample deep1 = s;
    deep1.depth = 1;
    // Twice the fixed cost per send: the crossover moves up.
    deep1.cpu_ns = s.cpu_ns + static_cast<std::uint64_t>(8.0e9 * 1024 / static_cast<double>(s.size_bytes));
    samples.push_back(deep1);
  }
  EXPECT_EQ(DepthsOf(samples), (std::vector<std::uint32_t>{1, kStreamDepth}));
  EXPECT_EQ(SamplesAtDepth(samples, 1).size(), 36u);  // 18 of depth 1, 18 copy
  const Analysis stream = Analyze(samples, PerSizeOnly());
  const Analysis one = Analyze(samples, PerSizeOnly(), 1);
  const MethodResult& s = stream.paths.at("default").methods.at(kMzc);
  const MethodResult& d = one.paths.at("default").methods.at(kMzc);
  ASSERT_EQ(s.verdict, Verdict::kThreshold);
  EXPECT_EQ(s.threshold_bytes, Analyze(CleanCrossoverThreeTimes(), PerSizeOnly())
                                   .paths.at("default").methods.at(kMzc).threshold_bytes)
      << "samples of another class change nothing of the stream's";
  ASSERT_TRUE(d.verdict == Verdict::kThreshold || d.verdict == Verdict::kNever);
  if (d.verdict == Verdict::kThreshold) {
    EXPECT_GT(d.threshold_bytes, s.threshold_bytes);
  }
  EXPECT_EQ(DepthsOf(CleanCrossover()), (std::vector<std::uint32_t>{kStreamDepth}));
}

}  // namespace
}  // namespace zcal::calibrator::decision_test
