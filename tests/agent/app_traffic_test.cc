#include "zcal/agent/domain/app_traffic.h"

#include <gtest/gtest.h>

namespace zcal::agent::app_traffic_test {
namespace {

using calibrator::Method;
constexpr std::uint64_t kSecond = 1'000'000'000;

AppCounters Sent(std::uint64_t sends, std::uint64_t copied = 0) {
  AppCounters c;
  c.answers[3][1][0] = sends;
  c.bytes[1] = sends * 65536;
  c.completions = sends;
  c.copied = copied;
  c.sizes[16] = sends;
  return c;
}

AppsSnapshot Read(std::uint64_t at_s, std::uint64_t sends) {
  AppsSnapshot s;
  s.read_at_ns = at_s * kSecond;
  s.apps["rpc"].cells[{AppScope::kHostDefault, Method::kMsgZerocopy}] = Sent(sends);
  return s;
}

TEST(AppCounters, SumsAndDifferencesWordByWord) {
  AppCounters a = Sent(10, 2);
  a.answers[0][0][2] = 5;
  EXPECT_EQ(a.Sends(), 15u);
  EXPECT_EQ(a.Sends(true), 10u);
  EXPECT_EQ(a.Sends(false), 5u);
  AppCounters b = a;
  b += Sent(4, 1);
  EXPECT_EQ(b.Sends(true), 14u);
  EXPECT_EQ(b.copied, 3u);
  EXPECT_EQ(b.Since(a), Sent(4, 1));
}

TEST(AppCounters, AWordThatWentBackwardsCountsNothing) {
  const AppCounters later = Sent(3);
  const AppCounters earlier = Sent(10);
  const AppCounters d = later.Since(earlier);
  EXPECT_EQ(d.Sends(), 0u);
  EXPECT_EQ(d.bytes[1], 0u);
  EXPECT_TRUE(d.Empty());
}

TEST(AppHistory, IsEmptyBeforeTwoReads) {
  AppHistory h(std::chrono::seconds(60));
  EXPECT_TRUE(h.Recent().apps.empty());
  h.Add(Read(100, 5));
  EXPECT_TRUE(h.Recent().apps.empty());
}

TEST(AppHistory, CountsWhatWasSentWithinTheWindow) {
  AppHistory h(std::chrono::seconds(64));  // checkpoints every 2 s
  for (std::uint64_t t = 0; t <= 200; ++t) h.Add(Read(1000 + t, 10 * t));
  const AppsWindow w = h.Recent();
  EXPECT_EQ(w.to_ns, 1200 * kSecond);
  // The start is the newest read at or before 1200 - 64 s: at most one
  // checkpoint's spacing earlier.
  EXPECT_LE(w.from_ns, 1136 * kSecond);
  EXPECT_GE(w.from_ns, 1134 * kSecond);
  const std::uint64_t span_s = (w.to_ns - w.from_ns) / kSecond;
  const AppCounters& c =
      w.apps.at("rpc").at({AppScope::kHostDefault, Method::kMsgZerocopy});
  EXPECT_EQ(c.Sends(), 10 * span_s);
  EXPECT_LE(h.size(), AppHistory::kCheckpoints + 1);
}

TEST(AppHistory, ANameNewInTheWindowCountsFromZero) {
  AppHistory h(std::chrono::seconds(60));
  h.Add(Read(0, 5));
  AppsSnapshot later = Read(30, 8);
  later.apps["fresh"].cells[{AppScope::kPeer, Method::kUringSendZc}] = Sent(7);
  h.Add(later);
  const AppsWindow w = h.Recent();
  EXPECT_EQ(w.apps.at("rpc").begin()->second.Sends(), 3u);
  EXPECT_EQ(w.apps.at("fresh").begin()->second.Sends(), 7u);
}

TEST(AppHistory, AWallClockStepBackRestartsIt) {
  AppHistory h(std::chrono::seconds(60));
  h.Add(Read(100, 5));
  h.Add(Read(110, 9));
  h.Add(Read(50, 20));
  EXPECT_EQ(h.size(), 1u);
  EXPECT_TRUE(h.Recent().apps.empty());
}

TEST(AppHistory, NamesEveryScopeAndReason) {
  EXPECT_EQ(AppScopeName(AppScope::kHostDefault), "host_default");
  EXPECT_EQ(AppScopeName(AppScope::kNone), "none");
  EXPECT_EQ(AppReasonName(AppReason::kGuardOff), "guard_off");
  EXPECT_EQ(AppDepthClass(0), DepthClass::k1);
  EXPECT_EQ(AppDepthClass(3), DepthClass::kStream);
}

}  // namespace
}  // namespace zcal::agent::app_traffic_test
