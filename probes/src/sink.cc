#include "zcal/probes/sink.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "zcal/common/errno_text.h"

namespace zcal::probes {

namespace {

using Clock = std::chrono::steady_clock;

// Reads per connection per wakeup, so that one fast sender cannot starve
// the others.
constexpr int kReadsPerWakeup = 16;

common::HostPort BoundEndpoint(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  Result<common::HostPort> bound =
      common::FromSocketAddress(reinterpret_cast<const sockaddr*>(&storage), length);
  return bound ? *bound : common::HostPort{};
}

}  // namespace

Result<std::unique_ptr<Sink>> Sink::Start(const SinkOptions& options) {
  const std::string where = "sink on " + common::ToString(options.listen);
  if (options.max_connections == 0 || options.read_bytes == 0 ||
      options.idle_timeout.count() <= 0) {
    return Fail(Errc::kInvalidArgument,
                where + ": max_connections, read_bytes and idle_timeout must be positive");
  }
  const common::SocketAddress address = common::ToSocketAddress(options.listen);
  const int listen_fd = ::socket(address.storage.ss_family,
                                 SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd < 0) {
    return Fail(Errc::kIo, where + ": socket(2) failed with " + common::ErrnoText(errno));
  }
  const int one = 1;
  ::setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd, address.get(), address.length) != 0 ||
      ::listen(listen_fd, static_cast<int>(options.max_connections) + 16) != 0) {
    const int err = errno;
    ::close(listen_fd);
    return Fail(Errc::kIo, where + ": cannot listen (" + common::ErrnoText(err) +
                               "); choose another address or port");
  }
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  const int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (wake_fd < 0 || epoll_fd < 0) {
    const int err = errno;
    ::close(listen_fd);
    if (wake_fd >= 0) ::close(wake_fd);
    if (epoll_fd >= 0) ::close(epoll_fd);
    return Fail(Errc::kIo, where + ": eventfd/epoll failed with " + common::ErrnoText(err));
  }
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = listen_fd;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &event);
  event.data.fd = wake_fd;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &event);
  std::unique_ptr<Sink> sink(
      new Sink(options, listen_fd, wake_fd, epoll_fd, BoundEndpoint(listen_fd)));
  sink->thread_ = std::thread([raw = sink.get()] { raw->Loop(); });
  return sink;
}

Sink::Sink(const SinkOptions& options, int listen_fd, int wake_fd, int epoll_fd,
           common::HostPort endpoint)
    : options_(options),
      listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      epoll_fd_(epoll_fd),
      endpoint_(std::move(endpoint)) {}

Sink::~Sink() {
  Stop();
  ::close(listen_fd_);
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void Sink::Stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

SinkStats Sink::Stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

bool Sink::WaitIdle(std::uint64_t accepted, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    return stats_.connections_open == 0 && stats_.connections_accepted >= accepted;
  });
}

void Sink::Loop() {
  struct Connection {
    Clock::time_point last_data;
  };
  std::unordered_map<int, Connection> connections;
  std::vector<std::byte> buffer(options_.read_bytes);
  std::vector<epoll_event> events(64);
  auto update = [&](auto&& change) {
    {
      std::lock_guard lock(mutex_);
      change(stats_);
    }
    changed_.notify_all();
  };
  auto close_connection = [&](int fd, bool timed_out) {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    connections.erase(fd);
    update([&](SinkStats& s) {
      --s.connections_open;
      if (timed_out) ++s.connections_timed_out;
    });
  };
  const int tick_ms = static_cast<int>(
      std::min<std::chrono::milliseconds::rep>(options_.idle_timeout.count(), 200));

  for (;;) {
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                               tick_ms);
    if (n < 0 && errno != EINTR) break;
    bool stop = false;
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      if (fd == wake_fd_) {
        stop = true;
      } else if (fd == listen_fd_) {
        for (;;) {
          const int conn = ::accept4(listen_fd_, nullptr, nullptr,
                                     SOCK_CLOEXEC | SOCK_NONBLOCK);
          if (conn < 0) break;
          if (connections.size() >= options_.max_connections) {
            ::close(conn);
            update([](SinkStats& s) { ++s.connections_refused; });
            continue;
          }
          epoll_event event{};
          event.events = EPOLLIN | EPOLLRDHUP;
          event.data.fd = conn;
          ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, conn, &event);
          connections[conn] = {Clock::now()};
          update([](SinkStats& s) {
            ++s.connections_accepted;
            ++s.connections_open;
          });
        }
      } else {
        std::uint64_t received = 0;
        bool closed = false;
        for (int k = 0; k < kReadsPerWakeup; ++k) {
          const ssize_t got = ::read(fd, buffer.data(), buffer.size());
          if (got > 0) {
            received += static_cast<std::uint64_t>(got);
            continue;
          }
          if (got < 0 && errno == EINTR) continue;
          closed = got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
          break;
        }
        if (received != 0) {
          connections[fd].last_data = Clock::now();
          // The counter is read by other threads; one update per wakeup
          // keeps the lock off the data path.
          std::lock_guard lock(mutex_);
          stats_.bytes_received += received;
        }
        if (closed) close_connection(fd, false);
      }
    }
    if (stop) break;
    const auto now = Clock::now();
    std::vector<int> idle;
    for (const auto& [fd, connection] : connections) {
      if (now - connection.last_data > options_.idle_timeout) idle.push_back(fd);
    }
    for (int fd : idle) close_connection(fd, true);
  }
  for (auto it = connections.begin(); it != connections.end();) {
    const int fd = it->first;
    ++it;
    close_connection(fd, false);
  }
}

}  // namespace zcal::probes
