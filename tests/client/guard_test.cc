// The per-connection guard's state machine, driven by reported
// completions: ON follows the threshold, a copied completion turns it OFF
// for retry_sends sends, then a probe turns it ON again or OFF for twice
// as long.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "handle.h"
#include "segment_image.h"
#include "zcal/zcal.h"
#include "zcal/zcal.hpp"

// This file's names, apart from other test files' (unity builds).
namespace guard_test {
namespace {

using zcal::test::MakeEntry;
using zcal::test::NowNs;
using zcal::test::SegmentImage;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;
constexpr std::uint64_t kLarge = 65536, kSmall = 100;

zcal_key Key(const char* address) {
  zcal_key key;
  EXPECT_EQ(zcal_key_from_string(address, nullptr, &key), 0);
  return key;
}

// A guard without a segment whose fallback is zerocopy: every send of any
// size would be zerocopy but for the guard.
zcal_guard Unpublished() {
  zcal_guard g;
  const zcal_key key = Key("192.0.2.1");
  EXPECT_EQ(zcal_guard_init_key(&g, sizeof g, nullptr, &key, kZc, 1, 0), 0);
  return g;
}

// A segment in memory whose host default for msg_zerocopy has a threshold,
// and guards reading it for a peer without an entry of its own.
class Published {
 public:
  explicit Published(std::uint64_t threshold) : image_(2) {
    image_.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, threshold));
    EXPECT_EQ(zcal_internal_attach(image_.data(), image_.size(), &h_), 0);
  }
  Published(const Published&) = delete;
  Published& operator=(const Published&) = delete;
  ~Published() { zcal_close(h_); }

  zcal_guard Guard(int fallback) {
    zcal_guard g;
    const zcal_key key = Key("192.0.2.1");
    EXPECT_EQ(zcal_guard_init_key(&g, sizeof g, h_, &key, kZc, fallback, 0), 0);
    return g;
  }
  // A publish of a new threshold.
  void Publish(std::uint64_t threshold) {
    image_.entry(0).threshold_bytes = threshold;
    image_.header().seq += 2;
    image_.header().generation += 1;
  }
  std::uint64_t generation() { return image_.header().generation; }

 private:
  SegmentImage image_;
  zcal_handle* h_ = nullptr;
};

// Sends answered 0 before the first 1, up to `limit`.
std::uint64_t NoesBeforeYes(zcal_guard& g, std::uint64_t size, std::uint64_t limit) {
  std::uint64_t noes = 0;
  while (noes < limit && zcal_guard_should_zerocopy(&g, size) == 0) ++noes;
  return noes;
}

TEST(Guard, InitRejectsNullAndShortStructs) {
  zcal_guard g;
  const zcal_key key = Key("192.0.2.1");
  EXPECT_EQ(zcal_guard_init_key(nullptr, sizeof g, nullptr, &key, kZc, 0, 0), -EINVAL);
  EXPECT_EQ(zcal_guard_init_key(&g, sizeof g, nullptr, nullptr, kZc, 0, 0), -EINVAL);
  EXPECT_EQ(zcal_guard_init_key(&g, sizeof g - 1, nullptr, &key, kZc, 0, 0), -EINVAL);
  EXPECT_EQ(zcal_guard_init(nullptr, sizeof g, nullptr, 0, kZc, 0, 0), -EINVAL);
  EXPECT_EQ(zcal_guard_init(&g, 8, nullptr, 0, kZc, 0, 0), -EINVAL);
  EXPECT_EQ(zcal_guard_should_zerocopy(nullptr, kLarge), 0);
  EXPECT_EQ(zcal_guard_completed(nullptr, 1, 1), -EINVAL);
}

