#include "zcal/probes/peer_client.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "zcal/common/errno_text.h"
#include "zcal/probes/target.h"

namespace zcal::probes {

namespace {

using Clock = std::chrono::steady_clock;
using peer::AnswerCode;

int MsLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 600'000));
}

// Reads exactly out.size() bytes by `deadline`.
Result<void> ReadExact(int fd, std::span<std::uint8_t> out, Clock::time_point deadline,
                       const std::string& where) {
  std::size_t have = 0;
  while (have < out.size()) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, MsLeft(deadline));
    if (ready == 0) return Fail(Errc::kFailed, where + ": no answer in time");
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Fail(Errc::kFailed, where + ": poll failed with " + common::ErrnoText(errno));
    }
    const ssize_t got = ::recv(fd, out.data() + have, out.size() - have, MSG_DONTWAIT);
    if (got > 0) {
      have += static_cast<std::size_t>(got);
    } else if (got == 0) {
      return Fail(Errc::kFailed, where + ": the sink closed the connection after " +
                                     std::to_string(have) + " bytes");
    } else if (errno != EAGAIN && errno != EINTR) {
      return Fail(Errc::kFailed, where + ": recv failed with " + common::ErrnoText(errno));
    }
  }
  return {};
}

Result<void> WriteAll(int fd, std::span<const std::uint8_t> bytes, const std::string& where) {
  const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (sent != static_cast<ssize_t>(bytes.size())) {
    return Fail(Errc::kFailed, where + ": send failed with " + common::ErrnoText(errno));
  }
  return {};
}

common::HostPort Endpoint(int fd, bool local) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  if (local) {
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  } else {
    ::getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  }
  auto endpoint = common::FromSocketAddress(reinterpret_cast<const sockaddr*>(&storage), length);
  return endpoint ? *endpoint : common::HostPort{};
}

// The greeting every connection to a sink starts with.
Result<peer::Greeting> ReadGreeting(int fd, Clock::time_point deadline, const std::string& where) {
  std::array<std::uint8_t, peer::kGreetingBytes> frame{};
  if (auto ok = ReadExact(fd, frame, deadline, where); !ok) return tl::unexpected(ok.error());
  auto greeting = peer::DecodeGreeting(frame);
  if (!greeting) {
    return Fail(Errc::kParse, where + ": not a zcal peer sink (" + greeting.error().message + ")");
  }
  return greeting;
}

Error Refusal(AnswerCode code, const std::string& where, bool had_key) {
  const std::string said = where + " refused the session: " + std::string(AnswerCodeName(code));
  switch (code) {
    case AnswerCode::kBusy:
      return {Errc::kBusy, said + " (it serves another probe or its host is probing; try later "
                                  "or another peer)"};
    case AnswerCode::kBadAuth:
    case AnswerCode::kNotAllowed:
      return {Errc::kPermission,
              said + (had_key ? " (the sink does not accept this key: check that its key file "
                                "has the same id and secret)"
                              : " (the sink requires a key: pass --key-file, or the peers' "
                                "key_file)")};
    case AnswerCode::kUnsupportedVersion:
      return {Errc::kUnsupported, said + " (no protocol version in common)"};
    case AnswerCode::kOverLimit:
      return {Errc::kInvalidArgument,
              said + " (the request exceeds what the sink grants: it caps the byte rate; set "
                     "a bytes-per-second limit at or below the sink's max_bytes_per_second)"};
    case AnswerCode::kProtocolError:
    case AnswerCode::kAccept:
      break;
  }
  return {Errc::kParse, said};
}

}  // namespace

