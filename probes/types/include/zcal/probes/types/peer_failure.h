// How a peer session, or a probe inside one, failed: a kind set where the
// failure is known (the sink's answer, a deadline, a connection the sink
// closed), so that callers branch on it and never read a message for it.
// The agent maps each kind to its outcome label (zcal_peer_probes_total).
//
// One enum for both sides of a peer path: the session's open and handshake
// (peer_client.h) and the probes of a calibration on it (calibration.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "zcal/common/result.h"

namespace zcal::probes {

enum class PeerFailure : std::uint8_t {
  // The sink's answers: it refused, and said why (peer::AnswerCode).
  kBusy = 0,            ///< it serves another session, or its host is probing
  kAuthFailed,          ///< it does not accept the key, or requires one
  kOverLimit,           ///< the request, or this source's connections, exceed its limits
  kUnsupportedVersion,  ///< no protocol version in common
  kProtocolError,       ///< a malformed frame, or not a zcal sink at all
  // What this side saw, without an answer.
  kUnreachable,         ///< no connection, or closed before the session was granted
  kTimeout,             ///< a deadline passed (connect, greeting, answer)
  kVanished,            ///< the sink ended a granted session, or stopped taking its connections
  // Failures of this side, before or beside the sink.
  kInvalidRequest,      ///< the caller's request is outside the protocol's ranges (not sent)
  kLocalError,          ///< this host could not do its part (socket, poll, random source)
};
inline constexpr std::size_t kPeerFailures = 10;

/// Stable names for logs and JSON: "busy", "auth_failed", ...
constexpr std::string_view PeerFailureName(PeerFailure failure) {
  switch (failure) {
    case PeerFailure::kBusy: return "busy";
    case PeerFailure::kAuthFailed: return "auth_failed";
    case PeerFailure::kOverLimit: return "over_limit";
    case PeerFailure::kUnsupportedVersion: return "unsupported_version";
    case PeerFailure::kProtocolError: return "protocol_error";
    case PeerFailure::kUnreachable: return "unreachable";
    case PeerFailure::kTimeout: return "timeout";
    case PeerFailure::kVanished: return "vanished";
    case PeerFailure::kInvalidRequest: return "invalid_request";
    case PeerFailure::kLocalError: return "local_error";
  }
  return "local_error";
}

/// An Error with the kind of peer failure it is. Derived from Error so that
/// code that only needs the class and the message (an exit code, a log
/// line) takes it as an Error; code that branches on the failure reads
/// `failure`, never `message`.
struct PeerError : Error {
  PeerFailure failure = PeerFailure::kLocalError;

  PeerError() = default;
  PeerError(PeerFailure kind, Errc errc, std::string text)
      : Error{errc, std::move(text)}, failure(kind) {}
};

/// Builds the unexpected value of a Result<T, PeerError>.
inline tl::unexpected<PeerError> FailPeer(PeerFailure kind, Errc errc, std::string message) {
  return tl::unexpected<PeerError>(PeerError(kind, errc, std::move(message)));
}

}  // namespace zcal::probes
