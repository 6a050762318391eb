// The client side of the peer handshake (docs/peer-protocol.md): a session
// granted by another host's sink, and the data connections its probes send
// on. Used by calibrations of peer paths.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "zcal/common/address.h"
#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"
#include "zcal/probes/peer/peer_keys.h"
#include "zcal/probes/peer/peer_protocol.h"
#include "zcal/probes/types/peer_failure.h"

namespace zcal::probes {

/// The key id a client without a key presents (with a zero MAC); only a sink
/// started with `auth: none` accepts it.
inline constexpr std::string_view kNoKeyId = "none";

struct PeerSessionRequest {
  std::chrono::milliseconds duration{10000};  ///< 1 ms..600 s
  std::uint64_t max_bytes = peer::kMaxSessionBytes;
  std::uint64_t max_bytes_per_second = 0;  ///< the client's own cap; 0 = none
};

/// One granted session: the control connection stays open while it lasts.
/// Movable, not copyable; not thread-safe.
class PeerSession {
 public:
  /// Connects to `sink`, answers its greeting with `key` (nullopt: no key)
  /// and waits for the answer, all within `timeout`. Errors name the sink;
  /// branch on their `failure`, the Errc is its broad class:
  ///  - kBusy (Errc::kBusy): it serves another session, or its host probes;
  ///  - kAuthFailed (kPermission): bad_auth, a wrong or unknown key, or a
  ///    key is required;
  ///  - kOverLimit: the request exceeds its byte rate (kInvalidArgument), or
  ///    this source or all sources hold as many connections as it allows
  ///    (kBusy), the limit named in the message;
  ///  - kUnsupportedVersion (kUnsupported): no protocol version in common;
  ///  - kProtocolError (kParse): a malformed frame, or not a zcal sink;
  ///  - kUnreachable (kFailed): refused, no route, or closed before the
  ///    answer; kTimeout (kFailed): `timeout` passed first;
  ///  - kInvalidRequest (kInvalidArgument): `request` out of range, not sent;
  ///  - kLocalError (kFailed): a local socket or poll call failed.
  static Result<PeerSession, PeerError> Open(const common::HostPort& sink,
                                             const std::optional<peer::PeerKey>& key,
                                             const PeerSessionRequest& request,
                                             std::chrono::milliseconds timeout);

  /// A data connection of this session (blocking, TCP_NODELAY): connect,
  /// the sink's greeting, then the DataOpen frame with the token. Failures:
  /// kVanished (the sink no longer takes connections: refused, reset or
  /// closed), kTimeout, kOverLimit (a connection limit of the sink),
  /// kProtocolError, kLocalError.
  Result<common::UniqueFd, PeerError> OpenData(std::chrono::milliseconds timeout) const;

  std::chrono::milliseconds granted_duration() const { return granted_duration_; }
  std::uint64_t granted_bytes() const { return granted_bytes_; }
  const common::HostPort& sink() const { return sink_; }

  /// Whether the sink still holds the session: kVanished (Errc::kFailed,
  /// naming the sink) when it closed or reset the control connection (its
  /// process ended, or it ended the session over a limit), else success.
  /// The sink never writes on the control connection after its answer, so
  /// anything readable there is its end. Does not block.
  Result<void, PeerError> StillOpen() const;

  /// Ends the session: closes the control connection. Idempotent.
  void Close() { control_.Reset(); }

 private:
  PeerSession() = default;
  common::HostPort sink_;
  common::UniqueFd control_;
  peer::Token token_{};
  std::chrono::milliseconds granted_duration_{0};
  std::uint64_t granted_bytes_ = 0;
  bool had_key_ = false;
};

}  // namespace zcal::probes
