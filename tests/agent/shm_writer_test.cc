// The segment writer: creation, publishing, validation, and refusing
// what it must not write through.
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "shm_test_util.h"
#include "zcal/common/clock.h"
#include "zcal/zcal.h"
#include "zcal/zcal.hpp"

// This file's names, apart from other test files' (unity builds).
namespace shm_writer_test {
namespace {

using zcal::Errc;
using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
using zcal::agent::ShmWriter;
using zcal::agent::ShmWriterOptions;
using zcal::test::Entry;
using zcal::test::MakeWriter;
using zcal::test::PeerEntry;
using zcal::test::ScopedName;
namespace cal = zcal::calibrator;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;

std::int64_t LookupThreshold(zcal_handle* h, const char* address,
                             const char* interface = nullptr) {
  zcal_key key;
  if (zcal_key_from_string(address, interface, &key) != 0) return -EINVAL;
  zcal_result r;
  const int rc = zcal_lookup(h, &key, kZc, &r);
  return rc != 0 ? rc : static_cast<std::int64_t>(r.threshold_bytes);
}

TEST(ShmWriter, CreatesAnEmptySegmentWithModeAndHeader) {
  ScopedName name("create");
  auto writer = MakeWriter(name, 32);
  struct stat st {};
  ASSERT_EQ(lstat(name.path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(static_cast<std::size_t>(st.st_size),
            sizeof(zcal_shm_header) + 32 * sizeof(zcal_shm_entry));

  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0) << zcal_error_detail();
  zcal_info info;
  ASSERT_EQ(zcal_read_info(h, &info), 0);
  EXPECT_EQ(info.capacity, 32u);
  EXPECT_EQ(info.count, 0u);
  EXPECT_EQ(info.agent_pid, static_cast<std::uint32_t>(getpid()));
  EXPECT_EQ(info.abi_major, ZCAL_ABI_MAJOR);
  EXPECT_EQ(info.publish_time_ns, 0u);
  EXPECT_NE(info.generation, 0u);
  EXPECT_EQ(LookupThreshold(h, "10.0.0.1"), -ENODATA);
  zcal_close(h);
}

TEST(ShmWriter, PublishReplacesTheTableAndBumpsTheGeneration) {
  ScopedName name("publish");
  auto writer = MakeWriter(name);
  std::vector<PublishedEntry> table = {
      PeerEntry("10.1.0.0", 16, 2000),
      PeerEntry("2001:db8::", 32, 6000),
      Entry(ScopeKind::kLoopback, 100),
      Entry(ScopeKind::kHostDefault, 4000),
  };
  PublishedEntry eth = Entry(ScopeKind::kInterface, 3000);
  eth.interface = "eth0";
  table.push_back(eth);
  ASSERT_TRUE(writer->Publish(table, false));

  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0);
  const std::uint64_t first = zcal_generation(h);
  EXPECT_EQ(first, writer->generation());
  EXPECT_EQ(LookupThreshold(h, "10.1.2.3"), 2000);
  EXPECT_EQ(LookupThreshold(h, "2001:db8::5"), 6000);
  EXPECT_EQ(LookupThreshold(h, "127.0.0.1"), 100);
  EXPECT_EQ(LookupThreshold(h, "192.0.2.1", "eth0"), 3000);
  EXPECT_EQ(LookupThreshold(h, "192.0.2.1"), 4000);

  std::vector<PublishedEntry> smaller = {Entry(ScopeKind::kHostDefault, 5000)};
  ASSERT_TRUE(writer->Publish(smaller, false));
  EXPECT_EQ(zcal_generation(h), first + 1);
  EXPECT_EQ(LookupThreshold(h, "10.1.2.3"), 5000);
  zcal_info info;
  ASSERT_EQ(zcal_read_info(h, &info), 0);
  EXPECT_EQ(info.count, 1u);
  EXPECT_NE(info.publish_time_ns, 0u);
  zcal_close(h);
}

TEST(ShmWriter, EncodesEveryField) {
  ScopedName name("fields");
  auto writer = MakeWriter(name);
  PublishedEntry e = PeerEntry("10.1.2.3", 16, 12288);
  e.method = cal::Method::kUringSendZcFixed;
  e.confidence = 0.875;
  e.reason = cal::Reason::kNone;
  e.measured_at_ns = 1234567890123u;
  e.fingerprint = 0xabcdef0123456789u;
  PublishedEntry never = Entry(ScopeKind::kHostDefault, 0);
  never.verdict = cal::Verdict::kNever;
  never.threshold_bytes.reset();
  never.reason = cal::Reason::kKernelCopied;
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{e, never}, true));

  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0);
  zcal_info info;
  ASSERT_EQ(zcal_read_info(h, &info), 0);
  EXPECT_EQ(info.flags & ZCAL_FLAG_STALE, ZCAL_FLAG_STALE);
  zcal_shm_entry raw;
  ASSERT_EQ(zcal_read_entry(h, 0, &raw), 0);
  EXPECT_EQ(raw.scope, ZCAL_SCOPE_PEER);
  EXPECT_EQ(raw.method, ZCAL_METHOD_URING_SEND_ZC_FIXED);
  EXPECT_EQ(raw.verdict, ZCAL_VERDICT_THRESHOLD);
  EXPECT_EQ(raw.family, ZCAL_FAMILY_IPV4);
  EXPECT_EQ(raw.prefix_len, 16);
  const std::uint8_t masked[4] = {10, 1, 0, 0};
  EXPECT_EQ(std::memcmp(raw.address, masked, 4), 0) << "host bits cleared";
  EXPECT_EQ(raw.threshold_bytes, 12288u);
  EXPECT_EQ(raw.entry_flags, ZCAL_ENTRY_HAS_THRESHOLD);
  EXPECT_EQ(raw.confidence_ppm, 875000u);
  EXPECT_EQ(raw.measured_at_ns, 1234567890123u);
  EXPECT_EQ(raw.fingerprint, 0xabcdef0123456789u);
  ASSERT_EQ(zcal_read_entry(h, 1, &raw), 0);
  EXPECT_EQ(raw.verdict, ZCAL_VERDICT_NEVER);
  EXPECT_EQ(raw.reason, ZCAL_REASON_KERNEL_COPIED);
  EXPECT_EQ(raw.entry_flags, 0);
  EXPECT_EQ(raw.confidence_ppm, ZCAL_CONFIDENCE_UNKNOWN);

  zcal_key key;
  zcal_key_from_string("192.0.2.1", nullptr, &key);
  zcal_result r;
  ASSERT_EQ(zcal_lookup(h, &key, kZc, &r), 0);
  EXPECT_EQ(r.stale, 1);
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{never}, false));
  ASSERT_EQ(zcal_lookup(h, &key, kZc, &r), 0);
  EXPECT_EQ(r.stale, 0);
  zcal_close(h);
}

