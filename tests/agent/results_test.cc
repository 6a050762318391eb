#include "zcal/agent/publish/results.h"

#include <gtest/gtest.h>

#include "method_results.h"

namespace zcal::agent {
namespace {

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Reason;
using calibrator::Verdict;

using testing::Never;
using testing::Threshold;

calibrator::PathResult Fresh(std::initializer_list<MethodResult> results) {
  calibrator::PathResult path;
  path.path = "loopback";
  for (const MethodResult& r : results) path.methods[r.method] = r;
  return path;
}

TEST(MergeCalibration, PublishesTheFirstResult) {
  AgentState state;
  const auto log = MergeCalibration(
      state, "loopback", Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}),
      100, std::nullopt, {});
  const MethodState& s = state.paths.at("loopback").at(Method::kMsgZerocopy);
  EXPECT_EQ(s.published.threshold_bytes, 16384u);
  EXPECT_EQ(s.measured_at_ns, 100u);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "loopback/msg_zerocopy: threshold 16KiB, published");
}

TEST(MergeCalibration, NeedsTwoAgreeingCalibrationsToMoveAThreshold) {
  AgentState state;
  MergeCalibration(state, "loopback",
                   Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 100,
                   std::nullopt, {});
  auto log = MergeCalibration(
      state, "loopback", Fresh({Threshold(Method::kMsgZerocopy, 131072, 0.5)}),
      200, std::nullopt, {});
  const MethodState& s = state.paths.at("loopback").at(Method::kMsgZerocopy);
  EXPECT_EQ(s.published.threshold_bytes, 16384u);
  EXPECT_EQ(s.measured_at_ns, 100u);
  ASSERT_TRUE(s.pending);
  EXPECT_EQ(log[0],
            "loopback/msg_zerocopy: measured threshold 128KiB, keeping "
            "threshold 16KiB until a calibration agrees");
  log = MergeCalibration(
      state, "loopback", Fresh({Threshold(Method::kMsgZerocopy, 131072, 0.5)}),
      300, std::nullopt, {});
  EXPECT_EQ(s.published.threshold_bytes, 131072u);
  EXPECT_EQ(s.measured_at_ns, 300u);
  EXPECT_EQ(log[0],
            "loopback/msg_zerocopy: threshold 128KiB, published (was "
            "threshold 16KiB)");
}

TEST(MergeCalibration, AnAgreeingResultRefreshesTheMeasurementTime) {
  AgentState state;
  MergeCalibration(state, "loopback",
                   Fresh({Never(Method::kUringSendZc, Reason::kKernelCopied)}),
                   100, std::nullopt, {});
  const auto log = MergeCalibration(
      state, "loopback",
      Fresh({Never(Method::kUringSendZc, Reason::kKernelCopied)}), 500, std::nullopt, {});
  EXPECT_EQ(state.paths.at("loopback").at(Method::kUringSendZc).measured_at_ns,
            500u);
  EXPECT_EQ(log[0], "loopback/uring_send_zc: never (kernel_copied), confirmed");
}

probes::HostLoad Load(double busy) {
  probes::HostLoad load;
  load.busy_share = busy;
  load.runnable_mean = 1.5;
  load.runnable_max = 3;
  load.window_seconds = 2;
  load.runnable_reads = 10;
  return load;
}

TEST(MergeCalibration, ThePublishedResultKeepsTheLoadOfTheCalibrationBehindIt) {
  AgentState state;
  MergeCalibration(state, "loopback", Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 100,
                   Load(0.25), {});
  const MethodState& s = state.paths.at("loopback").at(Method::kMsgZerocopy);
  ASSERT_TRUE(s.load);
  EXPECT_DOUBLE_EQ(s.load->busy_share, 0.25);
  // A disagreeing result waits; the published one is still that of 100 and its load.
  MergeCalibration(state, "loopback", Fresh({Threshold(Method::kMsgZerocopy, 131072, 0.5)}), 200,
                   Load(0.9), {});
  EXPECT_EQ(s.measured_at_ns, 100u);
  ASSERT_TRUE(s.load);
  EXPECT_DOUBLE_EQ(s.load->busy_share, 0.25);
  // An agreeing one confirms it under its own load, or under none when not measured.
  MergeCalibration(state, "loopback", Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 300,
                   Load(0.5), {});
  EXPECT_EQ(s.measured_at_ns, 300u);
  ASSERT_TRUE(s.load);
  EXPECT_DOUBLE_EQ(s.load->busy_share, 0.5);
  MergeCalibration(state, "loopback", Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 400,
                   std::nullopt, {});
  EXPECT_FALSE(s.load);
}

