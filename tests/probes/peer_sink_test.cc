// The peer sink against real clients on loopback: a served session, and
// every refusal the issue names, each counted with its outcome.
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "zcal/probes/peer/peer_client.h"
#include "zcal/probes/peer/peer_protocol.h"
#include "zcal/probes/peer/peer_sink.h"
#include "zcal/probes/send/connect.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes::peer_sink_test {
namespace {

using namespace std::chrono_literals;
using peer::AnswerCode;

peer::PeerKey Key(const std::string& id, std::uint8_t fill) {
  return peer::PeerKey{id, std::vector<std::uint8_t>(32, fill)};
}

peer::KeyRing Ring(std::vector<peer::PeerKey> keys) {
  peer::KeyRing ring;
  ring.keys = std::move(keys);
  return ring;
}

PeerSinkOptions KeyedOptions() {
  PeerSinkOptions o;
  o.keys = Ring({Key("old", 1), Key("new", 2)});
  return o;
}

std::unique_ptr<PeerSink> StartSink(const PeerSinkOptions& options) {
  auto sink = PeerSink::Start(options);
  EXPECT_TRUE(sink) << (sink ? "" : sink.error().message);
  return sink ? std::move(*sink) : nullptr;
}

PeerSessionRequest ShortRequest() {
  PeerSessionRequest r;
  r.duration = 5000ms;
  return r;
}

bool WaitOutcome(const PeerSink& sink, SinkOutcome o, std::uint64_t n,
                 std::chrono::milliseconds timeout = 3000ms) {
  return sink.WaitFor([&](const PeerSinkStats& s) { return s.Count(o) >= n; }, timeout);
}

common::HostPort Endpoint(int fd, bool local) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  if (local) {
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  } else {
    ::getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  }
  return *common::FromSocketAddress(reinterpret_cast<const sockaddr*>(&storage), length);
}

// Reads up to `n` bytes within `timeout`; fewer when the sink closes.
std::vector<std::uint8_t> ReadUpTo(int fd, std::size_t n, std::chrono::milliseconds timeout) {
  std::vector<std::uint8_t> out;
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    std::array<std::uint8_t, 256> chunk{};
    const ssize_t got = ::recv(fd, chunk.data(), std::min(chunk.size(), n - out.size()), 0);
    if (got <= 0) break;
    out.insert(out.end(), chunk.begin(), chunk.begin() + got);
  }
  return out;
}

void Send(int fd, std::span<const std::uint8_t> bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
}

// A raw client: the control connection and its greeting.
struct RawClient {
  common::UniqueFd fd;
  peer::Greeting greeting;

  static RawClient Connect(const PeerSink& sink) {
    RawClient c;
    auto fd = ConnectTcp(sink.endpoint());
    EXPECT_TRUE(fd);
    c.fd = std::move(*fd);
    const auto bytes = ReadUpTo(c.fd.get(), peer::kGreetingBytes, 2000ms);
    auto greeting = peer::DecodeGreeting(bytes);
    EXPECT_TRUE(greeting) << (greeting ? "" : greeting.error().message);
    if (greeting) c.greeting = *greeting;
    return c;
  }

  // A hello signed for this connection with `key`.
  peer::Hello Hello(const peer::PeerKey& key, std::uint16_t version = peer::kProtocolVersion) const {
    peer::Hello h;
    h.key_id = key.id;
    h.request.version = version;
    h.request.mode = peer::kModeTcpStream;
    h.request.duration_ms = 5000;
    h.request.max_bytes = 1 << 20;
    h.mac = peer::ComputeMac(key.secret, greeting.nonce, Endpoint(fd.get(), true),
                             Endpoint(fd.get(), false), h.request);
    return h;
  }

  std::optional<peer::Answer> Answer() const {
    const auto bytes = ReadUpTo(fd.get(), peer::kAnswerBytes, 3000ms);
    auto answer = peer::DecodeAnswer(bytes);
    if (!answer) return std::nullopt;
    return *answer;
  }
};

std::size_t ThreadCount() {
  std::size_t n = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(dir)) n += e->d_name[0] != '.' ? 1 : 0;
    ::closedir(dir);
  }
  return n;
}

