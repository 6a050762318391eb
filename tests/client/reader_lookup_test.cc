// Lookups: which entry answers a key, what the result carries, and the
// hot-path decision with its fallbacks.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "handle.h"
#include "segment_image.h"
#include "zcal/zcal.h"
#include "zcal/zcal.hpp"

// This file's names, apart from other test files' (unity builds).
namespace reader_lookup_test {
namespace {

using zcal::test::Interface;
using zcal::test::MakeEntry;
using zcal::test::NowNs;
using zcal::test::Peer;
using zcal::test::ScopedName;
using zcal::test::SegmentImage;

constexpr std::uint8_t kZc = ZCAL_METHOD_MSG_ZEROCOPY;
constexpr std::uint64_t kSecond = 1000000000u;

// A handle attached to an image in memory, closed at scope exit.
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

  // Threshold of the entry that answers, or -errno.
  std::int64_t Threshold(const char* address, const char* interface = nullptr,
                         std::uint8_t method = kZc) {
    zcal_key key;
    if (zcal_key_from_string(address, interface, &key) != 0) return -EINVAL;
    zcal_result r;
    const int rc = zcal_lookup(h_, &key, method, &r);
    return rc != 0 ? rc : static_cast<std::int64_t>(r.threshold_bytes);
  }

 private:
  zcal_handle* h_ = nullptr;
  int rc_ = 0;
};

TEST(Lookup, LongestIpv4PrefixWins) {
  SegmentImage image(8);
  image.Add(Peer("10.0.0.0", 8, kZc, 1000));
  image.Add(Peer("10.1.0.0", 16, kZc, 2000));
  image.Add(Peer("10.1.2.3", 32, kZc, 3000));
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 4000));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_EQ(h.Threshold("10.1.2.3"), 3000);
  EXPECT_EQ(h.Threshold("10.1.9.9"), 2000);
  EXPECT_EQ(h.Threshold("10.9.9.9"), 1000);
  EXPECT_EQ(h.Threshold("11.0.0.1"), 4000);
  EXPECT_EQ(h.Threshold("2001:db8::1"), 4000);
}

TEST(Lookup, LongestIpv6PrefixWins) {
  SegmentImage image(8);
  image.Add(Peer("::", 0, kZc, 1));
  image.Add(Peer("2001:db8::", 32, kZc, 32));
  image.Add(Peer("2001:db8:1::", 48, kZc, 48));
  image.Add(Peer("2001:db8:1:2:3:4:5:0", 112, kZc, 112));
  image.Add(Peer("2001:db8:1:2:3:4:5:6", 128, kZc, 128));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_EQ(h.Threshold("2001:db8:1:2:3:4:5:6"), 128);
  EXPECT_EQ(h.Threshold("2001:db8:1:2:3:4:5:7"), 112);
  EXPECT_EQ(h.Threshold("2001:db8:1:ffff::"), 48);
  EXPECT_EQ(h.Threshold("2001:db8:2::"), 32);
  EXPECT_EQ(h.Threshold("fe80::1"), 1);
  EXPECT_EQ(h.Threshold("192.0.2.1"), -ENODATA);  // ::/0 is IPv6 only
}

TEST(Lookup, HostBitsInPublishedAddressesAreIgnored) {
  SegmentImage image(2);
  image.Add(Peer("10.1.2.3", 16, kZc, 77));
  image.Add(Peer("2001:db8:ffff::1", 32, kZc, 66));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_EQ(h.Threshold("10.1.200.200"), 77);
  EXPECT_EQ(h.Threshold("2001:db8::9"), 66);
}

TEST(Lookup, MappedIpv4AddressesMatchIpv4Entries) {
  SegmentImage image(2);
  image.Add(Peer("192.0.2.0", 24, kZc, 24));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_EQ(h.Threshold("::ffff:192.0.2.9"), 24);
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "::ffff:192.0.2.10", &in6.sin6_addr);
  zcal_key key;
  ASSERT_EQ(zcal_key_from_sockaddr(reinterpret_cast<sockaddr*>(&in6), sizeof in6, &key), 0);
  EXPECT_EQ(key.family, ZCAL_FAMILY_IPV4);
}

