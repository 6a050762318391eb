// zcal_open against what may lie in shared memory: every malformed segment
// gives its documented error, never a crash.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "handle.h"
#include "segment_image.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace reader_open_test {
namespace {

using zcal::test::MakeEntry;
using zcal::test::Peer;
using zcal::test::ScopedName;
using zcal::test::SegmentImage;

int OpenImage(SegmentImage& image, const ScopedName& name) {
  image.WriteTo(name);
  zcal_handle* h = nullptr;
  const int rc = zcal_open(name.c_str(), &h);
  if (rc == 0) {
    EXPECT_NE(h, nullptr);
  } else {
    EXPECT_EQ(h, nullptr);
  }
  zcal_close(h);
  return rc;
}

TEST(ReaderOpen, OpensAValidSegment) {
  ScopedName name("valid");
  SegmentImage image(4);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, ZCAL_METHOD_MSG_ZEROCOPY,
                      ZCAL_VERDICT_THRESHOLD, 16384));
  EXPECT_EQ(OpenImage(image, name), 0);
}

TEST(ReaderOpen, MissingSegmentIsEnoent) {
  ScopedName name("missing");
  zcal_handle* h = reinterpret_cast<zcal_handle*>(1);
  EXPECT_EQ(zcal_open(name.c_str(), &h), -ENOENT);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(std::string(zcal_error_detail()).find("no zcal agent"), std::string::npos);
}

TEST(ReaderOpen, MalformedNamesAreEinval) {
  zcal_handle* h = nullptr;
  for (const char* bad : {"", "/", "zcal", "/a/b", "/.", "/.."}) {
    EXPECT_EQ(zcal_open(bad, &h), -EINVAL) << bad;
  }
  EXPECT_EQ(zcal_open(std::string("/" + std::string(251, 'x')).c_str(), &h), -EINVAL);
  EXPECT_EQ(zcal_open("/zcal", nullptr), -EINVAL);
}

TEST(ReaderOpen, NullNameUsesTheEnvironment) {
  ScopedName name("env");
  SegmentImage image(1);
  image.WriteTo(name);
  setenv(ZCAL_SEGMENT_ENV, name.c_str(), 1);
  zcal_handle* h = nullptr;
  EXPECT_EQ(zcal_open(nullptr, &h), 0);
  zcal_close(h);
  unsetenv(ZCAL_SEGMENT_ENV);
}

TEST(ReaderOpen, WrongMagicIsEproto) {
  ScopedName name("magic");
  SegmentImage image(4);
  image.header().magic = 0x1234;
  EXPECT_EQ(OpenImage(image, name), -EPROTO);
  EXPECT_NE(std::string(zcal_error_detail()).find("magic"), std::string::npos);
}

TEST(ReaderOpen, FutureMajorVersionIsEproto) {
  ScopedName name("major");
  SegmentImage image(4);
  image.header().abi_major = ZCAL_ABI_MAJOR + 1;
  EXPECT_EQ(OpenImage(image, name), -EPROTO);
  EXPECT_NE(std::string(zcal_error_detail()).find("ABI major version 2"), std::string::npos);
}

