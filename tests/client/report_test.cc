// The report: a process that opts in counts what libzcal answered and
// what the kernel did in an object of its own, exactly as it was asked
// and told; one that does not opt in leaves nothing behind.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "handle.h"
#include "report_reader.h"
#include "segment_image.h"
#include "zcal/zcal.h"

extern "C" {
extern const size_t zcal_test_c_report_layout[];
extern const size_t zcal_test_c_report_layout_count;
}

// This file's names, apart from other test files' (unity builds).
namespace report_test {
namespace {

using zcal::test::Answers;
using zcal::test::AtDepth;
using zcal::test::MakeEntry;
using zcal::test::OpenReport;
using zcal::test::ReadReport;
using zcal::test::ReportName;
using zcal::test::ReportSnapshot;
using zcal::test::SegmentImage;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;
constexpr int kNo = 0, kYes = 1;

bool Exists(const std::string& shm_name) {
  struct stat st {};
  return stat(("/dev/shm" + shm_name).c_str(), &st) == 0;
}

zcal_key Key(const char* address) {
  zcal_key key;
  EXPECT_EQ(zcal_key_from_string(address, nullptr, &key), 0);
  return key;
}


ReportSnapshot Read() {
  ReportSnapshot snap = ReadReport(ReportName(getpid()));
  EXPECT_EQ(snap.error, "");
  return snap;
}

// A copy: callers pass a snapshot that lives only for the call.
zcal_report_cell Cell(const ReportSnapshot& snap, unsigned scope, std::uint8_t method) {
  return snap.counts.cells[scope][method];
}

// What libzcal finds at the segment's name when a report closes: no
// segment, or a segment whose agent's heartbeat is fresh or stale. Named by
// ZCAL_SEGMENT for the time of the test (a segment this process opened by
// name is asked first; the tests' are gone by then), so that an agent
// running on the test's host does not change what close does.
class AgentSegment {
 public:
  // kOtherUser: an agent of another user (without CAP_FOWNER, it cannot
  // remove this process's object from a sticky /dev/shm); kOtherUserTakes:
  // the same agent saying it can (ZCAL_FLAG_TAKES_REPORTS).
  enum Kind { kNone, kFresh, kStale, kRetired, kOwn, kOtherUser, kOtherUserTakes };
  explicit AgentSegment(Kind kind) : name_("report-agent") {
    if (kind != kNone) {
      zcal::test::SegmentImage image(4);
      if (kind == kStale) image.header().heartbeat_ns -= 60 * kSecondNs;
      if (kind == kRetired) image.header().flags |= ZCAL_FLAG_RETIRED;
      if (kind == kOwn) image.header().agent_pid = static_cast<std::uint32_t>(getpid());
      if (kind == kOtherUserTakes) image.header().flags |= ZCAL_FLAG_TAKES_REPORTS;
      image.WriteTo(name_);
      if (kind == kOtherUser || kind == kOtherUserTakes) {
        chowned_ = chown(("/dev/shm" + name_.str()).c_str(), kOtherUid, kOtherUid) == 0;
      }
    }
    if (const char* before = std::getenv(ZCAL_SEGMENT_ENV)) before_ = before;
    setenv(ZCAL_SEGMENT_ENV, name_.c_str(), 1);
  }
  AgentSegment(const AgentSegment&) = delete;
  AgentSegment& operator=(const AgentSegment&) = delete;
  ~AgentSegment() {
    if (before_.empty()) {
      unsetenv(ZCAL_SEGMENT_ENV);
    } else {
      setenv(ZCAL_SEGMENT_ENV, before_.c_str(), 1);
    }
    // What close left for an agent that is not there.
    shm_unlink(ReportName(getpid()).c_str());
  }
  const std::string& name() const { return name_.str(); }
  bool chowned() const { return chowned_; }

