// The host's speed within one calibration (drift.h; docs/calibrator.md,
// "When the host's speed moves"): measured from the (method, depth, size)
// probed more than once, the samples put on one scale where it moved, and
// left alone where it did not.
#include "drift.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sample_builders.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/planner.h"

namespace zcal::calibrator::drift_test {
namespace {

using detail::CorrectDrift;
using detail::kDriftBlock;

constexpr Method kMzc = Method::kMsgZerocopy;
constexpr Method kCopy = Method::kCopy;

// The CPU-bound host of sample_builders.h (stream crossover 13182 bytes),
// and at depth 4 a further 600 ns a send for reaping its completions:
// with the 3 % margin depth 4 crosses over at 20974 bytes.
constexpr auto CopyNs = testing::CpuBoundCopyNs;
constexpr auto StreamZcNs = testing::CpuBoundStreamZcNs;
double Depth4ZcNs(double size) { return StreamZcNs(size) + 600; }
constexpr double kDepth4Crossover = 20974;

const std::vector<std::uint64_t> kGrid = {1024, 2048, 4096, 8192, 16384, 32768, 65536};

// The samples of a calibration as its probes ran: each probe one second at
// `speed` times the host's cost a send (a slower host costs more).
class ProbeRun {
 public:
  void Probe(Method method, std::uint64_t size, std::uint32_t depth, double ns_per_send) {
    // Alternating +-1 %: repeats that are not identical.
    const double jitter = 1 + 0.01 * ((samples.size() % 3) - 1.0);
    Sample s = testing::CpuBoundProbe(method, size, depth, ns_per_send * speed * jitter);
    s.seq = samples.size();
    samples.push_back(s);
  }
  // The stream class's coarse grid: copy and zerocopy back to back.
  void StreamPass() {
    for (std::uint64_t size : kGrid) {
      const auto s = static_cast<double>(size);
      Probe(kCopy, size, kStreamDepth, CopyNs(s));
      Probe(kMzc, size, kStreamDepth, StreamZcNs(s));
    }
  }
  // Depth 4's own probes, each size twice.
  void Depth4Pass() {
    for (int r = 0; r < 2; ++r) {
      for (std::uint64_t size : kGrid) Probe(kMzc, size, 4, Depth4ZcNs(static_cast<double>(size)));
    }
  }