TEST(ReaderOpen, NewerMinorVersionWithLargerRecordsIsRead) {
  // A later minor version may append fields: larger header and entries.
  ScopedName name("minor");
  const std::uint32_t header_size = 192, entry_size = 128, capacity = 2;
  std::vector<std::uint64_t> words((header_size + capacity * entry_size) / 8);
  auto* bytes = reinterpret_cast<unsigned char*>(words.data());
  SegmentImage base(0);
  zcal_shm_header h = base.header();
  h.abi_minor = ZCAL_ABI_MINOR + 3;
  h.header_size = header_size;
  h.entry_size = entry_size;
  h.capacity = capacity;
  h.count = 2;
  std::memcpy(bytes, &h, sizeof h);
  zcal_shm_entry e0 = Peer("10.0.0.0", 8, ZCAL_METHOD_MSG_ZEROCOPY, 111);
  zcal_shm_entry e1 = MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, ZCAL_METHOD_MSG_ZEROCOPY,
                                ZCAL_VERDICT_THRESHOLD, 222);
  std::memcpy(bytes + header_size, &e0, sizeof e0);
  std::memcpy(bytes + header_size + entry_size, &e1, sizeof e1);
  SegmentImage::WriteBytes(name, bytes, words.size() * 8);

  zcal_handle* handle = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &handle), 0) << zcal_error_detail();
  zcal_key key;
  ASSERT_EQ(zcal_key_from_string("10.1.2.3", nullptr, &key), 0);
  zcal_result r;
  ASSERT_EQ(zcal_lookup(handle, &key, ZCAL_METHOD_MSG_ZEROCOPY, &r), 0);
  EXPECT_EQ(r.threshold_bytes, 111u);
  ASSERT_EQ(zcal_key_from_string("192.0.2.1", nullptr, &key), 0);
  ASSERT_EQ(zcal_lookup(handle, &key, ZCAL_METHOD_MSG_ZEROCOPY, &r), 0);
  EXPECT_EQ(r.threshold_bytes, 222u);
  zcal_close(handle);
}

TEST(ReaderOpen, CountAboveCapacityIsEproto) {
  ScopedName name("count");
  SegmentImage image(4);
  image.header().count = 5;
  EXPECT_EQ(OpenImage(image, name), -EPROTO);
  EXPECT_NE(std::string(zcal_error_detail()).find("exceeds its capacity"), std::string::npos);
}

TEST(ReaderOpen, TruncatedFileIsEproto) {
  ScopedName name("truncated");
  SegmentImage image(4);
  image.Truncate(sizeof(zcal_shm_header) + 3 * sizeof(zcal_shm_entry));
  EXPECT_EQ(OpenImage(image, name), -EPROTO);
  EXPECT_NE(std::string(zcal_error_detail()).find("truncated"), std::string::npos);
  image.Truncate(100);  // not even a header
  EXPECT_EQ(OpenImage(image, name), -EPROTO);
}

TEST(ReaderOpen, ZeroLengthFileIsEproto) {
  ScopedName name("empty");
  SegmentImage::WriteBytes(name, "", 0);
  zcal_handle* h = nullptr;
  EXPECT_EQ(zcal_open(name.c_str(), &h), -EPROTO);
  EXPECT_NE(std::string(zcal_error_detail()).find("0 bytes"), std::string::npos);
}

TEST(ReaderOpen, DirectoryIsEproto) {
  ScopedName name("dir");
  ASSERT_EQ(mkdir(name.path().c_str(), 0700), 0);
  zcal_handle* h = nullptr;
  const int rc = zcal_open(name.c_str(), &h);
  rmdir(name.path().c_str());
  EXPECT_TRUE(rc == -EPROTO || rc == -EISDIR) << rc;
}

TEST(ReaderOpen, OutOfRangeGeometryIsEproto) {
  ScopedName name("geometry");
  for (auto breakit : std::vector<void (*)(zcal_shm_header&)>{
           [](zcal_shm_header& h) { h.header_size = 64; },
           [](zcal_shm_header& h) { h.header_size = 132; },
           [](zcal_shm_header& h) { h.header_size = 1 << 30; },
           [](zcal_shm_header& h) { h.entry_size = 8; },
           [](zcal_shm_header& h) { h.entry_size = 100; },
           [](zcal_shm_header& h) { h.entry_size = 1 << 20; },
           [](zcal_shm_header& h) { h.capacity = ZCAL_MAX_CAPACITY + 1; },
           [](zcal_shm_header& h) { h.capacity = 0xffffffffu; },
       }) {
    SegmentImage image(4);
    breakit(image.header());
    EXPECT_EQ(OpenImage(image, name), -EPROTO) << zcal_error_detail();
  }
}

