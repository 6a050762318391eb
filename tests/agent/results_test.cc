#include "zcal/agent/publish/results.h"
#include "zcal/testing/path_ids.h"

#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "method_results.h"

namespace zcal::agent::results_test {
namespace {

using zcal::testing::ConfiguredPath;
using zcal::testing::PeerPath;

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
  const auto log =
      MergeCalibration(state, ConfiguredPath("loopback"),
                       Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 100, std::nullopt, {});
  const MethodState& s = state.paths.at(ConfiguredPath("loopback")).at(Method::kMsgZerocopy);
  EXPECT_EQ(s.published.threshold_bytes, 16384u);
  EXPECT_EQ(s.measured_at_ns, 100u);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "loopback/msg_zerocopy: threshold 16KiB, published");
}

TEST(MergeCalibration, NeedsTwoAgreeingCalibrationsToMoveAThreshold) {
  AgentState state;
  MergeCalibration(state, ConfiguredPath("loopback"),
                   Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 100, std::nullopt, {});
  auto log = MergeCalibration(state, ConfiguredPath("loopback"),
                              Fresh({Threshold(Method::kMsgZerocopy, 131072, 0.5)}), 200,
                              std::nullopt, {});
  const MethodState& s = state.paths.at(ConfiguredPath("loopback")).at(Method::kMsgZerocopy);
  EXPECT_EQ(s.published.threshold_bytes, 16384u);
  EXPECT_EQ(s.measured_at_ns, 100u);
  ASSERT_TRUE(s.pending);
  EXPECT_EQ(log[0],
            "loopback/msg_zerocopy: measured threshold 128KiB, keeping "
            "threshold 16KiB until a calibration agrees");
  log = MergeCalibration(state, ConfiguredPath("loopback"),
                         Fresh({Threshold(Method::kMsgZerocopy, 131072, 0.5)}), 300, std::nullopt,
                         {});
  EXPECT_EQ(s.published.threshold_bytes, 131072u);
  EXPECT_EQ(s.measured_at_ns, 300u);
  EXPECT_EQ(log[0],
            "loopback/msg_zerocopy: threshold 128KiB, published (was "
            "threshold 16KiB)");
}

TEST(MergeCalibration, AnAgreeingResultRefreshesTheMeasurementTime) {
  AgentState state;
  MergeCalibration(state, ConfiguredPath("loopback"),
                   Fresh({Never(Method::kUringSendZc, Reason::kKernelCopied)}), 100, std::nullopt,
                   {});
  const auto log = MergeCalibration(state, ConfiguredPath("loopback"),
                                    Fresh({Never(Method::kUringSendZc, Reason::kKernelCopied)}),
                                    500, std::nullopt, {});
  EXPECT_EQ(state.paths.at(ConfiguredPath("loopback")).at(Method::kUringSendZc).measured_at_ns,
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
  MergeCalibration(state, ConfiguredPath("loopback"),
                   Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 100, Load(0.25), {});
  const MethodState& s = state.paths.at(ConfiguredPath("loopback")).at(Method::kMsgZerocopy);
  ASSERT_TRUE(s.load);
  EXPECT_DOUBLE_EQ(s.load->busy_share, 0.25);
  // A disagreeing result waits; the published one is still that of 100 and its load.
  MergeCalibration(state, ConfiguredPath("loopback"),
                   Fresh({Threshold(Method::kMsgZerocopy, 131072, 0.5)}), 200, Load(0.9), {});
  EXPECT_EQ(s.measured_at_ns, 100u);
  ASSERT_TRUE(s.load);
  EXPECT_DOUBLE_EQ(s.load->busy_share, 0.25);
  // An agreeing one confirms it under its own load, or under none when not measured.
  MergeCalibration(state, ConfiguredPath("loopback"),
                   Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 300, Load(0.5), {});
  EXPECT_EQ(s.measured_at_ns, 300u);
  ASSERT_TRUE(s.load);
  EXPECT_DOUBLE_EQ(s.load->busy_share, 0.5);
  MergeCalibration(state, ConfiguredPath("loopback"),
                   Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 400, std::nullopt, {});
  EXPECT_FALSE(s.load);
}

TEST(BuildEntries, PublishesEachPathUnderItsOwnScopeAndNeverLoopbackAsTheDefault) {
  AgentState state;
  state.fingerprint = 42;
  MergeCalibration(state, ConfiguredPath("loopback"),
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
  EXPECT_EQ(table.host_default.source, HostDefaultSource::kNoPath);
  EXPECT_NE(table.host_default.explanation.find("loopback is never a source"),
            std::string::npos)
      << table.host_default.explanation;
}

TEST(BuildEntries, PublishesTheDiscardPathUnderItsOwnScope) {
  AgentState state;
  MergeCalibration(state, ConfiguredPath("discard"),
                   Fresh({Threshold(Method::kUringSendZc, 24576, 0.8)}), 100, std::nullopt, {});
  Config config;
  config.host_default.enabled = false;
  const PublishedTable table = BuildEntries(state, config, HostDefaultNic{}, 0);
  ASSERT_EQ(table.entries.size(), 1u);
  EXPECT_EQ(table.entries[0].scope, ScopeKind::kDiscard);
  EXPECT_EQ(table.host_default.source, HostDefaultSource::kDisabled);
}

TEST(PruneState, DropsPathsAndMethodsNoLongerConfigured) {
  AgentState state;
  MergeCalibration(state, ConfiguredPath("loopback"),
                   Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5),
                          Never(Method::kUringSendZc, Reason::kKernelCopied)}),
                   100, std::nullopt, {});
  MergeCalibration(state, ConfiguredPath("gone"),
                   Fresh({Threshold(Method::kMsgZerocopy, 16384, 0.5)}), 100, std::nullopt, {});
  Config config;
  config.methods = {Method::kCopy, Method::kMsgZerocopy};
  PruneState(state, config);
  ASSERT_EQ(state.paths.size(), 1u);
  ASSERT_EQ(state.paths.at(ConfiguredPath("loopback")).size(), 1u);
  EXPECT_TRUE(state.paths.at(ConfiguredPath("loopback")).contains(Method::kMsgZerocopy));
}

