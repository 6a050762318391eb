// The buffers a probe sends from: a pool of its own, or one cut from the
// arena that a calibration's probes share; 4 KiB pages or huge pages.
#include "zcal/probes/send/buffer_pool.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "huge_pages.h"
#include "scratch_dir.h"
#include "zcal/probes/calibration/calibration.h"
#include "zcal/probes/send/capabilities.h"
#include "zcal/probes/send/probe.h"
#include "zcal/probes/sink/sink.h"

namespace zcal::probes::buffer_pool_test {
namespace {

using namespace std::chrono_literals;

bool FilledWithData(const BufferPool& pool) {
  for (std::uint32_t i = 0; i < pool.count(); ++i) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(pool.buffer(i));
    for (std::uint64_t b = 0; b < pool.buffer_bytes(); ++b) {
      if (bytes[b] != 0x5a) return false;
    }
  }
  return true;
}

TEST(BufferPool, CutsAlignedBuffersOfRealData) {
  auto pool = BufferPool::Allocate(8, 1000);
  ASSERT_TRUE(pool) << pool.error().message;
  EXPECT_EQ((*pool)->count(), 8u);
  EXPECT_EQ((*pool)->buffer_bytes(), 1000u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>((*pool)->buffer(1)) % 64, 0u);
  EXPECT_EQ((*pool)->mapped_bytes(), 8u * 1024u);
  EXPECT_TRUE(FilledWithData(**pool));
  EXPECT_FALSE(BufferPool::Allocate(0, 1000));
}

TEST(BufferArena, ReusesOneMappingAndFillsEachPoolAgain) {
  BufferArena arena;
  EXPECT_EQ(arena.mapped_bytes(), 0u);
  std::byte* first_base = nullptr;
  {
    auto pool = arena.Pool(128, 16384);
    ASSERT_TRUE(pool) << pool.error().message;
    first_base = (*pool)->base();
    EXPECT_EQ((*pool)->mapped_bytes(), 128u * 16384u);
    // A probe's sends leave the buffers as they are; the next pool is
    // written again.
    std::memset((*pool)->base(), 0, (*pool)->mapped_bytes());
  }
  EXPECT_EQ(arena.mapped_bytes(), 128u * 16384u) << "the mapping outlives the pool";
  auto smaller = arena.Pool(16, 65536);
  ASSERT_TRUE(smaller);
  EXPECT_EQ((*smaller)->base(), first_base) << "no new mapping for a pool that fits";
  EXPECT_EQ((*smaller)->count(), 16u);
  EXPECT_EQ((*smaller)->buffer_bytes(), 65536u);
  EXPECT_TRUE(FilledWithData(**smaller));
  smaller->reset();
  auto larger = arena.Pool(8, 1 << 20);
  ASSERT_TRUE(larger);
  EXPECT_EQ(arena.mapped_bytes(), 8u << 20) << "grown for a pool that does not fit";
  EXPECT_TRUE(FilledWithData(**larger));
  EXPECT_FALSE(arena.Pool(0, 1));
}

// A fake root's host facts: what vm.nr_hugepages reserves and what
// transparent_hugepage/enabled says (absent when `thp` is empty).
class HugePageRoot {
 public:
  HugePageRoot(const std::string& reserved, const std::string& thp) : dir_("hugepages") {
    Write("proc/sys/vm/nr_hugepages", reserved);
    Write("proc/sys/vm/nr_overcommit_hugepages", "0");
    if (!thp.empty()) Write("sys/kernel/mm/transparent_hugepage/enabled", thp);
  }
  std::string root() const { return dir_.path().string(); }

