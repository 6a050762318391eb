// A segment changed under an open handle by someone with write access:
// truncated (to 0, to 10 bytes, in the middle of the table) or written
// over. The reader answers with its error or the caller's fallback, never
// reads past the size it checked, and never crashes (SIGBUS).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "handle.h"
#include "segment_image.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace reader_shrink_test {
namespace {

using zcal::test::MakeEntry;
using zcal::test::Peer;
using zcal::test::ScopedName;
using zcal::test::SegmentImage;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;
constexpr std::uint64_t kBig = 1u << 20;

// A segment file with a host default (threshold `threshold`) and `peers`
// more entries, and a handle open on it.
class Shrink : public ::testing::Test {
 protected:
  void Write(std::uint64_t threshold, std::uint32_t capacity = 4, std::uint32_t peers = 0) {
    SegmentImage image(capacity);
    image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, threshold));
    for (std::uint32_t i = 0; i < peers; ++i)
      image.Add(Peer(("10.0." + std::to_string(i) + ".0").c_str(), 24, kZc, 1000 + i));
    image.WriteTo(name_);
    bytes_ = image.size();
  }
  void Open() { ASSERT_EQ(zcal_open(name_.c_str(), &h_), 0) << zcal_error_detail(); }
  void TearDown() override { zcal_close(h_); }

  std::int64_t Threshold(const char* address = "192.0.2.1") {
    zcal_key key;
    zcal_key_from_string(address, nullptr, &key);
    zcal_result r;
    const int rc = zcal_lookup(h_, &key, kZc, &r);
    return rc != 0 ? rc : static_cast<std::int64_t>(r.threshold_bytes);
  }
  // The decision for a 1 MiB send: the entry says zerocopy, so a 0 with
  // fallback 0 and a 1 with fallback 1 show that the fallback answered.
  bool FallsBack() {
    zcal_key key;
    zcal_key_from_string("192.0.2.1", nullptr, &key);
    return zcal_should_zerocopy(h_, &key, kZc, kBig, 0, 0) == 0 &&
           zcal_should_zerocopy(h_, &key, kZc, kBig, 0, 1) == 1;
  }
  void Truncate(off_t bytes) { ASSERT_EQ(truncate(name_.path().c_str(), bytes), 0); }

  // Writes to the first page of the file, as another writer would.
  template <typename Change>
  void WriteHeader(Change change) {
    const int fd = open(name_.path().c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    ASSERT_NE(page, MAP_FAILED);
    change(*static_cast<zcal_shm_header*>(page));
    munmap(page, 4096);
  }
  static void Publish(zcal_shm_header& hdr) {
    hdr.seq += 2;
    hdr.generation += 1;
  }

  std::string Detail() const { return zcal_error_detail(); }

  ScopedName name_{"shrink"};
  zcal_handle* h_ = nullptr;
  std::size_t bytes_ = 0;
};

TEST_F(Shrink, ToTenBytesIsEstaleAtTheNextLookup) {
  Write(100);
  Open();
  ASSERT_EQ(Threshold(), 100);
  Truncate(10);
  // The header page now reads as zeros past byte 10: a new generation to
  // the reader, whose size check then finds the file shrunk.
  EXPECT_EQ(Threshold(), -ESTALE);
  EXPECT_NE(Detail().find("changed size"), std::string::npos) << Detail();
  EXPECT_EQ(zcal_generation(h_), 0u) << "the mapping is no longer read";
  EXPECT_TRUE(FallsBack());
  zcal_info info;
  EXPECT_EQ(zcal_read_info(h_, &info), -ESTALE);
  EXPECT_EQ(Threshold(), -ESTALE);
}

TEST_F(Shrink, ToZeroIsFoundByRefreshBeforeAnyRead) {
  Write(100);
  Open();
  ASSERT_EQ(Threshold(), 100);
  Truncate(0);
  // The name holds the same, now empty, file: it cannot be reopened.
  EXPECT_EQ(zcal_refresh(h_), -EPROTO);
  EXPECT_NE(Detail().find("0 bytes"), std::string::npos) << Detail();
  EXPECT_EQ(zcal_generation(h_), 0u);
  EXPECT_EQ(Threshold(), -ESTALE);
  EXPECT_TRUE(FallsBack());
}

