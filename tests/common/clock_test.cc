// The clock helpers: UTC text of a stored time stamp.
#include <gtest/gtest.h>

#include "zcal/common/clock.h"

namespace zcal::common {
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

TEST(Clock, RealtimeAndMonotonicAdvance) {
  const std::uint64_t a = MonotonicNs();
  const std::uint64_t b = MonotonicNs();
  EXPECT_LE(a, b);
  EXPECT_GT(RealtimeNs(), 1'700'000'000ULL * 1'000'000'000ULL);  // after 2023
}

}  // namespace
}  // namespace zcal::common