TEST(MergeCalibration, EachDepthClassHasItsOwnHysteresis) {
  AgentState state;
  const auto discard = [](std::initializer_list<MethodResult> results) {
    calibrator::PathResult path = Fresh(results);
    path.path = "discard";
    return path;
  };
  MergeCalibration(state, ConfiguredPath("discard"),
                   discard({Threshold(Method::kMsgZerocopy, 24576, 0.5)}), 100, std::nullopt, {});
  auto log = MergeCalibration(state, ConfiguredPath("discard"),
                              discard({Threshold(Method::kMsgZerocopy, 65536, 0.5)}), 100,
                              std::nullopt, {}, DepthClass::k1);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "discard/msg_zerocopy@1: threshold 64KiB, published");
  // A second class's result moves neither the stream's nor its candidate.
  log = MergeCalibration(state, ConfiguredPath("discard"),
                         discard({Threshold(Method::kMsgZerocopy, 262144, 0.5)}), 200, std::nullopt,
                         {}, DepthClass::k1);
  EXPECT_EQ(log[0],
            "discard/msg_zerocopy@1: measured threshold 256KiB, keeping threshold 64KiB until a "
            "calibration agrees");
  const MethodStates& methods = state.paths.at(ConfiguredPath("discard"));
  ASSERT_EQ(methods.size(), 2u);
  const MethodState& stream = methods.at(Method::kMsgZerocopy);
  EXPECT_EQ(stream.published.threshold_bytes, 24576u);
  EXPECT_FALSE(stream.pending);
  const MethodState& one = methods.at({Method::kMsgZerocopy, DepthClass::k1});
  EXPECT_EQ(one.published.threshold_bytes, 65536u);
  ASSERT_TRUE(one.pending);
  EXPECT_EQ(one.pending->threshold_bytes, 262144u);
  MergeCalibration(state, ConfiguredPath("discard"),
                   discard({Threshold(Method::kMsgZerocopy, 262144, 0.5)}), 300, std::nullopt, {},
                   DepthClass::k1);
  EXPECT_EQ(one.published.threshold_bytes, 262144u) << "two agreeing calibrations of class 1";
  EXPECT_EQ(stream.published.threshold_bytes, 24576u);
}

TEST(DropClass, RemovesAClassNotProbedSayingWhyOnceAndNeverTheStream) {
  AgentState state;
  MergeCalibration(state, ConfiguredPath("discard"),
                   Fresh({Never(Method::kUringSendZc, Reason::kSlower)}), 100, std::nullopt, {});
  MergeCalibration(state, ConfiguredPath("discard"),
                   Fresh({Never(Method::kUringSendZc, Reason::kSlower)}), 100, std::nullopt, {},
                   DepthClass::k4);
  const std::string why = "depths 1 and stream are both never";
  const auto line =
      DropClass(state, ConfiguredPath("discard"), {Method::kUringSendZc, DepthClass::k4}, why);
  ASSERT_TRUE(line);
  EXPECT_EQ(*line,
            "discard/uring_send_zc@4: not probed this round (depths 1 and stream are both "
            "never); dropped, its readers get the stream entry");
  EXPECT_FALSE(
      state.paths.at(ConfiguredPath("discard")).contains({Method::kUringSendZc, DepthClass::k4}));
  EXPECT_FALSE(
      DropClass(state, ConfiguredPath("discard"), {Method::kUringSendZc, DepthClass::k4}, why))
      << "said once";
  EXPECT_FALSE(DropClass(state, ConfiguredPath("discard"), {Method::kUringSendZc}, why));
  EXPECT_TRUE(state.paths.at(ConfiguredPath("discard")).contains(Method::kUringSendZc));
  EXPECT_FALSE(
      DropClass(state, ConfiguredPath("nowhere"), {Method::kUringSendZc, DepthClass::k4}, why));
}

