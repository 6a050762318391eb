#include "zcal/probes/types/target.h"

#include <gtest/gtest.h>

#include "zcal/probes/send/connect.h"
#include "zcal/probes/sink/sink.h"

namespace zcal::probes::target_test {
namespace {

TEST(Target, ParsesLoopbackAndPeers) {
  const Result<Target> loopback = ParseTarget("loopback");
  ASSERT_TRUE(loopback);
  EXPECT_EQ(loopback->kind, TargetKind::kLoopback);
  EXPECT_EQ(ToString(*loopback), "loopback");
  const Result<Target> peer = ParseTarget("[::1]:7070");
  ASSERT_TRUE(peer) << peer.error().message;
  EXPECT_EQ(peer->kind, TargetKind::kPeer);
  EXPECT_EQ(ToString(*peer), "[::1]:7070");
  EXPECT_EQ(*ParseTarget(ToString(*peer)), *peer);
}

TEST(Target, ParsesTheDiscardPath) {
  const Result<Target> discard = ParseTarget("discard");
  ASSERT_TRUE(discard);
  EXPECT_EQ(discard->kind, TargetKind::kDiscard);
  EXPECT_EQ(ToString(*discard), "discard");
  EXPECT_EQ(*ParseTarget(ToString(*discard)), Target::Discard());
  const Result<Target> bad = ParseTarget("Discard");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("\"discard\""), std::string::npos) << bad.error().message;
}

TEST(Target, RejectsOtherTextNamingTheFormsAllowed) {
  for (const char* bad : {"", "Loopback", "10.0.0.2", "10.0.0.2:0", "host:80"}) {
    const Result<Target> parsed = ParseTarget(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().code, Errc::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find("loopback"), std::string::npos);
    EXPECT_NE(parsed.error().message.find(std::string("\"") + bad + "\""),
              std::string::npos)
        << parsed.error().message;
  }
}

TEST(Target, KindNamesReadBackAndNothingElseParses) {
  for (TargetKind kind : {TargetKind::kLoopback, TargetKind::kPeer, TargetKind::kDiscard}) {
    EXPECT_EQ(ParseTargetKind(TargetKindName(kind)), kind) << TargetKindName(kind);
  }
  EXPECT_EQ(TargetKindName(TargetKind::kDiscard), "discard");
  EXPECT_EQ(ParseTargetKind("Discard"), std::nullopt);
  EXPECT_EQ(ParseTargetKind(""), std::nullopt);
  EXPECT_EQ(ToString(Target::Discard()), "discard");
}

// Only the discard path's senders never wait for a receiver: there a
// numeric depth class is the stream plus a cost per send, measured with one
// round of its grid. A peer acknowledges; loopback's sink reads.
TEST(Target, OnlyTheDiscardPathsSendersNeverWait) {
  EXPECT_TRUE(TraitsOf(TargetKind::kDiscard).senders_never_wait);
  EXPECT_FALSE(TraitsOf(TargetKind::kPeer).senders_never_wait);
  EXPECT_FALSE(TraitsOf(TargetKind::kLoopback).senders_never_wait);
}

TEST(Target, ConnectsWithNoDelayToASink) {
  auto sink = Sink::Start({});
  ASSERT_TRUE(sink) << sink.error().message;
  auto fd = ConnectTcp((*sink)->endpoint());
  ASSERT_TRUE(fd) << fd.error().message;
  EXPECT_GE(fd->get(), 0);
}

TEST(Target, ConnectToAClosedPortSaysWhereAndWhat) {
  common::HostPort closed;
  {
    auto sink = Sink::Start({});
    ASSERT_TRUE(sink) << sink.error().message;
    closed = (*sink)->endpoint();
  }
  auto fd = ConnectTcp(closed);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, Errc::kFailed);
  EXPECT_NE(fd.error().message.find(common::ToString(closed)), std::string::npos);
  EXPECT_NE(fd.error().message.find("ECONNREFUSED"), std::string::npos) << fd.error().message;
  EXPECT_EQ(fd.error().failure, PeerFailure::kUnreachable);
}

}  // namespace
}  // namespace zcal::probes::target_test
