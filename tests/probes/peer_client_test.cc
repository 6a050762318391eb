// The peer client's typed failures: every way a session fails to open, or
// is lost after its grant, carries its PeerFailure, set where it is known,
// so that nobody reads the message to tell them apart. Real sinks on
// loopback for the sink's answers, bare sockets for what a sink never does.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "zcal/probes/peer/peer_client.h"
#include "zcal/probes/peer/peer_protocol.h"
#include "zcal/probes/peer/peer_sink.h"
#include "zcal/probes/send/connect.h"
#include "zcal/probes/types/peer_failure.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes::peer_client_test {
namespace {

using namespace std::chrono_literals;

peer::PeerKey Key(std::uint8_t fill) { return {"k1", std::vector<std::uint8_t>(32, fill)}; }

PeerSinkOptions Keyed() {
  PeerSinkOptions o;
  peer::KeyRing ring;
  ring.keys.push_back(Key(1));
  o.keys = ring;
  return o;
}

std::unique_ptr<PeerSink> Start(const PeerSinkOptions& options) {
  auto sink = PeerSink::Start(options);
  EXPECT_TRUE(sink) << (sink ? "" : sink.error().message);
  return sink ? std::move(*sink) : nullptr;
}

PeerSessionRequest Request() {
  PeerSessionRequest r;
  r.duration = 5000ms;
  return r;
}

// A listening socket on 127.0.0.1 that a test drives by hand.
struct BareListener {
  common::UniqueFd fd;
  common::HostPort endpoint;

  BareListener() : fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd.get(), 8), 0);
    socklen_t length = sizeof a;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &length);
    endpoint = {*common::ParseIpAddress("127.0.0.1"), ntohs(a.sin_port)};
  }
};

PeerFailure FailureOf(const Result<PeerSession, PeerError>& opened) {
  EXPECT_FALSE(opened);
  return opened ? PeerFailure::kLocalError : opened.error().failure;
}

TEST(PeerClient, EachAnswerOfTheSinkIsItsOwnFailure) {
  auto sink = Start(Keyed());
  ASSERT_TRUE(sink);
  EXPECT_EQ(FailureOf(PeerSession::Open(sink->endpoint(), Key(9), Request(), 2s)),
            PeerFailure::kAuthFailed);
  EXPECT_EQ(FailureOf(PeerSession::Open(sink->endpoint(), std::nullopt, Request(), 2s)),
            PeerFailure::kAuthFailed);
  auto held = PeerSession::Open(sink->endpoint(), Key(1), Request(), 2s);
  ASSERT_TRUE(held) << held.error().message;
  const auto busy = PeerSession::Open(sink->endpoint(), Key(1), Request(), 2s);
  EXPECT_EQ(FailureOf(busy), PeerFailure::kBusy);
  EXPECT_EQ(busy.error().code, Errc::kBusy);

  PeerSinkOptions capped = Keyed();
  capped.max_bytes_per_second = 1 << 20;
  auto rate_sink = Start(capped);
  ASSERT_TRUE(rate_sink);
  const auto over = PeerSession::Open(rate_sink->endpoint(), Key(1), Request(), 2s);
  EXPECT_EQ(FailureOf(over), PeerFailure::kOverLimit);
  EXPECT_EQ(over.error().code, Errc::kInvalidArgument) << "the class stays as it was";
  EXPECT_NE(over.error().message.find("over_limit (the request exceeds the byte rate the sink "
                                      "grants, its sink.max_bytes_per_second (zcal sink "
                                      "--max-bytes-per-second)"),
            std::string::npos)
      << over.error().message;
}

TEST(PeerClient, ARefusalAtAcceptNamesTheLimitThatRefused) {
  PeerSinkOptions options = Keyed();
  options.max_connections_per_source = 4;
  options.handshake_deadline = 10s;
  auto sink = Start(options);
  ASSERT_TRUE(sink);
  std::vector<common::UniqueFd> held;
  for (int i = 0; i < 4; ++i) {
    auto fd = ConnectTcp(sink->endpoint());
    ASSERT_TRUE(fd) << fd.error().message;
    held.push_back(std::move(*fd));
  }
  ASSERT_TRUE(sink->WaitFor([](const PeerSinkStats& s) { return s.connections_open == 4; }, 5s));
  const auto refused = PeerSession::Open(sink->endpoint(), Key(1), Request(), 2s);
  EXPECT_EQ(FailureOf(refused), PeerFailure::kOverLimit);
  EXPECT_NE(refused.error().message.find("source_limit"), std::string::npos)
      << refused.error().message;
  // Both spellings of the setting: the sink may be an agent's or `zcal sink`.
  EXPECT_NE(refused.error().message.find("sink.max_connections_per_source (zcal sink "
                                         "--max-connections-per-source)"),
            std::string::npos)
      << refused.error().message;
  ASSERT_TRUE(sink->WaitFor([](const PeerSinkStats& s) { return s.refused_per_source == 1; }, 5s));
  EXPECT_EQ(sink->Stats().Count(SinkOutcome::kLimit), 1U);
}