TEST(Lookup, PeerThenLoopbackThenInterfaceThenDefault) {
  SegmentImage image(8);
  image.Add(Peer("10.0.0.0", 8, kZc, 1));
  image.Add(MakeEntry(ZCAL_SCOPE_LOOPBACK, kZc, ZCAL_VERDICT_THRESHOLD, 2));
  image.Add(Interface("eth0", kZc, 3));
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 4));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_EQ(h.Threshold("10.0.0.1", "eth0"), 1);
  EXPECT_EQ(h.Threshold("127.0.0.1"), 2);
  EXPECT_EQ(h.Threshold("127.5.5.5"), 2);
  EXPECT_EQ(h.Threshold("::1"), 2);
  EXPECT_EQ(h.Threshold(nullptr, "lo"), 2);
  EXPECT_EQ(h.Threshold("192.0.2.1", "eth0"), 3);
  EXPECT_EQ(h.Threshold(nullptr, "eth0"), 3);
  EXPECT_EQ(h.Threshold("192.0.2.1", "eth1"), 4);
  EXPECT_EQ(h.Threshold("192.0.2.1"), 4);

  zcal_key key;
  zcal_result r;
  ASSERT_EQ(zcal_key_from_string("10.0.0.1", nullptr, &key), 0);
  ASSERT_EQ(zcal_lookup(h.get(), &key, kZc, &r), 0);
  EXPECT_EQ(r.scope, ZCAL_SCOPE_PEER);
  EXPECT_EQ(r.prefix_len, 8);
  ASSERT_EQ(zcal_key_from_string("::1", nullptr, &key), 0);
  ASSERT_EQ(zcal_lookup(h.get(), &key, kZc, &r), 0);
  EXPECT_EQ(r.scope, ZCAL_SCOPE_LOOPBACK);
}

TEST(Lookup, MethodsAreSeparate) {
  SegmentImage image(4);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 10));
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, ZCAL_METHOD_URING_SEND_ZC,
                      ZCAL_VERDICT_THRESHOLD, 20));
  image.Add(Peer("10.0.0.0", 8, ZCAL_METHOD_URING_SEND_ZC, 30));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_EQ(h.Threshold("10.0.0.1", nullptr, kZc), 10);
  EXPECT_EQ(h.Threshold("10.0.0.1", nullptr, ZCAL_METHOD_URING_SEND_ZC), 30);
  EXPECT_EQ(h.Threshold("10.0.0.1", nullptr, ZCAL_METHOD_URING_SEND_ZC_FIXED), -ENODATA);
  EXPECT_EQ(h.Threshold("10.0.0.1", nullptr, 200), -ENODATA);
}

TEST(Lookup, DuplicateEntriesFirstWins) {
  SegmentImage image(4);
  image.Add(Peer("10.0.0.0", 8, kZc, 1));
  image.Add(Peer("10.0.0.0", 8, kZc, 2));
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 3));
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 4));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_EQ(h.Threshold("10.0.0.1"), 1);
  EXPECT_EQ(h.Threshold("11.0.0.1"), 3);
}

TEST(Lookup, UnknownScopesAreSkipped) {
  SegmentImage image(4);
  zcal_shm_entry future = MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 9);
  future.scope = 42;
  image.Add(future);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 5));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  EXPECT_EQ(h.Threshold("10.0.0.1"), 5);
}

