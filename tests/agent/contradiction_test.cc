// The field-contradiction rule: the applications' windows of reports
// against the published table, on a fake clock (every time is a value).
#include "zcal/agent/publish/contradiction.h"

#include <gtest/gtest.h>

namespace zcal::agent::contradiction_test {
namespace {

using calibrator::Method;
using calibrator::Verdict;
constexpr std::uint64_t kSecond = 1'000'000'000;
constexpr std::uint64_t kT0 = 1'700'000'000 * kSecond;

AppsSettings Settings() {
  AppsSettings s;
  s.window = std::chrono::seconds(600);
  s.contradiction_share = 0.5;
  s.contradiction_min_completions = 1000;
  return s;
}

AppCounters Completions(std::uint64_t completions, std::uint64_t copied) {
  AppCounters c;
  c.answers[3][1][0] = completions;
  c.completions = completions;
  c.copied = copied;
  c.sizes[16] = completions;
  return c;
}

AppsWindow Window(std::uint64_t to_ns,
                  std::initializer_list<std::tuple<std::string, AppScope, AppCounters>> cells,
                  Method method = Method::kMsgZerocopy) {
  AppsWindow w;
  w.from_ns = to_ns - 600 * kSecond;
  w.to_ns = to_ns;
  for (const auto& [name, scope, counters] : cells) w.apps[name][{scope, method}] += counters;
  return w;
}

PublishedEntry Entry(ScopeKind scope, Verdict verdict, std::uint64_t measured_at_ns,
                     Method method = Method::kMsgZerocopy,
                     DepthClass depth = DepthClass::kStream) {
  PublishedEntry e;
  e.scope = scope;
  e.method = method;
  e.depth = depth;
  e.verdict = verdict;
  if (verdict == Verdict::kThreshold) e.threshold_bytes = 16384;
  e.measured_at_ns = measured_at_ns;
  if (scope == ScopeKind::kPeer) {
    e.address = "10.0.0.2";
    e.prefix_len = 32;
  }
  return e;
}

TEST(FieldContradiction, TripsAtTheShareAndCountAndNotBelow) {
  const AppsSettings s = Settings();
  EXPECT_TRUE(Contradicts({1000, 500, {}}, s)) << "both limits are inclusive";
  EXPECT_FALSE(Contradicts({1000, 499, {}}, s)) << "a share below";
  EXPECT_FALSE(Contradicts({999, 999, {}}, s)) << "too few completions: one route change";
  EXPECT_FALSE(Contradicts({0, 0, {}}, s));
  AppsSettings none = s;
  none.contradiction_min_completions = 0;
  EXPECT_FALSE(Contradicts({0, 0, {}}, none)) << "no completions never trip";
}

TEST(FieldContradiction, EvidenceSumsTheAppsOfAScopeAndCapsForgedCopies) {
  const AppsWindow w = Window(kT0, {{"db", AppScope::kPeer, Completions(600, 500)},
                                    {"web", AppScope::kPeer, Completions(400, 900)},
                                    {"idle", AppScope::kPeer, Completions(0, 0)}});
  const auto evidence = FieldEvidenceOf(w);
  ASSERT_EQ(evidence.size(), 1u);
  const FieldEvidence& e = evidence.at({AppScope::kPeer, Method::kMsgZerocopy});
  EXPECT_EQ(e.completions, 1000u);
  EXPECT_EQ(e.copied, 900u) << "web's 900 copied of 400 count as 400";
  EXPECT_EQ(e.apps.size(), 2u) << "an app without completions is no evidence";
}

TEST(FieldContradiction, RaisesOnAScopeThatSaysZerocopyPaysAndFlagsItsEntries) {
  ContradictionTracker t;
  std::vector<PublishedEntry> table = {
      Entry(ScopeKind::kPeer, Verdict::kThreshold, kT0 - 100 * kSecond),
      Entry(ScopeKind::kPeer, Verdict::kAlways, kT0 - 100 * kSecond, Method::kMsgZerocopy,
            DepthClass::k4),
      Entry(ScopeKind::kPeer, Verdict::kNever, kT0 - 100 * kSecond, Method::kMsgZerocopy,
            DepthClass::k1),
      Entry(ScopeKind::kPeer, Verdict::kThreshold, kT0 - 100 * kSecond, Method::kUringSendZc),
      Entry(ScopeKind::kHostDefault, Verdict::kThreshold, kT0 - 100 * kSecond)};
  const ContradictionUpdate u =
      t.Apply(Window(kT0, {{"db", AppScope::kPeer, Completions(2000, 1500)}}), Settings(), table,
              kT0);
  ASSERT_EQ(u.raised.size(), 1u);
  EXPECT_EQ(u.raised[0].key.scope, AppScope::kPeer);
  EXPECT_EQ(u.raised[0].key.method, Method::kMsgZerocopy);
  EXPECT_EQ(u.raised[0].evidence.copied, 1500u);
  EXPECT_EQ(u.raised[0].window_seconds, 600u);
  t.Mark(table);
  EXPECT_TRUE(table[0].contradicted);
  EXPECT_TRUE(table[1].contradicted) << "every class that says zerocopy pays";
  EXPECT_FALSE(table[2].contradicted) << "a never entry needs no flag";
  EXPECT_FALSE(table[3].contradicted) << "another method";
  EXPECT_FALSE(table[4].contradicted) << "another scope kind";
}

TEST(FieldContradiction, LoopbackAndUnansweredSendsNeverTripIt) {
  ContradictionTracker t;
  // Even against a table that (wrongly) published loopback as a threshold.
  std::vector<PublishedEntry> table = {
      Entry(ScopeKind::kLoopback, Verdict::kThreshold, kT0),
      Entry(ScopeKind::kHostDefault, Verdict::kThreshold, kT0)};
  const ContradictionUpdate u =
      t.Apply(Window(kT0, {{"local", AppScope::kLoopback, Completions(100000, 100000)},
                           {"fallback", AppScope::kNone, Completions(100000, 100000)}}),
              Settings(), table, kT0);
  EXPECT_FALSE(u.changed());
  EXPECT_TRUE(t.active().empty());
}

TEST(FieldContradiction, AScopeThatSaysNeverIsNotContradicted) {
  ContradictionTracker t;
  const std::vector<PublishedEntry> table = {Entry(ScopeKind::kHostDefault, Verdict::kNever, kT0)};
  EXPECT_FALSE(t.Apply(Window(kT0, {{"db", AppScope::kHostDefault, Completions(5000, 5000)}}),
                       Settings(), table, kT0)
                   .changed());
}

TEST(FieldContradiction, InterfaceAndHostDefaultKindsFlagTheirOwnEntries) {
  ContradictionTracker t;
  PublishedEntry nic = Entry(ScopeKind::kInterface, Verdict::kThreshold, kT0);
  nic.interface = "eth0";
  std::vector<PublishedEntry> table = {nic, Entry(ScopeKind::kHostDefault, Verdict::kThreshold, kT0),
                                       Entry(ScopeKind::kPeer, Verdict::kThreshold, kT0)};
  const ContradictionUpdate u =
      t.Apply(Window(kT0, {{"db", AppScope::kInterface, Completions(1000, 1000)},
                           {"db", AppScope::kHostDefault, Completions(1000, 1000)}}),
              Settings(), table, kT0);
  EXPECT_EQ(u.raised.size(), 2u);
  t.Mark(table);
  EXPECT_TRUE(table[0].contradicted);
  EXPECT_TRUE(table[1].contradicted);
  EXPECT_FALSE(table[2].contradicted);
}

TEST(FieldContradiction, IsRaisedOncePerContradictionNotPerHeartbeat) {
  ContradictionTracker t;
  const std::vector<PublishedEntry> table = {Entry(ScopeKind::kPeer, Verdict::kThreshold, kT0)};
  std::size_t raised = 0;
  for (int beat = 0; beat < 100; ++beat) {
    const std::uint64_t now = kT0 + static_cast<std::uint64_t>(beat) * 10 * kSecond;
    raised += t.Apply(Window(now, {{"db", AppScope::kPeer, Completions(2000, 2000)}}), Settings(),
                      table, now)
                  .raised.size();
  }
  EXPECT_EQ(raised, 1u);
  EXPECT_EQ(t.active().size(), 1u);
}

TEST(FieldContradiction, IsHeldUntilMeasuredAgainAndAWindowPassedWithoutEvidence) {
  ContradictionTracker t;
  const AppsSettings s = Settings();  // window 600 s
  std::vector<PublishedEntry> table = {Entry(ScopeKind::kPeer, Verdict::kThreshold, kT0 - kSecond)};
  ASSERT_EQ(t.Apply(Window(kT0, {{"db", AppScope::kPeer, Completions(2000, 2000)}}), s, table, kT0)
                .raised.size(),
            1u);
  // The guards stop sending zerocopy: no new evidence, but no new
  // measurement either.
  const AppsWindow quiet = Window(kT0 + 5000 * kSecond, {});
  EXPECT_FALSE(t.Apply(quiet, s, table, kT0 + 5000 * kSecond).changed())
      << "no evidence is not a measurement: still held";
  // The recalibration confirms the entry (a newer measured_at_ns) ...
  table[0].measured_at_ns = kT0 + 5001 * kSecond;
  // ... while the window still holds copies: held, and seen again.
  EXPECT_FALSE(t.Apply(Window(kT0 + 5100 * kSecond,
                              {{"db", AppScope::kPeer, Completions(2000, 2000)}}),
                       s, table, kT0 + 5100 * kSecond)
                   .changed());
  const AppsWindow later = Window(kT0 + 5700 * kSecond, {});
  EXPECT_FALSE(t.Apply(later, s, table, kT0 + 5699 * kSecond).changed())
      << "599 s after the last evidence";
  const ContradictionUpdate cleared = t.Apply(later, s, table, kT0 + 5700 * kSecond);
  ASSERT_EQ(cleared.cleared.size(), 1u);
  EXPECT_NE(cleared.cleared[0].second.find("measured again"), std::string::npos);
  EXPECT_TRUE(t.active().empty());
  t.Mark(table);
  EXPECT_FALSE(table[0].contradicted);
}

TEST(FieldContradiction, ClearsAtOnceWhenTheScopeNoLongerSaysZerocopyPays) {
  ContradictionTracker t;
  std::vector<PublishedEntry> table = {Entry(ScopeKind::kHostDefault, Verdict::kThreshold, kT0)};
  t.Apply(Window(kT0, {{"db", AppScope::kHostDefault, Completions(2000, 2000)}}), Settings(), table,
          kT0);
  table[0].verdict = Verdict::kNever;
  table[0].threshold_bytes.reset();
  const ContradictionUpdate u =
      t.Apply(Window(kT0 + kSecond, {{"db", AppScope::kHostDefault, Completions(2000, 2000)}}),
              Settings(), table, kT0 + kSecond);
  EXPECT_EQ(u.cleared.size(), 1u);
  EXPECT_TRUE(u.raised.empty()) << "copies on a never scope contradict nothing";
}

TEST(FieldContradiction, AContradictionAfterOneClearedIsRaisedAgain) {
  ContradictionTracker t;
  const AppsSettings s = Settings();
  std::vector<PublishedEntry> table = {Entry(ScopeKind::kPeer, Verdict::kThreshold, kT0)};
  const auto evidence = [](std::uint64_t now) {
    return Window(now, {{"db", AppScope::kPeer, Completions(2000, 2000)}});
  };
  ASSERT_EQ(t.Apply(evidence(kT0), s, table, kT0).raised.size(), 1u);
  table[0].measured_at_ns = kT0 + kSecond;
  ASSERT_EQ(t.Apply(Window(kT0 + 601 * kSecond, {}), s, table, kT0 + 601 * kSecond).cleared.size(),
            1u);
  const ContradictionUpdate again = t.Apply(evidence(kT0 + 700 * kSecond), s, table,
                                            kT0 + 700 * kSecond);
  EXPECT_EQ(again.raised.size(), 1u) << "a new contradiction: logged, counted, recalibrated";
}

TEST(FieldContradiction, RecordsRestoreTheContradictionsInForce) {
  ContradictionTracker t;
  std::vector<PublishedEntry> table = {Entry(ScopeKind::kPeer, Verdict::kThreshold, kT0)};
  t.Apply(Window(kT0, {{"db", AppScope::kPeer, Completions(2000, 2000)}}), Settings(), table, kT0);
  const std::vector<ContradictionRecord> records = t.Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], (ContradictionRecord{AppScope::kPeer, Method::kMsgZerocopy, kT0, kT0}));