Result<PeerSession> PeerSession::Open(const common::HostPort& sink,
                                      const std::optional<peer::PeerKey>& key,
                                      const PeerSessionRequest& request,
                                      std::chrono::milliseconds timeout) {
  const std::string where = "sink " + common::ToString(sink);
  const auto ms = request.duration.count();
  if (ms < 1 || ms > peer::kMaxSessionMs || request.max_bytes < 1 ||
      request.max_bytes > peer::kMaxSessionBytes) {
    return Fail(Errc::kInvalidArgument,
                where + ": a session lasts 1 ms to 600 s and carries 1 byte to 2^40");
  }
  const auto deadline = Clock::now() + timeout;
  auto control = ConnectTcp(sink, static_cast<int>(timeout.count()));
  if (!control) return tl::unexpected(control.error());
  auto greeting = ReadGreeting(control->get(), deadline, where);
  if (!greeting) return tl::unexpected(greeting.error());
  const std::uint16_t version = peer::NegotiateVersion(*greeting, peer::kProtocolVersion);
  if (version == 0 || (greeting->modes & peer::kModeTcpStream) == 0) {
    return Fail(Errc::kUnsupported,
                where + " speaks protocol versions " + std::to_string(greeting->min_version) +
                    " to " + std::to_string(greeting->version) + ", this zcal speaks " +
                    std::to_string(peer::kProtocolVersion));
  }
  peer::Hello hello;
  hello.key_id = key ? key->id : std::string(kNoKeyId);
  hello.request.version = version;
  hello.request.mode = peer::kModeTcpStream;
  hello.request.duration_ms = static_cast<std::uint32_t>(ms);
  hello.request.max_bytes = request.max_bytes;
  hello.request.max_bytes_per_second = request.max_bytes_per_second;
  if (key) {
    // Both addresses as this side sees them; the sink computes the same
    // from its side of the connection.
    hello.mac = peer::ComputeMac(key->secret, greeting->nonce, Endpoint(control->get(), true),
                                 Endpoint(control->get(), false), hello.request);
  }
  if (auto ok = WriteAll(control->get(), peer::Encode(hello), where); !ok) {
    return tl::unexpected(ok.error());
  }
  std::array<std::uint8_t, peer::kAnswerBytes> frame{};
  if (auto ok = ReadExact(control->get(), frame, deadline, where); !ok) {
    return tl::unexpected(ok.error());
  }
  auto answer = peer::DecodeAnswer(frame);
  if (!answer) {
    return Fail(Errc::kParse, where + ": a malformed answer (" + answer.error().message + ")");
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
  return session;
}

Result<void> PeerSession::StillOpen() const {
  const std::string where = "sink " + common::ToString(sink_);
  if (!control_) return Fail(Errc::kFailed, where + ": the session is closed");
  pollfd p{control_.get(), POLLIN | POLLRDHUP, 0};
  const int ready = ::poll(&p, 1, 0);
  if (ready < 0) return Fail(Errc::kFailed, where + ": poll: " + common::ErrnoText(errno));
  if (ready == 0) return {};
  int error = 0;
  socklen_t length = sizeof error;
  ::getsockopt(control_.get(), SOL_SOCKET, SO_ERROR, &error, &length);
  return Fail(Errc::kFailed,
              where + " ended the session before its client did" +
                  (error != 0 ? " (" + common::ErrnoText(error) + ")"
                              : std::string(" (it closed the control connection)")));
}

Result<common::UniqueFd> PeerSession::OpenData(std::chrono::milliseconds timeout) const {
  const std::string where = "sink " + common::ToString(sink_) + " (data)";
  if (!control_) return Fail(Errc::kFailed, where + ": the session is closed");
  const auto deadline = Clock::now() + timeout;
  auto fd = ConnectTcp(sink_, static_cast<int>(timeout.count()));
  if (!fd) return tl::unexpected(fd.error());
  if (auto greeting = ReadGreeting(fd->get(), deadline, where); !greeting) {
    return tl::unexpected(greeting.error());
  }
  if (auto ok = WriteAll(fd->get(), peer::EncodeDataOpen(token_), where); !ok) {
    return tl::unexpected(ok.error());
  }
  return fd;
}

}  // namespace zcal::probes