TEST(PeerSink, ServesAnAuthenticatedSessionAndCountsItsBytes) {
  auto sink = StartSink(KeyedOptions());
  ASSERT_TRUE(sink);
  // Either key of the ring is accepted (rotation: both active at once).
  std::uint64_t served = 0;
  for (const auto& key : {Key("old", 1), Key("new", 2)}) {
    const std::uint64_t before = sink->Stats().bytes_received;
    auto session = PeerSession::Open(sink->endpoint(), key, ShortRequest(), 2000ms);
    ASSERT_TRUE(session) << session.error().message;
    EXPECT_EQ(session->granted_duration(), 5000ms);
    auto data = session->OpenData(2000ms);
    ASSERT_TRUE(data) << data.error().message;
    std::vector<std::uint8_t> payload(256 * 1024, 7);
    Send(data->get(), payload);
    data->Reset();
    ASSERT_TRUE(sink->WaitFor(
        [&](const PeerSinkStats& s) { return s.bytes_received >= before + payload.size(); }, 3000ms));
    session->Close();
    ASSERT_TRUE(WaitOutcome(*sink, SinkOutcome::kServed, ++served));
  }
  const PeerSinkStats s = sink->Stats();
  EXPECT_EQ(s.bytes_received, 2U * 256 * 1024);
  EXPECT_EQ(s.max_sessions_seen, 1U);
  EXPECT_EQ(s.sessions_open, 0U);
}

TEST(PeerSink, ASourceOutsideAllowIsClosedBeforeAByteIsRead) {
  PeerSinkOptions options = KeyedOptions();
  options.allow = {*common::ParsePrefix("198.18.0.0/15")};
  auto sink = StartSink(options);
  ASSERT_TRUE(sink);
  auto fd = ConnectTcp(sink->endpoint());
  ASSERT_TRUE(fd);
  const std::array<std::uint8_t, 4> junk{1, 2, 3, 4};
  ::send(fd->get(), junk.data(), junk.size(), MSG_NOSIGNAL);
  // No greeting: the connection is closed unread.
  EXPECT_TRUE(ReadUpTo(fd->get(), 1, 2000ms).empty());
  ASSERT_TRUE(WaitOutcome(*sink, SinkOutcome::kNotAllowed, 1));
  const PeerSinkStats s = sink->Stats();
  EXPECT_EQ(s.connections_accepted, 0U);
  EXPECT_EQ(s.bytes_received, 0U);
  auto session = PeerSession::Open(sink->endpoint(), Key("old", 1), ShortRequest(), 2000ms);
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code, Errc::kFailed) << session.error().message;
}

TEST(PeerSink, AWrongKeyOrAnUnknownIdOrNoKeyIsRefusedAsBadAuth) {
  auto sink = StartSink(KeyedOptions());
  ASSERT_TRUE(sink);
  for (const auto& key : {std::optional(Key("old", 9)), std::optional(Key("other", 1)),
                          std::optional<peer::PeerKey>()}) {
    auto session = PeerSession::Open(sink->endpoint(), key, ShortRequest(), 2000ms);
    ASSERT_FALSE(session);
    EXPECT_EQ(session.error().code, Errc::kPermission);
    EXPECT_NE(session.error().message.find("bad_auth"), std::string::npos)
        << session.error().message;
  }
  ASSERT_TRUE(WaitOutcome(*sink, SinkOutcome::kAuthFailed, 3));
  EXPECT_EQ(sink->Stats().Count(SinkOutcome::kServed), 0U);
}

TEST(PeerSink, AReplayedHelloDoesNotVerify) {
  auto sink = StartSink(KeyedOptions());
  ASSERT_TRUE(sink);
  RawClient first = RawClient::Connect(*sink);
  const auto hello = peer::Encode(first.Hello(Key("old", 1)));
  Send(first.fd.get(), hello);
  auto answer = first.Answer();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->code, AnswerCode::kAccept);
  first.fd.Reset();
  // The same bytes on a new connection: a new nonce, so the MAC is wrong.
  RawClient second = RawClient::Connect(*sink);
  EXPECT_NE(second.greeting.nonce, first.greeting.nonce);
  Send(second.fd.get(), hello);
  answer = second.Answer();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->code, AnswerCode::kBadAuth);
  ASSERT_TRUE(WaitOutcome(*sink, SinkOutcome::kAuthFailed, 1));
  ASSERT_TRUE(WaitOutcome(*sink, SinkOutcome::kServed, 1));
}