 private:
  static constexpr std::uint64_t kSecondNs = 1'000'000'000;
  static constexpr uid_t kOtherUid = 4242;
  bool chowned_ = false;
  zcal::test::ScopedName name_;
  std::string before_;
};

TEST(Report, LayoutMatchesTheDocumentedOffsetsInCAndCxx) {
  // docs/shm-abi.md, "Report objects", in the order layout_c.c lists them.
  const std::vector<std::size_t> documented = {256, 8,   12,  16,  36,    40, 44, 48, 56, 72,
                                               84,  88,  152, 544, 256, 272, 288, 21824, 8, 64};
  const std::vector<std::size_t> cxx = {
      sizeof(zcal_report_header),
      offsetof(zcal_report_header, abi_major),
      offsetof(zcal_report_header, header_size),
      offsetof(zcal_report_header, slot_size),
      offsetof(zcal_report_header, slots),
      offsetof(zcal_report_header, slots_used),
      offsetof(zcal_report_header, owner_pid),
      offsetof(zcal_report_header, total_size),
      offsetof(zcal_report_header, generation),
      offsetof(zcal_report_header, closed_ns),
      offsetof(zcal_report_header, flags),
      offsetof(zcal_report_header, name),
      offsetof(zcal_report_header, reserved),
      sizeof(zcal_report_cell),
      offsetof(zcal_report_cell, bytes),
      offsetof(zcal_report_cell, completions),
      offsetof(zcal_report_cell, sizes),
      sizeof(zcal_report_slot),
      offsetof(zcal_report_slot, flags),
      offsetof(zcal_report_slot, cells),
  };
  EXPECT_EQ(cxx, documented);
  EXPECT_EQ(std::vector<std::size_t>(zcal_test_c_report_layout,
                                     zcal_test_c_report_layout + zcal_test_c_report_layout_count),
            documented);
  std::uint64_t magic = ZCAL_REPORT_MAGIC;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&magic), 8), std::string("ZCALREP\0", 8));
}