TEST(ShmWriter, HeartbeatDoesNotChangeTheGeneration) {
  ScopedName name("heartbeat");
  auto writer = MakeWriter(name);
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{Entry(ScopeKind::kHostDefault, 1)},
                              false));
  auto* hdr = static_cast<const zcal_shm_header*>(writer->mapping());
  const std::uint64_t generation = hdr->generation;
  const std::uint64_t before = hdr->heartbeat_ns;
  // Until the clock has moved past the last stamp (a condition, not a nap).
  while (zcal::common::RealtimeNs() <= before) {
  }
  writer->Heartbeat();
  EXPECT_GT(hdr->heartbeat_ns, before);
  EXPECT_EQ(hdr->generation, generation);
}

// The agent says whether processes may leave their closed report objects
// to it: the flag is stored at once after a publish, kept through later
// publishes (stale or not), and cleared when the agent no longer takes
// them; set before the first publish, it comes with that publish.
TEST(ShmWriter, SaysWhetherItTakesReportsAndKeepsItThroughPublishes) {
  ScopedName name("takes-reports");
  auto writer = MakeWriter(name);
  auto* hdr = static_cast<const zcal_shm_header*>(writer->mapping());
  writer->SetTakesReports(true);
  EXPECT_EQ(hdr->flags & ZCAL_FLAG_TAKES_REPORTS, 0u) << "nothing published yet";
  const std::vector<PublishedEntry> table{Entry(ScopeKind::kHostDefault, 1)};
  ASSERT_TRUE(writer->Publish(table, true));
  EXPECT_EQ(hdr->flags, ZCAL_FLAG_STALE | ZCAL_FLAG_TAKES_REPORTS);
  ASSERT_TRUE(writer->Publish(table, false));
  EXPECT_EQ(hdr->flags, ZCAL_FLAG_TAKES_REPORTS);
  const std::uint64_t generation = hdr->generation;
  writer->SetTakesReports(false);
  EXPECT_EQ(hdr->flags, 0u);
  EXPECT_GT(hdr->generation, generation) << "stored under the seqlock, as a publish";
  ASSERT_TRUE(writer->Publish(table, false));
  EXPECT_EQ(hdr->flags, 0u);
}