 private:
  void Write(const std::string& relative, const std::string& line) {
    const auto path = dir_.path() / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << line << "\n";
  }
  testing::ScratchDir dir_;
};

// Huge pages from this machine, or a skip that says why there are none.
#define ASSERT_HUGE_POOL_OR_SKIP(pool)                                              \
  do {                                                                              \
    if (!(pool) && (pool).error().code == Errc::kUnsupported) {                     \
      GTEST_SKIP() << "no huge pages on this machine: " << (pool).error().message; \
    }                                                                               \
    ASSERT_TRUE(pool) << (pool).error().message;                                    \
  } while (false)

TEST(BufferMemory, SpellsAndParsesBothKinds) {
  EXPECT_EQ(BufferMemoryName(BufferMemory::kPages), "pages");
  EXPECT_EQ(BufferMemoryName(BufferMemory::kHugePages), "hugepages");
  EXPECT_EQ(ParseBufferMemory("hugepages"), BufferMemory::kHugePages);
  EXPECT_EQ(ParseBufferMemory("pages"), BufferMemory::kPages);
  EXPECT_FALSE(ParseBufferMemory("huge"));
  EXPECT_FALSE(ParseBufferMemory(""));
}

TEST(BufferPool, HugePagesSpanWholeAlignedHugePagesOfRealData) {
  auto pool = BufferPool::Allocate(8, 65536, BufferMemory::kHugePages);
  ASSERT_HUGE_POOL_OR_SKIP(pool);
  const BufferPool& p = **pool;
  EXPECT_NE(p.pages(), PageKind::kSmall);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.base()) % kHugePageBytes, 0u);
  EXPECT_EQ(p.mapped_bytes(), 8u * 65536u) << "what a registration pins: the buffers";
  EXPECT_TRUE(FilledWithData(p));
  if (p.pages() == PageKind::kTransparent) {
    EXPECT_EQ(TransparentHugeBytes(p.base(), kHugePageBytes), kHugePageBytes);
  }
  // Several huge pages for a pool beyond one.
  auto large = BufferPool::Allocate(3, 1 << 20, BufferMemory::kHugePages);
  ASSERT_TRUE(large) << large.error().message;
  if ((*large)->pages() == PageKind::kTransparent) {
    EXPECT_EQ(TransparentHugeBytes((*large)->base(), 2 * kHugePageBytes), 2 * kHugePageBytes);
  }
}

TEST(BufferPool, SmallPagesAreNotCountedAsHuge) {
  auto pool = BufferPool::Allocate(8, 4096);
  ASSERT_TRUE(pool);
  EXPECT_EQ((*pool)->pages(), PageKind::kSmall);
  // Advised against huge pages: none, whatever THP's mode, even for a
  // pool of whole huge pages.
  EXPECT_EQ(TransparentHugeBytes((*pool)->base(), (*pool)->mapped_bytes()), 0u);
  auto large = BufferPool::Allocate(4, 1 << 20);
  ASSERT_TRUE(large);
  EXPECT_EQ(TransparentHugeBytes((*large)->base(), (*large)->mapped_bytes()), 0u);
}

TEST(BufferPool, RefusesHugePagesWithWhatToDoWhenNoneCanBeHad) {
  const HugePageRoot none("0", "always madvise [never]");
  auto pool = BufferPool::Allocate(8, 65536, BufferMemory::kHugePages, none.root());
  ASSERT_FALSE(pool);
  EXPECT_EQ(pool.error().code, Errc::kUnsupported);
  EXPECT_EQ(pool.error().message,
            "huge pages: none reserved (vm.nr_hugepages is 0) and transparent huge pages are "
            "disabled (" + none.root() + "/sys/kernel/mm/transparent_hugepage/enabled is "
            "[never]): reserve some with sysctl vm.nr_hugepages=1 or enable THP (echo madvise "
            "> /sys/kernel/mm/transparent_hugepage/enabled)");
  auto check = CheckBufferMemory(BufferMemory::kHugePages, none.root());
  ASSERT_FALSE(check);
  EXPECT_EQ(check.error().message.find('\n'), std::string::npos) << "one line";

  // A kernel without THP: no file to read.
  const HugePageRoot no_thp("0", "");
  auto bare = BufferPool::Allocate(2, 3 << 20, BufferMemory::kHugePages, no_thp.root());
  ASSERT_FALSE(bare);
  EXPECT_NE(bare.error().message.find("transparent huge pages are not available ("),
            std::string::npos) << bare.error().message;
  EXPECT_NE(bare.error().message.find("vm.nr_hugepages=3 or enable THP"), std::string::npos)
      << "three huge pages for 6 MiB: " << bare.error().message;
}