TEST(Lookup, AMinorOneSegmentReadsLikeAMinorZeroOneWhereItMust) {
  // Written by a minor-1 agent: a discard entry (no traffic's scope), an
  // estimated host default, the host-default source in the header, and an
  // entry of a scope a later minor may add. Minor-0 reader code paths skip
  // what they do not know; this reader answers every lookup from the
  // routed scopes only, and still lists every entry for tools.
  SegmentImage image(4);
  image.header().abi_minor = 1;
  image.header().host_default_source = ZCAL_HOST_DEFAULT_ESTIMATED;
  image.Add(MakeEntry(ZCAL_SCOPE_DISCARD, kZc, ZCAL_VERDICT_THRESHOLD, 1));
  zcal_shm_entry later = MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_ALWAYS, std::nullopt);
  later.scope = 200;
  image.Add(later);
  zcal_shm_entry estimate = MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 24576);
  estimate.entry_flags |= ZCAL_ENTRY_ESTIMATED;
  image.Add(estimate);
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  zcal_key key;
  zcal_key_from_string("198.18.0.9", nullptr, &key);
  zcal_result r;
  ASSERT_EQ(zcal_lookup(h.get(), &key, kZc, &r), 0);
  EXPECT_EQ(r.scope, ZCAL_SCOPE_HOST_DEFAULT);
  EXPECT_EQ(r.threshold_bytes, 24576u);
  EXPECT_EQ(r.estimated, 1);
  // A loopback peer has no loopback entry: the discard entry is not one.
  zcal_key_from_string("127.0.0.1", nullptr, &key);
  ASSERT_EQ(zcal_lookup(h.get(), &key, kZc, &r), 0);
  EXPECT_EQ(r.scope, ZCAL_SCOPE_HOST_DEFAULT);
  zcal_info info;
  ASSERT_EQ(zcal_read_info(h.get(), &info), 0);
  EXPECT_EQ(info.abi_minor, 1);
  EXPECT_EQ(info.host_default_source, static_cast<std::uint32_t>(ZCAL_HOST_DEFAULT_ESTIMATED));
  EXPECT_EQ(info.count, 3u);
  zcal_shm_entry e;
  ASSERT_EQ(zcal_read_entry(h.get(), 0, &e), 0);
  EXPECT_EQ(e.scope, ZCAL_SCOPE_DISCARD);
  EXPECT_STREQ(zcal_scope_name(e.scope), "discard");
  EXPECT_STREQ(zcal_scope_name(200), "unknown");
}

TEST(Lookup, AMinorZeroSegmentHasNoHostDefaultSource) {
  SegmentImage image(2);
  image.header().abi_minor = 0;
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 4096));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  zcal_info info;
  ASSERT_EQ(zcal_read_info(h.get(), &info), 0);
  EXPECT_EQ(info.host_default_source, static_cast<std::uint32_t>(ZCAL_HOST_DEFAULT_UNKNOWN));
  zcal_key key;
  zcal_key_from_string("10.0.0.1", nullptr, &key);
  zcal_result r;
  ASSERT_EQ(zcal_lookup(h.get(), &key, kZc, &r), 0);
  EXPECT_EQ(r.estimated, 0);
}

TEST(Lookup, ResultCarriesVerdictAgesConfidenceAndStaleFlag) {
  SegmentImage image(2);
  const std::uint64_t now = NowNs();
  zcal_shm_entry e = MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 16384);
  e.measured_at_ns = now - 10 * kSecond;
  e.confidence_ppm = 750000;
  e.reason = ZCAL_REASON_NONE;
  e.fingerprint = 0xfeedu;
  image.Add(e);
  image.header().heartbeat_ns = now - 3 * kSecond;
  image.header().flags = ZCAL_FLAG_STALE;
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  zcal_key key;
  zcal_key_from_string("10.0.0.1", nullptr, &key);
  zcal_result r;
  // libzcal reads its own clock (the coarse wall clock) once per lookup:
  // read here just before and after, it bounds the ages exactly, however
  // long the test took since the stamps were made.
  const std::uint64_t read_before = zcal_internal_now_ns();
  ASSERT_EQ(zcal_lookup(h.get(), &key, kZc, &r), 0);
  const std::uint64_t read_after = zcal_internal_now_ns();
  EXPECT_EQ(r.verdict, ZCAL_VERDICT_THRESHOLD);
  EXPECT_EQ(r.threshold_bytes, 16384u);
  EXPECT_EQ(r.zerocopy_from_bytes, 16384u);
  EXPECT_EQ(r.has_threshold, 1);
  EXPECT_EQ(r.confidence_ppm, 750000u);
  EXPECT_EQ(r.fingerprint, 0xfeedu);
  EXPECT_EQ(r.stale, 1);
  EXPECT_EQ(r.method, kZc);
  EXPECT_EQ(r.measured_at_ns, e.measured_at_ns);
  EXPECT_GE(r.age_ns, read_before - e.measured_at_ns);
  EXPECT_LE(r.age_ns, read_after - e.measured_at_ns);
  EXPECT_GE(r.heartbeat_age_ns, read_before - image.header().heartbeat_ns);
  EXPECT_LE(r.heartbeat_age_ns, read_after - image.header().heartbeat_ns);
  // Both ages from the one reading: they differ by what the stamps do.
  EXPECT_EQ(r.age_ns - r.heartbeat_age_ns, 7 * kSecond);
  EXPECT_EQ(r.generation, zcal_generation(h.get()));
}