TEST(BuildEntries, PublishesEachPathUnderItsOwnScopeAndNeverLoopbackAsTheDefault) {
  AgentState state;
  state.fingerprint = 42;
  MergeCalibration(state, "loopback",
                   Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5),
                          Never(Method::kUringSendZc, Reason::kKernelCopied)}),
                   100, std::nullopt, {});
  Config config;
  config.paths = {PathConfig{}};  // loopback only
  const PublishedTable table = BuildEntries(state, config, HostDefaultNic{}, 0);
  ASSERT_EQ(table.entries.size(), 2u);
  EXPECT_EQ(table.entries[0].scope, ScopeKind::kLoopback);
  EXPECT_EQ(table.entries[0].method, Method::kMsgZerocopy);
  EXPECT_EQ(table.entries[0].threshold_bytes, 16384u);
  EXPECT_EQ(table.entries[0].fingerprint, 42u);
  EXPECT_EQ(table.entries[0].measured_at_ns, 100u);
  EXPECT_FALSE(table.entries[0].estimated);
  EXPECT_EQ(table.entries[1].scope, ScopeKind::kLoopback);
  EXPECT_EQ(table.entries[1].reason, Reason::kKernelCopied);
  // Loopback measured the kernel's local copy: no host default from it.
  EXPECT_EQ(table.host_default, HostDefaultSource::kNoPath);
  EXPECT_NE(table.host_default_explanation.find("loopback is never a source"),
            std::string::npos)
      << table.host_default_explanation;
}

TEST(BuildEntries, PublishesTheDiscardPathUnderItsOwnScope) {
  AgentState state;
  MergeCalibration(state, "discard",
                   Fresh({Threshold(Method::kUringSendZc, 24576, 0.8)}), 100, std::nullopt, {});
  Config config;
  config.host_default.enabled = false;
  const PublishedTable table = BuildEntries(state, config, HostDefaultNic{}, 0);
  ASSERT_EQ(table.entries.size(), 1u);
  EXPECT_EQ(table.entries[0].scope, ScopeKind::kDiscard);
  EXPECT_EQ(table.host_default, HostDefaultSource::kDisabled);
}

TEST(PruneState, DropsPathsAndMethodsNoLongerConfigured) {
  AgentState state;
  MergeCalibration(state, "loopback",
                   Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5),
                          Never(Method::kUringSendZc, Reason::kKernelCopied)}),
                   100, std::nullopt, {});
  MergeCalibration(state, "gone",
                   Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 100,
                   std::nullopt, {});
  Config config;
  config.methods = {Method::kCopy, Method::kMsgZerocopy};
  PruneState(state, config);
  ASSERT_EQ(state.paths.size(), 1u);
  ASSERT_EQ(state.paths.at("loopback").size(), 1u);
  EXPECT_TRUE(state.paths.at("loopback").contains(Method::kMsgZerocopy));
}

TEST(DescribeResult, NamesVerdictSizeAndReason) {
  EXPECT_EQ(DescribeResult(Threshold(Method::kMsgZerocopy, 12288, 1)),
            "threshold 12KiB");
  EXPECT_EQ(DescribeResult(Never(Method::kMsgZerocopy, Reason::kSlower)),
            "never (slower)");
  MethodResult always;
  always.verdict = Verdict::kAlways;
  always.threshold_bytes = 1024;
  EXPECT_EQ(DescribeResult(always), "always from 1KiB");
}

}  // namespace
}  // namespace zcal::agent