TEST(Report, OpenCreatesAnObjectNamedAfterThePidThatCloseRemoves) {
  const AgentSegment no_agent(AgentSegment::kNone);
  const std::string name = ReportName(getpid());
  ASSERT_FALSE(Exists(name));
  {
    OpenReport report("storage-target");
    ASSERT_EQ(report.rc(), 0) << zcal_error_detail();
    ASSERT_TRUE(Exists(name));
    struct stat st {};
    ASSERT_EQ(stat(("/dev/shm" + name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    const ReportSnapshot snap = Read();
    EXPECT_EQ(snap.name, "storage-target");
    EXPECT_EQ(snap.owner_pid, static_cast<std::uint32_t>(getpid()));
    EXPECT_NE(snap.generation, 0u);
    EXPECT_EQ(snap.flags, 0u);
    EXPECT_EQ(snap.abi_minor, ZCAL_REPORT_ABI_MINOR);
  }
  EXPECT_FALSE(Exists(name));
}

// Report ABI 1.1 writers keep no seqlock: a thread's counting leaves its
// slot's seq 0, so that a reader copying through the seqlock (as 1.0's
// readers do) never waits on it.
TEST(Report, CountingLeavesEverySlotsSeqZero) {
  const AgentSegment no_agent(AgentSegment::kNone);
  OpenReport report("no-seqlock");
  ASSERT_EQ(report.rc(), 0) << zcal_error_detail();
  const zcal_key key = Key("192.0.2.1");
  for (int i = 0; i < 100; ++i) (void)zcal_should_zerocopy(nullptr, &key, kZc, 10, 0, 1);
  ASSERT_EQ(zcal_report_completed(nullptr, &key, kZc, 0, 4, 1), 0);
  const int fd = shm_open(ReportName(getpid()).c_str(), O_RDONLY, 0);
  ASSERT_GE(fd, 0);
  zcal_report_header h{};
  ASSERT_EQ(pread(fd, &h, sizeof h, 0), static_cast<ssize_t>(sizeof h));
  ASSERT_GE(h.slots_used, 2u);  // slot 0 and this thread's
  for (std::uint32_t i = 0; i < h.slots_used; ++i) {
    std::uint64_t seq = 1;
    ASSERT_EQ(pread(fd, &seq, sizeof seq, h.header_size + std::uint64_t{i} * h.slot_size),
              static_cast<ssize_t>(sizeof seq));
    EXPECT_EQ(seq, 0u) << "slot " << i;
  }
  close(fd);
  EXPECT_EQ(Answers(Cell(Read(), ZCAL_REPORT_SCOPE_NONE, kZc), kYes, ZCAL_REPORT_BY_NO_ANSWER), 100u);
}

// An agent is there to read, fold and remove it: the object stays, closed,
// with what was counted after the agent's last read.
TEST(Report, CloseWithAFreshAgentHeartbeatLeavesTheClosedObjectWithItsFinalCounts) {
  const AgentSegment agent(AgentSegment::kFresh);
  const zcal_key key = Key("192.0.2.1");
  ASSERT_EQ(zcal_report_open("left"), 0) << zcal_error_detail();
  for (int i = 0; i < 3; ++i) (void)zcal_should_zerocopy(nullptr, &key, kZc, 10, 0, 1);
  const std::uint64_t generation = Read().generation;
  zcal_report_close();
  ASSERT_TRUE(Exists(ReportName(getpid())));
  const ReportSnapshot snap = Read();
  EXPECT_EQ(snap.generation, generation);
  EXPECT_EQ(snap.flags, ZCAL_REPORT_FLAG_CLOSED);
  EXPECT_EQ(Answers(Cell(snap, ZCAL_REPORT_SCOPE_NONE, kZc), kYes, ZCAL_REPORT_BY_NO_ANSWER), 3u);
  // Counting stopped at close.
  (void)zcal_should_zerocopy(nullptr, &key, kZc, 10, 0, 1);
  EXPECT_EQ(Answers(Cell(Read(), ZCAL_REPORT_SCOPE_NONE, kZc), kYes, ZCAL_REPORT_BY_NO_ANSWER), 3u);
}

// A report opened again before the agent removed the closed one takes the
// name: the process reports on (the closed object's unread counts go).
TEST(Report, AnOpenAfterACloseTheAgentHasNotReadYetTakesTheName) {
  const AgentSegment agent(AgentSegment::kFresh);
  std::uint64_t first = 0;
  {
    OpenReport report("before");
    ASSERT_EQ(report.rc(), 0);
    first = Read().generation;
  }
  ASSERT_TRUE(Exists(ReportName(getpid())));
  OpenReport report("after");
  ASSERT_EQ(report.rc(), 0) << zcal_error_detail();
  const ReportSnapshot snap = Read();
  EXPECT_EQ(snap.name, "after");
  EXPECT_EQ(snap.flags, 0u);
  EXPECT_GT(snap.generation, first);
}

// No agent would ever remove it: close removes it, as without a segment.
// A segment the process writes itself (a benchmark) has no agent either.
TEST(Report, CloseWithAStaleRetiredOrOwnSegmentRemovesTheObject) {
  for (const AgentSegment::Kind kind :
       {AgentSegment::kStale, AgentSegment::kRetired, AgentSegment::kOwn}) {
    const AgentSegment agent(kind);
    {
      OpenReport report("gone");
      ASSERT_EQ(report.rc(), 0);
      ASSERT_TRUE(Exists(ReportName(getpid())));
    }
    EXPECT_FALSE(Exists(ReportName(getpid()))) << "kind " << kind;
  }
}

// The systemd unit's agent runs as its own user: it takes the objects of
// other users' processes only with CAP_FOWNER, and says so in its segment.
TEST(Report, AnotherUsersAgentTakesTheClosedObjectOnlyWhenItsSegmentSaysSo) {
  for (const AgentSegment::Kind kind : {AgentSegment::kOtherUser, AgentSegment::kOtherUserTakes}) {
    const AgentSegment agent(kind);
    if (!agent.chowned()) GTEST_SKIP() << "chown needs root (CAP_CHOWN)";
    struct stat dir;
    ASSERT_EQ(stat("/dev/shm", &dir), 0);
    if (!(dir.st_mode & S_ISVTX)) GTEST_SKIP() << "/dev/shm is not sticky here";
    {
      OpenReport report("other");
      ASSERT_EQ(report.rc(), 0);
    }
    EXPECT_EQ(Exists(ReportName(getpid())), kind == AgentSegment::kOtherUserTakes)
        << "kind " << kind;
  }
}

TEST(Report, ASecondObjectOfTheProcessHasAnotherGeneration) {
  std::uint64_t first = 0;
  {
    OpenReport report("a");
    ASSERT_EQ(report.rc(), 0);
    first = Read().generation;
  }
  OpenReport report("a");
  ASSERT_EQ(report.rc(), 0);
  EXPECT_GT(Read().generation, first);
}

TEST(Report, RefusesBadNames) {
  EXPECT_EQ(zcal_report_open(nullptr), -EINVAL);
  EXPECT_EQ(zcal_report_open(""), -EINVAL);
  EXPECT_EQ(zcal_report_open(std::string(ZCAL_REPORT_NAME_SIZE, 'a').c_str()), -EINVAL);
  EXPECT_EQ(zcal_report_open("a/b"), -EINVAL);
  EXPECT_NE(std::string(zcal_error_detail()).find("'/'"), std::string::npos);
  EXPECT_EQ(zcal_report_open("a\nb"), -EINVAL);
  EXPECT_NE(std::string(zcal_error_detail()).find("control character"), std::string::npos);
  EXPECT_EQ(zcal_report_open("a\x1b[31m"), -EINVAL);
  EXPECT_EQ(zcal_report_open("del\x7f"), -EINVAL);
  EXPECT_FALSE(Exists(ReportName(getpid())));
  // The longest name, and UTF-8, are fine.
  {
    OpenReport report(std::string(ZCAL_REPORT_NAME_SIZE - 1, 'a').c_str());
    EXPECT_EQ(report.rc(), 0);
  }
  OpenReport report("caf\xc3\xa9");
  EXPECT_EQ(report.rc(), 0);
  EXPECT_EQ(Read().name, "caf\xc3\xa9");
}

TEST(Report, ASecondOpenIsBusyAndKeepsTheFirst) {
  OpenReport report("first");
  ASSERT_EQ(report.rc(), 0);
  EXPECT_EQ(zcal_report_open("second"), -EBUSY);
  EXPECT_EQ(Read().name, "first");
}

TEST(Report, ALeftoverObjectOfThePidIsNotTakenOver) {
  const std::string name = ReportName(getpid());
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_EQ(zcal_report_open("late"), -EEXIST);
  EXPECT_NE(std::string(zcal_error_detail()).find("left over"), std::string::npos);
  shm_unlink(name.c_str());
}

// A segment whose host default for msg_zerocopy has a threshold, and a
// peer /32 whose verdict is inconclusive.
class Published {
 public:
  explicit Published(std::uint64_t threshold) : image_(4) {
    image_.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, threshold));
    zcal_shm_entry peer = zcal::test::Peer("198.18.0.1", 32, kZc, 0);
    peer.verdict = ZCAL_VERDICT_INCONCLUSIVE;
    peer.entry_flags = 0;
    peer.threshold_bytes = 0;
    image_.Add(peer);
    EXPECT_EQ(zcal_internal_attach(image_.data(), image_.size(), &h_), 0);
  }
  Published(const Published&) = delete;
  Published& operator=(const Published&) = delete;
  ~Published() { zcal_close(h_); }
  zcal_handle* handle() { return h_; }

 private:
  SegmentImage image_;
  zcal_handle* h_ = nullptr;
};

TEST(Report, CountsEachGuardAnswerAndCompletionExactly) {
  OpenReport report("exact");
  ASSERT_EQ(report.rc(), 0);
  Published segment(16384);
  zcal_guard g;
  const zcal_key key = Key("192.0.2.1");
  ASSERT_EQ(zcal_guard_init_key(&g, sizeof g, segment.handle(), &key, kZc, 0, 0), 0);

  // Depth 1 (nothing in flight) each time: a completion follows each 1.
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, 100), 0);      // bucket 6
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, 65536), 1);    // bucket 16
  ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);           // copied: OFF
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, 70000), 0);    // guard off, bucket 16
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, 1), 0);        // threshold, bucket 0

  const ReportSnapshot snap = Read();
  const zcal_report_cell c = Cell(snap, ZCAL_SCOPE_HOST_DEFAULT, kZc);
  EXPECT_EQ(Answers(c, kNo, ZCAL_REPORT_BY_THRESHOLD), 2u);
  EXPECT_EQ(Answers(c, kNo, ZCAL_REPORT_BY_GUARD_OFF), 1u);
  EXPECT_EQ(Answers(c, kYes, ZCAL_REPORT_BY_THRESHOLD), 1u);
  EXPECT_EQ(Answers(c, kNo, ZCAL_REPORT_BY_NO_ANSWER) + Answers(c, kYes, ZCAL_REPORT_BY_NO_ANSWER), 0u);
  EXPECT_EQ(c.bytes[kNo], 100u + 70000u + 1u);
  EXPECT_EQ(c.bytes[kYes], 65536u);
  EXPECT_EQ(c.completions, 1u);
  EXPECT_EQ(c.copied, 1u);
  EXPECT_EQ(c.sizes[0], 1u);
  EXPECT_EQ(c.sizes[6], 1u);
  EXPECT_EQ(c.sizes[16], 2u);
  // In flight after the first 1 and its completion: 0, 1, then 0 again
  // (unreported copies count, below ZCAL_DEPTH_4): class 1 every time.
  EXPECT_EQ(AtDepth(c, 0), 4u);
  // Nothing elsewhere.
  std::uint64_t total = 0;
  for (const auto& scope : snap.counts.cells)
    for (const auto& cell : scope)
      for (int k = 0; k < ZCAL_DEPTH_CLASSES; ++k) total += AtDepth(cell, k);
  EXPECT_EQ(total, 4u);
}

