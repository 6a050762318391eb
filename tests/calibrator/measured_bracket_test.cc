// Measured sizes bound the threshold (docs/calibrator.md): on tables of one
// sample per size whose shape is not the model's, the curves may put the
// threshold past a size that the table decides clearly; the bracket keeps
// it, and the result says where the curves alone would have put it and
// which sizes they contradict.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "measured_bracket.h"
#include "sample_builders.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/report_json.h"

namespace zcal::calibrator::measured_bracket_test {
namespace {

using testing::Row;

constexpr Method kFixed = Method::kUringSendZcFixed;
constexpr Method kSend = Method::kUringSend;
constexpr std::uint64_t kSizes[] = {2000,  4000,  6000,  8000,  10000, 12000,
                                    16000, 24000, 32000, 48000, 64000};

// One sample per size, as published tables have them: uring_send CPU-bound
// (0.05 ns/B + 900 ns per send) below a 12 GB/s line rate, and zerocopy at
// the same throughput with `cpu_ratio[i]` times its CPU per byte.
std::vector<Sample> TableWithRatios(std::initializer_list<double> cpu_ratio) {
  std::vector<Sample> samples;
  std::size_t i = 0;
  for (double ratio : cpu_ratio) {
    const double size = static_cast<double>(kSizes[i]);
    const double ns_per_byte = 0.05 + 900 / size;
    const double mb_per_s = std::min(1e3 / ns_per_byte, 12000.0);
    const double cpu_pct = 100 * mb_per_s * 1e6 * ns_per_byte / 1e9;
    samples.push_back(Row(kFixed, kSizes[i], mb_per_s, cpu_pct * ratio));
    samples.push_back(Row(kSend, kSizes[i], mb_per_s, cpu_pct));
    ++i;
  }
  return samples;
}

bool Listed(const std::vector<CurveDisagreement>& list, std::uint64_t size) {
  return std::any_of(list.begin(), list.end(),
                     [&](const CurveDisagreement& d) { return d.size_bytes == size; });
}

// The table: zerocopy 6.5 % cheaper per byte at 12000 B and cheaper
// still at every larger size; a steep head and a flat tail, which a + b/s
// follows only by crossing later.
// A threshold is rounded up to 1/32 of its power of two: the sizes below a
// crossover stay the baseline's. The kernel's steps sit just above a power
// of two (32768 bytes fit where 32769 do not), and a crossover there
// rounded to the nearest step landed on the power of two itself.
TEST(MeasuredBracket, AThresholdIsRoundedUpToItsStep) {
  using detail::RoundThreshold;
  EXPECT_EQ(RoundThreshold(32768.0, 1024, 65507), 32768u) << "on a step: itself";
  EXPECT_EQ(RoundThreshold(32790.0, 1024, 65507), 33792u) << "1024-byte steps from 32 KiB";
  EXPECT_EQ(RoundThreshold(33000.5, 1024, 65507), 33792u);
  EXPECT_EQ(RoundThreshold(4100.0, 1024, 65507), 4224u) << "128-byte steps from 4 KiB";
  EXPECT_EQ(RoundThreshold(500.0, 1024, 65507), 1024u) << "at least the range's start";
  EXPECT_EQ(RoundThreshold(65000.0, 1024, 65507), 65507u) << "at most its end";
  // Within a measured bracket: at most the size where zerocopy wins
  // clearly (unrounded), and above the one where it loses clearly.
  detail::Bounds bounds;
  bounds.at_most = 32808;
  EXPECT_EQ(RoundThreshold(32790.0, 1024, 65507, bounds), 32808u);
  bounds = {};
  bounds.above = 32768;
  EXPECT_EQ(RoundThreshold(32000.0, 1024, 65507, bounds), 33792u);
}

TEST(MeasuredBracket, AClearWinningTailCapsTheThresholdAtItsFirstSize) {
  const auto r = Decide(
      TableWithRatios({1.6, 1.3, 1.15, 1.06, 1.01, 0.935, 0.93, 0.92, 0.91, 0.90, 0.90}), kFixed,
      {});
  ASSERT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  ASSERT_TRUE(r.measured_bracket.has_value());
  EXPECT_EQ(r.measured_bracket->at_most_bytes, 12000u);
  EXPECT_EQ(r.measured_bracket->above_bytes, 8000u) << "10000 B loses within the margin";
  EXPECT_EQ(r.verdict, Verdict::kThreshold);
  EXPECT_EQ(r.threshold_bytes, 12000u);
  ASSERT_TRUE(r.interval.has_value());
  EXPECT_LE(r.interval->high_bytes.value_or(UINT64_MAX), 12000u);
  ASSERT_TRUE(r.curve_choice.has_value()) << "the curves alone cross later";
  EXPECT_GT(r.curve_choice->threshold_bytes.value_or(UINT64_MAX), 12000u);
  ASSERT_TRUE(Listed(r.curve_disagreements, 12000));
  for (const CurveDisagreement& d : r.curve_disagreements) {
    EXPECT_TRUE(d.zerocopy_wins);
    EXPECT_GT(d.fitted_relative_cost, 1);
    EXPECT_LT(d.relative_cost, 1);
    EXPECT_TRUE(d.bounds_threshold);
  }
  EXPECT_NE(r.detail.find("wins clearly at 12000 bytes"), std::string::npos) << r.detail;
}

TEST(MeasuredBracket, AClearLosingHeadKeepsTheThresholdAboveItsLastSize) {
  const auto r = Decide(
      TableWithRatios({1.3, 1.2, 1.12, 1.08, 1.05, 0.75, 0.7, 0.66, 0.64, 0.62, 0.61}), kFixed,
      {});
  ASSERT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  EXPECT_EQ(r.measured_bracket->above_bytes, 10000u) << "5 % dearer: beyond the 3 % margin";
  ASSERT_TRUE(r.threshold_bytes.has_value());
  EXPECT_GT(*r.threshold_bytes, 10000u);
  EXPECT_LE(*r.threshold_bytes, 12000u);
  EXPECT_GT(r.interval->low_bytes, 10000u);
  ASSERT_TRUE(r.curve_choice.has_value());
  EXPECT_LE(r.curve_choice->threshold_bytes.value_or(UINT64_MAX), 10000u);
  ASSERT_TRUE(Listed(r.curve_disagreements, 10000));
  EXPECT_TRUE(r.losses_above.empty());
}

// Where the curves and the table agree, nothing moves and nothing is
// reported against the curves.
TEST(MeasuredBracket, CurvesThatAgreeAreLeftAlone) {
  const auto r = Decide(
      TableWithRatios({1.3, 1.2, 1.12, 1.08, 1.05, 0.80, 0.76, 0.74, 0.73, 0.72, 0.72}), kFixed,
      {});
  ASSERT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  EXPECT_FALSE(r.curve_choice.has_value());
  EXPECT_TRUE(r.curve_disagreements.empty());
  EXPECT_GT(*r.threshold_bytes, 10000u);
  EXPECT_LE(*r.threshold_bytes, 12000u);
}

// A clear loss inside the winning range does not bound the threshold: least
// cost may stand below it, and the result names it with its price.
TEST(MeasuredBracket, ADipInsideTheWinningRangeIsOverruledWithItsCost) {
  const auto r = Decide(
      TableWithRatios({1.6, 1.3, 1.15, 1.06, 0.90, 0.85, 1.10, 0.80, 0.78, 0.76, 0.75}), kFixed,
      {});
  ASSERT_TRUE(r.threshold_bytes.has_value());
  EXPECT_EQ(r.measured_bracket->above_bytes, 8000u);
  EXPECT_EQ(r.measured_bracket->at_most_bytes, 24000u);
  EXPECT_LT(*r.threshold_bytes, 16000u) << r.detail;
  const auto dip = std::find_if(r.overruled.begin(), r.overruled.end(),
                                [](const OverruledSize& o) { return o.size_bytes == 16000; });
  ASSERT_NE(dip, r.overruled.end());
  EXPECT_FALSE(dip->zerocopy_wins);
  EXPECT_TRUE(dip->clear);
  EXPECT_NEAR(dip->excess_cost, 1.10 / 0.97 - 1, 1e-3);
  ASSERT_TRUE(r.overruled_cost.has_value());
  EXPECT_NEAR(*r.overruled_cost, ExcessCost(r.sizes, r.threshold_bytes, {}), 1e-12);
  EXPECT_GT(*r.overruled_cost, 0);
}

TEST(MeasuredBracket, TheJsonCarriesTheBracketTheCurvesAndTheOverruledSizes) {
  const auto r = Decide(
      TableWithRatios({1.6, 1.3, 1.15, 1.06, 1.01, 0.935, 0.93, 0.92, 0.91, 0.90, 0.90}), kFixed,
      {});
  const nlohmann::json j = ToJson(r);
  EXPECT_EQ(j["measured_bracket"]["at_most_bytes"], 12000);
  EXPECT_EQ(j["measured_bracket"]["above_bytes"], 8000);
  EXPECT_EQ(j["curve_choice"]["threshold_bytes"], *r.curve_choice->threshold_bytes);
  ASSERT_FALSE(j["curve_disagreements"].empty());
  EXPECT_EQ(j["curve_disagreements"][0]["measured"], "wins");
  EXPECT_TRUE(j["curve_disagreements"][0]["bounds_threshold"].get<bool>());
  const auto back = ReadMethodResult(j, kFixed);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->measured_bracket, r.measured_bracket);
  EXPECT_EQ(back->curve_choice, r.curve_choice);
  EXPECT_EQ(back->curve_disagreements, r.curve_disagreements);
  EXPECT_EQ(back->overruled, r.overruled);
  EXPECT_EQ(back->overruled_cost, r.overruled_cost);
}

}  // namespace
}  // namespace zcal::calibrator::measured_bracket_test