TEST(ShmWriter, RejectsInvalidEntriesAndKeepsTheTable) {
  ScopedName name("invalid");
  auto writer = MakeWriter(name, 4);
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{Entry(ScopeKind::kHostDefault, 1)},
                              false));
  const std::uint64_t generation = writer->generation();

  struct Case {
    PublishedEntry entry;
    const char* message;
  };
  std::vector<Case> cases;
  cases.push_back({PeerEntry("10.0.0.300", 8, 1), "not a numeric IPv4 or IPv6"});
  cases.push_back({PeerEntry("host.example", 8, 1), "not a numeric"});
  cases.push_back({PeerEntry("10.0.0.0", 33, 1), "prefix length 33 exceeds 32"});
  cases.push_back({PeerEntry("2001:db8::", 129, 1), "prefix length 129 exceeds 128"});
  PublishedEntry no_name = Entry(ScopeKind::kInterface, 1);
  cases.push_back({no_name, "interface name"});
  PublishedEntry long_name = Entry(ScopeKind::kInterface, 1);
  long_name.interface = "a-very-long-ifname";
  cases.push_back({long_name, "must be 1 to 15 bytes"});
  PublishedEntry no_threshold = Entry(ScopeKind::kHostDefault, 1);
  no_threshold.threshold_bytes.reset();
  cases.push_back({no_threshold, "without threshold_bytes"});
  PublishedEntry confidence = Entry(ScopeKind::kHostDefault, 1);
  confidence.confidence = 1.5;
  cases.push_back({confidence, "outside [0,1]"});
  PublishedEntry nan = Entry(ScopeKind::kHostDefault, 1);
  nan.confidence = std::nan("");
  cases.push_back({nan, "outside [0,1]"});

  for (const Case& c : cases) {
    std::vector<PublishedEntry> table = {Entry(ScopeKind::kLoopback, 1), c.entry};
    auto result = writer->Publish(table, false);
    ASSERT_FALSE(result) << c.message;
    EXPECT_EQ(result.error().code, Errc::kInvalidArgument);
    EXPECT_NE(result.error().message.find(c.message), std::string::npos)
        << result.error().message;
    EXPECT_NE(result.error().message.find("entry 1"), std::string::npos)
        << result.error().message;
  }
  EXPECT_EQ(writer->generation(), generation);
  EXPECT_EQ(static_cast<const zcal_shm_header*>(writer->mapping())->generation, generation);
}

TEST(ShmWriter, ATableThatOutgrowsTheCapacityGrowsTheSegment) {
  ScopedName name("capacity");
  auto writer = MakeWriter(name, 2);
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{PeerEntry("10.0.0.0", 8, 1)}, false));
  auto before = zcal::client::Segment::Open(name.c_str());
  ASSERT_TRUE(before);
  ASSERT_TRUE(before->Info());
  std::vector<PublishedEntry> three = {PeerEntry("10.0.0.0", 8, 1),
                                       PeerEntry("10.1.0.0", 16, 2),
                                       PeerEntry("10.2.0.0", 16, 3)};
  auto result = writer->Publish(three, true);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(writer->capacity(), 4u);
  EXPECT_EQ(writer->grows(), 1u);
  // A reader of the old segment finds its old table, whole, marked retired.
  const auto old_info = before->Info();
  ASSERT_TRUE(old_info);
  EXPECT_EQ(old_info->count, 1u);
  EXPECT_TRUE(old_info->flags & ZCAL_FLAG_RETIRED);
  // The name holds the new table.
  auto after = zcal::client::Segment::Open(name.c_str());
  ASSERT_TRUE(after);
  const auto info = after->Info();
  ASSERT_TRUE(info);
  EXPECT_EQ(info->capacity, 4u);
  EXPECT_EQ(info->count, 3u);
  EXPECT_TRUE(info->flags & ZCAL_FLAG_STALE);
  EXPECT_FALSE(info->flags & ZCAL_FLAG_RETIRED);
  // Later publishes and heartbeats go to the new segment.
  ASSERT_TRUE(writer->Publish(three, false));
  EXPECT_TRUE(writer->Heartbeat());
  const auto again = after->Info();
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->flags & ZCAL_FLAG_STALE);
  EXPECT_EQ(writer->Heal().damage, zcal::agent::SegmentDamage::kNone) << "the grown segment is the writer's own";
}

