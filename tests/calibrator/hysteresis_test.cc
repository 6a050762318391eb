#include "zcal/calibrator/hysteresis.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "zcal/calibrator/planner.h"

namespace zcal::calibrator::hysteresis_test {
namespace {

MethodResult Threshold(std::uint64_t bytes, double confidence = 0.8) {
  MethodResult r;
  r.verdict = Verdict::kThreshold;
  r.threshold_bytes = bytes;
  r.confidence = confidence;
  return r;
}

MethodResult Never(double confidence = 1.0) {
  MethodResult r;
  r.verdict = Verdict::kNever;
  r.reason = Reason::kSlower;
  r.confidence = confidence;
  return r;
}

TEST(Hysteresis, PublishesFirstResult) {
  EXPECT_TRUE(ApplyHysteresis(std::nullopt, std::nullopt, Threshold(16384), {})
                  .publish);
}

TEST(Hysteresis, KeepsPublishedWhenFreshAgrees) {
  const auto d = ApplyHysteresis(Threshold(16384), Threshold(65536),
                                 Threshold(24000), {});
  EXPECT_FALSE(d.publish);
  EXPECT_FALSE(d.pending.has_value()) << "agreement clears the candidate";
}

TEST(Hysteresis, NeedsTwoAgreeingCalibrationsToMoveThreshold) {
  const auto first = ApplyHysteresis(Threshold(16384), std::nullopt,
                                     Threshold(65536), {});
  EXPECT_FALSE(first.publish);
  ASSERT_TRUE(first.pending.has_value());
  const auto second =
      ApplyHysteresis(Threshold(16384), first.pending, Threshold(60000), {});
  EXPECT_TRUE(second.publish);
}

TEST(Hysteresis, DisagreeingCandidatesPublishNothing) {
  auto d = ApplyHysteresis(Threshold(16384), std::nullopt, Threshold(65536), {});
  d = ApplyHysteresis(Threshold(16384), d.pending, Threshold(4096), {});
  EXPECT_FALSE(d.publish);
  d = ApplyHysteresis(Threshold(16384), d.pending, Threshold(131072), {});
  EXPECT_FALSE(d.publish);
  EXPECT_EQ(d.pending->threshold_bytes.value_or(0), 131072u);
}

TEST(Hysteresis, ChangeOfKindWithHighConfidencePublishesAtOnce) {
  EXPECT_TRUE(
      ApplyHysteresis(Threshold(16384), std::nullopt, Never(0.95), {}).publish);
  EXPECT_FALSE(
      ApplyHysteresis(Threshold(16384), std::nullopt, Never(0.5), {}).publish);
  EXPECT_TRUE(
      ApplyHysteresis(Never(), std::nullopt, Threshold(8192, 0.9), {}).publish);
}

TEST(Hysteresis, InconclusiveNeverReplacesAResult) {
  MethodResult noisy;
  noisy.verdict = Verdict::kInconclusive;
  noisy.reason = Reason::kNoisy;
  const auto d = ApplyHysteresis(Threshold(16384), Threshold(65536), noisy, {});
  EXPECT_FALSE(d.publish);
  EXPECT_EQ(d.pending->threshold_bytes.value_or(0), 65536u);
  EXPECT_TRUE(ApplyHysteresis(noisy, std::nullopt, Threshold(8192), {}).publish);
}

// The whole loop: a planner on noisy generated data with a fixed truth, 20
// calibrations, at most one published change (the first publish is not a
// change).
TEST(Hysteresis, TwentyNoisyCalibrationsOfUnchangedTruthPublishAtMostOneChange) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  auto probe = [&](const ProbeRequest& r) {
    const double s = static_cast<double>(r.size_bytes);
    const bool zc = IsZerocopy(r.method);
    const double per_byte = zc ? 0.12 + 3500 / s : 0.30 + 1500 / s;
    Sample sample;
    sample.method = r.method;
    sample.size_bytes = r.size_bytes;
    sample.wall_ns = 100'000'000;
    sample.bytes = static_cast<std::uint64_t>(5e8 * jitter(rng));
    sample.cpu_ns = static_cast<std::uint64_t>(
        per_byte * static_cast<double>(sample.bytes) * jitter(rng));
    return sample;
  };
  std::optional<MethodResult> published;
  std::optional<MethodResult> pending;
  int changes = 0;
  for (int i = 0; i < 20; ++i) {
    PlannerOptions options;
    options.methods = {Method::kCopy, Method::kMsgZerocopy};
    SweepPlanner planner(options);
    while (auto r = planner.Next()) planner.Record(probe(*r));
    const MethodResult fresh =
        planner.Result().paths.at("default").methods.at(Method::kMsgZerocopy);
    const auto d = ApplyHysteresis(published, pending, fresh, {});
    if (d.publish) {
      if (published) ++changes;
      published = fresh;
    }
    pending = d.pending;
    std::printf("calibration %2d: %s %llu -> published %llu\n", i,
                std::string(VerdictName(fresh.verdict)).c_str(),
                static_cast<unsigned long long>(fresh.threshold_bytes.value_or(0)),
                static_cast<unsigned long long>(
                    published->threshold_bytes.value_or(0)));
  }
  EXPECT_LE(changes, 1);
}

}  // namespace
}  // namespace zcal::calibrator::hysteresis_test