TEST(Guard, InitZeroesAllOfTheCallersStruct) {
  // A caller built against a later header passes a larger struct: the
  // bytes this library does not know start at zero too.
  std::vector<unsigned char> bytes(sizeof(zcal_guard) + 64, 0xa5);
  auto* g = reinterpret_cast<zcal_guard*>(bytes.data());
  const zcal_key key = Key("192.0.2.1");
  ASSERT_EQ(zcal_guard_init_key(g, bytes.size(), nullptr, &key, kZc, 1, 0), 0);
  EXPECT_EQ(g->size, sizeof(zcal_guard));
  EXPECT_EQ(g->state, ZCAL_GUARD_ON);
  EXPECT_EQ(g->retry_sends, ZCAL_GUARD_RETRY_SENDS);
  for (std::size_t i = offsetof(zcal_guard, reserved); i < bytes.size(); ++i)
    ASSERT_EQ(bytes[i], 0) << "byte " << i;
}

TEST(Guard, InitFromASocketKeysItsPeer) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  zcal_guard g;
  EXPECT_EQ(zcal_guard_init(&g, sizeof g, nullptr, pair[0], kZc, 0, 0), -EAFNOSUPPORT);
  close(pair[0]);
  close(pair[1]);
  EXPECT_EQ(zcal_guard_init(&g, sizeof g, nullptr, pair[0], kZc, 0, 0), -EBADF);
  const int unconnected = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(zcal_guard_init(&g, sizeof g, nullptr, unconnected, kZc, 0, 0), -ENOTCONN);
  EXPECT_NE(std::string(zcal_error_detail()).find("getpeername"), std::string::npos);

  // A connected one: the key is the peer, 127.0.0.1.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ASSERT_EQ(connect(unconnected, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(zcal_guard_init(&g, sizeof g, nullptr, unconnected, kZc, 0, 0), 0);
  EXPECT_EQ(g.key.family, ZCAL_FAMILY_IPV4);
  EXPECT_EQ(g.key.address[0], 127);
  close(unconnected);
  close(listener);
}

TEST(Guard, FollowsTheThresholdWhileOn) {
  Published published(4096);
  zcal_guard g = published.Guard(1);
  EXPECT_EQ(g.have_result, 1);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, 4095), 0);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, 4096), 1);
  EXPECT_EQ(zcal_guard_completed(&g, 5, 0), 0);
  EXPECT_EQ(g.state, ZCAL_GUARD_ON) << "completions not copied keep it on";
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 1);
}

TEST(Guard, WithoutAnEntryUsesTheFallback) {
  zcal_guard copy;
  const zcal_key key = Key("192.0.2.1");
  ASSERT_EQ(zcal_guard_init_key(&copy, sizeof copy, nullptr, &key, kZc, 0, 0), 0);
  EXPECT_EQ(zcal_guard_should_zerocopy(&copy, kLarge), 0);
  zcal_guard zc = Unpublished();
  EXPECT_EQ(zcal_guard_should_zerocopy(&zc, kSmall), 1);
}

TEST(Guard, ACopiedCompletionTurnsItOffForRetrySends) {
  zcal_guard g = Unpublished();
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 1);
  ASSERT_EQ(zcal_guard_completed(&g, 3, 1), 0);
  EXPECT_EQ(g.state, ZCAL_GUARD_OFF);
  EXPECT_EQ(g.turned_off, 1u);
  EXPECT_EQ(g.completions, 3u);
  EXPECT_EQ(g.copied, 1u);
  EXPECT_EQ(NoesBeforeYes(g, kLarge, 10 * ZCAL_GUARD_RETRY_SENDS), ZCAL_GUARD_RETRY_SENDS);
  EXPECT_EQ(g.state, ZCAL_GUARD_PROBING) << "the send after them is a probe";
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 1) << "and so are the next ones";
}

TEST(Guard, SendsTheThresholdWouldCopyDoNotCountTowardsTheRetry) {
  Published published(4096);
  zcal_guard g = published.Guard(0);
  ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(zcal_guard_should_zerocopy(&g, kSmall), 0);
  EXPECT_EQ(g.sends_until_retry, ZCAL_GUARD_RETRY_SENDS);
  EXPECT_EQ(NoesBeforeYes(g, kLarge, 10 * ZCAL_GUARD_RETRY_SENDS), ZCAL_GUARD_RETRY_SENDS);
}

