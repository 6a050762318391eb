// ShmWriter::Heal: the writer's check of its own segment and the repair,
// with a reader opened before the damage that must follow to the new
// segment and never fault.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "handle.h"
#include "shm_test_util.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace shm_heal_test {
namespace {

using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
using zcal::agent::SegmentDamage;
using zcal::agent::SegmentHealth;
using zcal::test::Entry;
using zcal::test::MakeWriter;
using zcal::test::ScopedName;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;

std::int64_t Threshold(zcal_handle* h) {
  zcal_key key;
  zcal_key_from_string("192.0.2.1", nullptr, &key);
  zcal_result r;
  const int rc = zcal_lookup(h, &key, kZc, &r);
  return rc != 0 ? rc : static_cast<std::int64_t>(r.threshold_bytes);
}

ino_t InodeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

class Heal : public ::testing::Test {
 protected:
  void SetUp() override {
    writer_ = MakeWriter(name_, 64);
    const std::vector<PublishedEntry> table = {Entry(ScopeKind::kHostDefault, 4096)};
    ASSERT_TRUE(writer_->Publish(table, true));
    writer_->Heartbeat();
    ASSERT_EQ(zcal_open(name_.c_str(), &reader_), 0) << zcal_error_detail();
    ASSERT_EQ(Threshold(reader_), 4096);
    inode_ = InodeOf(name_.path());
  }
  void TearDown() override { zcal_close(reader_); }

  // Writes `bytes` at `offset` of the segment file, in place.
  void Overwrite(off_t offset, const void* bytes, std::size_t size) {
    const int fd = open(name_.path().c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, bytes, size, offset), static_cast<ssize_t>(size));
    close(fd);
  }

  // The damage was repaired: a new file at the name with the last table,
  // the stale flag kept; the old reader moves to it once its once-a-second
  // reopen is due; and a second check finds nothing.
  void ExpectRepaired(const SegmentHealth& health, SegmentDamage damage) {
    EXPECT_EQ(health.damage, damage) << health.found;
    ASSERT_TRUE(health.repaired) << health.repaired.error().message;
    EXPECT_NE(InodeOf(name_.path()), inode_) << "a new file, renamed over the name";
    zcal_handle* fresh = nullptr;
    ASSERT_EQ(zcal_open(name_.c_str(), &fresh), 0) << zcal_error_detail();
    EXPECT_EQ(Threshold(fresh), 4096);
    zcal_info info;
    ASSERT_EQ(zcal_read_info(fresh, &info), 0);
    EXPECT_TRUE(info.flags & ZCAL_FLAG_STALE);
    EXPECT_FALSE(info.flags & ZCAL_FLAG_RETIRED);
    zcal_close(fresh);
    reader_->last_recheck_ns = 0;  // as if its last reopen were long ago
    EXPECT_EQ(Threshold(reader_), 4096) << zcal_error_detail();
    const SegmentHealth again = writer_->Heal();
    EXPECT_EQ(again.damage, SegmentDamage::kNone) << again.found;
    writer_->Heartbeat();
    EXPECT_EQ(writer_->Heal().damage, SegmentDamage::kNone);
  }

  ScopedName name_{"heal"};
  std::unique_ptr<zcal::agent::ShmWriter> writer_;
  zcal_handle* reader_ = nullptr;
  ino_t inode_ = 0;
};

TEST_F(Heal, AnIntactSegmentIsLeftAlone) {
  EXPECT_EQ(writer_->Heal().damage, SegmentDamage::kNone);
  EXPECT_EQ(InodeOf(name_.path()), inode_);
  const std::uint64_t generation = zcal_generation(reader_);
  EXPECT_EQ(writer_->Heal().damage, SegmentDamage::kNone);
  EXPECT_EQ(zcal_generation(reader_), generation) << "no write at all";
}

TEST_F(Heal, TruncatedToZeroIsRecreatedAndTheOldFileGrownBack) {
  ASSERT_EQ(truncate(name_.path().c_str(), 0), 0);
  // The writer must not store into the cut file (SIGBUS) before the check.
  EXPECT_FALSE(writer_->Heartbeat());
  const std::vector<PublishedEntry> table = {Entry(ScopeKind::kHostDefault, 4096)};
  const auto refused = writer_->Publish(table, true);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, zcal::Errc::kIo);
  const SegmentHealth health = writer_->Heal();
  EXPECT_NE(health.found.find("is 0 bytes"), std::string::npos) << health.found;
  // The reader still maps the old file: grown back and retired, its next
  // lookup reads it without a fault and moves on.
  ExpectRepaired(health, SegmentDamage::kTruncated);
}

TEST_F(Heal, TruncatedToTenBytes) {
  ASSERT_EQ(truncate(name_.path().c_str(), 10), 0);
  ExpectRepaired(writer_->Heal(), SegmentDamage::kTruncated);
}

