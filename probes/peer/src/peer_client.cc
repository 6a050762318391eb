#include "zcal/probes/peer/peer_client.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "zcal/common/errno_text.h"
#include "zcal/probes/send/connect.h"
#include "zcal/probes/sink/sink_core.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes {

namespace {

using Clock = std::chrono::steady_clock;
using peer::AnswerCode;

int MsLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 600'000));
}

// What the end of a connection means depends on when it ends: before a
// session is granted the sink was never reached; after, it went away.
struct Stage {
  std::string where;
  PeerFailure closed;
};

// Reads exactly out.size() bytes by `deadline`.
Result<void, PeerError> ReadExact(int fd, std::span<std::uint8_t> out, Clock::time_point deadline,
                                  const Stage& stage, std::size_t had = 0) {
  std::size_t have = 0;
  while (have < out.size()) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, MsLeft(deadline));
    if (ready == 0) {
      return FailPeer(PeerFailure::kTimeout, Errc::kFailed, stage.where + ": no answer in time");
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      return FailPeer(PeerFailure::kLocalError, Errc::kFailed,
                      stage.where + ": poll failed with " + common::ErrnoText(errno));
    }
    const ssize_t got = ::recv(fd, out.data() + have, out.size() - have, MSG_DONTWAIT);
    if (got > 0) {
      have += static_cast<std::size_t>(got);
    } else if (got == 0) {
      return FailPeer(stage.closed, Errc::kFailed,
                      stage.where + ": the sink closed the connection after " +
                          std::to_string(had + have) + " bytes");
    } else if (errno != EAGAIN && errno != EINTR) {
      return FailPeer(stage.closed, Errc::kFailed,
                      stage.where + ": recv failed with " + common::ErrnoText(errno));
    }
  }
  return {};
}

Result<void, PeerError> WriteAll(int fd, std::span<const std::uint8_t> bytes, const Stage& stage) {
  const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (sent != static_cast<ssize_t>(bytes.size())) {
    return FailPeer(stage.closed, Errc::kFailed,
                    stage.where + ": send failed with " + common::ErrnoText(errno));
  }
  return {};
}

// A connect that failed when its time was up timed out; one that failed
// sooner was refused or had no route (ConnectTcp's own classes).
Result<common::UniqueFd, PeerError> Connect(const common::HostPort& sink,
                                            std::chrono::milliseconds timeout,
                                            PeerFailure refused) {
  const auto deadline = Clock::now() + timeout;
  auto fd = ConnectTcp(sink, static_cast<int>(timeout.count()));
  if (fd) return std::move(*fd);
  const PeerFailure kind = Clock::now() >= deadline ? PeerFailure::kTimeout : refused;
  return FailPeer(kind, fd.error().code, fd.error().message);
}

PeerError Refusal(AnswerCode code, const std::string& where, bool had_key) {
  const bool at_accept =
      code == AnswerCode::kSourceLimit || code == AnswerCode::kConnectionLimit;
  const std::string said = where + (at_accept ? " refused the connection: "
                                              : " refused the session: ") +
                           std::string(AnswerCodeName(code));
  switch (code) {
    case AnswerCode::kBusy:
      return {PeerFailure::kBusy, Errc::kBusy,
              said + " (it serves another probe or its host is probing; try later or another "
                     "peer)"};
    case AnswerCode::kBadAuth:
    case AnswerCode::kNotAllowed:
      return {PeerFailure::kAuthFailed, Errc::kPermission,
              said + (had_key ? " (the sink does not accept this key: check that its key file "
                                "has the same id and secret)"
                              : " (the sink requires a key: pass --key-file, or the peers' "
                                "key_file)")};
    case AnswerCode::kUnsupportedVersion:
      return {PeerFailure::kUnsupportedVersion, Errc::kUnsupported,
              said + " (no protocol version in common)"};
    case AnswerCode::kOverLimit:
      return {PeerFailure::kOverLimit, Errc::kInvalidArgument,
              said + " (the request exceeds the byte rate the sink grants, its "
                     "sink.max_bytes_per_second (zcal sink --max-bytes-per-second); set a "
                     "bytes-per-second limit at or below it)"};
    case AnswerCode::kSourceLimit:
      return {PeerFailure::kOverLimit, Errc::kBusy,
              said + " (this host already holds as many connections to the sink as its "
                     "sink.max_connections_per_source (zcal sink "
                     "--max-connections-per-source) allows; close other clients of this sink "
                     "here, or raise that limit on the sink)"};
    case AnswerCode::kConnectionLimit:
      return {PeerFailure::kOverLimit, Errc::kBusy,
              said + " (the sink holds as many connections in all as its "
                     "sink.max_connections (zcal sink --max-connections) allows; try later, "
                     "or raise that limit on the sink)"};
    case AnswerCode::kProtocolError:
    case AnswerCode::kAccept:
      break;
  }
  return {PeerFailure::kProtocolError, Errc::kParse, said};
}