TEST(Lookup, VerdictsMapToSizeDecisions) {
  SegmentImage image(4);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, ZCAL_METHOD_MSG_ZEROCOPY,
                      ZCAL_VERDICT_THRESHOLD, 8192));
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, ZCAL_METHOD_URING_SEND_ZC,
                      ZCAL_VERDICT_ALWAYS, 4096));
  zcal_shm_entry never = MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, ZCAL_METHOD_URING_SEND_ZC_FIXED,
                                   ZCAL_VERDICT_NEVER, std::nullopt);
  never.reason = ZCAL_REASON_KERNEL_COPIED;
  image.Add(never);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, ZCAL_METHOD_URING_SEND,
                      ZCAL_VERDICT_INCONCLUSIVE, std::nullopt));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  zcal_key key;
  zcal_key_from_string("10.0.0.1", nullptr, &key);
  auto decide = [&](std::uint8_t method, std::uint64_t size, int fallback) {
    return zcal_should_zerocopy(h.get(), &key, method, size, 0, fallback);
  };
  EXPECT_EQ(decide(ZCAL_METHOD_MSG_ZEROCOPY, 8191, 1), 0);
  EXPECT_EQ(decide(ZCAL_METHOD_MSG_ZEROCOPY, 8192, 0), 1);
  EXPECT_EQ(decide(ZCAL_METHOD_URING_SEND_ZC, 1, 0), 1);
  EXPECT_EQ(decide(ZCAL_METHOD_URING_SEND_ZC_FIXED, 1u << 30, 1), 0);
  EXPECT_EQ(decide(ZCAL_METHOD_URING_SEND, 1u << 20, 1), 1);  // inconclusive
  EXPECT_EQ(decide(ZCAL_METHOD_URING_SEND, 1u << 20, 0), 0);
  zcal_result r;
  ASSERT_EQ(zcal_lookup(h.get(), &key, ZCAL_METHOD_URING_SEND_ZC_FIXED, &r), 0);
  EXPECT_EQ(r.reason, ZCAL_REASON_KERNEL_COPIED);
  EXPECT_EQ(r.zerocopy_from_bytes, UINT64_MAX);
  EXPECT_EQ(r.has_threshold, 0);
}

TEST(Lookup, ShouldZerocopyFallsBackWithoutAgentEntryOrFreshData) {
  zcal_key key;
  zcal_key_from_string("10.0.0.1", nullptr, &key);
  EXPECT_EQ(zcal_should_zerocopy(nullptr, &key, kZc, 1 << 20, 0, 1), 1);
  EXPECT_EQ(zcal_should_zerocopy(nullptr, &key, kZc, 1 << 20, 0, 0), 0);

  SegmentImage image(2);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_NEVER, std::nullopt));
  image.header().heartbeat_ns = NowNs() - 30 * kSecond;
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  // No entry for this method.
  EXPECT_EQ(zcal_should_zerocopy(h.get(), &key, ZCAL_METHOD_URING_SEND_ZC, 1, 0, 1), 1);
  // The agent's heartbeat is 30 s old, stamped on libzcal's own clock just
  // before each decision (the handle reads the header live), so that the
  // time the test takes never adds to it: a 10 s bound falls back, 60 s not.
  const auto decide_beaten_30s_ago = [&](std::uint64_t max_age_ns) {
    image.header().heartbeat_ns = zcal_internal_now_ns() - 30 * kSecond;
    return zcal_should_zerocopy(h.get(), &key, kZc, 1 << 20, max_age_ns, 1);
  };
  EXPECT_EQ(decide_beaten_30s_ago(10 * kSecond), 1);
  EXPECT_EQ(decide_beaten_30s_ago(60 * kSecond), 0);
  EXPECT_EQ(decide_beaten_30s_ago(0), 0);
}