TEST(PeerSink, AnUnknownVersionIsAnsweredUnsupported) {
  auto sink = StartSink(KeyedOptions());
  ASSERT_TRUE(sink);
  RawClient c = RawClient::Connect(*sink);
  Send(c.fd.get(), peer::Encode(c.Hello(Key("old", 1), 7)));
  auto answer = c.Answer();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->code, AnswerCode::kUnsupportedVersion);
  EXPECT_TRUE(WaitOutcome(*sink, SinkOutcome::kUnsupportedVersion, 1));
}

TEST(PeerSink, MalformedTruncatedAndOversizeFramesAreProtocolErrors) {
  PeerSinkOptions options = KeyedOptions();
  options.handshake_deadline = 500ms;
  auto sink = StartSink(options);
  ASSERT_TRUE(sink);
  {  // an unknown magic: refused at its 8th byte
    RawClient c = RawClient::Connect(*sink);
    const std::string junk = "GET / HTTP/1.1\r\n\r\n";
    Send(c.fd.get(), std::span(reinterpret_cast<const std::uint8_t*>(junk.data()), junk.size()));
    auto answer = c.Answer();
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->code, AnswerCode::kProtocolError);
  }
  {  // a hello with a field out of range (duration 0)
    RawClient c = RawClient::Connect(*sink);
    auto bytes = peer::Encode(c.Hello(Key("old", 1)));
    std::fill_n(bytes.begin() + 32, 4, 0);
    Send(c.fd.get(), bytes);
    auto answer = c.Answer();
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->code, AnswerCode::kProtocolError);
  }
  {  // truncated, then the client goes away
    RawClient c = RawClient::Connect(*sink);
    const auto bytes = peer::Encode(c.Hello(Key("old", 1)));
    Send(c.fd.get(), std::span(bytes).first(50));
  }
  ASSERT_TRUE(WaitOutcome(*sink, SinkOutcome::kProtocolError, 3));
  {  // truncated and stalled: the handshake deadline closes it
    RawClient c = RawClient::Connect(*sink);
    const auto bytes = peer::Encode(c.Hello(Key("old", 1)));
    Send(c.fd.get(), std::span(bytes).first(50));
    EXPECT_TRUE(ReadUpTo(c.fd.get(), 1, 2000ms).empty());
    EXPECT_TRUE(WaitOutcome(*sink, SinkOutcome::kTimeout, 1));
  }
  {  // oversize: a valid hello and more bytes; the extra ends the session
    RawClient c = RawClient::Connect(*sink);
    auto bytes = peer::Encode(c.Hello(Key("old", 1)));
    std::vector<std::uint8_t> longer(bytes.begin(), bytes.end());
    longer.resize(longer.size() + 100, 0xAB);
    Send(c.fd.get(), longer);
    ASSERT_TRUE(WaitOutcome(*sink, SinkOutcome::kProtocolError, 4));
    EXPECT_EQ(sink->Stats().sessions_open, 0U);
  }
  EXPECT_EQ(sink->Stats().Count(SinkOutcome::kServed), 0U);
}

TEST(PeerSink, AOneBytePerIntervalClientIsClosedAtTheHandshakeDeadline) {
  PeerSinkOptions options = KeyedOptions();
  options.handshake_deadline = 1000ms;
  auto sink = StartSink(options);
  ASSERT_TRUE(sink);
  RawClient c = RawClient::Connect(*sink);
  const auto bytes = peer::Encode(c.Hello(Key("old", 1)));
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    if (::send(c.fd.get(), bytes.data() + sent, 1, MSG_NOSIGNAL) != 1) break;
    ++sent;
    pollfd p{c.fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 200) > 0) break;  // closed by the sink
  }
  // Closed while the client still had bytes to send, after more than the
  // first of them (each waited 200 ms for a close), and counted as the
  // deadline's: a byte every 200 ms did not keep the slot.
  EXPECT_LT(sent, bytes.size());
  EXPECT_GE(sent, 2U);
  EXPECT_TRUE(WaitOutcome(*sink, SinkOutcome::kTimeout, 1));
  EXPECT_EQ(sink->Stats().Count(SinkOutcome::kProtocolError), 0U);
}