  double speed = 1.0;
  std::vector<Sample> samples;
};

// Three passes of the stream class, the host a quarter faster from the
// third on, and depth 4 probed after it: as a calibration on this VM ran
// when a neighbour left (2026-12-07).
ProbeRun SteppedRun() {
  ProbeRun run;
  run.StreamPass();
  run.StreamPass();
  run.speed = 0.75;
  run.StreamPass();
  run.Depth4Pass();
  return run;
}

std::optional<std::uint64_t> Depth4Threshold(const std::vector<Sample>& samples) {
  const Analysis a = Analyze(samples, {}, 4);
  return a.paths.at("discard").methods.at(kMzc).threshold_bytes;
}

// Each sample's cost a send over the host's at the first speed: one
// factor for all where they are on one scale.
std::vector<double> OverTruth(const std::vector<Sample>& samples) {
  std::vector<double> out;
  for (const Sample& s : samples) {
    const auto size = static_cast<double>(s.size_bytes);
    const double truth = s.method == kCopy              ? CopyNs(size)
                         : s.depth == kStreamDepth        ? StreamZcNs(size)
                                                          : Depth4ZcNs(size);
    out.push_back(static_cast<double>(s.cpu_ns) / (static_cast<double>(s.bytes) / size) / truth);
  }
  return out;
}

TEST(HostDrift, PutsTheSamplesOfAHostThatSpedUpOnOneScale) {
  const ProbeRun run = SteppedRun();
  std::vector<Sample> samples = run.samples;
  const auto drift = CorrectDrift(samples);
  ASSERT_TRUE(drift);
  EXPECT_TRUE(drift->applied);
  EXPECT_EQ(drift->samples, run.samples.size());
  EXPECT_NEAR(drift->cpu_high / drift->cpu_low, 1 / 0.75, 0.03);
  EXPECT_NEAR(drift->wall_high / drift->wall_low, 1 / 0.75, 0.03);
  // Before, two levels a quarter apart; after, one within the jitter (+-1 %)
  // and the levels' own (medians of jittered samples).
  const std::vector<double> before = OverTruth(run.samples);
  const std::vector<double> after = OverTruth(samples);
  EXPECT_GT(*std::max_element(before.begin(), before.end()) /
                *std::min_element(before.begin(), before.end()),
            1.3);
  EXPECT_LT(*std::max_element(after.begin(), after.end()) /
                *std::min_element(after.begin(), after.end()),
            1.06);
}

TEST(HostDrift, ABlockOfAClassesOwnProbesTakesTheLevelBeforeIt) {
  // The stream class twice, a third time and two more pairs a quarter
  // faster (filling the third block), then depth 4 once a size in a block
  // of its own: none of its sizes was probed in another block.
  ProbeRun run;
  run.StreamPass();
  run.StreamPass();
  run.speed = 0.75;
  run.StreamPass();
  for (std::uint64_t size : {8192, 16384, 32768}) {
    run.Probe(kCopy, size, kStreamDepth, CopyNs(static_cast<double>(size)));
    run.Probe(kMzc, size, kStreamDepth, StreamZcNs(static_cast<double>(size)));
  }
  ASSERT_EQ(run.samples.size(), 3 * kDriftBlock);
  for (std::uint64_t size : kGrid) run.Probe(kMzc, size, 4, Depth4ZcNs(static_cast<double>(size)));
  std::vector<Sample> samples = run.samples;
  const auto drift = CorrectDrift(samples);
  ASSERT_TRUE(drift);
  EXPECT_EQ(drift->samples, 3 * kDriftBlock + kGrid.size());
  EXPECT_EQ(drift->linked, 3 * kDriftBlock);
  ASSERT_TRUE(drift->applied);
  const std::vector<double> after = OverTruth(samples);
  EXPECT_LT(*std::max_element(after.begin(), after.end()) /
                *std::min_element(after.begin(), after.end()),
            1.06);
}

TEST(HostDrift, KeepsADepthClassProbedAfterTheStepAboveTheStream) {
  // Compared with baselines probed before the step, depth 4's probes cost
  // what the stream's did: the class came out at the stream's threshold.
  const ProbeRun run = SteppedRun();
  std::vector<Sample> unordered = run.samples;
  for (Sample& s : unordered) s.seq.reset();
  const auto before = Depth4Threshold(unordered);
  ASSERT_TRUE(before);
  EXPECT_LT(static_cast<double>(*before), kDepth4Crossover / 1.125);
  // On one scale, where its costs put it.
  const auto after = Depth4Threshold(run.samples);
  ASSERT_TRUE(after);
  EXPECT_NEAR(static_cast<double>(*after) / kDepth4Crossover, 1.0, 0.125);
  const Analysis a = Analyze(run.samples, {}, 4);
  ASSERT_TRUE(a.paths.at("discard").drift);
  EXPECT_TRUE(a.paths.at("discard").drift->applied);
  DecisionOptions off;
  off.correct_drift = false;
  EXPECT_FALSE(Analyze(run.samples, off, 4).paths.at("discard").drift);
}

TEST(HostDrift, LeavesTheSamplesOfASteadyHostAlone) {
  ProbeRun run;
  run.StreamPass();
  run.StreamPass();
  run.StreamPass();
  run.Depth4Pass();
  std::vector<Sample> samples = run.samples;
  const auto drift = CorrectDrift(samples);
  ASSERT_TRUE(drift);
  EXPECT_FALSE(drift->applied);
  EXPECT_LT(drift->cpu_high / drift->cpu_low, 1.05);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(samples[i].cpu_ns, run.samples[i].cpu_ns);
    EXPECT_EQ(samples[i].wall_ns, run.samples[i].wall_ns);
  }
}

TEST(HostDrift, NeedsEverySamplesPlaceInTheOrder) {
  ProbeRun run = SteppedRun();
  run.samples[5].seq.reset();
  std::vector<Sample> samples = run.samples;
  EXPECT_FALSE(CorrectDrift(samples));
  for (std::size_t i = 0; i < samples.size(); ++i) {
    EXPECT_EQ(samples[i].cpu_ns, run.samples[i].cpu_ns);
  }
  // A failed probe has no costs to measure and needs none.
  ProbeRun failed = SteppedRun();
  Sample refused;
  refused.path = "discard";
  refused.method = Method::kUringSendZc;
  refused.status = SampleStatus::kUnsupported;
  failed.samples.push_back(refused);
  EXPECT_TRUE(CorrectDrift(failed.samples));
}

TEST(HostDrift, ThePlannerNumbersWhatItRecords) {
  PlannerOptions options;
  options.path = "discard";
  SweepPlanner planner(options);
  ProbeRun earlier = SteppedRun();
  planner.Seed(std::span<const Sample>(earlier.samples.data(), 4));
  Sample next = earlier.samples[10];
  next.seq.reset();
  planner.Record(next);
  Sample numbered = earlier.samples[11];
  numbered.seq = 40;
  planner.Record(numbered);
  next.seq.reset();
  planner.Record(next);
  std::vector<std::uint64_t> seqs;
  for (const Sample& s : planner.samples()) seqs.push_back(s.seq.value_or(999));
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 40, 41}));
}

}  // namespace
}  // namespace zcal::calibrator::drift_test