TEST(PeerClient, ARefusalForAllConnectionsNamesThatLimit) {
  PeerSinkOptions options = Keyed();
  options.max_sessions = 1;
  options.max_connections = 4;
  options.max_connections_per_source = 8;  // past the total: the total refuses
  options.handshake_deadline = 10s;
  auto sink = Start(options);
  ASSERT_TRUE(sink);
  std::vector<common::UniqueFd> held;
  for (int i = 0; i < 4; ++i) {
    auto fd = ConnectTcp(sink->endpoint());
    ASSERT_TRUE(fd) << fd.error().message;
    held.push_back(std::move(*fd));
  }
  ASSERT_TRUE(sink->WaitFor([](const PeerSinkStats& s) { return s.connections_open == 4; }, 5s));
  const auto refused = PeerSession::Open(sink->endpoint(), Key(1), Request(), 2s);
  EXPECT_EQ(FailureOf(refused), PeerFailure::kOverLimit);
  EXPECT_NE(refused.error().message.find(
                "refused the connection: connection_limit (the sink holds as many connections "
                "in all as its sink.max_connections (zcal sink --max-connections) allows"),
            std::string::npos)
      << refused.error().message;
}

TEST(PeerClient, WhatNoSinkSaysIsUnreachableTimeoutOrProtocolError) {
  {  // Accepted by the kernel, never greeted: the deadline passes.
    BareListener silent;
    EXPECT_EQ(FailureOf(PeerSession::Open(silent.endpoint, Key(1), Request(), 300ms)),
              PeerFailure::kTimeout);
  }
  {  // Accepted and closed at once: refused before any word of the protocol.
    BareListener closing;
    std::thread closer([&] { ::close(::accept(closing.fd.get(), nullptr, nullptr)); });
    const auto closed = PeerSession::Open(closing.endpoint, Key(1), Request(), 2s);
    closer.join();
    EXPECT_EQ(FailureOf(closed), PeerFailure::kUnreachable);
  }
  // Something else answers: not a zcal sink.
  BareListener listener;
  std::thread talker([&] {
    const int fd = ::accept(listener.fd.get(), nullptr, nullptr);
    const std::string banner = "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n";
    ::send(fd, banner.data(), banner.size(), MSG_NOSIGNAL);
    ::close(fd);
  });
  const auto other = PeerSession::Open(listener.endpoint, Key(1), Request(), 2s);
  talker.join();
  EXPECT_EQ(FailureOf(other), PeerFailure::kProtocolError);

  // Nothing listens: refused.
  const common::HostPort nobody = listener.endpoint;
  listener.fd.Reset();
  EXPECT_EQ(FailureOf(PeerSession::Open(nobody, Key(1), Request(), 2s)),
            PeerFailure::kUnreachable);
}

TEST(PeerClient, ASinkWithoutACommonVersionIsUnsupported) {
  BareListener listener;
  std::thread greeter([&] {
    const int fd = ::accept(listener.fd.get(), nullptr, nullptr);
    peer::Greeting greeting;
    greeting.min_version = 2;
    greeting.version = 3;
    const auto frame = peer::Encode(greeting);
    ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
    std::array<char, 128> drain{};
    while (::recv(fd, drain.data(), drain.size(), 0) > 0) {
    }
    ::close(fd);
  });
  const auto opened = PeerSession::Open(listener.endpoint, Key(1), Request(), 2s);
  EXPECT_EQ(FailureOf(opened), PeerFailure::kUnsupportedVersion);
  greeter.join();
}

TEST(PeerClient, ARequestOutOfRangeIsInvalidAndNeverSent) {
  auto sink = Start(Keyed());
  ASSERT_TRUE(sink);
  PeerSessionRequest none = Request();
  none.duration = 0ms;
  const auto opened = PeerSession::Open(sink->endpoint(), Key(1), none, 2s);
  EXPECT_EQ(FailureOf(opened), PeerFailure::kInvalidRequest);
  EXPECT_EQ(sink->Stats().connections_accepted, 0U);
}

TEST(PeerClient, ASessionWhoseSinkWentAwayHasVanished) {
  auto sink = Start(Keyed());
  ASSERT_TRUE(sink);
  auto session = PeerSession::Open(sink->endpoint(), Key(1), Request(), 2s);
  ASSERT_TRUE(session) << session.error().message;
  ASSERT_TRUE(session->StillOpen());
  sink->Stop();
  const auto open = session->StillOpen();
  ASSERT_FALSE(open);
  EXPECT_EQ(open.error().failure, PeerFailure::kVanished);
  const auto data = session->OpenData(1000ms);
  ASSERT_FALSE(data);
  EXPECT_EQ(data.error().failure, PeerFailure::kVanished) << data.error().message;
  EXPECT_EQ(data.error().code, Errc::kFailed);
}

TEST(PeerFailure, NamesAreStableAndDistinct) {
  std::vector<std::string_view> names;
  for (std::size_t i = 0; i < kPeerFailures; ++i) {
    names.push_back(PeerFailureName(static_cast<PeerFailure>(i)));
  }
  EXPECT_EQ(names, (std::vector<std::string_view>{
                       "busy", "auth_failed", "over_limit", "unsupported_version",
                       "protocol_error", "unreachable", "timeout", "vanished",
                       "invalid_request", "local_error"}));
}

}  // namespace
}  // namespace zcal::probes::peer_client_test
