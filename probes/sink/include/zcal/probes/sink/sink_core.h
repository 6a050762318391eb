// The one epoll server behind both sinks (sink.h, peer_sink.h): the
// listening socket, the thread, accept with its bounds, and the data path
// that drains a probe's stream. A sink is a SinkCore::Handler that decides
// what an accepted connection is: the loopback sink makes every one a data
// connection at once; the peer sink runs the handshake first.
//
// Bounds enforced here, whatever the handler does:
//  - a source outside `allow` is closed at accept, before a byte is read;
//  - at most `max_connections` sockets at once, and at most
//    `max_connections_per_source` from one source address, so that one
//    allowed host cannot hold every slot;
//  - when accept(2) fails for want of descriptors or memory (EMFILE,
//    ENFILE, ENOBUFS, ENOMEM) the pending connection stays in the listen
//    queue and the level-triggered listener stays readable: the listener
//    is paused (50 ms, doubling to 1 s, sooner when a connection closes)
//    instead of being retried at every wakeup, and each pause is counted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "zcal/common/address.h"
#include "zcal/common/result.h"
#include "zcal/common/unique_fd.h"

namespace zcal::probes {

using SinkClock = std::chrono::steady_clock;

struct SinkCoreOptions {
  common::HostPort listen;
  int backlog = 128;
  std::size_t max_connections = 64;             ///< all sockets together, >= 1
  std::size_t max_connections_per_source = 0;   ///< 0 = no cap of its own
  std::vector<common::IpPrefix> allow;          ///< empty = any source
};

/// Why a connection was closed at accept, before anything was read.
enum class SinkRefusal : std::uint8_t {
  kNotAllowed,   ///< source outside `allow`
  kConnections,  ///< max_connections open
  kPerSource,    ///< max_connections_per_source open from this source
};

/// The core's counters, guarded by its lock (SinkCore::Locked).
struct SinkCoreCounts {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_open = 0;
  std::uint64_t refused_per_source = 0;
  std::uint64_t accept_pauses = 0;
};

class SinkCore {
 public:
  /// Called on the core's thread only.
  class Handler {
   public:
    virtual ~Handler() = default;
    /// A connection within the bounds, watched for EPOLLIN | EPOLLRDHUP and
    /// counted; the handler owns it from here and ends it with Close().
    virtual void OnAccepted(int fd, const common::HostPort& client) = 0;
    /// A connection refused at accept. The handler may write (never read);
    /// the core closes it when this returns.
    virtual void OnRefused(int fd, SinkRefusal refusal) = 0;
    virtual void OnReadable(int fd) = 0;
    /// After every wakeup: expire what is due. Returns how long the core may
    /// sleep before the next call (-1: until an event).
    virtual std::chrono::milliseconds OnTick(SinkClock::time_point now) = 0;
    /// The core stops: end every connection (Close()).
    virtual void OnStop() = 0;
  };

  /// Binds and listens (nothing runs yet). Errc::kIo with `where` and the
  /// errno when the socket cannot be bound.
  static Result<std::unique_ptr<SinkCore>> Open(SinkCoreOptions options,
                                                const std::string& where);
  ~SinkCore();
  SinkCore(const SinkCore&) = delete;
  SinkCore& operator=(const SinkCore&) = delete;

  /// Starts the thread that serves `handler`, which must outlive Stop().
  void Run(Handler& handler);
  /// Stops and joins the thread (the handler's OnStop runs on it) and
  /// closes the listener. Idempotent.
  void Stop();

  const common::HostPort& endpoint() const { return endpoint_; }

  /// The core's thread only: closes a connection the handler owns.
  void Close(int fd);

  /// Runs `change` under the lock and wakes WaitFor: the handler keeps its
  /// own counters under the same lock as the core's.
  template <typename Change>
  void Update(Change&& change) {
    {
      std::lock_guard lock(mutex_);
      change(counts_);
    }
    changed_.notify_all();
  }
  /// Runs `read(counts)` under the lock and returns what it returns.
  template <typename Read>
  auto Locked(Read&& read) const {
    std::lock_guard lock(mutex_);
    return read(counts_);
  }
  /// Waits until `predicate(counts)` holds under the lock; false at `timeout`.
  template <typename Predicate>
  bool WaitFor(Predicate&& predicate, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return predicate(counts_); });
  }

 private:
  struct SourceLess {
    bool operator()(const common::IpAddress& a, const common::IpAddress& b) const {
      return a.family != b.family ? a.family < b.family : a.bytes < b.bytes;
    }
  };
  // An accepted connection: closed when it leaves the map.
  struct Connection {
    common::UniqueFd fd;
    common::IpAddress source;
  };
  SinkCore(SinkCoreOptions options, common::UniqueFd listen_fd, common::UniqueFd wake_fd,
           common::UniqueFd epoll_fd, common::HostPort endpoint);
  void Loop(Handler& handler);
  void Accept(Handler& handler);
  std::optional<SinkRefusal> Admit(const std::optional<common::HostPort>& client) const;
  void PauseListener();
  void ResumeListener();
  int WaitMs(std::chrono::milliseconds tick) const;

  SinkCoreOptions options_;
  common::UniqueFd listen_fd_;
  common::UniqueFd wake_fd_;
  common::UniqueFd epoll_fd_;
  common::HostPort endpoint_;

  // The core's thread only.
  std::unordered_map<int, Connection> source_of_;
  std::map<common::IpAddress, std::size_t, SourceLess> per_source_;
  bool paused_ = false;
  SinkClock::time_point resume_at_;
  std::chrono::milliseconds next_pause_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  SinkCoreCounts counts_;
  bool stopped_ = false;
  std::thread thread_;
};

/// The address a socket is bound to (`local`) or connected to; an empty
/// HostPort when it has none.
common::HostPort SocketEndpoint(int fd, bool local);

/// The data path: one read buffer for every data connection of a sink, and
/// blocking reads for as long as a connection's data keep coming.
///
/// Why blocking: a thread waiting inside recv(2) owns the socket, so the
/// segments that arrive meanwhile are queued to its backlog and processed
/// by the reader. Between epoll wakeups nobody owns it, and on loopback the
/// sender's own softirq then runs the whole receive path: the sender is
/// charged the receiver's work and the sink caps what it measures
/// (docs/probes.md has the figures, bench/sink_throughput the method).
/// Not thread-safe: the core's thread only.
class SinkDataPath {
 public:
  /// `buffer_bytes` >= 1; the buffer's pages become resident only once a
  /// data connection fills them, so an idle sink costs no memory.
  explicit SinkDataPath(std::size_t buffer_bytes);

  /// Makes `fd` a data connection: blocking, woken at half the buffer
  /// (SO_RCVLOWAT) or at EOF, each read bounded by a short SO_RCVTIMEO.
  void Adopt(int fd) const;

  struct Turn {
    std::uint64_t bytes = 0;
    bool closed = false;  ///< EOF or an error: the caller closes it
  };
  /// Reads until the data stop coming, the turn's time is up (so that one
  /// fast sender cannot starve the others), EOF or an error.
  Turn Read(int fd);
  /// Reads what is queued without waiting: bytes below the low-water mark
  /// wake no one, and must not make a connection look idle.
  Turn Drain(int fd);

 private:
  std::unique_ptr<std::byte[]> buffer_;
  std::size_t buffer_bytes_;
};

}  // namespace zcal::probes