TEST(Report, CountsTheDepthTheGuardSaw) {
  OpenReport report("depth");
  ASSERT_EQ(report.rc(), 0);
  Published segment(1);
  zcal_guard g;
  const zcal_key key = Key("192.0.2.1");
  ASSERT_EQ(zcal_guard_init_key(&g, sizeof g, segment.handle(), &key, kZc, 0, 0), 0);
  for (int i = 0; i < 40; ++i) ASSERT_EQ(zcal_guard_should_zerocopy(&g, 4096), 1);
  const zcal_report_cell c = Cell(Read(), ZCAL_SCOPE_HOST_DEFAULT, kZc);
  // Depths 1..40: 3 of class 1, 12 of 4, 16 of 16, 9 of the stream.
  EXPECT_EQ(AtDepth(c, 0), 3u);
  EXPECT_EQ(AtDepth(c, 1), 12u);
  EXPECT_EQ(AtDepth(c, 2), 16u);
  EXPECT_EQ(AtDepth(c, 3), 9u);
  EXPECT_EQ(c.sizes[12], 40u);
}

TEST(Report, CountsAnswersWithoutAnEntryUnderNoScope) {
  OpenReport report("fallback");
  ASSERT_EQ(report.rc(), 0);
  const zcal_key key = Key("192.0.2.1");
  zcal_guard g;
  ASSERT_EQ(zcal_guard_init_key(&g, sizeof g, nullptr, &key, kZc, 1, 0), 0);
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, 10), 1);
  ASSERT_EQ(zcal_guard_completed(&g, 1, 0), 0);
  ASSERT_EQ(zcal_should_zerocopy(nullptr, &key, ZCAL_METHOD_URING_SEND_ZC, 10, 0, 0), 0);

  const ReportSnapshot snap = Read();
  const zcal_report_cell guard = Cell(snap, ZCAL_REPORT_SCOPE_NONE, kZc);
  EXPECT_EQ(Answers(guard, kYes, ZCAL_REPORT_BY_NO_ANSWER), 1u);
  EXPECT_EQ(guard.completions, 1u);
  EXPECT_EQ(guard.copied, 0u);
  const zcal_report_cell plain = Cell(snap, ZCAL_REPORT_SCOPE_NONE, ZCAL_METHOD_URING_SEND_ZC);
  EXPECT_EQ(Answers(plain, kNo, ZCAL_REPORT_BY_NO_ANSWER), 1u);
  EXPECT_EQ(AtDepth(plain, ZCAL_DEPTH_CLASSES - 1), 1u);  // a stream's answer
}

