#include "zcal/calibrator/stats.h"

#include <gtest/gtest.h>

#include <vector>

#include "sample_builders.h"

namespace zcal::calibrator::stats_test {
namespace {

TEST(Median, OddAndEvenCounts) {
  const std::vector<double> odd = {5, 1, 3};
  const std::vector<double> even = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Median(odd), 3);
  EXPECT_DOUBLE_EQ(Median(even), 2.5);
  EXPECT_DOUBLE_EQ(Median(std::vector<double>{}), 0);
}

TEST(ScaledMad, IgnoresOneOutlier) {
  const std::vector<double> values = {10, 10.5, 9.5, 10, 1000};
  EXPECT_NEAR(ScaledMad(values), 1.4826 * 0.5, 1e-9);
  EXPECT_DOUBLE_EQ(ScaledMad(std::vector<double>{7}), 0);
}

TEST(Aggregate, SkipsFailedSamplesAndSumsCopies) {
  std::vector<Sample> samples = {
      testing::Row(Method::kMsgZerocopy, 4096, 1000, 50, 100),
      testing::Row(Method::kMsgZerocopy, 4096, 2000, 50, 0),
      testing::Row(Method::kMsgZerocopy, 4096, 3000, 50, 50),
  };
  samples.push_back(samples.front());
  samples.back().status = SampleStatus::kFailed;
  const SizeStats stats = Aggregate(samples);
  EXPECT_EQ(stats.samples, 3u);
  EXPECT_EQ(stats.size_bytes, 4096u);
  EXPECT_DOUBLE_EQ(stats.throughput_bytes_per_second.median, 2000e6);
  ASSERT_TRUE(stats.copied_fraction.has_value());
  EXPECT_DOUBLE_EQ(*stats.copied_fraction, 0.5);
  // 50 % of a core at 2000 MB/s: 0.25 ns per byte.
  EXPECT_DOUBLE_EQ(stats.cpu_ns_per_byte.median, 0.25);
}

}  // namespace
}  // namespace zcal::calibrator::stats_test
