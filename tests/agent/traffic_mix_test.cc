// The host's real mix: the applications' window of reports as the
// decision's traffic histogram, per scope kind, and which mix a path's
// decision is made for.
#include "zcal/agent/domain/traffic_mix.h"

#include <gtest/gtest.h>

namespace zcal::agent::traffic_mix_test {
namespace {

using calibrator::Method;
using calibrator::TrafficBin;
constexpr std::uint64_t kSecond = 1'000'000'000;

AppsSettings Settings(std::uint64_t min_sends = 100) {
  AppsSettings s;
  s.mix_min_sends = min_sends;
  return s;
}

// `sends` of one size bucket at one depth index, answered zerocopy.
AppCounters Sends(std::size_t bucket, std::uint64_t sends, std::size_t depth = 3) {
  AppCounters c;
  c.answers[depth][1][0] = sends;
  c.sizes[bucket] = sends;
  return c;
}

AppsWindow Window() {
  AppsWindow w;
  w.from_ns = 1000 * kSecond;
  w.to_ns = 4600 * kSecond;
  return w;
}

TEST(TrafficMix, BucketsBecomeBinsOfBytesAtTheirMiddleSize) {
  EXPECT_EQ(BucketBytes(0), 1u);
  EXPECT_EQ(BucketBytes(1), 3u);       // 2..3
  EXPECT_EQ(BucketBytes(12), 6144u);   // 4 KiB..8 KiB-1
  EXPECT_EQ(BucketBytes(31), 1ull << 31) << "the last holds every size from 2^31";
  AppsWindow w = Window();
  w.apps["db"][{AppScope::kPeer, Method::kMsgZerocopy}] = Sends(12, 300, 0);
  w.apps["db"][{AppScope::kPeer, Method::kCopy}] = Sends(20, 100, 3);
  w.apps["web"][{AppScope::kPeer, Method::kUringSendZc}] = Sends(12, 100, 3);
  const ScopeMixes mixes = MixesOf(w, Settings());
  ASSERT_EQ(mixes.size(), 1u);
  const TrafficMix& m = mixes.at(AppScope::kPeer);
  EXPECT_EQ(m.window_seconds, 3600u);
  EXPECT_EQ(m.sends, 500u) << "every method and answer: the size mix is the apps'";
  const std::vector<TrafficBin> bins = {{6144, 400.0 * 6144}, {1536 * 1024, 100.0 * 1536 * 1024}};
  EXPECT_EQ(m.bins, bins);
  ASSERT_EQ(m.depth_shares.size(), 2u);
  EXPECT_DOUBLE_EQ(m.depth_shares.at(DepthClass::k1), 0.6);
  EXPECT_DOUBLE_EQ(m.depth_shares.at(DepthClass::kStream), 0.4);
}

TEST(TrafficMix, AScopeBelowTheMinimumSendsHasNoMix) {
  AppsWindow w = Window();
  w.apps["db"][{AppScope::kPeer, Method::kMsgZerocopy}] = Sends(12, 99);
  w.apps["db"][{AppScope::kHostDefault, Method::kMsgZerocopy}] = Sends(16, 100);
  const ScopeMixes mixes = MixesOf(w, Settings(100));
  EXPECT_FALSE(mixes.contains(AppScope::kPeer)) << "99 sends of 100 needed";
  EXPECT_TRUE(mixes.contains(AppScope::kHostDefault));
}

TEST(TrafficMix, EachScopeKindHasItsOwnMixAndUnansweredSendsNone) {
  AppsWindow w = Window();
  w.apps["a"][{AppScope::kHostDefault, Method::kMsgZerocopy}] = Sends(12, 500);
  w.apps["b"][{AppScope::kPeer, Method::kMsgZerocopy}] = Sends(20, 500);
  w.apps["c"][{AppScope::kNone, Method::kMsgZerocopy}] = Sends(8, 500);
  w.apps["d"][{AppScope::kLoopback, Method::kMsgZerocopy}] = Sends(10, 500);
  const ScopeMixes mixes = MixesOf(w, Settings());
  EXPECT_EQ(mixes.at(AppScope::kHostDefault).bins[0].size_bytes, 6144u);
  EXPECT_EQ(mixes.at(AppScope::kPeer).bins[0].size_bytes, 1536u * 1024);
  EXPECT_FALSE(mixes.contains(AppScope::kNone));
  EXPECT_EQ(mixes.size(), 3u);
}

TEST(TrafficMix, NoneWhenTurnedOffOrWithoutSizes) {
  AppsWindow w = Window();
  w.apps["a"][{AppScope::kHostDefault, Method::kMsgZerocopy}] = Sends(12, 500);
  AppsSettings off = Settings();
  off.mix = false;
  EXPECT_TRUE(MixesOf(w, off).empty());
  AppCounters no_sizes;
  no_sizes.answers[3][1][0] = 500;  // a report that counts sends but no size
  w.apps["a"][{AppScope::kHostDefault, Method::kMsgZerocopy}] = no_sizes;
  EXPECT_TRUE(MixesOf(w, Settings()).empty());
}

TEST(TrafficMix, EachPathDecidesForTheScopeItIsPublishedAs) {
  EXPECT_EQ(MixScopeOf(probes::TargetKind::kDiscard), AppScope::kHostDefault);
  EXPECT_EQ(MixScopeOf(probes::TargetKind::kPeer), AppScope::kPeer);
  EXPECT_EQ(MixScopeOf(probes::TargetKind::kLoopback), std::nullopt);
}

TEST(TrafficMix, TheApplicationsMixUnlessTheConfigurationSetsTraffic) {
  ScopeMixes mixes;
  mixes[AppScope::kHostDefault] = TrafficMix{3600, 5000, {{6144, 1.0}}, {}};
  const calibrator::DecisionOptions plain;

  const auto [apps, apps_for] = DecisionFor(plain, AppScope::kHostDefault, mixes);
  EXPECT_EQ(apps.traffic, mixes[AppScope::kHostDefault].bins);
  EXPECT_EQ(apps_for.source, MixSource::kApplications);
  EXPECT_EQ(apps_for.mix.sends, 5000u);

  const auto [uniform, uniform_for] = DecisionFor(plain, AppScope::kPeer, mixes);
  EXPECT_TRUE(uniform.traffic.empty()) << "no mix of the peer scope: as today";
  EXPECT_EQ(uniform_for.source, MixSource::kUniform);
  EXPECT_EQ(DecisionFor(plain, std::nullopt, mixes).second.source, MixSource::kUniform)
      << "loopback decides for no mix";

  calibrator::DecisionOptions configured;
  configured.traffic = {{65536, 1.0}};
  const auto [set, set_for] = DecisionFor(configured, AppScope::kHostDefault, mixes);
  EXPECT_EQ(set.traffic, configured.traffic) << "the configuration wins";
  EXPECT_EQ(set_for.source, MixSource::kConfigured);
  EXPECT_EQ(set_for.mix.bins, configured.traffic);
}

TEST(TrafficMix, SourcesHaveOneName) {
  for (const MixSource s : {MixSource::kUniform, MixSource::kConfigured, MixSource::kApplications}) {
    EXPECT_EQ(ParseMixSource(MixSourceName(s)), s);
  }
  EXPECT_EQ(ParseMixSource("apps"), std::nullopt);
}

}  // namespace
}  // namespace zcal::agent::traffic_mix_test
