// Lookups by depth: which class answers a depth, the fall back to the
// scope's stream entry, and entries of unknown classes that readers skip.
#include <cerrno>
#include <cstdint>
#include <optional>

#include <gtest/gtest.h>

#include "handle.h"
#include "segment_image.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace reader_depth_test {
namespace {

using zcal::test::MakeEntry;
using zcal::test::Peer;
using zcal::test::SegmentImage;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;

zcal_shm_entry Classed(zcal_shm_entry e, std::uint16_t depth_class) {
  e.depth_class = depth_class;
  return e;
}

zcal_shm_entry Default(std::uint64_t threshold, std::uint16_t depth_class = ZCAL_DEPTH_STREAM) {
  return Classed(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, threshold),
                 depth_class);
}

class Attached {
 public:
  explicit Attached(SegmentImage& image) {
    rc_ = zcal_internal_attach(image.data(), image.size(), &h_);
  }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;
  ~Attached() { zcal_close(h_); }
  int rc() const { return rc_; }
  zcal_handle* get() const { return h_; }

  std::optional<zcal_result> At(const char* address, std::uint32_t depth) {
    zcal_key key;
    EXPECT_EQ(zcal_key_from_string(address, nullptr, &key), 0);
    zcal_result r;
    if (zcal_lookup_depth(h_, &key, kZc, depth, &r) != 0) return std::nullopt;
    return r;
  }
  std::uint64_t Threshold(const char* address, std::uint32_t depth) {
    const auto r = At(address, depth);
    return r ? r->threshold_bytes : 0;
  }

 private:
  zcal_handle* h_ = nullptr;
  int rc_ = 0;
};

TEST(DepthClass, TakesTheLargestClassAtOrBelowTheDepth) {
  EXPECT_EQ(zcal_depth_class(0), ZCAL_DEPTH_1);
  EXPECT_EQ(zcal_depth_class(1), ZCAL_DEPTH_1);
  EXPECT_EQ(zcal_depth_class(3), ZCAL_DEPTH_1);
  EXPECT_EQ(zcal_depth_class(4), ZCAL_DEPTH_4);
  EXPECT_EQ(zcal_depth_class(15), ZCAL_DEPTH_4);
  EXPECT_EQ(zcal_depth_class(16), ZCAL_DEPTH_16);
  EXPECT_EQ(zcal_depth_class(ZCAL_DEPTH_STREAM_FROM - 1), ZCAL_DEPTH_16);
  EXPECT_EQ(zcal_depth_class(ZCAL_DEPTH_STREAM_FROM), ZCAL_DEPTH_STREAM);
  EXPECT_EQ(zcal_depth_class(UINT32_MAX), ZCAL_DEPTH_STREAM);
}

TEST(DepthClass, NamesEachKnownClass) {
  EXPECT_STREQ(zcal_depth_name(ZCAL_DEPTH_STREAM), "stream");
  EXPECT_STREQ(zcal_depth_name(ZCAL_DEPTH_1), "1");
  EXPECT_STREQ(zcal_depth_name(ZCAL_DEPTH_4), "4");
  EXPECT_STREQ(zcal_depth_name(ZCAL_DEPTH_16), "16");
  EXPECT_STREQ(zcal_depth_name(7), "unknown");
}

TEST(ReaderDepth, AnswersWithTheEntryOfTheDepthsClass) {
  SegmentImage image(8);
  image.Add(Default(24576));
  image.Add(Default(65536, ZCAL_DEPTH_1));
  image.Add(Default(49152, ZCAL_DEPTH_4));
  image.Add(Default(32768, ZCAL_DEPTH_16));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_EQ(h.Threshold("198.51.100.1", 1), 65536u);
  EXPECT_EQ(h.Threshold("198.51.100.1", 2), 65536u);
  EXPECT_EQ(h.Threshold("198.51.100.1", 5), 49152u);
  EXPECT_EQ(h.Threshold("198.51.100.1", 20), 32768u);
  EXPECT_EQ(h.Threshold("198.51.100.1", 1000), 24576u);
  const auto r = h.At("198.51.100.1", 4);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->depth_class, ZCAL_DEPTH_4);
  EXPECT_EQ(r->depth_fallback, 0);
  EXPECT_EQ(r->scope, ZCAL_SCOPE_HOST_DEFAULT);
}

TEST(ReaderDepth, StreamLookupIgnoresTheOtherClasses) {
  SegmentImage image(4);
  image.Add(Default(24576));
  image.Add(Default(65536, ZCAL_DEPTH_1));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  zcal_key key;
  ASSERT_EQ(zcal_key_from_string("198.51.100.1", nullptr, &key), 0);
  zcal_result r;
  ASSERT_EQ(zcal_lookup(h.get(), &key, kZc, &r), 0);
  EXPECT_EQ(r.threshold_bytes, 24576u);
  EXPECT_EQ(r.depth_class, ZCAL_DEPTH_STREAM);
  EXPECT_EQ(zcal_should_zerocopy(h.get(), &key, kZc, 30000, 0, 0), 1);
  EXPECT_EQ(zcal_should_zerocopy_depth(h.get(), &key, kZc, 1, 30000, 0, 0), 0);
  EXPECT_EQ(zcal_should_zerocopy_depth(h.get(), &key, kZc, 1, 70000, 0, 0), 1);
}