TEST(Lookup, StampsAheadOfTheClockAreAgeZeroSoAStepBackKeepsTheTable) {
  // The wall clock stepped back by an hour after the agent's last heartbeat
  // and measurement: both lie in the reader's future until the next one.
  SegmentImage image(2);
  const std::uint64_t ahead = NowNs() + 3600 * kSecond;
  zcal_shm_entry e = MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_ALWAYS, 4096);
  e.measured_at_ns = ahead;
  image.Add(e);
  image.header().heartbeat_ns = ahead;
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  zcal_key key;
  zcal_key_from_string("10.0.0.1", nullptr, &key);
  zcal_result r;
  ASSERT_EQ(zcal_lookup(h.get(), &key, kZc, &r), 0);
  EXPECT_EQ(r.age_ns, 0u) << "not negative, not wrapped to centuries";
  EXPECT_EQ(r.heartbeat_age_ns, 0u);
  // A reader with max_age keeps using the table, not its fallback.
  EXPECT_EQ(zcal_should_zerocopy(h.get(), &key, kZc, 1 << 20, 1 * kSecond, 0), 1);
}

TEST(Lookup, GenerationChangeBringsTheNewTable) {
  SegmentImage image(4);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 100));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  const std::uint64_t before = zcal_generation(h.get());
  EXPECT_EQ(h.Threshold("10.0.0.1"), 100);
  image.entry(0).threshold_bytes = 200;
  EXPECT_EQ(h.Threshold("10.0.0.1"), 100) << "same generation: the copy is kept";
  image.header().seq += 2;
  image.header().generation += 1;
  EXPECT_NE(zcal_generation(h.get()), before);
  EXPECT_EQ(h.Threshold("10.0.0.1"), 200);
}

TEST(Lookup, BusyWriterIsEagainUntilItMoves) {
  SegmentImage image(4);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 100));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  image.header().seq = 1;
  image.header().generation += 1;
  EXPECT_EQ(h.Threshold("10.0.0.1"), -EAGAIN);
  EXPECT_EQ(h.Threshold("10.0.0.1"), -EAGAIN);
  image.header().seq = 2;
  EXPECT_EQ(h.Threshold("10.0.0.1"), 100);
}

TEST(Lookup, CorruptionAfterOpenIsEproto) {
  SegmentImage image(2);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 100));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  image.header().count = 3;
  image.header().generation += 1;
  EXPECT_EQ(h.Threshold("10.0.0.1"), -EPROTO);
  image.header().count = 1;
  EXPECT_EQ(h.Threshold("10.0.0.1"), 100);
}

TEST(Lookup, ReadInfoAndEntriesDescribeTheCopy) {
  SegmentImage image(3);
  image.Add(Peer("10.0.0.0", 8, kZc, 1));
  image.Add(Interface("eth0", kZc, 2));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  zcal_info info;
  ASSERT_EQ(zcal_read_info(h.get(), &info), 0);
  EXPECT_EQ(info.abi_major, ZCAL_ABI_MAJOR);
  EXPECT_EQ(info.capacity, 3u);
  EXPECT_EQ(info.count, 2u);
  EXPECT_EQ(info.agent_pid, 4242u);
  EXPECT_EQ(info.generation, 1000u);
  EXPECT_EQ(info.segment_bytes, image.size());
  zcal_shm_entry e;
  ASSERT_EQ(zcal_read_entry(h.get(), 1, &e), 0);
  EXPECT_STREQ(e.interface, "eth0");
  EXPECT_EQ(zcal_read_entry(h.get(), 2, &e), -EINVAL);
}