TEST(PeerSink, FiveHundredConnectionsStayBoundedAndALegitimateProbeFollows) {
  PeerSinkOptions options = KeyedOptions();
  options.handshake_deadline = 1000ms;
  auto sink = StartSink(options);
  ASSERT_TRUE(sink);
  const std::size_t threads = ThreadCount();
  std::vector<common::UniqueFd> flood;
  for (int i = 0; i < 500; ++i) {
    auto fd = ConnectTcp(sink->endpoint(), 2000);
    if (fd) flood.push_back(std::move(*fd));
  }
  EXPECT_GE(flood.size(), 400U);
  // Under pressure: the sink has refused connections for one of its limits.
  ASSERT_TRUE(sink->WaitFor(
      [](const PeerSinkStats& s) { return s.Count(SinkOutcome::kLimit) > 0; }, 5000ms));
  const PeerSinkStats during = sink->Stats();
  EXPECT_LE(during.connections_open, options.max_connections);
  EXPECT_EQ(ThreadCount(), threads);
  // Held open and silent, they all meet the handshake deadline or the
  // connection limit. Not all at once: with the accept queue (128) full the
  // kernel drops a client's last ACK while the client believes itself
  // connected, and the connection reaches accept() only after a SYN-ACK
  // retransmission (1 s, then 2 s later), so the count is awaited whole.
  const std::size_t expected = flood.size();
  const bool all_ended = sink->WaitFor(
      [expected](const PeerSinkStats& s) {
        return s.connections_open == 0 &&
               s.Count(SinkOutcome::kLimit) + s.Count(SinkOutcome::kTimeout) >= expected;
      },
      12000ms);
  const PeerSinkStats after = sink->Stats();
  ASSERT_TRUE(all_ended) << "open " << after.connections_open << ", limit "
                         << after.Count(SinkOutcome::kLimit) << ", timeout "
                         << after.Count(SinkOutcome::kTimeout) << ", flood " << expected;
  EXPECT_EQ(after.Count(SinkOutcome::kServed), 0U);
  EXPECT_EQ(after.Count(SinkOutcome::kProtocolError), 0U);
  flood.clear();
  auto session = PeerSession::Open(sink->endpoint(), Key("new", 2), ShortRequest(), 2000ms);
  ASSERT_TRUE(session) << session.error().message;
  auto data = session->OpenData(2000ms);
  EXPECT_TRUE(data) << (data ? "" : data.error().message);
}

TEST(PeerSink, ADataConnectionWithAWrongTokenIsClosedUnread) {
  auto sink = StartSink(KeyedOptions());
  ASSERT_TRUE(sink);
  auto session = PeerSession::Open(sink->endpoint(), Key("old", 1), ShortRequest(), 2000ms);
  ASSERT_TRUE(session);
  RawClient data = RawClient::Connect(*sink);
  peer::Token wrong{};
  wrong.fill(0x5A);
  Send(data.fd.get(), peer::EncodeDataOpen(wrong));
  std::vector<std::uint8_t> payload(64 * 1024, 1);
  ::send(data.fd.get(), payload.data(), payload.size(), MSG_NOSIGNAL);
  ASSERT_TRUE(WaitOutcome(*sink, SinkOutcome::kAuthFailed, 1));
  EXPECT_EQ(sink->Stats().bytes_received, 0U);
  EXPECT_EQ(sink->Stats().sessions_open, 1U);  // the real session goes on
}

TEST(PeerSink, ASecondSessionIsBusyAndSoIsOneWhileTheHostProbes) {
  auto sink = StartSink(KeyedOptions());
  ASSERT_TRUE(sink);
  auto first = PeerSession::Open(sink->endpoint(), Key("old", 1), ShortRequest(), 2000ms);
  ASSERT_TRUE(first);
  EXPECT_FALSE(sink->TryBeginLocalProbe());  // a session is open
  auto second = PeerSession::Open(sink->endpoint(), Key("old", 1), ShortRequest(), 2000ms);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Errc::kBusy);
  first->Close();
  ASSERT_TRUE(WaitOutcome(*sink, SinkOutcome::kServed, 1));
  ASSERT_TRUE(sink->TryBeginLocalProbe());
  auto third = PeerSession::Open(sink->endpoint(), Key("old", 1), ShortRequest(), 2000ms);
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, Errc::kBusy);
  sink->EndLocalProbe();
  auto fourth = PeerSession::Open(sink->endpoint(), Key("old", 1), ShortRequest(), 2000ms);
  EXPECT_TRUE(fourth);
  EXPECT_EQ(sink->Stats().Count(SinkOutcome::kBusy), 2U);
  EXPECT_EQ(sink->Stats().max_sessions_seen, 1U);
}

