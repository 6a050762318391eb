// The guard's depth: sends answered 1 and not yet reported complete, plus
// sends answered 0 since a report last left none in flight, pick the class
// whose threshold answers.
#include <cstdint>

#include <gtest/gtest.h>

#include "handle.h"
#include "segment_image.h"
#include "zcal/zcal.h"

// This file's names, apart from other test files' (unity builds).
namespace guard_depth_test {
namespace {

using zcal::test::MakeEntry;
using zcal::test::SegmentImage;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;

zcal_shm_entry Default(std::uint64_t threshold, std::uint16_t depth_class) {
  zcal_shm_entry e = MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, threshold);
  e.depth_class = depth_class;
  return e;
}

// The discard path's figures of docs/shm-abi.md: 64 KiB at depth 1, 48 KiB
// at 4, 24 KiB for a stream; 32 KiB at 16 unless `without_16`.
class Published {
 public:
  explicit Published(bool without_16 = false) : image_(4) {
    image_.Add(Default(24576, ZCAL_DEPTH_STREAM));
    image_.Add(Default(65536, ZCAL_DEPTH_1));
    image_.Add(Default(49152, ZCAL_DEPTH_4));
    if (!without_16) image_.Add(Default(32768, ZCAL_DEPTH_16));
    EXPECT_EQ(zcal_internal_attach(image_.data(), image_.size(), &h_), 0);
  }
  Published(const Published&) = delete;
  Published& operator=(const Published&) = delete;
  ~Published() { zcal_close(h_); }

  zcal_guard Guard() {
    zcal_guard g;
    zcal_key key;
    EXPECT_EQ(zcal_key_from_string("192.0.2.1", nullptr, &key), 0);
    EXPECT_EQ(zcal_guard_init_key(&g, sizeof g, h_, &key, kZc, 0, 0), 0);
    return g;
  }

 private:
  SegmentImage image_;
  zcal_handle* h_ = nullptr;
};

TEST(GuardDepth, ConnectionThatWaitsForEachCompletionAnswersAtDepthOne) {
  Published segment;
  zcal_guard g = segment.Guard();
  for (int send = 0; send < 100; ++send) {
    ASSERT_EQ(zcal_guard_should_zerocopy(&g, 65536), 1) << "send " << send;
    EXPECT_EQ(g.depth_class, ZCAL_DEPTH_1);
    EXPECT_EQ(g.in_flight, 1u);
    ASSERT_EQ(zcal_guard_completed(&g, 1, 0), 0);
  }
  // 60 KiB wins for a stream, not for one send at a time.
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, 61440), 0);
  EXPECT_EQ(g.depth_class, ZCAL_DEPTH_1);
}

TEST(GuardDepth, SendsInFlightMoveTheClassUp) {
  Published segment;
  zcal_guard g = segment.Guard();
  const std::uint64_t size = 65536;  // yes in every class
  for (std::uint64_t depth = 1; depth <= 40; ++depth) {
    ASSERT_EQ(zcal_guard_should_zerocopy(&g, size), 1);
    EXPECT_EQ(g.depth_class, zcal_depth_class(static_cast<std::uint32_t>(depth)))
        << "depth " << depth;
  }
  EXPECT_EQ(g.in_flight, 40u);
  ASSERT_EQ(zcal_guard_completed(&g, 38, 0), 0);
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, size), 1);
  EXPECT_EQ(g.depth_class, ZCAL_DEPTH_1);  // 2 in flight, and this send
}

// A copied send has no completion: without counting them, a bulk stream
// whose size lies between the stream's threshold and depth 1's would copy
// for good. Counted, it reaches the stream class and stays there.
TEST(GuardDepth, BulkStreamThatCopiesReachesTheStreamClass) {
  Published segment;
  zcal_guard g = segment.Guard();
  const std::uint64_t size = 30000;  // below 16's 32 KiB, above the stream's 24 KiB
  std::uint64_t noes = 0;
  while (noes < 1000 && zcal_guard_should_zerocopy(&g, size) == 0) ++noes;
  EXPECT_EQ(noes, ZCAL_DEPTH_STREAM_FROM - 1);
  EXPECT_EQ(g.depth_class, ZCAL_DEPTH_STREAM);
  // A stream keeps its sends in flight while completions come in.
  for (int send = 0; send < 200; ++send) {
    ASSERT_EQ(zcal_guard_should_zerocopy(&g, size), 1) << "send " << send;
    if (send % 8 == 7) {
      ASSERT_EQ(zcal_guard_completed(&g, 4, 0), 0);
    }
  }
  EXPECT_EQ(g.depth_class, ZCAL_DEPTH_STREAM);
}

TEST(GuardDepth, ReportedCompletionsTakeTheCopiedSendsOffTheDepth) {
  Published segment;
  zcal_guard g = segment.Guard();
  for (int send = 0; send < 10; ++send) ASSERT_EQ(zcal_guard_should_zerocopy(&g, 100), 0);
  EXPECT_EQ(g.unreported, 10u);
  ASSERT_EQ(zcal_guard_completed(&g, 1, 0), 0);
  EXPECT_EQ(g.unreported, 0u);
  EXPECT_EQ(g.in_flight, 0u);  // more completions than sends in flight
  ASSERT_EQ(zcal_guard_completed(&g, 0, 0), 0);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, 100), 0);
  EXPECT_EQ(g.depth_class, ZCAL_DEPTH_1);
}

TEST(GuardDepth, ClassWithoutAnEntryAnswersAsTheStreamAndSaysSo) {
  Published segment(/*without_16=*/true);
  zcal_guard g = segment.Guard();
  EXPECT_EQ(g.class_fallbacks, 1u << 2);  // 1, 4, 16: the third
  for (int send = 0; send < 16; ++send) ASSERT_EQ(zcal_guard_should_zerocopy(&g, 65536), 1);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, 30000), 1);  // depth 17: the stream's 24 KiB
  EXPECT_EQ(g.depth_class, ZCAL_DEPTH_16);
}

TEST(GuardDepth, SegmentWithoutClassesAnswersEveryDepthAsTheStream) {
  SegmentImage image(1);
  image.header().abi_minor = 1;
  image.Add(Default(24576, ZCAL_DEPTH_STREAM));
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_internal_attach(image.data(), image.size(), &h), 0);
  zcal_guard g;
  zcal_key key;
  ASSERT_EQ(zcal_key_from_string("192.0.2.1", nullptr, &key), 0);
  ASSERT_EQ(zcal_guard_init_key(&g, sizeof g, h, &key, kZc, 0, 0), 0);
  EXPECT_EQ(g.class_fallbacks, 0x7u);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, 24576), 1);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, 24575), 0);
  zcal_close(h);
}

}  // namespace

}  // namespace guard_depth_test
