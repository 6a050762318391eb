// The loopback sink: a TCP receiver that drains whatever probes send it.
// It is the peer sink's server (one thread, one read buffer, a bounded
// number of connections, the same data path) without the handshake: every
// accepted connection is a data connection at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "zcal/common/address.h"
#include "zcal/common/result.h"

namespace zcal::probes {

struct SinkOptions {
  /// Where to listen; port 0 = any free port.
  common::HostPort listen{*common::ParseIpAddress("127.0.0.1"), 0};
  /// Connections beyond this many are accepted and closed at once.
  std::size_t max_connections = 16;
  /// Bytes per read(2); one buffer of this size serves every connection.
  std::size_t read_bytes = 1024 * 1024;
  /// A connection that delivers nothing for this long is closed.
  std::chrono::milliseconds idle_timeout{10000};
};

/// Counters since Start(). Monotonic except connections_open.
struct SinkStats {
  std::uint64_t bytes_received = 0;
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_refused = 0;    ///< over max_connections
  std::uint64_t connections_timed_out = 0;  ///< closed for idleness
  std::uint64_t connections_open = 0;
  /// Times accept(2) failed for want of descriptors or memory (EMFILE,
  /// ENFILE, ENOBUFS, ENOMEM) and the listener paused; the connection
  /// waits in the listen queue and is served once descriptors are free.
  std::uint64_t accept_pauses = 0;
};

class SinkCore;

/// Thread-safe: every const member may be called from any thread.
/// Not copyable or movable (its thread refers to it).
class Sink {
 public:
  /// Binds, listens and starts the receiving thread. Errc::kInvalidArgument
  /// for a bad option or address, Errc::kIo when the socket cannot be bound
  /// (address in use, not local), with the address in the message.
  static Result<std::unique_ptr<Sink>> Start(const SinkOptions& options);

  ~Sink();
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  /// The address actually bound (with the port chosen when 0 was asked).
  const common::HostPort& endpoint() const;

  SinkStats Stats() const;

  /// Waits until no connection is open and at least `accepted` connections
  /// have been accepted since Start() (so a connection still in the listen
  /// backlog is not missed). True when reached within `timeout`.
  bool WaitIdle(std::uint64_t accepted, std::chrono::milliseconds timeout) const;

  /// Closes every connection and the listener (later clients are refused)
  /// and stops the thread. Idempotent.
  void Stop();

 private:
  struct Receiver;
  Sink() = default;

  std::unique_ptr<Receiver> receiver_;
  std::unique_ptr<SinkCore> core_;
};

}  // namespace zcal::probes