// The greeting every connection to a sink starts with, or the refusal a sink
// sends in its place when a connection limit refuses the connection.
Result<peer::Greeting, PeerError> ReadGreeting(int fd, Clock::time_point deadline,
                                               const Stage& stage, bool had_key) {
  std::array<std::uint8_t, std::max(peer::kGreetingBytes, peer::kAnswerBytes)> frame{};
  const auto magic = std::span(frame).first(peer::kMagicBytes);
  if (auto ok = ReadExact(fd, magic, deadline, stage); !ok) return tl::unexpected(ok.error());
  const std::size_t size = peer::SinkFrameBytes(magic);
  if (size == 0) {
    return FailPeer(PeerFailure::kProtocolError, Errc::kParse,
                    stage.where + ": not a zcal peer sink (greeting frame: wrong magic)");
  }
  const auto whole = std::span(frame).first(size);
  if (auto ok = ReadExact(fd, whole.subspan(peer::kMagicBytes), deadline, stage,
                          peer::kMagicBytes);
      !ok) {
    return tl::unexpected(ok.error());
  }
  if (size == peer::kAnswerBytes) {
    auto answer = peer::DecodeAnswer(whole);
    if (!answer || answer->code == AnswerCode::kAccept) {
      return FailPeer(PeerFailure::kProtocolError, Errc::kParse,
                      stage.where + ": an answer in place of the greeting that refuses nothing" +
                          (answer ? std::string() : " (" + answer.error().message + ")"));
    }
    return tl::unexpected(Refusal(answer->code, stage.where, had_key));
  }
  auto greeting = peer::DecodeGreeting(whole);
  if (!greeting) {
    return FailPeer(PeerFailure::kProtocolError, Errc::kParse,
                    stage.where + ": not a zcal peer sink (" + greeting.error().message + ")");
  }
  return *greeting;
}

// The hello that asks for `request` at `version` over the control
// connection `fd`; with a key, signed over the greeting's nonce and both
// addresses as this side sees them (the sink computes the same from its
// side of the connection).
peer::Hello HelloFor(const std::optional<peer::PeerKey>& key, const peer::Greeting& greeting,
                     std::uint16_t version, const PeerSessionRequest& request, int fd) {
  peer::Hello hello;
  hello.key_id = key ? key->id : std::string(kNoKeyId);
  hello.request.version = version;
  hello.request.mode = peer::kModeTcpStream;
  hello.request.duration_ms = static_cast<std::uint32_t>(request.duration.count());
  hello.request.max_bytes = request.max_bytes;
  hello.request.max_bytes_per_second = request.max_bytes_per_second;
  if (key) {
    hello.mac = peer::ComputeMac(key->secret, greeting.nonce, SocketEndpoint(fd, true),
                                 SocketEndpoint(fd, false), hello.request);
  }
  return hello;
}

}  // namespace

