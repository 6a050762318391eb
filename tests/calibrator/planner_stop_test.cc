// The stated resolution a planner's stop claims (calibrator/src/
// planner_stop.h): which results are at it, and what the output says of
// one that is not. Resolution 1/8 and 0.05 percentage points, the
// planner's defaults.
#include "planner_stop.h"
#include "zcal/calibrator/planner.h"

#include <gtest/gtest.h>

#include <string>

namespace zcal::calibrator::planner_stop_test {
namespace {

constexpr double kResolution = 0.125;
constexpr double kRegret = 0.0005;

MethodResult Threshold(Rule rule, std::uint64_t threshold, ThresholdInterval interval,
                       std::optional<double> excess) {
  MethodResult r;
  r.verdict = Verdict::kThreshold;
  r.rule = rule;
  r.threshold_bytes = threshold;
  r.interval = interval;
  r.regret_excess = excess;
  return r;
}

MethodResult Model(std::uint64_t threshold, std::uint64_t low, std::uint64_t high,
                   std::optional<double> excess) {
  return Threshold(Rule::kModel, threshold, {low, high, 0.95}, excess);
}

// A per-size threshold: its bracket is the probed size below it and it.
MethodResult PerSize(std::uint64_t threshold, std::uint64_t below, std::optional<double> excess) {
  return Threshold(Rule::kPerSize, threshold, {below, threshold, 0}, excess);
}

TEST(PlannerStop, AModelResultIsAtTheResolutionByItsIntervalOrByItsExcessCost) {
  // 7500..8700 around 8192: 9.2 % at the wider end.
  EXPECT_TRUE(AtStatedResolution(Model(8192, 7500, 8700, 0.002), kResolution, kRegret));
  // A wide interval whose every threshold costs about the same.
  EXPECT_TRUE(AtStatedResolution(Model(8192, 4096, 16384, 0.0001), kResolution, kRegret));
  EXPECT_FALSE(AtStatedResolution(Model(8192, 4096, 16384, 0.002), kResolution, kRegret));
  EXPECT_FALSE(AtStatedResolution(Model(8192, 4096, 16384, std::nullopt), kResolution, kRegret));
}

TEST(PlannerStop, APerSizeThresholdNeedsItsBracketWithinTheResolutionWhateverItsExcess) {
  // 7424..8192: 9.4 %.
  EXPECT_TRUE(AtStatedResolution(PerSize(8192, 7424, 0.0), kResolution, kRegret));
  // 6656..8192: 18.8 %, and an excess of 0 drawn at the two probed sizes
  // says nothing of the sizes between them.
  EXPECT_FALSE(AtStatedResolution(PerSize(8192, 6656, 0.0), kResolution, kRegret));
  // Narrow, but the threshold may cost more than the best.
  EXPECT_FALSE(AtStatedResolution(PerSize(8192, 7424, 0.003), kResolution, kRegret));
  // Probed once at each end, it has no excess: both ends' comparisons
  // beyond their noise place it, one within it does not.
  MethodResult once = PerSize(8192, 7424, std::nullopt);
  SizeComparison below, at;
  below.size_bytes = 7424;
  below.zerocopy_wins = false;
  at.size_bytes = 8192;
  at.zerocopy_wins = true;
  once.sizes = {below, at};
  EXPECT_TRUE(AtStatedResolution(once, kResolution, kRegret));
  once.sizes[0].decisive = false;
  EXPECT_FALSE(AtStatedResolution(once, kResolution, kRegret));
  // Nor does a wide one with both ends decided.
  MethodResult wide = PerSize(8192, 6656, std::nullopt);
  below.size_bytes = 6656;
  wide.sizes = {below, at};
  EXPECT_FALSE(AtStatedResolution(wide, kResolution, kRegret));
  // A per-size never has no bracket: its excess decides.
  MethodResult never;
  never.verdict = Verdict::kNever;
  never.rule = Rule::kPerSize;
  never.regret_excess = 0.0;
  EXPECT_TRUE(AtStatedResolution(never, kResolution, kRegret));
}

TEST(PlannerStop, SaysHowFarAResultIsFromTheResolutionAndNothingOfOneAtIt) {
  EXPECT_EQ(WiderThanStated(PerSize(8192, 7424, 0.0), kResolution, kRegret), std::nullopt);
  EXPECT_EQ(WiderThanStated(PerSize(8192, 6656, 0.0), kResolution, kRegret),
            "the published bracket 6656..8192 bytes is 18.8 % wide (stated: 12.5 %), and the "
            "threshold may cost 0.000 pp more than the best (stated: 0.050 pp)");
  // 19456..26112 around 22528: 15.9 % below.
  EXPECT_EQ(WiderThanStated(Model(22528, 19456, 26112, 0.00068), kResolution, kRegret),
            "the published interval reaches 15.9 % from the threshold (stated: 12.5 %), and the "
            "threshold may cost 0.068 pp more than the best (stated: 0.050 pp)");
}

// What zcal calibrate's JSON and the report print as the method's stop.
TEST(PlannerStop, AStopAtTheResolutionSaysByHowMuchThePublishedResultMissesIt) {
  const PlannerOptions options;
  const PlannerStop at{StopReason::kResolution, "the threshold is at the stated resolution"};
  EXPECT_EQ(PublishedStop(at, PerSize(8192, 7424, 0.0), options), at);
  const PlannerStop wider = PublishedStop(at, Model(22528, 19456, 26112, 0.00068), options);
  EXPECT_EQ(wider.reason, StopReason::kResolution);
  EXPECT_EQ(wider.detail,
            "its probes ended at the stated resolution by the planner's estimate, but the "
            "published interval reaches 15.9 % from the threshold (stated: 12.5 %), and the "
            "threshold may cost 0.068 pp more than the best (stated: 0.050 pp)");
  // Other stops say why the probes ended, whatever the result.
  const PlannerStop noise{StopReason::kNoise, "resolution limited by noise"};
  EXPECT_EQ(PublishedStop(noise, Model(22528, 19456, 26112, 0.00068), options), noise);
  const PlannerStop budget{StopReason::kBudget, "the calibration's time ran out first"};
  EXPECT_EQ(PublishedStop(budget, PerSize(8192, 6656, 0.0), options), budget);
}

// What a calibration spends the time its classes left on.
TEST(PlannerStop, AMethodLostItsResolutionOnlyWhereItStoppedThereAndIsWiderNow) {
  const PlannerOptions options;
  const PlannerStop at{StopReason::kResolution, "the threshold is at the stated resolution"};
  EXPECT_FALSE(LostItsResolution(at, Model(8192, 7500, 8700, 0.002), options));
  EXPECT_TRUE(LostItsResolution(at, Model(22528, 19456, 26112, 0.00068), options));
  EXPECT_TRUE(LostItsResolution(at, PerSize(8192, 6656, 0.0), options));
  // A method that stopped for another reason keeps it: more probes were
  // judged not to help (the noise), or it had none left.
  const PlannerStop noise{StopReason::kNoise, "resolution limited by noise"};
  EXPECT_FALSE(LostItsResolution(noise, Model(22528, 19456, 26112, 0.00068), options));
  const PlannerStop budget{StopReason::kBudget, "the calibration's time ran out first"};
  EXPECT_FALSE(LostItsResolution(budget, PerSize(8192, 6656, 0.0), options));
}

}  // namespace
}  // namespace zcal::calibrator::planner_stop_test