TEST_F(Shrink, ToZeroIsFoundByTheSizeCheckOfALaterLookup) {
  Write(100);
  Open();
  ASSERT_EQ(Threshold(), 100);
  Truncate(0);
  // As if ZCAL_SIZE_CHECK_INTERVAL_NS had passed since the last check: the
  // lookup compares the size before it loads the generation from page 0.
  h_->size_checked_ns -= ZCAL_SIZE_CHECK_INTERVAL_NS;
  EXPECT_EQ(Threshold(), -ESTALE);
  EXPECT_NE(Detail().find("changed size"), std::string::npos) << Detail();
  EXPECT_TRUE(FallsBack());
}

TEST_F(Shrink, CutToZeroAndGrownBackIsEprotoThenTheNewSegmentIsRead) {
  // What the agent does to a file cut under it: grows it back (zeros) so
  // that readers still mapping it never fault, and renames a new segment
  // over the name.
  Write(100);
  Open();
  ASSERT_EQ(Threshold(), 100);
  Truncate(0);
  Truncate(static_cast<off_t>(bytes_));
  // No size check is due: the lookup loads the generation from page 0,
  // which reads zero now, and the copy finds no magic.
  EXPECT_EQ(Threshold(), -EPROTO);
  EXPECT_NE(Detail().find("header changed"), std::string::npos) << Detail();
  EXPECT_TRUE(FallsBack());
  ScopedName next{"shrink-next"};
  SegmentImage image(4);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 700));
  image.WriteTo(next);
  ASSERT_EQ(rename(next.path().c_str(), name_.path().c_str()), 0);
  h_->last_recheck_ns -= 1000000000u;  // as if a second had passed
  EXPECT_EQ(Threshold(), 700) << Detail();
}

TEST_F(Shrink, APublishIntoAFileCutInsideTheTableIsNotCopied) {
  // 60 entries of 96 bytes: the table runs to byte 5888, past the page.
  Write(100, 64, 59);
  Open();
  ASSERT_EQ(Threshold("10.0.58.1"), 1058);
  Truncate(4096);
  EXPECT_EQ(Threshold("10.0.58.1"), 1058) << "same generation: the private copy answers";
  WriteHeader(Publish);
  // A copy would read entries beyond the end of the file (SIGBUS).
  EXPECT_EQ(Threshold("10.0.58.1"), -ESTALE);
  EXPECT_TRUE(FallsBack());
}

TEST_F(Shrink, ARewrittenSegmentIsReadAgainAfterARefresh) {
  Write(100);
  Open();
  Truncate(10);
  ASSERT_EQ(Threshold(), -ESTALE);
  Write(200);  // the same file, full size again, a valid header
  EXPECT_EQ(Threshold(), -ESTALE) << "the name is reopened at most once a second";
  EXPECT_EQ(zcal_refresh(h_), 0) << Detail();
  EXPECT_EQ(Threshold(), 200);
}

TEST_F(Shrink, ALookupReopensTheNameOnceASecond) {
  Write(100);
  Open();
  Truncate(10);
  ASSERT_EQ(Threshold(), -ESTALE);
  Write(300);
  h_->last_recheck_ns -= 1000000000u;  // as if a second had passed
  EXPECT_EQ(Threshold(), 300) << Detail();
}

TEST_F(Shrink, GarbageOverTheHeaderIsEproto) {
  Write(100);
  Open();
  ASSERT_EQ(Threshold(), 100);
  WriteHeader([](zcal_shm_header& hdr) {
    std::mt19937_64 rng(99);
    auto* words = reinterpret_cast<std::uint64_t*>(&hdr);
    for (std::size_t i = 0; i < sizeof hdr / 8; ++i) words[i] = rng();
  });
  EXPECT_EQ(Threshold(), -EPROTO);
  EXPECT_NE(Detail().find("header changed"), std::string::npos) << Detail();
  EXPECT_EQ(zcal_generation(h_), 0u) << "the mapping is no longer read";
  EXPECT_TRUE(FallsBack());
  EXPECT_EQ(Threshold(), -EPROTO);
}

