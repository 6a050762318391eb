// The clock helpers: UTC text of a stored time stamp, the Clock
// interface and the detection of a stepped wall clock.
#include <gtest/gtest.h>

#include "zcal/common/clock.h"
#include "zcal/common/fake_clock.h"

namespace zcal::common::clock_test {
namespace {

TEST(Clock, FormatUtcWritesTheStampInTheGivenFormat) {
  // 2026-12-01T15:06:00Z, with 123 ms that the text drops.
  const std::uint64_t ns = 1'796'137'560'123'000'000ULL;
  EXPECT_EQ(FormatUtc(ns, "%Y-%m-%dT%H:%M:%SZ", "never"), "2026-12-01T15:06:00Z");
  EXPECT_EQ(FormatUtc(ns, "%Y-%m-%d %H:%M:%S UTC", "unknown"), "2026-12-01 15:06:00 UTC");
}

TEST(Clock, FormatUtcOfZeroIsTheGivenWord) {
  EXPECT_EQ(FormatUtc(0, "%Y", "never"), "never");
  EXPECT_EQ(FormatUtc(0, "%Y", "unknown"), "unknown");
}

TEST(Clock, RealtimeIsAfter2023) {
  EXPECT_GT(RealtimeNs(), 1'700'000'000ULL * 1'000'000'000ULL);  // after 2023
}

TEST(Clock, TheSystemClockReadsTheSystemsClocks) {
  const std::shared_ptr<const Clock> clock = SystemClock();
  ASSERT_TRUE(clock);
  EXPECT_EQ(clock, SystemClock()) << "one shared instance";
  EXPECT_GT(clock->Wall(), 1'700'000'000ULL * 1'000'000'000ULL);
  const auto a = clock->Steady();
  EXPECT_LE(a, clock->Steady());
}

TEST(WallStepDetector, TheFirstCheckOnlyTakesTheOffset) {
  FakeClock clock;
  WallStepDetector detector;
  clock.StepWall(std::chrono::hours(1));
  EXPECT_FALSE(detector.Check(clock)) << "nothing to compare with yet";
  EXPECT_FALSE(detector.Check(clock));
}

TEST(WallStepDetector, TimePassingOrSlewingIsNoStep) {
  FakeClock clock;
  WallStepDetector detector;
  EXPECT_FALSE(detector.Check(clock));
  clock.Advance(std::chrono::hours(5));
  EXPECT_FALSE(detector.Check(clock));
  clock.StepWall(kWallStepThreshold);  // at the threshold: not beyond it
  EXPECT_FALSE(detector.Check(clock));
  clock.StepWall(-kWallStepThreshold);
  EXPECT_FALSE(detector.Check(clock));
}

TEST(WallStepDetector, ReportsAStepForwardAndBackOnceEach) {
  FakeClock clock;
  WallStepDetector detector;
  EXPECT_FALSE(detector.Check(clock));
  clock.Advance(std::chrono::seconds(1));
  clock.StepWall(std::chrono::hours(1));
  const std::optional<std::int64_t> forward = detector.Check(clock);
  ASSERT_TRUE(forward);
  EXPECT_EQ(*forward, 3600LL * 1'000'000'000);
  EXPECT_FALSE(detector.Check(clock)) << "the new offset is the reference now";
  clock.StepWall(-std::chrono::hours(2));
  const std::optional<std::int64_t> back = detector.Check(clock);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, -7200LL * 1'000'000'000);
}

TEST(Clock, SteadyNsIsTheSteadyClockInNanoseconds) {
  FakeClock clock;
  const std::int64_t before = SteadyNs(clock);
  clock.Advance(std::chrono::milliseconds(3));
  clock.StepWall(std::chrono::hours(1));
  EXPECT_EQ(SteadyNs(clock) - before, 3'000'000);
}

}  // namespace
}  // namespace zcal::common::clock_test
