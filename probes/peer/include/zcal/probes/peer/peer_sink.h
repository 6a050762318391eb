// The peer sink: the receiver that other hosts' probes send to, behind the
// authenticated handshake of docs/peer-protocol.md. Served by `zcal sink`
// and by the agent (config section `sink:`).
//
// What any client can take is bounded, whatever it does:
//  - a source outside `allow` is closed at accept, before a byte is read;
//  - at most `max_connections` sockets (handshakes, sessions and their data
//    connections together), and at most `max_connections_per_source` of
//    them from one source address, so that one allowed host cannot hold
//    every slot; more are answered with the limit and closed at accept;
//  - when accept(2) runs out of descriptors the listener pauses (counted)
//    instead of spinning on a queue it cannot take from;
//  - a handshake must complete within `handshake_deadline`, a data
//    connection that delivers nothing for `idle_timeout` is closed;
//  - at most `max_sessions` sessions at once (others are answered busy), each
//    for at most `max_session_seconds`, `max_session_bytes`, and (when set)
//    `max_bytes_per_second`, which the sink enforces on what it receives;
//  - one thread, one read buffer, and fixed-size state per connection.
// Every refusal is counted by its outcome (PeerSinkStats). The server, the
// accept bounds and the data path are the loopback sink's too (sink.h).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "zcal/common/address.h"
#include "zcal/common/result.h"
#include "zcal/probes/peer/peer_keys.h"

namespace zcal::probes {

struct PeerSinkOptions {
  /// Where to listen; port 0 = any free port.
  common::HostPort listen{*common::ParseIpAddress("127.0.0.1"), 0};
  /// Sources allowed to connect; empty = any source.
  std::vector<common::IpPrefix> allow;
  /// The keys a client may present. Absent = no authentication, which
  /// Start() refuses on a non-loopback address unless `auth_none` is set.
  std::optional<peer::KeyRing> keys;
  bool auth_none = false;
  std::size_t max_sessions = 1;          ///< 1..64
  std::size_t max_connections = 64;      ///< 4..4096, all sockets together
  /// 4..4096 (a session holds its control connection and a probe's data
  /// connection, and the next probe's may open before the sink has seen the
  /// last one close); caps what one source address may hold of
  /// max_connections. Hosts behind one NAT address share it.
  std::size_t max_connections_per_source = 8;
  std::chrono::seconds max_session_seconds{60};        ///< 1..600
  std::uint64_t max_session_bytes = 64ULL << 30;       ///< 1..2^40
  std::uint64_t max_bytes_per_second = 0;              ///< 0 = no cap
  std::chrono::milliseconds handshake_deadline{2000};  ///< 100 ms..60 s
  std::chrono::milliseconds idle_timeout{10000};       ///< 100 ms..600 s
  std::size_t read_bytes = 256 * 1024;  ///< the one read buffer, 4 KiB..16 MiB

  bool operator==(const PeerSinkOptions&) const = default;
};

/// How a connection ended, one counter each (metrics label `outcome`).
enum class SinkOutcome : std::uint8_t {
  kServed = 0,         ///< a session granted and ended by its client
  kBusy,               ///< max_sessions in use, or the host is probing
  kNotAllowed,         ///< source outside `allow`: closed unread
  kAuthFailed,         ///< unknown key, wrong MAC, or a wrong data token
  kProtocolError,      ///< a malformed or unexpected frame
  kTimeout,            ///< handshake deadline or idle timeout
  kLimit,              ///< over a limit: connections, a request, a grant
  kUnsupportedVersion, ///< no protocol version in common
};
inline constexpr std::size_t kSinkOutcomes = 8;
std::string_view SinkOutcomeName(SinkOutcome outcome);  ///< "served", ...

/// Counters since Start(); monotonic except the *_open fields.
struct PeerSinkStats {
  std::array<std::uint64_t, kSinkOutcomes> outcomes{};  ///< by SinkOutcome
  std::uint64_t bytes_received = 0;      ///< on data connections
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_open = 0;
  std::uint64_t sessions_open = 0;
  std::uint64_t max_sessions_seen = 0;   ///< most sessions open at once
  /// Of outcomes[kLimit]: connections refused at accept because their
  /// source held max_connections_per_source.
  std::uint64_t refused_per_source = 0;
  /// Times accept(2) failed for want of descriptors or memory (EMFILE,
  /// ENFILE, ENOBUFS, ENOMEM) and the listener paused; the pending
  /// connections wait in the listen queue and are served once it resumes.
  std::uint64_t accept_pauses = 0;

  std::uint64_t Count(SinkOutcome o) const {
    return outcomes[static_cast<std::size_t>(o)];
  }
};

class SinkCore;

/// Checks the options: kInvalidArgument with a sentence that starts with
/// the bad field's name ("max_sessions: 1 to 64"); the error's `field` is
/// that name, `detail` the rest, and `index` the element of `allow` at
/// fault when it is that list.
Result<void, FieldError> ValidatePeerSinkOptions(const PeerSinkOptions& options);

/// Thread-safe: every public member may be called from any thread.
class PeerSink {
 public:
  /// Binds, listens and starts the thread. Errc::kInvalidArgument for bad
  /// options (also: no keys on a non-loopback address without auth_none),
  /// Errc::kIo when the address cannot be bound.
  static Result<std::unique_ptr<PeerSink>> Start(PeerSinkOptions options);

  ~PeerSink();
  PeerSink(const PeerSink&) = delete;
  PeerSink& operator=(const PeerSink&) = delete;

  const common::HostPort& endpoint() const;
  PeerSinkStats Stats() const;

  /// Marks the host as probing unless a session is open; false when one is
  /// (then the agent should not start probing). Atomic with session grants:
  /// while the mark is set every new session is answered busy, so that the
  /// agent's own measurement and a peer's never overlap.
  bool TryBeginLocalProbe();
  void EndLocalProbe();

  /// Waits until `predicate(stats)` holds; false after `timeout`.
  template <typename Predicate>
  bool WaitFor(Predicate predicate, std::chrono::milliseconds timeout) const {
    return WaitForStats(std::function<bool(const PeerSinkStats&)>(std::move(predicate)),
                        timeout);
  }

  /// Closes every connection and the listener (later clients are refused)
  /// and stops the thread. Idempotent.
  void Stop();

 private:
  struct Server;
  PeerSink() = default;
  bool WaitForStats(const std::function<bool(const PeerSinkStats&)>& predicate,
                    std::chrono::milliseconds timeout) const;

  std::unique_ptr<Server> server_;
  std::unique_ptr<SinkCore> core_;
};

}  // namespace zcal::probes