TEST(BufferPool, PagesNeedNoHugePages) {
  const HugePageRoot none("0", "always madvise [never]");
  auto pool = BufferPool::Allocate(8, 65536, BufferMemory::kPages, none.root());
  ASSERT_TRUE(pool) << pool.error().message;
  auto check = CheckBufferMemory(BufferMemory::kPages, none.root());
  ASSERT_TRUE(check);
  EXPECT_EQ(*check, PageKind::kSmall);
}

// A calibration's arena maps the largest pool of its probes at the first,
// small one: the pools that follow fit without new pages.
TEST(BufferArena, ReservesItsFirstMappingForThePoolsToCome) {
  BufferArena arena(2u << 20);
  auto first = arena.Pool(128, 1024);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ((*first)->mapped_bytes(), 128u * 1024u) << "the pool is what was asked for";
  EXPECT_EQ(arena.mapped_bytes(), 2u << 20) << "the mapping is the reserve";
  std::byte* const base = (*first)->base();
  first->reset();
  for (const std::uint64_t size : {4096u, 8192u, 16384u}) {
    auto pool = arena.Pool(static_cast<std::uint32_t>((2u << 20) / size), size);
    ASSERT_TRUE(pool);
    EXPECT_EQ((*pool)->base(), base) << size << " bytes: no new mapping";
    EXPECT_TRUE(FilledWithData(**pool));
  }
  EXPECT_EQ(arena.mapped_bytes(), 2u << 20);
  auto beyond = arena.Pool(8, 1 << 20);
  ASSERT_TRUE(beyond);
  EXPECT_EQ(arena.mapped_bytes(), 8u << 20) << "a pool beyond the reserve still grows it";
  // The reserve is of 4 KiB pages: huge pages map what the pool needs, in
  // whole 2 MiB pages.
  BufferArena huge_arena(8u << 20);
  auto huge = huge_arena.Pool(16, 65536, BufferMemory::kHugePages);
  ASSERT_HUGE_POOL_OR_SKIP(huge);
  EXPECT_EQ(huge_arena.mapped_bytes(), 16u * 65536u);
}

TEST(BufferArena, MapsAnewWhenTheMemoryChanges) {
  BufferArena arena;
  auto small = arena.Pool(16, 65536);
  ASSERT_TRUE(small);
  EXPECT_EQ((*small)->pages(), PageKind::kSmall);
  small->reset();
  auto huge = arena.Pool(16, 65536, BufferMemory::kHugePages);
  ASSERT_HUGE_POOL_OR_SKIP(huge);
  EXPECT_NE((*huge)->pages(), PageKind::kSmall);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>((*huge)->base()) % kHugePageBytes, 0u);
  EXPECT_TRUE(FilledWithData(**huge));
  huge->reset();
  // A larger pool that still fits the huge page: the same mapping.
  const std::byte* base = arena.Pool(32, 65536, BufferMemory::kHugePages).value()->base();
  auto again = arena.Pool(31, 65536, BufferMemory::kHugePages);
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->base(), base);
  again->reset();
  auto back = arena.Pool(16, 65536);
  ASSERT_TRUE(back);
  EXPECT_EQ((*back)->pages(), PageKind::kSmall);
}

