// The report under several threads: every thread's answers and completions
// are counted, none twice, whether it has a slot of its own, shares slot 0
// or takes the slot of a thread that exited; and a reader copying the
// object meanwhile sees each counter whole and never going back (report
// ABI 1.1: no seqlock, so a copy may hold part of a send, never part of a
// word). Runs in suite tsan as well.
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "report_reader.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace report_threads_test {
namespace {

using zcal::test::Answers;
using zcal::test::OpenReport;
using zcal::test::ReadReport;
using zcal::test::ReportName;
using zcal::test::ReportSnapshot;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;


// One connection's sends from one thread, without an agent (fallback 1):
// `sends` answers of 1, four completions reported after every fourth
// (none copied, which would turn the guard off).
void Sends(int sends) {
  zcal_key key;
  zcal_key_from_string("192.0.2.1", nullptr, &key);
  zcal_guard g;
  zcal_guard_init_key(&g, sizeof g, nullptr, &key, kZc, 1, 0);
  for (int i = 1; i <= sends; ++i) {
    zcal_guard_should_zerocopy(&g, 4096);
    if (i % 4 == 0) zcal_guard_completed(&g, 4, 0);
  }
}

const zcal_report_cell& Counted(const ReportSnapshot& snap) {
  return snap.counts.cells[ZCAL_REPORT_SCOPE_NONE][kZc];
}

std::uint64_t Sum(const std::uint64_t* words, int n) {
  std::uint64_t sum = 0;
  for (int i = 0; i < n; ++i) sum += words[i];
  return sum;
}

TEST(ReportThreads, SumsEveryThreadsCountsAndAReaderSeesEachCounterWholeAndGrowing) {
  OpenReport report("threads");
  ASSERT_EQ(report.rc(), 0);
  // The writers send until the reader has copied the object this many
  // times (and at least kMinSends each), so that reads overlap writes
  // however the threads are scheduled.
  constexpr int kThreads = 8, kReads = 50;
  constexpr std::uint64_t kMinSends = 20000;
  std::atomic<int> torn{0}, backwards{0}, busy{0}, reads{0};
  std::atomic<std::uint64_t> sent{0}, completed{0};
  std::atomic<bool> done{false};
  std::thread reader([&] {
    zcal_report_cell last{};
    while (!done.load()) {
      const ReportSnapshot snap = ReadReport(ReportName(getpid()));
      if (!snap.error.empty()) {  // no seqlock: nothing may hold a read off
        busy.fetch_add(1);
        continue;
      }
      const zcal_report_cell& c = Counted(snap);
      // Each word is added to whole: bytes by 4096, completions by 4.
      if (c.bytes[1] % 4096 != 0 || c.completions % 4 != 0) torn.fetch_add(1);
      const auto* now = reinterpret_cast<const std::uint64_t*>(&c);
      const auto* before = reinterpret_cast<const std::uint64_t*>(&last);
      for (std::size_t w = 0; w < sizeof c / 8; ++w)
        if (now[w] < before[w]) backwards.fetch_add(1);
      last = c;
      reads.fetch_add(1);
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      zcal_key key;
      zcal_key_from_string("192.0.2.1", nullptr, &key);
      zcal_guard g;
      zcal_guard_init_key(&g, sizeof g, nullptr, &key, kZc, 1, 0);
      std::uint64_t n = 0;
      while (n < kMinSends || reads.load() < kReads) {
        zcal_guard_should_zerocopy(&g, 4096);
        if (++n % 4 == 0) zcal_guard_completed(&g, 4, 0);
      }
      sent += n;
      completed += n / 4 * 4;
    });
  }
  for (std::thread& t : threads) t.join();
  done = true;
  reader.join();

  const ReportSnapshot snap = ReadReport(ReportName(getpid()));
  ASSERT_EQ(snap.error, "");
  const zcal_report_cell& c = Counted(snap);
  EXPECT_EQ(Answers(c, 1, ZCAL_REPORT_BY_NO_ANSWER), sent.load());
  EXPECT_EQ(c.bytes[1], sent.load() * 4096);
  EXPECT_EQ(c.completions, completed.load());
  EXPECT_EQ(c.copied, 0u);
  EXPECT_EQ(c.sizes[12], sent.load());
  EXPECT_EQ(Answers(snap.shared.cells[ZCAL_REPORT_SCOPE_NONE][kZc], 1, ZCAL_REPORT_BY_NO_ANSWER), 0u);
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(backwards.load(), 0);
  EXPECT_EQ(busy.load(), 0);
  EXPECT_GE(reads.load(), kReads);
  // Quiet now: a copy holds whole sends again.
  EXPECT_EQ(Sum(&c.answers[0][0][0], ZCAL_DEPTH_CLASSES * 2 * ZCAL_REPORT_REASONS),
            Sum(c.sizes, ZCAL_REPORT_SIZE_BUCKETS));
}

TEST(ReportThreads, ThreadsBeyondTheSlotsShareSlotZeroAndLoseNothing) {
  OpenReport report("threads");
  ASSERT_EQ(report.rc(), 0);
  constexpr int kThreads = ZCAL_REPORT_SLOTS + 16, kSends = 1000;
  // All alive at once: the first ZCAL_REPORT_SLOTS - 1 take a slot each.
  std::barrier all(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      Sends(1);
      all.arrive_and_wait();
      Sends(kSends - 1);
    });
  for (std::thread& t : threads) t.join();

  const ReportSnapshot snap = ReadReport(ReportName(getpid()));
  ASSERT_EQ(snap.error, "");
  EXPECT_EQ(snap.slots_used, static_cast<std::uint32_t>(ZCAL_REPORT_SLOTS));
  EXPECT_EQ(Answers(Counted(snap), 1, ZCAL_REPORT_BY_NO_ANSWER), std::uint64_t{kThreads} * kSends);
  EXPECT_EQ(Answers(snap.shared.cells[ZCAL_REPORT_SCOPE_NONE][kZc], 1, ZCAL_REPORT_BY_NO_ANSWER),
            17u * kSends);
}

TEST(ReportThreads, AThreadThatExitsGivesItsSlotToTheNextWithItsCounts) {
  OpenReport report("threads");
  ASSERT_EQ(report.rc(), 0);
  constexpr int kThreads = 200, kSends = 100;
  for (int t = 0; t < kThreads; ++t) std::thread(Sends, kSends).join();
  const ReportSnapshot snap = ReadReport(ReportName(getpid()));
  ASSERT_EQ(snap.error, "");
  EXPECT_EQ(snap.slots_used, 2u);  // slot 0, and the one every thread took in turn
  EXPECT_EQ(Answers(Counted(snap), 1, ZCAL_REPORT_BY_NO_ANSWER), std::uint64_t{kThreads} * kSends);
}

}  // namespace
}  // namespace report_threads_test