Result<PeerSession, PeerError> PeerSession::Open(const common::HostPort& sink,
                                                 const std::optional<peer::PeerKey>& key,
                                                 const PeerSessionRequest& request,
                                                 std::chrono::milliseconds timeout) {
  const Stage stage{"sink " + common::ToString(sink), PeerFailure::kUnreachable};
  const std::string& where = stage.where;
  const auto ms = request.duration.count();
  if (ms < 1 || ms > peer::kMaxSessionMs || request.max_bytes < 1 ||
      request.max_bytes > peer::kMaxSessionBytes) {
    return FailPeer(PeerFailure::kInvalidRequest, Errc::kInvalidArgument,
                    where + ": a session lasts 1 ms to 600 s and carries 1 byte to 2^40");
  }
  const auto deadline = Clock::now() + timeout;
  auto control = Connect(sink, timeout, PeerFailure::kUnreachable);
  if (!control) return tl::unexpected(control.error());
  auto greeting = ReadGreeting(control->get(), deadline, stage, key.has_value());
  if (!greeting) return tl::unexpected(greeting.error());
  const std::uint16_t version = peer::NegotiateVersion(*greeting, peer::kProtocolVersion);
  if (version == 0 || (greeting->modes & peer::kModeTcpStream) == 0) {
    return FailPeer(PeerFailure::kUnsupportedVersion, Errc::kUnsupported,
                    where + " speaks protocol versions " + std::to_string(greeting->min_version) +
                        " to " + std::to_string(greeting->version) + ", this zcal speaks " +
                        std::to_string(peer::kProtocolVersion));
  }
  const peer::Hello hello = HelloFor(key, *greeting, version, request, control->get());
  if (auto ok = WriteAll(control->get(), peer::Encode(hello), stage); !ok) {
    return tl::unexpected(ok.error());
  }
  std::array<std::uint8_t, peer::kAnswerBytes> frame{};
  if (auto ok = ReadExact(control->get(), frame, deadline, stage); !ok) {
    return tl::unexpected(ok.error());
  }
  auto answer = peer::DecodeAnswer(frame);
  if (!answer) {
    return FailPeer(PeerFailure::kProtocolError, Errc::kParse,
                    where + ": a malformed answer (" + answer.error().message + ")");
  }
  if (answer->code != AnswerCode::kAccept) {
    return tl::unexpected(Refusal(answer->code, where, key.has_value()));
  }
  PeerSession session;
  session.sink_ = sink;
  session.control_ = std::move(*control);
  session.token_ = answer->token;
  session.granted_duration_ = std::chrono::milliseconds(answer->granted_ms);
  session.granted_bytes_ = answer->granted_bytes;
  session.had_key_ = key.has_value();
  return session;
}

Result<void, PeerError> PeerSession::StillOpen() const {
  const std::string where = "sink " + common::ToString(sink_);
  if (!control_) {
    return FailPeer(PeerFailure::kVanished, Errc::kFailed, where + ": the session is closed");
  }
  pollfd p{control_.get(), POLLIN | POLLRDHUP, 0};
  const int ready = ::poll(&p, 1, 0);
  if (ready < 0) {
    return FailPeer(PeerFailure::kLocalError, Errc::kFailed,
                    where + ": poll: " + common::ErrnoText(errno));
  }
  if (ready == 0) return {};
  int error = 0;
  socklen_t length = sizeof error;
  ::getsockopt(control_.get(), SOL_SOCKET, SO_ERROR, &error, &length);
  return FailPeer(PeerFailure::kVanished, Errc::kFailed,
                  where + " ended the session before its client did" +
                      (error != 0 ? " (" + common::ErrnoText(error) + ")"
                                  : std::string(" (it closed the control connection)")));
}

Result<common::UniqueFd, PeerError> PeerSession::OpenData(std::chrono::milliseconds timeout) const {
  const Stage stage{"sink " + common::ToString(sink_) + " (data)", PeerFailure::kVanished};
  if (!control_) {
    return FailPeer(PeerFailure::kVanished, Errc::kFailed, stage.where + ": the session is closed");
  }
  const auto deadline = Clock::now() + timeout;
  auto fd = Connect(sink_, timeout, PeerFailure::kVanished);
  if (!fd) return tl::unexpected(fd.error());
  if (auto greeting = ReadGreeting(fd->get(), deadline, stage, had_key_); !greeting) {
    return tl::unexpected(greeting.error());
  }
  if (auto ok = WriteAll(fd->get(), peer::EncodeDataOpen(token_), stage); !ok) {
    return tl::unexpected(ok.error());
  }
  return fd;
}

}  // namespace zcal::probes