TEST(Keys, RejectMalformedInput) {
  zcal_key key;
  EXPECT_EQ(zcal_key_from_string(nullptr, nullptr, &key), -EINVAL);
  EXPECT_EQ(zcal_key_from_string("10.0.0", nullptr, &key), -EINVAL);
  EXPECT_EQ(zcal_key_from_string("host.example", nullptr, &key), -EINVAL);
  EXPECT_EQ(zcal_key_from_string(nullptr, "", &key), -EINVAL);
  EXPECT_EQ(zcal_key_from_string(nullptr, "sixteen-bytes-xx", &key), -EINVAL);
  EXPECT_EQ(zcal_key_from_string(nullptr, "fifteen-bytes-x", &key), 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  EXPECT_EQ(zcal_key_from_sockaddr(reinterpret_cast<sockaddr*>(&un), sizeof un, &key),
            -EAFNOSUPPORT);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  EXPECT_EQ(zcal_key_from_sockaddr(reinterpret_cast<sockaddr*>(&in), 4, &key), -EINVAL);
}

TEST(Names, CoverEveryCodeAndUnknownOnes) {
  EXPECT_STREQ(zcal_method_name(ZCAL_METHOD_URING_SEND_ZC_FIXED), "uring_send_zc_fixed");
  EXPECT_STREQ(zcal_verdict_name(ZCAL_VERDICT_INCONCLUSIVE), "inconclusive");
  EXPECT_STREQ(zcal_reason_name(ZCAL_REASON_KERNEL_COPIED), "kernel_copied");
  EXPECT_STREQ(zcal_reason_name(ZCAL_REASON_NONE), "");
  EXPECT_STREQ(zcal_scope_name(ZCAL_SCOPE_INTERFACE), "interface");
  EXPECT_STREQ(zcal_method_name(99), "unknown");
  EXPECT_STREQ(zcal_verdict_name(99), "unknown");
  EXPECT_STREQ(zcal_reason_name(99), "unknown");
  EXPECT_STREQ(zcal_scope_name(99), "unknown");
}

// A TCP connection over loopback, both ends.
struct LoopbackPair {
  int listener = -1, client = -1, server = -1;
  LoopbackPair() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    client = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(client, reinterpret_cast<sockaddr*>(&addr), len) != 0) return;
    server = accept(listener, nullptr, nullptr);
  }
  ~LoopbackPair() {
    for (int fd : {listener, client, server})
      if (fd >= 0) close(fd);
  }
};

TEST(LookupFd, UsesTheConnectedPeerAddress) {
  SegmentImage image(2);
  image.Add(MakeEntry(ZCAL_SCOPE_LOOPBACK, kZc, ZCAL_VERDICT_THRESHOLD, 4096));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  LoopbackPair pair;
  ASSERT_GE(pair.server, 0);
  zcal_result r;
  ASSERT_EQ(zcal_lookup_fd(h.get(), pair.client, kZc, &r), 0);
  EXPECT_EQ(r.scope, ZCAL_SCOPE_LOOPBACK);
  EXPECT_EQ(r.threshold_bytes, 4096u);
}

TEST(LookupFd, ReportsSocketsItCannotKey) {
  SegmentImage image(1);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_ALWAYS, std::nullopt));
  Attached h(image);
  ASSERT_EQ(h.rc(), 0);
  zcal_result r;
  const int unconnected = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(zcal_lookup_fd(h.get(), unconnected, kZc, &r), -ENOTCONN);
  close(unconnected);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  EXPECT_EQ(zcal_lookup_fd(h.get(), pair[0], kZc, &r), -EAFNOSUPPORT);
  close(pair[0]);
  close(pair[1]);
  int pipes[2];
  ASSERT_EQ(pipe(pipes), 0);
  EXPECT_EQ(zcal_lookup_fd(h.get(), pipes[0], kZc, &r), -ENOTSOCK);
  close(pipes[0]);
  close(pipes[1]);
  EXPECT_EQ(zcal_lookup_fd(h.get(), -1, kZc, &r), -EBADF);
}

TEST(Wrapper, OpenFailureCarriesErrorAndDetail) {
  ScopedName name("wrapper-missing");
  auto segment = zcal::client::Segment::Open(name.c_str());
  ASSERT_FALSE(segment);
  EXPECT_EQ(segment.error(), -ENOENT);
  EXPECT_NE(segment.detail().find(name.str()), std::string::npos);
}

