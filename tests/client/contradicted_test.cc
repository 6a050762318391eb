// ZCAL_ENTRY_CONTRADICTED (segment ABI 1.3): an entry the applications'
// reports contradict answers copy -- in zcal_result, zcal_should_zerocopy,
// the C++ wrapper and the guard -- with its verdict and threshold as
// published; the guard counts those copies as its own (guard_off) and
// answers as the entry says again once a publish clears the flag.
#include <unistd.h>

#include <cstdint>

#include <gtest/gtest.h>

#include "handle.h"
#include "report_reader.h"
#include "segment_image.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace contradicted_test {
namespace {

using zcal::test::Answers;
using zcal::test::MakeEntry;
using zcal::test::OpenReport;
using zcal::test::ReadReport;
using zcal::test::ReportName;
using zcal::test::SegmentImage;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;
constexpr std::uint64_t kThreshold = 16384, kLarge = 65536, kSmall = 100;
constexpr int kNo = 0, kYes = 1;

zcal_key Key(const char* address) {
  zcal_key key;
  EXPECT_EQ(zcal_key_from_string(address, nullptr, &key), 0);
  return key;
}

// A segment in memory with one host default for msg_zerocopy, whose
// contradiction flag the agent sets and clears with a publish.
class Published {
 public:
  Published() : image_(2) {
    image_.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, kThreshold));
    image_.header().abi_minor = 3;
    EXPECT_EQ(zcal_internal_attach(image_.data(), image_.size(), &h_), 0);
  }
  Published(const Published&) = delete;
  Published& operator=(const Published&) = delete;
  ~Published() { zcal_close(h_); }

  zcal_handle* get() const { return h_; }
  void Contradict(bool on) {
    image_.header().seq += 1;
    if (on)
      image_.entry(0).entry_flags |= ZCAL_ENTRY_CONTRADICTED;
    else
      image_.entry(0).entry_flags &= ~ZCAL_ENTRY_CONTRADICTED;
    image_.header().seq += 1;
    image_.header().generation += 1;
  }
  zcal_result Lookup() {
    zcal_result r;
    const zcal_key key = Key("192.0.2.1");
    EXPECT_EQ(zcal_lookup(h_, &key, kZc, &r), 0);
    return r;
  }

 private:
  SegmentImage image_;
  zcal_handle* h_ = nullptr;
};

zcal_report_cell HostDefaultCell() {
  const zcal::test::ReportSnapshot snap = ReadReport(ReportName(getpid()));
  EXPECT_EQ(snap.error, "");
  return snap.counts.cells[ZCAL_SCOPE_HOST_DEFAULT][kZc];
}

TEST(Contradicted, ALookupSaysSoAndAnswersCopyWithTheVerdictAsPublished) {
  Published segment;
  zcal_result r = segment.Lookup();
  EXPECT_EQ(r.contradicted, 0);
  EXPECT_EQ(r.zerocopy_from_bytes, kThreshold);
  EXPECT_EQ(zcal_result_should_zerocopy(&r, kLarge, 0), 1);

  segment.Contradict(true);
  r = segment.Lookup();
  EXPECT_EQ(r.contradicted, 1);
  EXPECT_EQ(r.verdict, ZCAL_VERDICT_THRESHOLD);
  EXPECT_EQ(r.threshold_bytes, kThreshold);
  EXPECT_EQ(r.zerocopy_from_bytes, UINT64_MAX);
  EXPECT_EQ(zcal_result_should_zerocopy(&r, kLarge, 1), 0);
  const zcal_key key = Key("192.0.2.1");
  EXPECT_EQ(zcal_should_zerocopy(segment.get(), &key, kZc, kLarge, 0, 1), 0);
  zcal_result depth;
  ASSERT_EQ(zcal_lookup_depth(segment.get(), &key, kZc, 1, &depth), 0);
  EXPECT_EQ(depth.contradicted, 1) << "the stream entry answers the class, flag and all";

  segment.Contradict(false);
  r = segment.Lookup();
  EXPECT_EQ(r.contradicted, 0);
  EXPECT_EQ(zcal_should_zerocopy(segment.get(), &key, kZc, kLarge, 0, 0), 1);
}

TEST(Contradicted, TheGuardCopiesUntilTheFlagIsClearedWithoutChangingItsState) {
  Published segment;
  const zcal_key key = Key("192.0.2.1");
  zcal_guard g;
  ASSERT_EQ(zcal_guard_init_key(&g, sizeof g, segment.get(), &key, kZc, 1, 0), 0);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 1);
  ASSERT_EQ(zcal_guard_completed(&g, 1, 0), 0);

  segment.Contradict(true);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 0);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, kSmall), 0);
  EXPECT_EQ(g.class_contradicted, (1u << ZCAL_DEPTH_CLASSES) - 1);
  EXPECT_EQ(g.result.contradicted, 1);
  EXPECT_EQ(g.state, ZCAL_GUARD_ON) << "not the connection's own copies";
  EXPECT_EQ(g.turned_off, 0u);
  // Longer than a retry of the guard's own OFF state: no probe.
  for (std::uint64_t i = 0; i < ZCAL_GUARD_RETRY_SENDS + 1; ++i)
    ASSERT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 0);

  segment.Contradict(false);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 1);
  EXPECT_EQ(g.class_contradicted, 0u);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, kSmall), 0);
}

TEST(Contradicted, TheReportCountsTheCopiesItCausedAsGuardOff) {
  OpenReport report("contradicted");
  ASSERT_EQ(report.rc(), 0);
  Published segment;
  segment.Contradict(true);
  const zcal_key key = Key("192.0.2.1");
  zcal_guard g;
  ASSERT_EQ(zcal_guard_init_key(&g, sizeof g, segment.get(), &key, kZc, 0, 0), 0);
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 0);  // would be 1: guard_off
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, kSmall), 0);  // below the threshold
  ASSERT_EQ(zcal_should_zerocopy(segment.get(), &key, kZc, kLarge, 0, 0), 0);
  ASSERT_EQ(zcal_should_zerocopy(segment.get(), &key, kZc, kSmall, 0, 0), 0);
  const zcal_report_cell c = HostDefaultCell();
  EXPECT_EQ(Answers(c, kNo, ZCAL_REPORT_BY_GUARD_OFF), 2u);
  EXPECT_EQ(Answers(c, kNo, ZCAL_REPORT_BY_THRESHOLD), 2u);
  EXPECT_EQ(Answers(c, kYes, ZCAL_REPORT_BY_THRESHOLD), 0u);
  EXPECT_EQ(c.bytes[kNo], 2 * (kLarge + kSmall));
}

}  // namespace
}  // namespace contradicted_test