TEST(Guard, AFailedProbeDoublesTheWaitUpToTheMaximum) {
  zcal_guard g = Unpublished();
  ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);
  std::uint64_t expected = ZCAL_GUARD_RETRY_SENDS;
  for (int probe = 0; probe < 14; ++probe) {
    ASSERT_EQ(NoesBeforeYes(g, kLarge, 2 * ZCAL_GUARD_RETRY_SENDS_MAX), expected)
        << "probe " << probe;
    ASSERT_EQ(g.state, ZCAL_GUARD_PROBING);
    ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);
    ASSERT_EQ(g.state, ZCAL_GUARD_OFF);
    expected = expected * 2 > ZCAL_GUARD_RETRY_SENDS_MAX ? ZCAL_GUARD_RETRY_SENDS_MAX
                                                          : expected * 2;
    ASSERT_EQ(g.retry_sends, expected);
  }
  EXPECT_EQ(g.retry_sends, ZCAL_GUARD_RETRY_SENDS_MAX);
  EXPECT_EQ(g.turned_off, 15u);
}

TEST(Guard, ASuccessfulProbeTurnsItOnWithTheFirstWait) {
  zcal_guard g = Unpublished();
  ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);
  ASSERT_EQ(NoesBeforeYes(g, kLarge, 1u << 20), ZCAL_GUARD_RETRY_SENDS);
  ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);  // failed: 2048
  ASSERT_EQ(NoesBeforeYes(g, kLarge, 1u << 20), 2 * ZCAL_GUARD_RETRY_SENDS);
  ASSERT_EQ(zcal_guard_completed(&g, 2, 0), 0);  // real zerocopy now
  EXPECT_EQ(g.state, ZCAL_GUARD_ON);
  EXPECT_EQ(g.retry_sends, ZCAL_GUARD_RETRY_SENDS);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 1);
  // The next fallback waits the first wait again, not 4096.
  ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);
  EXPECT_EQ(NoesBeforeYes(g, kLarge, 1u << 20), ZCAL_GUARD_RETRY_SENDS);
}

TEST(Guard, CompletionsWhileOffLeaveTheCountdownAlone) {
  zcal_guard g = Unpublished();
  ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);
  ASSERT_EQ(NoesBeforeYes(g, kLarge, 10), 10u);
  // Sends made before it turned off complete late, copied or not.
  ASSERT_EQ(zcal_guard_completed(&g, 4, 4), 0);
  ASSERT_EQ(zcal_guard_completed(&g, 4, 0), 0);
  EXPECT_EQ(g.state, ZCAL_GUARD_OFF);
  EXPECT_EQ(g.turned_off, 1u);
  EXPECT_EQ(NoesBeforeYes(g, kLarge, 1u << 20), ZCAL_GUARD_RETRY_SENDS - 10);
}

TEST(Guard, MixedCompletionsOfAProbeTurnItOff) {
  zcal_guard g = Unpublished();
  ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);
  ASSERT_EQ(NoesBeforeYes(g, kLarge, 1u << 20), ZCAL_GUARD_RETRY_SENDS);
  ASSERT_EQ(zcal_guard_completed(&g, 3, 1), 0);
  EXPECT_EQ(g.state, ZCAL_GUARD_OFF);
  EXPECT_EQ(g.retry_sends, 2 * ZCAL_GUARD_RETRY_SENDS);
  ASSERT_EQ(zcal_guard_completed(&g, 0, 0), 0);
  EXPECT_EQ(g.state, ZCAL_GUARD_OFF) << "nothing reported, nothing changes";
}

TEST(Guard, RejectsMoreCopiedThanCompletions) {
  zcal_guard g = Unpublished();
  EXPECT_EQ(zcal_guard_completed(&g, 1, 2), -EINVAL);
  EXPECT_EQ(g.state, ZCAL_GUARD_ON);
  EXPECT_EQ(g.completions, 0u);
}