TEST(Wrapper, SegmentLooksUpAndMoves) {
  ScopedName name("wrapper");
  SegmentImage image(2);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 512));
  image.WriteTo(name);
  auto opened = zcal::client::Segment::Open(name.c_str());
  ASSERT_TRUE(opened) << opened.detail();
  zcal::client::Segment segment = std::move(*opened);
  EXPECT_EQ(opened->get(), nullptr);
  auto key = zcal::client::MakeKey("10.0.0.1");
  ASSERT_TRUE(key);
  auto result = segment.Lookup(*key, zcal::client::Method::kMsgZerocopy);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->threshold_bytes, 512u);
  auto none = segment.Lookup(*key, zcal::client::Method::kUringSendZc);
  EXPECT_EQ(none.error(), -ENODATA);
  EXPECT_TRUE(segment.ShouldZerocopy(*key, zcal::client::Method::kMsgZerocopy, 512,
                                     std::chrono::seconds(60), false));
  auto info = segment.Info();
  ASSERT_TRUE(info);
  EXPECT_EQ(info->count, 1u);
  EXPECT_TRUE(segment.Entry(0));
  EXPECT_FALSE(segment.Entry(1));
}

TEST(Wrapper, CachedDecisionFollowsPublishesAndFallsBack) {
  ScopedName name("wrapper-cache");
  SegmentImage image(2);
  image.Add(MakeEntry(ZCAL_SCOPE_HOST_DEFAULT, kZc, ZCAL_VERDICT_THRESHOLD, 1000));
  image.WriteTo(name);
  auto segment = zcal::client::Segment::Open(name.c_str());
  ASSERT_TRUE(segment);
  zcal::client::CachedDecision decision(*zcal::client::MakeKey("10.0.0.1"),
                                        zcal::client::Method::kMsgZerocopy, true);
  EXPECT_TRUE(decision.ShouldZerocopy(nullptr, 1));  // no agent: fallback
  EXPECT_FALSE(decision.ShouldZerocopy(&*segment, 999));
  EXPECT_TRUE(decision.ShouldZerocopy(&*segment, 1000));

  // Publish (in place, as the writer would) a never verdict.
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  void* map = mmap(nullptr, image.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(map, MAP_FAILED);
  auto* hdr = static_cast<zcal_shm_header*>(map);
  auto* entry = reinterpret_cast<zcal_shm_entry*>(hdr + 1);
  hdr->seq = 1;
  entry->verdict = ZCAL_VERDICT_NEVER;
  hdr->generation += 1;
  hdr->seq = 2;
  EXPECT_FALSE(decision.ShouldZerocopy(&*segment, 1 << 20));
  EXPECT_FALSE(decision.estimated());
  // The host default becomes an estimate: the wrapper says so.
  hdr->seq = 3;
  entry->verdict = ZCAL_VERDICT_THRESHOLD;
  entry->entry_flags |= ZCAL_ENTRY_ESTIMATED;
  hdr->generation += 1;
  hdr->seq = 4;
  EXPECT_TRUE(decision.ShouldZerocopy(&*segment, 1000));
  EXPECT_TRUE(decision.estimated());
  ASSERT_TRUE(decision.answer());
  EXPECT_EQ(decision.answer()->scope, ZCAL_SCOPE_HOST_DEFAULT);
  EXPECT_FALSE(decision.contradicted());
  // The applications contradict it (ABI 1.3): copy, and the wrapper says so.
  hdr->seq = 5;
  entry->entry_flags |= ZCAL_ENTRY_CONTRADICTED;
  hdr->generation += 1;
  hdr->seq = 6;
  EXPECT_FALSE(decision.ShouldZerocopy(&*segment, 1 << 20));
  EXPECT_TRUE(decision.contradicted());
  EXPECT_EQ(decision.answer()->verdict, ZCAL_VERDICT_THRESHOLD);
  munmap(map, image.size());
}

}  // namespace

}  // namespace reader_lookup_test