TEST(ReaderDepth, FallsBackToTheStreamEntryWithoutTheClassAndSaysSo) {
  SegmentImage image(4);
  image.Add(Default(24576));
  image.Add(Default(65536, ZCAL_DEPTH_1));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  const auto r = h.At("198.51.100.1", 8);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->threshold_bytes, 24576u);
  EXPECT_EQ(r->depth_class, ZCAL_DEPTH_STREAM);
  EXPECT_EQ(r->depth_fallback, 1);
}

TEST(ReaderDepth, SegmentOfMinorOneAnswersEveryDepthWithItsStreamEntry) {
  SegmentImage image(2);
  image.header().abi_minor = 1;
  image.Add(Default(24576));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  for (std::uint32_t depth : {1u, 4u, 16u, 64u}) {
    const auto r = h.At("198.51.100.1", depth);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->threshold_bytes, 24576u);
    EXPECT_EQ(r->depth_fallback, depth < ZCAL_DEPTH_STREAM_FROM ? 1 : 0);
  }
}

TEST(ReaderDepth, NeverTakesAClassFromALessSpecificScope) {
  SegmentImage image(4);
  image.Add(Default(24576));
  image.Add(Default(65536, ZCAL_DEPTH_1));
  image.Add(Peer("192.0.2.0", 24, kZc, 8192));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  const auto r = h.At("192.0.2.7", 1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->scope, ZCAL_SCOPE_PEER);
  EXPECT_EQ(r->threshold_bytes, 8192u);
  EXPECT_EQ(r->depth_fallback, 1);
}

TEST(ReaderDepth, FindsTheClassesOfPeerLoopbackAndInterfaceScopes) {
  SegmentImage image(10);
  image.Add(Peer("192.0.2.0", 24, kZc, 8192));
  image.Add(Classed(Peer("192.0.2.0", 24, kZc, 16384), ZCAL_DEPTH_1));
  image.Add(Peer("2001:db8::", 32, kZc, 4096));
  image.Add(Classed(Peer("2001:db8::", 32, kZc, 12288), ZCAL_DEPTH_4));
  image.Add(MakeEntry(ZCAL_SCOPE_LOOPBACK, kZc, ZCAL_VERDICT_NEVER, std::nullopt));
  image.Add(Classed(MakeEntry(ZCAL_SCOPE_LOOPBACK, kZc, ZCAL_VERDICT_ALWAYS, std::nullopt),
                    ZCAL_DEPTH_1));
  image.Add(zcal::test::Interface("eth9", kZc, 30000));
  image.Add(Classed(zcal::test::Interface("eth9", kZc, 70000), ZCAL_DEPTH_1));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_EQ(h.Threshold("192.0.2.7", 1), 16384u);
  EXPECT_EQ(h.Threshold("192.0.2.7", 64), 8192u);
  EXPECT_EQ(h.Threshold("2001:db8::1", 4), 12288u);
  EXPECT_EQ(h.Threshold("2001:db8::1", 1), 4096u);
  const auto loopback = h.At("127.0.0.1", 1);
  ASSERT_TRUE(loopback);
  EXPECT_EQ(loopback->verdict, ZCAL_VERDICT_ALWAYS);
  zcal_key key;
  ASSERT_EQ(zcal_key_from_string(nullptr, "eth9", &key), 0);
  zcal_result r;
  ASSERT_EQ(zcal_lookup_depth(h.get(), &key, kZc, 1, &r), 0);
  EXPECT_EQ(r.threshold_bytes, 70000u);
  ASSERT_EQ(zcal_lookup_depth(h.get(), &key, kZc, 40, &r), 0);
  EXPECT_EQ(r.threshold_bytes, 30000u);
}

// Untrusted input: an entry whose class this reader does not know (a later
// minor's, or garbage) is neither checked nor used, even one that would
// fail the checks and one that comes before the stream entry.
TEST(ReaderDepth, SkipsEntriesOfUnknownClasses) {
  SegmentImage image(6);
  zcal_shm_entry garbage = Peer("192.0.2.0", 24, kZc, 1);
  garbage.family = 9;      // would be -EPROTO as a known class
  garbage.prefix_len = 200;
  image.Add(Classed(garbage, 0xbeef));
  image.Add(Default(1, 7));
  image.Add(Default(1, 3));
  image.Add(Default(24576));
  image.Add(Default(65536, ZCAL_DEPTH_1));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0) << zcal_error_detail();
  EXPECT_EQ(h.Threshold("198.51.100.1", 1), 65536u);
  EXPECT_EQ(h.Threshold("198.51.100.1", 3), 65536u);
  EXPECT_EQ(h.Threshold("198.51.100.1", 7), 24576u);
  EXPECT_EQ(h.Threshold("198.51.100.1", 64), 24576u);
  EXPECT_EQ(h.Threshold("192.0.2.7", 64), 24576u);
  zcal_shm_entry stored;
  ASSERT_EQ(zcal_read_entry(h.get(), 0, &stored), 0);
  EXPECT_EQ(stored.depth_class, 0xbeef);
}

TEST(ReaderDepth, ClassWithoutAStreamEntryIsNotUsed) {
  SegmentImage image(2);
  image.Add(Default(65536, ZCAL_DEPTH_1));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_FALSE(h.At("198.51.100.1", 1));
}

}  // namespace

}  // namespace reader_depth_test