TEST_F(Heal, ALongerFileIsRecreated) {
  ASSERT_EQ(truncate(name_.path().c_str(), 1 << 20), 0);
  ExpectRepaired(writer_->Heal(), SegmentDamage::kResized);
}

TEST_F(Heal, AnyHeaderFieldWrittenOverIsFound) {
  const std::uint16_t major = 7;
  Overwrite(offsetof(zcal_shm_header, abi_major), &major, sizeof major);
  const SegmentHealth health = writer_->Heal();
  EXPECT_NE(health.found.find("header field abi_major is 7, the agent wrote 1"),
            std::string::npos)
      << health.found;
  ExpectRepaired(health, SegmentDamage::kHeader);
}

TEST_F(Heal, ACountWrittenOverIsFound) {
  const std::uint32_t count = 1000;
  Overwrite(offsetof(zcal_shm_header, count), &count, sizeof count);
  ExpectRepaired(writer_->Heal(), SegmentDamage::kHeader);
}

TEST_F(Heal, AReservedByteWrittenOverIsFound) {
  const char byte = 1;
  Overwrite(offsetof(zcal_shm_header, reserved) + 5, &byte, 1);
  const SegmentHealth health = writer_->Heal();
  EXPECT_NE(health.found.find("reserved is not zero"), std::string::npos) << health.found;
  ExpectRepaired(health, SegmentDamage::kHeader);
}

TEST_F(Heal, AnEntryWrittenOverIsFound) {
  const std::uint64_t threshold = 1;
  Overwrite(sizeof(zcal_shm_header) + offsetof(zcal_shm_entry, threshold_bytes), &threshold,
            sizeof threshold);
  ExpectRepaired(writer_->Heal(), SegmentDamage::kTable);
}

TEST_F(Heal, RemovedIsRecreated) {
  ASSERT_EQ(unlink(name_.path().c_str()), 0);
  ExpectRepaired(writer_->Heal(), SegmentDamage::kRemoved);
}

TEST_F(Heal, ReplacedIsRecreated) {
  const std::string other = name_.path() + ".other";
  const int fd = open(other.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(rename(other.c_str(), name_.path().c_str()), 0);
  inode_ = InodeOf(name_.path());
  ExpectRepaired(writer_->Heal(), SegmentDamage::kReplaced);
}

TEST_F(Heal, ASegmentAnotherWriterTookOverIsNotFoughtFor) {
  auto second = MakeWriter(name_, 64);
  const SegmentHealth health = writer_->Heal();
  EXPECT_EQ(health.damage, SegmentDamage::kNone) << health.found;
  const std::vector<PublishedEntry> table = {Entry(ScopeKind::kHostDefault, 4096)};
  const auto refused = writer_->Publish(table, false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, zcal::Errc::kBusy);
  EXPECT_EQ(second->Heal().damage, SegmentDamage::kNone);
}

TEST_F(Heal, ARefusedRepairLeavesTheWriterAndIsTriedAgain) {
  ASSERT_EQ(truncate(name_.path().c_str(), 0), 0);
  ASSERT_EQ(unlink(name_.path().c_str()), 0);
  ASSERT_EQ(symlink("/dev/null", name_.path().c_str()), 0);
  const SegmentHealth refused = writer_->Heal();
  EXPECT_EQ(refused.damage, SegmentDamage::kTruncated);
  ASSERT_FALSE(refused.repaired);
  EXPECT_EQ(refused.repaired.error().code, zcal::Errc::kPermission);
  EXPECT_NE(refused.repaired.error().message.find("symbolic link"), std::string::npos)
      << refused.repaired.error().message;
  EXPECT_FALSE(writer_->Heartbeat()) << "still no store into the cut file";
  ASSERT_EQ(unlink(name_.path().c_str()), 0);
  inode_ = 0;
  ExpectRepaired(writer_->Heal(), SegmentDamage::kTruncated);
}

TEST_F(Heal, BeforeTheFirstPublishTheNewSegmentIsEmpty) {
  ScopedName name("heal-empty");
  auto writer = MakeWriter(name, 8);
  ASSERT_EQ(unlink(name.path().c_str()), 0);
  const SegmentHealth health = writer->Heal();
  EXPECT_EQ(health.damage, SegmentDamage::kRemoved);
  ASSERT_TRUE(health.repaired);
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0) << zcal_error_detail();
  zcal_info info;
  ASSERT_EQ(zcal_read_info(h, &info), 0);
  EXPECT_EQ(info.count, 0u);
  EXPECT_EQ(info.publish_time_ns, 0u);
  zcal_close(h);
  EXPECT_EQ(writer->Heal().damage, SegmentDamage::kNone);
}

}  // namespace

}  // namespace shm_heal_test