TEST(Report, CountsShouldZerocopyAndItsCompletionsInTheScopeThatAnswered) {
  OpenReport report("plain");
  ASSERT_EQ(report.rc(), 0);
  Published segment(16384);
  const zcal_key host = Key("192.0.2.1");
  const zcal_key peer = Key("198.18.0.1");  // inconclusive: the fallback answers
  EXPECT_EQ(zcal_should_zerocopy(segment.handle(), &host, kZc, 20000, 0, 0), 1);
  EXPECT_EQ(zcal_should_zerocopy_depth(segment.handle(), &host, kZc, 4, 1000, 0, 0), 0);
  EXPECT_EQ(zcal_should_zerocopy(segment.handle(), &peer, kZc, 20000, 0, 1), 1);
  EXPECT_EQ(zcal_report_completed(segment.handle(), &host, kZc, 0, 3, 2), 0);
  EXPECT_EQ(zcal_report_completed(segment.handle(), &host, kZc, 0, 1, 2), -EINVAL);
  EXPECT_EQ(zcal_report_completed(segment.handle(), nullptr, kZc, 0, 1, 0), -EINVAL);

  const ReportSnapshot snap = Read();
  const zcal_report_cell h = Cell(snap, ZCAL_SCOPE_HOST_DEFAULT, kZc);
  EXPECT_EQ(Answers(h, kYes, ZCAL_REPORT_BY_THRESHOLD), 1u);
  EXPECT_EQ(Answers(h, kNo, ZCAL_REPORT_BY_THRESHOLD), 1u);
  EXPECT_EQ(AtDepth(h, 1), 1u);  // depth 4
  EXPECT_EQ(AtDepth(h, 3), 1u);  // a stream
  EXPECT_EQ(h.completions, 3u);
  EXPECT_EQ(h.copied, 2u);
  const zcal_report_cell p = Cell(snap, ZCAL_SCOPE_PEER, kZc);
  EXPECT_EQ(Answers(p, kYes, ZCAL_REPORT_BY_NO_ANSWER), 1u);
  EXPECT_EQ(p.bytes[kYes], 20000u);
}