TEST(ReaderOpen, InvalidEntryFieldsAreEproto) {
  ScopedName name("fields");
  struct Case {
    const char* what;
    void (*breakit)(zcal_shm_entry&);
  };
  const Case cases[] = {
      {"prefix length", [](zcal_shm_entry& e) { e.prefix_len = 33; }},
      {"family", [](zcal_shm_entry& e) { e.family = 5; }},
      {"confidence", [](zcal_shm_entry& e) { e.confidence_ppm = 1000001; }},
      {"without a threshold", [](zcal_shm_entry& e) { e.entry_flags = 0; }},
      {"interface", [](zcal_shm_entry& e) {
         e.scope = ZCAL_SCOPE_INTERFACE;
         std::memset(e.interface, 'x', sizeof e.interface);
       }},
      {"interface", [](zcal_shm_entry& e) {
         e.scope = ZCAL_SCOPE_INTERFACE;
         std::memset(e.interface, 0, sizeof e.interface);
       }},
  };
  for (const Case& c : cases) {
    SegmentImage image(4);
    zcal_shm_entry e = Peer("10.0.0.0", 8, ZCAL_METHOD_MSG_ZEROCOPY, 100);
    c.breakit(e);
    image.Add(e);
    EXPECT_EQ(OpenImage(image, name), -EPROTO) << c.what;
    EXPECT_NE(std::string(zcal_error_detail()).find(c.what), std::string::npos)
        << zcal_error_detail();
  }
}

TEST(ReaderOpen, WriterStuckMidPublishIsEagain) {
  ScopedName name("busy");
  SegmentImage image(4);
  image.header().seq = 7;  // odd: a writer died mid-publish
  EXPECT_EQ(OpenImage(image, name), -EAGAIN);
  EXPECT_NE(std::string(zcal_error_detail()).find("seqlock"), std::string::npos);
}

TEST(ReaderOpen, RandomBytesNeverCrash) {
  ScopedName name("random");
  std::mt19937_64 rng(12345);
  int opened = 0;
  for (int i = 0; i < 300; ++i) {
    const std::size_t size = rng() % 2048;
    std::vector<std::uint64_t> words(size / 8 + 1);
    for (auto& w : words) w = rng();
    if (i % 2 == 0 && size >= 16) {
      // Half of them pass the magic and version checks, to reach the rest.
      words[0] = ZCAL_MAGIC;
      words[1] = (words[1] & ~UINT64_C(0xffff)) | ZCAL_ABI_MAJOR;
    }
    SegmentImage::WriteBytes(name, words.data(), size);
    zcal_handle* h = nullptr;
    const int rc = zcal_open(name.c_str(), &h);
    EXPECT_TRUE(rc == 0 || rc == -EPROTO || rc == -EAGAIN) << rc;
    if (rc == 0) {
      ++opened;
      zcal_key key;
      zcal_key_from_string("10.0.0.1", "eth0", &key);
      zcal_result r;
      zcal_lookup(h, &key, static_cast<std::uint8_t>(rng()), &r);
    }
    zcal_close(h);
  }
  RecordProperty("opened", opened);
}

TEST(ReaderOpen, UnreadableSegmentIsEacces) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to another user";
  ScopedName name("perm");
  SegmentImage image(1);
  image.WriteTo(name);
  ASSERT_EQ(chmod(name.path().c_str(), 0600), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(99);
    zcal_handle* h = nullptr;
    _exit(zcal_open(name.c_str(), &h) == -EACCES ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ReaderOpen, AttachRejectsMisalignedMemory) {
  SegmentImage image(1);
  zcal_handle* h = nullptr;
  EXPECT_EQ(zcal_internal_attach(static_cast<char*>(image.data()) + 1, 128, &h), -EINVAL);
  EXPECT_EQ(zcal_internal_attach(image.data(), image.size(), &h), 0);
  zcal_close(h);
}

}  // namespace

}  // namespace reader_open_test