  ContradictionTracker restarted;
  const std::vector<ContradictionRecord> saved = {
      records[0], {AppScope::kLoopback, Method::kMsgZerocopy, kT0, kT0}};
  restarted.Restore(saved);
  EXPECT_EQ(restarted.Records(), records) << "a loopback record never trips: skipped";
  restarted.Mark(table);
  EXPECT_TRUE(table[0].contradicted);
  EXPECT_FALSE(restarted.Apply(Window(kT0 + kSecond, {}), Settings(), table, kT0 + kSecond)
                   .changed())
      << "no new evidence and not measured again: held as before the restart";
  table[0].measured_at_ns = kT0 + kSecond;
  EXPECT_EQ(restarted.Apply(Window(kT0 + 600 * kSecond, {}), Settings(), table,
                            kT0 + 600 * kSecond)
                .cleared.size(),
            1u)
      << "the hold counts from when it was last seen, before the restart";
}

TEST(FieldContradiction, TheLogLineNamesScopeMethodAppsAndFigures) {
  Contradiction c;
  c.key = {AppScope::kPeer, Method::kMsgZerocopy};
  c.evidence = {1000, 900, {{"db", {850, 800}}, {"web", {150, 100}}}};
  c.window_seconds = 3600;
  const std::vector<PublishedEntry> table = {Entry(ScopeKind::kPeer, Verdict::kThreshold, kT0)};
  EXPECT_EQ(DescribeRaised(c, table),
            "field contradiction on peer/msg_zerocopy: the applications saw 900 of 1000 "
            "zerocopy completions copied (90%) within 1h (db 800/850, web 100/150) where zcal "
            "publishes threshold 16KiB; its entries are flagged for readers and recalibrated");
  EXPECT_EQ(DescribeCleared(c, "why"), "field contradiction on peer/msg_zerocopy cleared: why");
}

}  // namespace
}  // namespace zcal::agent::contradiction_test