TEST(Report, CountsALoopbackDestinationAsLoopbackWhicheverEntryAnswered) {
  // No loopback entry: the host default answers 127.0.0.1 and ::1. Their
  // sends never cross a NIC, so they count as loopback, where the agent's
  // field-contradiction rule never looks, and not against the host default.
  OpenReport report("loop");
  ASSERT_EQ(report.rc(), 0);
  Published segment(16384);
  const zcal_key v4 = Key("127.0.0.1");
  const zcal_key v6 = Key("::1");
  zcal_guard g;
  ASSERT_EQ(zcal_guard_init_key(&g, sizeof g, segment.handle(), &v4, kZc, 0, 0), 0);
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, 65536), 1);  // the host default's answer
  ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);
  EXPECT_EQ(zcal_should_zerocopy(segment.handle(), &v6, kZc, 20000, 0, 0), 1);
  EXPECT_EQ(zcal_report_completed(segment.handle(), &v6, kZc, 0, 2, 2), 0);

  const ReportSnapshot snap = Read();
  const zcal_report_cell lo = Cell(snap, ZCAL_SCOPE_LOOPBACK, kZc);
  EXPECT_EQ(Answers(lo, kYes, ZCAL_REPORT_BY_THRESHOLD), 2u);
  EXPECT_EQ(lo.completions, 3u);
  EXPECT_EQ(lo.copied, 3u);
  const zcal_report_cell host = Cell(snap, ZCAL_SCOPE_HOST_DEFAULT, kZc);
  EXPECT_EQ(host.completions, 0u);
  EXPECT_EQ(Answers(host, kYes, ZCAL_REPORT_BY_THRESHOLD), 0u);
}

TEST(Report, CountsNothingWhenOffAndStartsAtZeroWhenReopened) {
  const zcal_key key = Key("192.0.2.1");
  EXPECT_EQ(zcal_report_completed(nullptr, &key, kZc, 0, 1, 1), 0);  // off: no-op
  zcal_guard g;
  ASSERT_EQ(zcal_guard_init_key(&g, sizeof g, nullptr, &key, kZc, 1, 0), 0);
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, 10), 1);
  {
    OpenReport report("first");
    ASSERT_EQ(report.rc(), 0);
    ASSERT_EQ(zcal_guard_should_zerocopy(&g, 10), 1);
    EXPECT_EQ(Answers(Cell(Read(), ZCAL_REPORT_SCOPE_NONE, kZc), kYes, ZCAL_REPORT_BY_NO_ANSWER), 1u);
  }
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, 10), 1);
  OpenReport report("second");
  ASSERT_EQ(report.rc(), 0);
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, 10), 1);
  EXPECT_EQ(Answers(Cell(Read(), ZCAL_REPORT_SCOPE_NONE, kZc), kYes, ZCAL_REPORT_BY_NO_ANSWER), 1u);
}

