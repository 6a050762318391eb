// The least-cost threshold (calibrator/src/least_cost.h), the step both
// rules end in: the splits the bounds allow, the split of least regret, and
// the threshold between two points.
#include "least_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace zcal::calibrator::detail::least_cost_test {
namespace {

WeightedSizes Uniform(const std::vector<double>& sizes) {
  WeightedSizes w;
  w.size = sizes;
  w.weight.assign(sizes.size(), 1.0 / static_cast<double>(sizes.size()));
  return w;
}

const std::vector<double> kCrossing = {1.2, 1.1, 0.9, 0.8};

TEST(LeastCost, PutsTheThresholdAtTheFirstSizeWhereZerocopyCostsLess) {
  const WeightedSizes sizes = Uniform({1024, 2048, 4096, 8192});
  const Choice c = LeastCost(sizes, kCrossing, false);
  EXPECT_EQ(c.split, 2u);
  EXPECT_EQ(c.threshold, 4096);
  EXPECT_EQ(c.regret, 0);
  EXPECT_EQ(Regret(sizes, kCrossing, c.threshold), c.regret);
  // Never pays the baseline's excess where zerocopy is cheaper, always
  // zerocopy's where it is dearer.
  EXPECT_NEAR(c.regret_never, 0.25 * (1 / 0.9 - 1) + 0.25 * (1 / 0.8 - 1), 1e-12);
  EXPECT_NEAR(c.regret_always, 0.25 * 0.2 + 0.25 * 0.1, 1e-12);
}

TEST(LeastCost, InterpolatesWhereTheCostCrossesOneBetweenTwoSizes) {
  const Choice c = LeastCost(Uniform({1024, 2048, 4096, 8192}), kCrossing, true);
  const double t = std::log(1.1) / (std::log(1.1) - std::log(0.9));
  EXPECT_EQ(c.split, 2u);
  EXPECT_NEAR(c.threshold, 2048 * std::pow(2.0, t), 1e-6);
}

TEST(LeastCost, ReportsNeverWhenZerocopyCostsMoreEverywhere) {
  const Choice c = LeastCost(Uniform({1024, 2048, 4096}), std::vector<double>{1.3, 1.2, 1.1}, true);
  EXPECT_EQ(c.split, 3u);
  EXPECT_TRUE(std::isinf(c.threshold));
  EXPECT_EQ(c.regret, c.regret_never);
}

TEST(LeastCost, ReportsTheSmallestSizeWhenZerocopyCostsLessEverywhere) {
  const Choice c = LeastCost(Uniform({1024, 2048, 4096}), std::vector<double>{0.9, 0.8, 0.7}, true);
  EXPECT_EQ(c.split, 0u);
  EXPECT_EQ(c.threshold, 1024);
  EXPECT_EQ(c.regret, c.regret_always);
}

TEST(LeastCost, KeepsTheThresholdAboveWhereZerocopyLostClearly) {
  Bounds bounds;
  bounds.above = 2048;
  const Choice c =
      LeastCost(Uniform({1024, 2048, 4096, 8192}), std::vector<double>(4, 0.9), false, bounds);
  EXPECT_EQ(c.split, 2u);
  EXPECT_EQ(c.threshold, 4096);
}

TEST(LeastCost, KeepsTheThresholdAtMostWhereZerocopyWonClearly) {
  Bounds bounds;
  bounds.at_most = 4096;
  const Choice c =
      LeastCost(Uniform({1024, 2048, 4096, 8192}), std::vector<double>(4, 1.2), false, bounds);
  EXPECT_EQ(c.split, 2u);
  EXPECT_EQ(c.threshold, 4096);
}

TEST(LeastCost, AmongEqualRegretsTakesTheSplitWhereTheCostCrossesOne) {
  // The two middle sizes weigh nothing: splits 1, 2 and 3 cost the same,
  // and only at 2 does the cost cross 1.
  WeightedSizes sizes;
  sizes.size = {1024, 2048, 4096, 8192};
  sizes.weight = {0.5, 0, 0, 0.5};
  const Choice c = LeastCost(sizes, kCrossing, false);
  EXPECT_EQ(c.split, 2u);
  EXPECT_EQ(c.regret, 0);
}

}  // namespace
}  // namespace zcal::calibrator::detail::least_cost_test
