#include "zcal/calibrator/decision.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "sample_builders.h"

namespace zcal::calibrator {
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

TEST(Decide, FindsCleanCrossover) {
  const auto r = Decide(CleanCrossover(), kMzc, {});
  EXPECT_EQ(r.verdict, Verdict::kThreshold);
  ASSERT_TRUE(r.threshold_bytes.has_value());
  EXPECT_EQ(*r.threshold_bytes, 16384u);
  EXPECT_EQ(r.reason, Reason::kNone);
  EXPECT_EQ(r.baseline, kCopy);
  EXPECT_FALSE(r.baseline_substituted);
  EXPECT_FALSE(r.confidence.has_value()) << "one sample per size: unknown";
  ASSERT_EQ(r.sizes.size(), 6u);
  EXPECT_FALSE(r.sizes[2].zerocopy_wins);
  EXPECT_TRUE(r.sizes[3].zerocopy_wins);
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

TEST(Decide, ThresholdIsStartOfWinningTailWhenNonMonotone) {
  const auto samples = Table(kMzc, kCopy,
                             {{4096, 3000, 100, 3000, 80},
                              {8192, 5000, 80, 5000, 90},     // wins
                              {12288, 6000, 100, 6000, 95},   // loses
                              {16384, 8000, 70, 8000, 100},   // wins on
                              {32768, 9000, 55, 9000, 100}});
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.verdict, Verdict::kThreshold);
  EXPECT_EQ(r.threshold_bytes.value_or(0), 16384u);
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
  EXPECT_EQ(r.threshold_bytes.value_or(0), 32768u);
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
  ASSERT_TRUE(r.confidence.has_value());
  EXPECT_LT(*r.confidence, 0.5);
}

TEST(Decide, RepeatedCleanSamplesGiveFullConfidence) {
  std::vector<Sample> samples;
  for (int i = 0; i < 3; ++i) {
    for (const Sample& s : CleanCrossover()) {
      Sample jittered = s;
      jittered.cpu_ns += static_cast<std::uint64_t>(i) * 1'000'000;
      samples.push_back(jittered);
    }
  }
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.verdict, Verdict::kThreshold);
  EXPECT_EQ(r.threshold_bytes.value_or(0), 16384u);
  ASSERT_TRUE(r.confidence.has_value());
  EXPECT_DOUBLE_EQ(*r.confidence, 1.0);
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

}  // namespace
}  // namespace zcal::calibrator