TEST(PeerSink, RateCapIsAskedForAndEnforced) {
  PeerSinkOptions options = KeyedOptions();
  options.max_bytes_per_second = 1 << 20;
  auto sink = StartSink(options);
  ASSERT_TRUE(sink);
  auto unlimited = PeerSession::Open(sink->endpoint(), Key("old", 1), ShortRequest(), 2000ms);
  ASSERT_FALSE(unlimited);
  EXPECT_EQ(unlimited.error().code, Errc::kInvalidArgument) << unlimited.error().message;
  PeerSessionRequest capped = ShortRequest();
  capped.max_bytes_per_second = 1 << 20;
  auto session = PeerSession::Open(sink->endpoint(), Key("old", 1), capped, 2000ms);
  ASSERT_TRUE(session) << session.error().message;
  auto data = session->OpenData(2000ms);
  ASSERT_TRUE(data);
  // 8 MiB at once: far above 1 MiB/s plus a second's burst.
  std::vector<std::uint8_t> payload(8 << 20, 3);
  ::send(data->get(), payload.data(), payload.size(), MSG_NOSIGNAL);
  EXPECT_TRUE(WaitOutcome(*sink, SinkOutcome::kLimit, 2));  // over_limit, then the rate
}

TEST(PeerSink, ASessionThatOverstaysItsGrantIsEnded) {
  PeerSinkOptions options = KeyedOptions();
  options.max_session_seconds = std::chrono::seconds(1);
  auto sink = StartSink(options);
  ASSERT_TRUE(sink);
  auto session = PeerSession::Open(sink->endpoint(), Key("old", 1), ShortRequest(), 2000ms);
  ASSERT_TRUE(session);
  EXPECT_EQ(session->granted_duration(), 1000ms);  // at most the sink's limit
  EXPECT_TRUE(WaitOutcome(*sink, SinkOutcome::kLimit, 1, 6000ms));
  EXPECT_EQ(sink->Stats().sessions_open, 0U);
}

TEST(PeerSink, AnIdleDataConnectionTimesOut) {
  PeerSinkOptions options = KeyedOptions();
  options.idle_timeout = 200ms;
  auto sink = StartSink(options);
  ASSERT_TRUE(sink);
  auto session = PeerSession::Open(sink->endpoint(), Key("old", 1), ShortRequest(), 2000ms);
  ASSERT_TRUE(session);
  auto data = session->OpenData(2000ms);
  ASSERT_TRUE(data);
  EXPECT_TRUE(WaitOutcome(*sink, SinkOutcome::kTimeout, 1));

  // Bytes far below half the read buffer wake nobody; they are counted all
  // the same before the silent connection is closed.
  auto quiet = session->OpenData(2000ms);
  ASSERT_TRUE(quiet);
  Send(quiet->get(), std::vector<std::uint8_t>(1000, 5));
  EXPECT_TRUE(WaitOutcome(*sink, SinkOutcome::kTimeout, 2));
  EXPECT_EQ(sink->Stats().bytes_received, 1000U);
}

TEST(PeerSink, OptionsAreCheckedBeforeAnythingListens) {
  PeerSinkOptions open;
  open.listen = *common::ParseHostPort("0.0.0.0:0", common::PortRule::kZeroAllowed);
  auto refused = PeerSink::Start(open);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("key_file: required"), std::string::npos)
      << refused.error().message;
  open.auth_none = true;
  auto none = PeerSink::Start(open);
  ASSERT_TRUE(none) << none.error().message;
  // auth none: a client without a key is served.
  auto local = *common::ParseHostPort("127.0.0.1:" + std::to_string((*none)->endpoint().port));
  auto session = PeerSession::Open(local, std::nullopt, ShortRequest(), 2000ms);
  EXPECT_TRUE(session) << (session ? "" : session.error().message);

  PeerSinkOptions bad = KeyedOptions();
  bad.max_sessions = 0;
  EXPECT_FALSE(PeerSink::Start(bad));
  bad = KeyedOptions();
  bad.allow = {*common::ParsePrefix("2001:db8::/32")};
  auto never = PeerSink::Start(bad);
  ASSERT_FALSE(never);
  EXPECT_NE(never.error().message.find("can never match"), std::string::npos);
}

}  // namespace
}  // namespace zcal::probes::peer_sink_test
