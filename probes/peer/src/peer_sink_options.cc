// The peer sink's options and outcome names: what Start() checks before
// anything listens.
#include <optional>
#include <string>
#include <utility>

#include "zcal/probes/peer/peer_protocol.h"
#include "zcal/probes/peer/peer_sink.h"

namespace zcal::probes {

namespace {

template <typename Duration>
bool InRange(Duration value, Duration low, Duration high) {
  return value >= low && value <= high;
}

}  // namespace

std::string_view SinkOutcomeName(SinkOutcome outcome) {
  switch (outcome) {
    case SinkOutcome::kServed: return "served";
    case SinkOutcome::kBusy: return "busy";
    case SinkOutcome::kNotAllowed: return "not_allowed";
    case SinkOutcome::kAuthFailed: return "auth_failed";
    case SinkOutcome::kProtocolError: return "protocol_error";
    case SinkOutcome::kTimeout: return "timeout";
    case SinkOutcome::kLimit: return "limit";
    case SinkOutcome::kUnsupportedVersion: return "unsupported_version";
  }
  return "unknown";
}

namespace {

// "field: what is allowed", with the field and its sentence apart.
FieldError Problem(std::string field, std::string allowed,
                   std::optional<std::size_t> index = std::nullopt) {
  return FieldError(Errc::kInvalidArgument, field + ": " + allowed, field, allowed, index);
}

// The first thing wrong with `o`; nullopt for none.
std::optional<FieldError> FirstProblem(const PeerSinkOptions& o) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  if (o.max_sessions < 1 || o.max_sessions > 64) return Problem("max_sessions", "1 to 64");
  if (o.max_connections < 4 || o.max_connections > 4096) {
    return Problem("max_connections", "4 to 4096");
  }
  if (o.max_connections_per_source < 4 || o.max_connections_per_source > 4096) {
    return Problem("max_connections_per_source",
                   "4 to 4096 (a session holds its control connection and a probe's data "
                   "connection, and the next probe's may open before the sink has seen the "
                   "last one close)");
  }
  if (o.max_connections < o.max_sessions * 2) {
    return Problem("max_connections",
                   "at least twice max_sessions (each session holds a control and a data "
                   "connection)");
  }
  if (!InRange(o.max_session_seconds, seconds(1), seconds(peer::kMaxSessionMs / 1000))) {
    return Problem("max_session_seconds", "1 to " + std::to_string(peer::kMaxSessionMs / 1000));
  }
  if (o.max_session_bytes < 1 || o.max_session_bytes > peer::kMaxSessionBytes) {
    return Problem("max_session_bytes", "1 to 2^40");
  }
  if (!InRange(o.handshake_deadline, milliseconds(100), milliseconds(60'000))) {
    return Problem("handshake_deadline", "100 ms to 60 s");
  }
  if (!InRange(o.idle_timeout, milliseconds(100), milliseconds(600'000))) {
    return Problem("idle_timeout", "100 ms to 600 s");
  }
  if (o.read_bytes < 4096 || o.read_bytes > (16U << 20)) {
    return Problem("read_bytes", "4 KiB to 16 MiB");
  }
  if (o.keys && o.auth_none) return Problem("auth", "none excludes a key file");
  if (!o.keys && !o.auth_none && !o.listen.address.IsLoopback()) {
    return Problem("key_file", "required to listen on " + common::ToString(o.listen.address) +
                                   " (not loopback); make one with zcal keygen, or set auth "
                                   "to none to serve anyone who can reach the port");
  }
  for (std::size_t i = 0; i < o.allow.size(); ++i) {
    const common::IpPrefix& prefix = o.allow[i];
    if (prefix.address.family != o.listen.address.family &&
        !(o.listen.address.IsIpv6() && !prefix.address.IsIpv6())) {
      return Problem("allow",
                     common::ToString(prefix) + " can never match a client of a sink on " +
                         common::ToString(o.listen.address),
                     i);
    }
  }
  return std::nullopt;
}

}  // namespace

Result<void, FieldError> ValidatePeerSinkOptions(const PeerSinkOptions& options) {
  if (std::optional<FieldError> problem = FirstProblem(options)) return Fail(std::move(*problem));
  return {};
}

}  // namespace zcal::probes
