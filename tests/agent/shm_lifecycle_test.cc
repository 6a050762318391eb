// Readers across the writer's life: before it exists, across a restart
// that recreates the segment, and after the segment is removed or shrunk.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include <gtest/gtest.h>

#include "shm_test_util.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace shm_lifecycle_test {
namespace {

using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
using zcal::test::Entry;
using zcal::test::MakeWriter;
using zcal::test::NowNs;
using zcal::test::ScopedName;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;

std::vector<PublishedEntry> Table(std::uint64_t threshold) {
  return {Entry(ScopeKind::kHostDefault, threshold)};
}

std::int64_t Threshold(zcal_handle* h) {
  zcal_key key;
  zcal_key_from_string("192.0.2.1", nullptr, &key);
  zcal_result r;
  const int rc = zcal_lookup(h, &key, kZc, &r);
  return rc != 0 ? rc : static_cast<std::int64_t>(r.threshold_bytes);
}

TEST(ShmLifecycle, ReaderBeforeWriterGetsEnoentThenWorks) {
  ScopedName name("before");
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), -ENOENT);
  zcal_key key;
  zcal_key_from_string("192.0.2.1", nullptr, &key);
  EXPECT_EQ(zcal_should_zerocopy(h, &key, kZc, 1 << 20, 0, 1), 1) << "fallback";
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(Table(4096), false));
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0);
  EXPECT_EQ(Threshold(h), 4096);
  zcal_close(h);
}

TEST(ShmLifecycle, RestartedWriterRecreatesAndReadersFollow) {
  ScopedName name("restart");
  auto first = MakeWriter(name, 64);
  ASSERT_TRUE(first->Publish(Table(1000), false));
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0);
  EXPECT_EQ(Threshold(h), 1000);
  const std::uint64_t cached = zcal_generation(h);

  // The new agent's segment is smaller: the old one must not shrink under
  // the reader, which moves to the new one.
  auto second = MakeWriter(name, 4);
  EXPECT_NE(zcal_generation(h), cached) << "the old segment was retired";
  EXPECT_EQ(Threshold(h), -ENODATA) << "the new segment has no entries yet";
  ASSERT_TRUE(second->Publish(Table(2000), true));
  EXPECT_EQ(Threshold(h), 2000);
  zcal_info info;
  ASSERT_EQ(zcal_read_info(h, &info), 0);
  EXPECT_EQ(info.capacity, 4u);
  EXPECT_EQ(info.flags & ZCAL_FLAG_RETIRED, 0u);
  EXPECT_NE(info.flags & ZCAL_FLAG_STALE, 0u);

  // The first writer, still running, learns that it was replaced.
  auto replaced = first->Publish(Table(3000), false);
  ASSERT_FALSE(replaced);
  EXPECT_EQ(replaced.error().code, zcal::Errc::kBusy);
  EXPECT_NE(replaced.error().message.find("replaced by another agent"), std::string::npos);
  EXPECT_EQ(Threshold(h), 2000);
  zcal_close(h);
}

TEST(ShmLifecycle, ReaderSurvivesRemovalAndFindsTheNextSegment) {
  ScopedName name("removed");
  auto first = MakeWriter(name);
  ASSERT_TRUE(first->Publish(Table(1000), false));
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0);
  ASSERT_EQ(shm_unlink(name.c_str()), 0);

  EXPECT_EQ(Threshold(h), 1000) << "the mapping outlives the name";
  EXPECT_EQ(zcal_refresh(h), -ENOENT);
  EXPECT_EQ(Threshold(h), 1000);

  // A new agent starts; nobody could retire the removed segment. Once the
  // old heartbeat is older than ZCAL_RECHECK_AFTER_NS a lookup reopens.
  auto second = MakeWriter(name);
  ASSERT_TRUE(second->Publish(Table(2000), false));
  EXPECT_EQ(Threshold(h), 1000);
  auto* old_header = static_cast<zcal_shm_header*>(const_cast<void*>(first->mapping()));
  __atomic_store_n(&old_header->heartbeat_ns, NowNs() - 2 * ZCAL_RECHECK_AFTER_NS,
                   __ATOMIC_RELEASE);
  EXPECT_EQ(Threshold(h), 2000);
  zcal_close(h);
}

TEST(ShmLifecycle, ExplicitRefreshFollowsARecreatedSegment) {
  ScopedName name("refresh");
  auto first = MakeWriter(name);
  ASSERT_TRUE(first->Publish(Table(1), false));
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0);
  EXPECT_EQ(zcal_refresh(h), 0) << "nothing changed";
  ASSERT_EQ(shm_unlink(name.c_str()), 0);
  auto second = MakeWriter(name);
  ASSERT_TRUE(second->Publish(Table(2), false));
  EXPECT_EQ(zcal_refresh(h), 0);
  EXPECT_EQ(Threshold(h), 2);
  zcal_close(h);
}

TEST(ShmLifecycle, SegmentShrunkInPlaceIsNotTouchedAgain) {
  ScopedName name("shrunk");
  auto writer = MakeWriter(name, 256);
  ASSERT_TRUE(writer->Publish(Table(1), false));
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0);
  EXPECT_EQ(Threshold(h), 1);

  // Someone else truncates the file to its first page and publishes: the
  // reader must notice before it reads beyond the end (SIGBUS).
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  close(fd);
  auto* hdr = static_cast<zcal_shm_header*>(const_cast<void*>(writer->mapping()));
  __atomic_store_n(&hdr->generation, hdr->generation + 1, __ATOMIC_RELEASE);

  EXPECT_EQ(Threshold(h), -ESTALE);
  EXPECT_NE(std::string(zcal_error_detail()).find("truncated"), std::string::npos)
      << zcal_error_detail();
  EXPECT_EQ(zcal_generation(h), 0u) << "the shrunk mapping is no longer read";
  EXPECT_EQ(Threshold(h), -ESTALE);
  zcal_close(h);
}

TEST(ShmLifecycle, SegmentOutlivesItsWriter) {
  ScopedName name("outlive");
  { 
    auto writer = MakeWriter(name);
    ASSERT_TRUE(writer->Publish(Table(7), false));
  }
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0);
  EXPECT_EQ(Threshold(h), 7);
  zcal_close(h);
}

}  // namespace

}  // namespace shm_lifecycle_test