// A discard path with msg_zerocopy at stream, 1 and 4, and uring_send_zc
// whose stream result is inconclusive but whose class 1 found a threshold.
AgentState DiscardWithClasses() {
  AgentState state;
  state.fingerprint = 7;
  calibrator::PathResult stream = Fresh({Threshold(Method::kMsgZerocopy, 24576, 0.8)});
  MethodResult noisy;
  noisy.method = Method::kUringSendZc;
  noisy.verdict = Verdict::kInconclusive;
  noisy.reason = Reason::kNoisy;
  stream.methods[Method::kUringSendZc] = noisy;
  MergeCalibration(state, ConfiguredPath("discard"), stream, 100, std::nullopt, {});
  MergeCalibration(state, ConfiguredPath("discard"),
                   Fresh({Threshold(Method::kMsgZerocopy, 65536, 0.8),
                          Threshold(Method::kUringSendZc, 32768, 0.8)}),
                   100, std::nullopt, {}, DepthClass::k1);
  MergeCalibration(state, ConfiguredPath("discard"),
                   Fresh({Threshold(Method::kMsgZerocopy, 49152, 0.8)}), 100, std::nullopt, {},
                   DepthClass::k4);
  return state;
}

HostDefaultNic UntranslatedNic() {
  HostDefaultNic nic;
  nic.facts = probes::InterfaceFacts{};
  nic.facts->name = "eth3";
  nic.facts->driver = "virtio_net";  // in no IOMMU group: the estimate may stand
  return nic;
}

TEST(BuildEntries, PublishesEachDepthClassAfterItsStreamEntry) {
  Config config;
  config.paths = {PathConfig{"discard", probes::TargetKind::kDiscard}};
  const PublishedTable table = BuildEntries(DiscardWithClasses(), config, UntranslatedNic(), 0);
  std::vector<std::tuple<ScopeKind, Method, DepthClass, std::optional<std::uint64_t>>> got;
  for (const PublishedEntry& e : table.entries) {
    got.emplace_back(e.scope, e.method, e.depth, e.threshold_bytes);
    EXPECT_EQ(e.fingerprint, 7u);
  }
  using D = DepthClass;
  using M = Method;
  using S = ScopeKind;
  const decltype(got) expected = {
      {S::kDiscard, M::kMsgZerocopy, D::kStream, 24576},
      {S::kDiscard, M::kMsgZerocopy, D::k1, 65536},
      {S::kDiscard, M::kMsgZerocopy, D::k4, 49152},
      {S::kDiscard, M::kUringSendZc, D::kStream, std::nullopt},
      {S::kDiscard, M::kUringSendZc, D::k1, 32768},
      // The estimate per class; uring_send_zc's stream result is not usable,
      // and readers fall back to the stream entry: its class 1 goes with it.
      {S::kHostDefault, M::kMsgZerocopy, D::kStream, 24576},
      {S::kHostDefault, M::kMsgZerocopy, D::k1, 65536},
      {S::kHostDefault, M::kMsgZerocopy, D::k4, 49152},
  };
  EXPECT_EQ(got, expected);
  EXPECT_EQ(table.host_default.source, HostDefaultSource::kEstimated);
}

TEST(PruneState, DropsDepthClassesNoLongerConfiguredAndLoopbacksBeyondStream) {
  AgentState state = DiscardWithClasses();
  MergeCalibration(state, ConfiguredPath("loopback"),
                   Fresh({Never(Method::kMsgZerocopy, Reason::kKernelCopied)}), 100, std::nullopt,
                   {});
  MergeCalibration(state, ConfiguredPath("loopback"),
                   Fresh({Never(Method::kMsgZerocopy, Reason::kKernelCopied)}), 100, std::nullopt,
                   {}, DepthClass::k1);
  Config config;
  config.depths = {4, calibrator::kStreamDepth};
  PruneState(state, config);
  std::vector<MethodKey> discard;
  for (const auto& [key, s] : state.paths.at(ConfiguredPath("discard"))) discard.push_back(key);
  EXPECT_EQ(discard, (std::vector<MethodKey>{{Method::kMsgZerocopy},
                                             {Method::kMsgZerocopy, DepthClass::k4},
                                             {Method::kUringSendZc}}));
  ASSERT_EQ(state.paths.at(ConfiguredPath("loopback")).size(), 1u);
  EXPECT_TRUE(state.paths.at(ConfiguredPath("loopback")).contains(Method::kMsgZerocopy));
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
}  // namespace zcal::agent::results_test