TEST(ShmWriter, RejectsMoreEntriesThanTheLargestSegmentAndDuplicates) {
  ScopedName name("largest");
  auto writer = MakeWriter(name, 2);
  std::vector<PublishedEntry> many(ZCAL_MAX_CAPACITY + 1, PeerEntry("10.0.0.0", 8, 1));
  auto result = writer->Publish(many, false);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("exceed the largest segment (65536 entries)"),
            std::string::npos)
      << result.error().message;

  std::vector<PublishedEntry> twins = {PeerEntry("10.1.2.3", 16, 1),
                                       PeerEntry("10.1.0.0", 16, 2)};
  result = writer->Publish(twins, false);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("entries 0 and 1 have the same scope"),
            std::string::npos)
      << result.error().message;
}

PublishedEntry AtDepth(PublishedEntry e, zcal::agent::DepthClass depth) {
  e.depth = depth;
  return e;
}

TEST(ShmWriter, WritesEveryStreamEntryBeforeTheOtherClasses) {
  using zcal::agent::DepthClass;
  ScopedName name("depth-order");
  auto writer = MakeWriter(name, 8);
  const std::vector<PublishedEntry> table = {
      AtDepth(PeerEntry("10.1.0.0", 16, 8192), DepthClass::k1),
      AtDepth(Entry(ScopeKind::kHostDefault, 65536), DepthClass::k1),
      PeerEntry("10.1.0.0", 16, 4096),
      AtDepth(Entry(ScopeKind::kHostDefault, 32768), DepthClass::k16),
      Entry(ScopeKind::kHostDefault, 24576),
  };
  ASSERT_TRUE(writer->Publish(table, false));
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0) << zcal_error_detail();
  zcal_info info;
  ASSERT_EQ(zcal_read_info(h, &info), 0);
  EXPECT_EQ(info.abi_minor, ZCAL_ABI_MINOR);
  ASSERT_EQ(info.count, 5u);
  std::vector<std::pair<std::uint16_t, std::uint64_t>> stored;
  for (std::uint32_t i = 0; i < info.count; ++i) {
    zcal_shm_entry e;
    ASSERT_EQ(zcal_read_entry(h, i, &e), 0);
    stored.emplace_back(e.depth_class, e.threshold_bytes);
  }
  EXPECT_EQ(stored, (std::vector<std::pair<std::uint16_t, std::uint64_t>>{
                        {ZCAL_DEPTH_STREAM, 4096},
                        {ZCAL_DEPTH_STREAM, 24576},
                        {ZCAL_DEPTH_1, 8192},
                        {ZCAL_DEPTH_1, 65536},
                        {ZCAL_DEPTH_16, 32768}}));
  zcal_key key;
  ASSERT_EQ(zcal_key_from_string("10.1.2.3", nullptr, &key), 0);
  zcal_result r;
  ASSERT_EQ(zcal_lookup_depth(h, &key, kZc, 1, &r), 0);
  EXPECT_EQ(r.threshold_bytes, 8192u);
  zcal_close(h);
}

TEST(ShmWriter, RejectsAClassWithoutItsStreamEntryAndTwinClasses) {
  using zcal::agent::DepthClass;
  ScopedName name("depth-refuse");
  auto writer = MakeWriter(name, 8);
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{Entry(ScopeKind::kLoopback, 1)}, false));
  auto result = writer->Publish(
      std::vector<PublishedEntry>{Entry(ScopeKind::kLoopback, 1),
                                  AtDepth(PeerEntry("10.1.0.0", 16, 8192), DepthClass::k4)},
      false);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, Errc::kInvalidArgument);
  EXPECT_NE(result.error().message.find("entry 1 (depth class 4) has no stream entry"),
            std::string::npos)
      << result.error().message;
  result = writer->Publish(
      std::vector<PublishedEntry>{Entry(ScopeKind::kLoopback, 1),
                                  AtDepth(Entry(ScopeKind::kLoopback, 2), DepthClass::k4),
                                  AtDepth(Entry(ScopeKind::kLoopback, 3), DepthClass::k4)},
      false);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("entries 1 and 2 have the same scope, method and depth"),
            std::string::npos)
      << result.error().message;
}