// The agent may hold an object open while its owner closes and removes it:
// what it reads then are the final counts, every thread's.
TEST(Report, AReaderHoldingTheObjectReadsEveryThreadsCountsAfterClose) {
  const AgentSegment no_agent(AgentSegment::kNone);
  const zcal_key key = Key("192.0.2.1");
  ASSERT_EQ(zcal_report_open("close"), 0);
  // Held open as the agent holds it: the name goes at close, the object stays.
  const int fd = shm_open(ReportName(getpid()).c_str(), O_RDONLY | O_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  std::thread([&key] {
    zcal_guard g;
    zcal_guard_init_key(&g, sizeof g, nullptr, &key, kZc, 1, 0);
    for (int i = 0; i < 2; ++i) zcal_guard_should_zerocopy(&g, 10);
  }).join();
  zcal_guard g;
  ASSERT_EQ(zcal_guard_init_key(&g, sizeof g, nullptr, &key, kZc, 1, 0), 0);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(zcal_guard_should_zerocopy(&g, 10), 1);
  zcal_report_close();
  ASSERT_FALSE(Exists(ReportName(getpid())));
  const ReportSnapshot snap = zcal::test::ReadReportFd(fd, "the closed object");
  ASSERT_EQ(snap.error, "");
  EXPECT_TRUE((snap.flags & ZCAL_REPORT_FLAG_CLOSED) != 0);
  EXPECT_EQ(Answers(snap.counts.cells[ZCAL_REPORT_SCOPE_NONE][kZc], kYes, ZCAL_REPORT_BY_NO_ANSWER),
            5u);
}

// report_env_child, which meson names in the test's environment.
const char* ChildPath() { return std::getenv("ZCAL_TEST_REPORT_CHILD"); }
#define SKIP_WITHOUT_CHILD()                                                                   \
  if (ChildPath() == nullptr)                                                                  \
  GTEST_SKIP() << "ZCAL_TEST_REPORT_CHILD does not name report_env_child: run through meson test"

// A segment name nothing creates: the child's report has no agent.
constexpr const char* kNoAgentEnv = ZCAL_SEGMENT_ENV "=/zcal-report-test-no-agent";

// A child process running report_env_child with `env`, until Finish().
class Child {
 public:
  explicit Child(std::vector<std::string> env) {
    const char* path = ChildPath();
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe2 failed");
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    char* argv[] = {const_cast<char*>(path), nullptr};
    std::fflush(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      execve(path, argv, envp.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    stderr_ = err[0];
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      Finish();
    }
    // A child killed before its exit handlers leaves its object behind.
    if (pid_exited_ > 0) shm_unlink(ReportName(pid_exited_).c_str());
  }
  pid_t pid() const { return pid_; }
  // Waits for "ready" (EOF if the child died first).
  std::string WaitReady() { return ReadAll(stdout_, 6); }
  // Closes its stdin, reaps it; its exit status and stderr.
  int Finish() {
    if (stdin_ >= 0) close(stdin_);
    stdin_ = -1;
    int status = 0;
    if (pid_ > 0) waitpid(pid_, &status, 0);
    pid_exited_ = pid_;
    pid_ = -1;
    stderr_text_ = ReadAll(stderr_, 4096);
    close(stdout_);
    close(stderr_);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }
  const std::string& stderr_text() const { return stderr_text_; }

 private:
  static std::string ReadAll(int fd, std::size_t limit) {
    std::string text;
    char buf[256];
    while (text.size() < limit) {
      const ssize_t n = read(fd, buf, std::min(sizeof buf, limit - text.size()));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, static_cast<std::size_t>(n));
    }
    return text;
  }
  pid_t pid_ = -1;
  pid_t pid_exited_ = -1;  // for the destructor's clean-up
  int stdin_ = -1, stdout_ = -1, stderr_ = -1;
  std::string stderr_text_;
};

TEST(ReportEnv, AProcessWithZcalReportHasAnObjectUntilItExits) {
  SKIP_WITHOUT_CHILD();
  Child child({"ZCAL_REPORT=env-app", kNoAgentEnv});
  ASSERT_EQ(child.WaitReady(), "ready\n");
  const pid_t pid = child.pid();
  const ReportSnapshot snap = ReadReport(ReportName(pid));
  ASSERT_EQ(snap.error, "");
  EXPECT_EQ(snap.name, "env-app");
  EXPECT_EQ(snap.owner_pid, static_cast<std::uint32_t>(pid));
  EXPECT_EQ(Answers(snap.counts.cells[ZCAL_REPORT_SCOPE_NONE][kZc], kYes, ZCAL_REPORT_BY_NO_ANSWER), 1u);
  EXPECT_EQ(child.Finish(), 0);
  EXPECT_FALSE(Exists(ReportName(pid)));
}

// The segment the child opened by name (not ZCAL_SEGMENT's) has a live
// agent: at exit the object stays, closed, with everything counted.
TEST(ReportEnv, AProcessThatExitsWithAnAgentLeavesItsClosedObjectWithItsFinalCounts) {
  SKIP_WITHOUT_CHILD();
  zcal::test::ScopedName segment("report-child-agent");
  zcal::test::SegmentImage(4).WriteTo(segment);
  Child child({"ZCAL_REPORT=env-app", kNoAgentEnv,
               "ZCAL_TEST_CHILD_SEGMENT=" + segment.str()});
  ASSERT_EQ(child.WaitReady(), "ready\n");
  const pid_t pid = child.pid();
  EXPECT_EQ(child.Finish(), 0);
  EXPECT_EQ(child.stderr_text(), "");
  ASSERT_TRUE(Exists(ReportName(pid)));
  const ReportSnapshot snap = ReadReport(ReportName(pid));
  shm_unlink(ReportName(pid).c_str());
  ASSERT_EQ(snap.error, "");
  EXPECT_EQ(snap.owner_pid, static_cast<std::uint32_t>(pid));
  EXPECT_EQ(snap.flags, ZCAL_REPORT_FLAG_CLOSED);
  // The child's last answer, counted after its report was last read.
  EXPECT_EQ(Answers(snap.counts.cells[ZCAL_REPORT_SCOPE_NONE][kZc], kYes, ZCAL_REPORT_BY_NO_ANSWER),
            1u);
}

TEST(ReportEnv, AProcessWithoutZcalReportHasNone) {
  SKIP_WITHOUT_CHILD();
  Child child({kNoAgentEnv});
  ASSERT_EQ(child.WaitReady(), "ready\n");
  EXPECT_FALSE(Exists(ReportName(child.pid())));
  EXPECT_EQ(child.Finish(), 0);
  EXPECT_EQ(child.stderr_text(), "");
}

TEST(ReportEnv, ABadNameSaysSoOnceAndReportsNothing) {
  SKIP_WITHOUT_CHILD();
  Child child({"ZCAL_REPORT=a/b", kNoAgentEnv});
  ASSERT_EQ(child.WaitReady(), "ready\n");
  EXPECT_FALSE(Exists(ReportName(child.pid())));
  EXPECT_EQ(child.Finish(), 0);
  EXPECT_EQ(child.stderr_text(),
            "libzcal: ZCAL_REPORT: report: the application name has '/' at byte 1: use no '/' "
            "and no control characters; reporting is off\n");
}

TEST(ReportFork, AForkedChildNeitherCountsIntoNorRemovesTheParentsObject) {
  OpenReport report("parent");
  ASSERT_EQ(report.rc(), 0);
  const zcal_key key = Key("192.0.2.1");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    (void)zcal_should_zerocopy(nullptr, &key, kZc, 10, 0, 1);
    _exit(0);  // skips destructors: exit() below proves the same for them
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const pid_t exiter = fork();
  if (exiter == 0) std::exit(0);
  ASSERT_EQ(waitpid(exiter, &status, 0), exiter);
  ASSERT_TRUE(Exists(ReportName(getpid())));
  EXPECT_EQ(Answers(Cell(Read(), ZCAL_REPORT_SCOPE_NONE, kZc), kYes, ZCAL_REPORT_BY_NO_ANSWER), 0u);
}

}  // namespace
}  // namespace report_test
