// The sink: a TCP receiver that drains whatever probes send it. One thread,
// one read buffer and a bounded number of connections, so that an agent can
// serve it to peers without a peer being able to exhaust the host.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "zcal/common/result.h"
#include "zcal/common/address.h"

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
};

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
  const common::HostPort& endpoint() const { return endpoint_; }

  SinkStats Stats() const;

  /// Waits until no connection is open and at least `accepted` connections
  /// have been accepted since Start() (so a connection still in the listen
  /// backlog is not missed). True when reached within `timeout`.
  bool WaitIdle(std::uint64_t accepted, std::chrono::milliseconds timeout) const;

  /// Closes every connection and stops the thread. Idempotent.
  void Stop();

 private:
  Sink(const SinkOptions& options, int listen_fd, int wake_fd, int epoll_fd,
       common::HostPort endpoint);
  void Loop();

  SinkOptions options_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int epoll_fd_ = -1;
  common::HostPort endpoint_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  SinkStats stats_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace zcal::probes