TEST(ShmWriter, RejectsInvalidOptions) {
  ScopedName name("options");
  auto attempt = [](ShmWriterOptions o) { return ShmWriter::Create(o); };
  ShmWriterOptions o;
  o.name = "zcal";
  EXPECT_EQ(attempt(o).error().code, Errc::kInvalidArgument);
  o.name = "/a/b";
  EXPECT_EQ(attempt(o).error().code, Errc::kInvalidArgument);
  o.name = name.str();
  o.capacity = 0;
  EXPECT_NE(attempt(o).error().message.find("capacity 0"), std::string::npos);
  o.capacity = ZCAL_MAX_CAPACITY + 1;
  EXPECT_EQ(attempt(o).error().code, Errc::kInvalidArgument);
  o.capacity = 4;
  o.mode = 0666;
  auto world = attempt(o);
  ASSERT_FALSE(world);
  EXPECT_NE(world.error().message.find("mode 0666"), std::string::npos)
      << world.error().message;
  o.mode = 04644;
  EXPECT_FALSE(attempt(o));
  o.mode = 0644;
  o.group = "no-such-group-zcal";
  auto group = attempt(o);
  ASSERT_FALSE(group);
  EXPECT_EQ(group.error().code, Errc::kNotFound);
  EXPECT_NE(group.error().message.find("no-such-group-zcal"), std::string::npos);
  struct stat st {};
  EXPECT_NE(lstat(name.path().c_str(), &st), 0) << "nothing was created";
}

TEST(ShmWriter, AppliesModeAndGroup) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give the file to another group";
  ScopedName name("group");
  ShmWriterOptions o;
  o.name = name.str();
  o.mode = 0640;
  o.group = "daemon";
  group* daemon = getgrnam("daemon");
  if (daemon == nullptr) GTEST_SKIP() << "no group named daemon here";
  const gid_t gid = daemon->gr_gid;
  auto writer = ShmWriter::Create(o);
  ASSERT_TRUE(writer) << writer.error().message;
  struct stat st {};
  ASSERT_EQ(stat(name.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(st.st_gid, gid);
  o.group = "0";
  ScopedName numeric("group-numeric");
  o.name = numeric.str();
  ASSERT_TRUE(ShmWriter::Create(o));
  ASSERT_EQ(stat(numeric.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 0u);
}

TEST(ShmWriter, RefusesASymlinkPlantedAtItsPath) {
  ScopedName name("symlink");
  ScopedName target("symlink-target");
  ASSERT_EQ(symlink(target.path().c_str(), name.path().c_str()), 0);
  ShmWriterOptions o;
  o.name = name.str();
  auto writer = ShmWriter::Create(o);
  ASSERT_FALSE(writer);
  EXPECT_EQ(writer.error().code, Errc::kPermission);
  EXPECT_NE(writer.error().message.find("is a symbolic link"), std::string::npos)
      << writer.error().message;
  struct stat st {};
  EXPECT_NE(lstat(target.path().c_str(), &st), 0) << "the link was not followed";
  EXPECT_EQ(lstat(name.path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link was left alone";
}

TEST(ShmWriter, RefusesASegmentOfAnotherUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a file owned by another user";
  ScopedName name("foreign");
  const int fd = open(name.path().c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "planted", 7), 7);
  ASSERT_EQ(fchown(fd, 65534, 65534), 0);
  close(fd);
  ShmWriterOptions o;
  o.name = name.str();
  auto writer = ShmWriter::Create(o);
  ASSERT_FALSE(writer);
  EXPECT_EQ(writer.error().code, Errc::kPermission);
  EXPECT_NE(writer.error().message.find("belongs to uid 65534"), std::string::npos)
      << writer.error().message;
  struct stat st {};
  ASSERT_EQ(stat(name.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  EXPECT_EQ(st.st_size, 7) << "the file was left alone";
}

TEST(ShmWriter, RefusesADirectoryAtItsPath) {
  ScopedName name("directory");
  ASSERT_EQ(mkdir(name.path().c_str(), 0700), 0);
  ShmWriterOptions o;
  o.name = name.str();
  auto writer = ShmWriter::Create(o);
  rmdir(name.path().c_str());
  ASSERT_FALSE(writer);
  EXPECT_NE(writer.error().message.find("not a regular file"), std::string::npos);
}

TEST(ShmWriter, LeavesNoTemporaryFiles) {
  ScopedName name("tmpfiles");
  { auto writer = MakeWriter(name); }
  { auto writer = MakeWriter(name); }
  const std::string prefix = name.str().substr(1) + ".tmp.";
  int found = 0;
  DIR* dir = opendir("/dev/shm");
  ASSERT_NE(dir, nullptr);
  while (dirent* d = readdir(dir))
    if (std::string(d->d_name).rfind(prefix, 0) == 0) ++found;
  closedir(dir);
  EXPECT_EQ(found, 0);
}

}  // namespace

}  // namespace shm_writer_test