TEST(Guard, APublishChangesTheThresholdButNotTheState) {
  Published published(4096);
  zcal_guard g = published.Guard(0);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, 8192), 1);
  published.Publish(16384);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, 8192), 0) << "the new threshold";
  EXPECT_EQ(g.generation, published.generation());
  ASSERT_EQ(zcal_guard_completed(&g, 1, 1), 0);
  published.Publish(1);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, 8192), 0) << "still off after a publish";
  EXPECT_EQ(g.state, ZCAL_GUARD_OFF);
}

TEST(Guard, AnAgentHeartbeatOlderThanMaxAgeUsesTheFallback) {
  SegmentImage image(2);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_NEVER, std::nullopt));
  image.header().heartbeat_ns = NowNs() - 120ull * 1000000000ull;
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_internal_attach(image.data(), image.size(), &h), 0);
  const zcal_key key = Key("192.0.2.1");
  zcal_guard old;
  ASSERT_EQ(zcal_guard_init_key(&old, sizeof old, h, &key, kZc, 1, 60ull * 1000000000ull), 0);
  EXPECT_EQ(old.have_result, 0);
  EXPECT_EQ(zcal_guard_should_zerocopy(&old, kLarge), 1) << "the fallback, not 'never'";
  zcal_guard unbounded;
  ASSERT_EQ(zcal_guard_init_key(&unbounded, sizeof unbounded, h, &key, kZc, 1, 0), 0);
  EXPECT_EQ(zcal_guard_should_zerocopy(&unbounded, kLarge), 0) << "'never'";
  zcal_close(h);
}

TEST(Guard, WithoutAnAnswerItLooksUpAgainAfterLookupRetrySends) {
  // A segment that shrank under the handle shows no new generation: only a
  // lookup can reopen the name once the agent rewrote it.
  zcal::test::ScopedName name("guard-stale");
  SegmentImage image(2);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 4096));
  image.WriteTo(name);
  zcal_handle* h = nullptr;
  ASSERT_EQ(zcal_open(name.c_str(), &h), 0);
  zcal_guard g;
  const zcal_key key = Key("192.0.2.1");
  ASSERT_EQ(zcal_guard_init_key(&g, sizeof g, h, &key, kZc, 0, 0), 0);
  ASSERT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 1);
  ASSERT_EQ(truncate(name.path().c_str(), 10), 0);
  EXPECT_EQ(zcal_guard_should_zerocopy(&g, kLarge), 0) << "no answer: the fallback";
  EXPECT_EQ(g.have_result, 0);
  image.WriteTo(name);
  h->last_recheck_ns -= 1000000000u;  // the reopen is due
  std::uint64_t sends = 0;
  while (sends < 2 * ZCAL_GUARD_LOOKUP_RETRY_SENDS && zcal_guard_should_zerocopy(&g, kLarge) == 0)
    ++sends;
  EXPECT_EQ(sends, ZCAL_GUARD_LOOKUP_RETRY_SENDS - 1) << "the last of them looked up";
  EXPECT_EQ(g.have_result, 1);
  zcal_close(h);
}

TEST(Guard, TheWrapperDrivesTheSameStateMachine) {
  auto guard = zcal::client::Guard::ForKey(nullptr, Key("192.0.2.1"),
                                           zcal::client::Method::kMsgZerocopy, true);
  ASSERT_TRUE(guard);
  EXPECT_TRUE(guard->ShouldZerocopy(kLarge));
  EXPECT_TRUE(guard->Completed(2, 2));
  EXPECT_EQ(guard->state(), ZCAL_GUARD_OFF);
  EXPECT_FALSE(guard->ShouldZerocopy(kLarge));
  EXPECT_FALSE(guard->Completed(1, 2)) << "more copied than completions";
  EXPECT_EQ(guard->get().copied, 2u);
  auto bad = zcal::client::Guard::ForSocket(nullptr, -1, zcal::client::Method::kMsgZerocopy,
                                            false);
  EXPECT_FALSE(bad);
  EXPECT_EQ(bad.error(), -EBADF);
}

}  // namespace

}  // namespace guard_test