// hugetlbfs itself: root reserves two pages for the test and gives the
// setting back after, whatever the test's outcome.
class ReservedHugePages {
 public:
  explicit ReservedHugePages(int pages) {
    std::ifstream in(kPath);
    if (!(in >> before_)) return;
    if (::geteuid() != 0 || before_ != 0) return;  // another's reservation: leave it
    std::ofstream(kPath) << pages << "\n";
    int now = 0;
    std::ifstream(kPath) >> now;
    changed_ = true;
    reserved_ = now >= pages;
  }
  ~ReservedHugePages() {
    if (changed_) std::ofstream(kPath) << before_ << "\n";
  }
  ReservedHugePages(const ReservedHugePages&) = delete;
  ReservedHugePages& operator=(const ReservedHugePages&) = delete;
  bool reserved() const { return reserved_; }
  int before() const { return before_; }

 private:
  static constexpr const char* kPath = "/proc/sys/vm/nr_hugepages";
  int before_ = -1;
  bool changed_ = false;
  bool reserved_ = false;
};

TEST(BufferPool, TakesHugetlbfsPagesWhenReserved) {
  ReservedHugePages reserved(2);
  if (!reserved.reserved()) {
    GTEST_SKIP() << "needs root and vm.nr_hugepages 0 to reserve two 2 MiB pages (it is "
                 << reserved.before() << "), or the kernel found no two free";
  }
  auto pool = BufferPool::Allocate(4, 1 << 20, BufferMemory::kHugePages);
  ASSERT_TRUE(pool) << pool.error().message;
  EXPECT_EQ((*pool)->pages(), PageKind::kHugetlb);
  EXPECT_TRUE(FilledWithData(**pool));
}

// Registration pins the range: a registered-buffer probe sends from huge
// pages as from small ones.
TEST(BufferPool, RegisteredBuffersSendFromHugePages) {
  const Support support = CheckSupport(calibrator::Method::kUringSendZcFixed);
  if (!support.supported) GTEST_SKIP() << support.reason;
  auto check = CheckBufferMemory(BufferMemory::kHugePages);
  if (!check) GTEST_SKIP() << "no huge pages on this machine: " << check.error().message;
  auto sink = Sink::Start({});
  ASSERT_TRUE(sink) << sink.error().message;
  for (const calibrator::Method method :
       {calibrator::Method::kUringSendZcFixed, calibrator::Method::kMsgZerocopy}) {
    ProbeOptions options;
    options.method = method;
    options.size_bytes = 65536;
    options.path = "loopback";
    options.sink = (*sink)->endpoint();
    options.duration = 50ms;
    options.buffers = BufferMemory::kHugePages;
    const std::uint64_t before = (*sink)->Stats().bytes_received;
    const std::uint64_t accepted = (*sink)->Stats().connections_accepted;
    const calibrator::Sample sample = RunProbe(options);
    ASSERT_TRUE(sample.ok()) << sample.error;
    ASSERT_TRUE((*sink)->WaitIdle(accepted + 1, 5s));
    EXPECT_GT(sample.bytes, options.size_bytes);
    EXPECT_EQ((*sink)->Stats().bytes_received - before, sample.bytes);
  }
}

// The calibration's choice reaches every probe: on a host without huge
// pages no probe runs (none sends from small pages instead), and the
// calibration says why.
TEST(CalibrationBuffers, EveryProbeAsksForTheCalibrationsMemory) {
  const HugePageRoot none("0", "always madvise [never]");
  CalibrationOptions options;
  options.methods = {calibrator::Method::kCopy, calibrator::Method::kMsgZerocopy};
  options.min_size = 4096;
  options.max_size = 16384;
  options.budget_seconds = 1;
  options.root = none.root();
  options.read_host = false;
  options.buffers = BufferMemory::kHugePages;
  auto refused = RunCalibration(options);
  ASSERT_FALSE(refused) << refused->probes_run << " probes sent anyway";
  EXPECT_NE(refused.error().message.find("copy: huge pages: none reserved"), std::string::npos)
      << refused.error().message;
  options.buffers = BufferMemory::kPages;
  auto report = RunCalibration(options);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_GT(report->probes_run, 0u) << "4 KiB pages need no huge pages";
}

}  // namespace
}  // namespace zcal::probes::buffer_pool_test