TEST_F(Shrink, GarbageOverTheMagicIsFoundAtTheNextPublish) {
  Write(100);
  Open();
  ASSERT_EQ(Threshold(), 100);
  WriteHeader([](zcal_shm_header& hdr) { hdr.magic = 0x4141414141414141u; });
  EXPECT_EQ(Threshold(), 100) << "same generation: the private copy answers";
  WriteHeader(Publish);
  EXPECT_EQ(Threshold(), -EPROTO);
  EXPECT_NE(Detail().find("magic 0x4141414141414141"), std::string::npos) << Detail();
}

TEST_F(Shrink, GarbageInTheGeometryIsEproto) {
  // Each change also makes the header invalid on its own, so that the
  // reopen of the name (which validates it afresh) fails too.
  int field = 0;
  for (auto breakit : {+[](zcal_shm_header& h) { h.capacity = 400; },
                       +[](zcal_shm_header& h) { h.entry_size = 128; },
                       +[](zcal_shm_header& h) { h.header_size = 4096; },
                       +[](zcal_shm_header& h) { h.abi_major = 2; }}) {
    zcal_close(h_);
    h_ = nullptr;
    Write(100);
    Open();
    WriteHeader([&](zcal_shm_header& hdr) {
      breakit(hdr);
      Publish(hdr);
    });
    EXPECT_EQ(Threshold(), -EPROTO) << "field " << field++ << ": " << Detail();
  }
}

TEST_F(Shrink, AnyCutAndAnyCallNeverCrash) {
  // Every size around the header, the page and the table, each found by a
  // different path: the next lookup, a refresh, the periodic size check, a
  // publish; then every call of the API.
  const std::size_t full = sizeof(zcal_shm_header) + 64 * sizeof(zcal_shm_entry);
  const std::size_t sizes[] = {0, 1, 10, 31, 40, 100, 127, 128, 129, 224, 1000,
                               4095, 4096, 4097, full - 96, full - 1};
  int found = 0;
  for (std::size_t size : sizes) {
    for (int path = 0; path < 4; ++path) {
      zcal_close(h_);
      h_ = nullptr;
      Write(100, 64, 60);
      Open();
      ASSERT_EQ(Threshold(), 100);
      Truncate(static_cast<off_t>(size));
      // A file cut to 0 bytes has no first page: the generation load of a
      // lookup before any size check would fault, which no reader can
      // prevent without a system call per load (docs/shm-abi.md).
      if (size == 0 && (path == 0 || path == 3)) continue;
      if (path == 1) zcal_refresh(h_);
      if (path == 2) h_->size_checked_ns -= ZCAL_SIZE_CHECK_INTERVAL_NS;
      if (path == 3 && size >= 48) WriteHeader(Publish);
      const std::int64_t rc = Threshold("10.0.59.1");
      // Until a check runs, an intact generation word (bytes 32..39) lets
      // the private copy answer.
      const bool unseen = (path == 0 || (path == 3 && size < 48)) && size >= 40;
      EXPECT_TRUE(rc == -ESTALE || (rc == 1059 && unseen))
          << "size " << size << " path " << path << ": " << rc << " " << Detail();
      found += rc == -ESTALE;
      zcal_info info;
      const int info_rc = zcal_read_info(h_, &info);
      EXPECT_EQ(info_rc, -ESTALE) << "size " << size << ": read_info checks the size";
      zcal_shm_entry entry;
      zcal_read_entry(h_, 0, &entry);
      (void)zcal_generation(h_);
      EXPECT_TRUE(FallsBack()) << "size " << size << " path " << path;
      EXPECT_NE(zcal_refresh(h_), 0);
    }
  }
  EXPECT_GT(found, 40);
}

TEST(ShrinkOpen, AWorldWritableSegmentIsRefused) {
  ScopedName name("world");
  SegmentImage image(1);
  image.WriteTo(name);
  ASSERT_EQ(chmod(name.path().c_str(), 0666), 0);
  zcal_handle* h = nullptr;
  EXPECT_EQ(zcal_open(name.c_str(), &h), -EPROTO);
  EXPECT_EQ(h, nullptr);
  EXPECT_NE(std::string(zcal_error_detail()).find("writable by every user"), std::string::npos)
      << zcal_error_detail();
  ASSERT_EQ(chmod(name.path().c_str(), 0644), 0);
  EXPECT_EQ(zcal_open(name.c_str(), &h), 0);
  zcal_close(h);
}

}  // namespace

}  // namespace reader_shrink_test
