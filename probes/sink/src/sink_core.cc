#include "zcal/probes/sink/sink_core.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "zcal/common/errno_text.h"
#include "zcal/common/unique_fd.h"

namespace zcal::probes {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds kFirstPause{50};
constexpr milliseconds kLongestPause{1000};
// A turn of one data connection, and how long one read waits for data
// before the turn ends early (SinkDataPath::Read).
constexpr auto kDataTurn = milliseconds(20);
constexpr int kDataReadWaitUs = 5000;

bool OutOfResources(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

// accept(2) errors that end one pending connection, not the listener: the
// next one may be accepted.
bool ConnectionGone(int err) {
  return err == EINTR || err == ECONNABORTED || err == EPROTO || err == EPERM;
}

}  // namespace

common::HostPort SocketEndpoint(int fd, bool local) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  const int got = local ? ::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length)
                        : ::getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  if (got != 0) return {};
  auto endpoint = common::FromSocketAddress(reinterpret_cast<const sockaddr*>(&storage), length);
  return endpoint ? *endpoint : common::HostPort{};
}

Result<std::unique_ptr<SinkCore>> SinkCore::Open(SinkCoreOptions options,
                                                 const std::string& where) {
  const common::SocketAddress address = common::ToSocketAddress(options.listen);
  common::UniqueFd listen_fd(
      ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_fd) {
    return Fail(Errc::kIo, where + ": socket(2) failed with " + common::ErrnoText(errno));
  }
  const int one = 1;
  ::setsockopt(listen_fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd.get(), address.get(), address.length) != 0 ||
      ::listen(listen_fd.get(), options.backlog) != 0) {
    return Fail(Errc::kIo, where + ": cannot listen (" + common::ErrnoText(errno) +
                               "); choose another address or port");
  }
  common::UniqueFd wake_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  common::UniqueFd epoll_fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!wake_fd || !epoll_fd) {
    return Fail(Errc::kIo, where + ": eventfd/epoll failed with " + common::ErrnoText(errno));
  }
  for (int fd : {listen_fd.get(), wake_fd.get()}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    ::epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, fd, &event);
  }
  const common::HostPort bound = SocketEndpoint(listen_fd.get(), true);
  return std::unique_ptr<SinkCore>(new SinkCore(std::move(options), std::move(listen_fd),
                                                std::move(wake_fd), std::move(epoll_fd), bound));
}

SinkCore::SinkCore(SinkCoreOptions options, common::UniqueFd listen_fd, common::UniqueFd wake_fd,
                   common::UniqueFd epoll_fd, common::HostPort endpoint)
    : options_(std::move(options)),
      listen_fd_(std::move(listen_fd)),
      wake_fd_(std::move(wake_fd)),
      epoll_fd_(std::move(epoll_fd)),
      endpoint_(std::move(endpoint)),
      next_pause_(kFirstPause) {}

SinkCore::~SinkCore() { Stop(); }

void SinkCore::Run(Handler& handler) {
  thread_ = std::thread([this, &handler] { Loop(handler); });
}

void SinkCore::Stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  // A stopped sink refuses connections at once instead of leaving them in
  // its listen queue until the client's deadline.
  listen_fd_.Reset();
}

void SinkCore::Close(int fd) {
  const auto it = source_of_.find(fd);
  if (it == source_of_.end()) return;
  if (const auto source = per_source_.find(it->second.source);
      source != per_source_.end() && --source->second == 0) {
    per_source_.erase(source);
  }
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  source_of_.erase(it);  // closes it
  // A descriptor is free again: a paused listener may accept now.
  if (paused_) resume_at_ = SinkClock::now();
  Update([](SinkCoreCounts& c) { --c.connections_open; });
}

std::optional<SinkRefusal> SinkCore::Admit(
    const std::optional<common::HostPort>& client) const {
  const bool allowed =
      client && (options_.allow.empty() ||
                 std::any_of(options_.allow.begin(), options_.allow.end(),
                             [&](const common::IpPrefix& p) { return p.Contains(client->address); }));
  if (!allowed) return SinkRefusal::kNotAllowed;
  if (options_.max_connections_per_source != 0) {
    const auto it = per_source_.find(client->address);
    if (it != per_source_.end() && it->second >= options_.max_connections_per_source) {
      return SinkRefusal::kPerSource;
    }
  }
  if (source_of_.size() >= options_.max_connections) return SinkRefusal::kConnections;
  return std::nullopt;
}

void SinkCore::Accept(Handler& handler) {
  for (;;) {
    sockaddr_storage storage{};
    socklen_t length = sizeof storage;
    common::UniqueFd accepted(::accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&storage),
                                        &length, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!accepted) {
      const int err = errno;
      if (ConnectionGone(err)) continue;
      if (OutOfResources(err)) PauseListener();
      return;  // EAGAIN: the queue is empty
    }
    next_pause_ = kFirstPause;
    const auto client =
        common::FromSocketAddress(reinterpret_cast<const sockaddr*>(&storage), length);
    const std::optional<common::HostPort> known =
        client ? std::optional(*client) : std::nullopt;
    if (const auto refusal = Admit(known)) {
      handler.OnRefused(accepted.get(), *refusal);
      accepted.Reset();
      if (*refusal == SinkRefusal::kPerSource) {
        Update([](SinkCoreCounts& c) { ++c.refused_per_source; });
      }
      continue;
    }
    const int fd = accepted.get();
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.fd = fd;
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &event);
    source_of_.emplace(fd, Connection{std::move(accepted), known->address});
    ++per_source_[known->address];
    Update([](SinkCoreCounts& c) {
      ++c.connections_accepted;
      ++c.connections_open;
    });
    handler.OnAccepted(fd, *known);
  }
}

void SinkCore::PauseListener() {
  // Level-triggered: the connection that could not be accepted keeps the
  // listener readable, and every epoll_wait would return at once.
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, listen_fd_.get(), nullptr);
  paused_ = true;
  resume_at_ = SinkClock::now() + next_pause_;
  next_pause_ = std::min(next_pause_ * 2, kLongestPause);
  Update([](SinkCoreCounts& c) { ++c.accept_pauses; });
}

void SinkCore::ResumeListener() {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = listen_fd_.get();
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listen_fd_.get(), &event);
  paused_ = false;
}

int SinkCore::WaitMs(milliseconds tick) const {
  long long ms = tick.count() < 0 ? -1 : tick.count();
  if (paused_) {
    const auto left = std::chrono::ceil<milliseconds>(resume_at_ - SinkClock::now()).count();
    const long long until_resume = std::max<long long>(left, 0);
    ms = ms < 0 ? until_resume : std::min(ms, until_resume);
  }
  return static_cast<int>(std::min<long long>(ms, 60'000));
}

void SinkCore::Loop(Handler& handler) {
  std::vector<epoll_event> events(64);
  milliseconds tick{-1};
  for (;;) {
    const int n = ::epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()),
                               WaitMs(tick));
    if (n < 0 && errno != EINTR) break;
    bool stop = false;
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      if (fd == wake_fd_.get()) {
        stop = true;
      } else if (fd == listen_fd_.get()) {
        Accept(handler);
      } else if (source_of_.contains(fd)) {
        // Skipped when an earlier event of this batch closed it.
        handler.OnReadable(fd);
      }
    }
    if (stop) break;
    const auto now = SinkClock::now();
    if (paused_ && now >= resume_at_) {
      ResumeListener();
      Accept(handler);
    }
    tick = handler.OnTick(now);
  }
  handler.OnStop();
  while (!source_of_.empty()) Close(source_of_.begin()->first);
}

SinkDataPath::SinkDataPath(std::size_t buffer_bytes)
    : buffer_(std::make_unique_for_overwrite<std::byte[]>(buffer_bytes)),
      buffer_bytes_(buffer_bytes) {}

void SinkDataPath::Adopt(int fd) const {
  // Wake for a good part of a buffer, not for every segment: a probe's
  // stream arrives faster than one wakeup per segment can drain it, and
  // every wakeup is an epoll_wait more than a blocking recv loop pays.
  // The end of the stream (EOF) wakes regardless.
  const int low_water = static_cast<int>(buffer_bytes_ / 2);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &low_water, sizeof low_water);
  const timeval wait{0, kDataReadWaitUs};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
}

SinkDataPath::Turn SinkDataPath::Read(int fd) {
  Turn turn;
  const auto turn_end = SinkClock::now() + kDataTurn;
  for (;;) {
    // Returns at the low-water mark, at EOF, or after the read wait with
    // what there is (EAGAIN when nothing came).
    const ssize_t got = ::recv(fd, buffer_.get(), buffer_bytes_, 0);
    if (got > 0) {
      turn.bytes += static_cast<std::uint64_t>(got);
      if (SinkClock::now() >= turn_end) break;
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    turn.closed = got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    break;
  }
  return turn;
}

SinkDataPath::Turn SinkDataPath::Drain(int fd) {
  Turn turn;
  // Bounded like a turn: a sender that keeps the queue full is not idle
  // and is read at its next wakeup.
  for (int reads = 0; reads < 16; ++reads) {
    const ssize_t got = ::recv(fd, buffer_.get(), buffer_bytes_, MSG_DONTWAIT);
    if (got > 0) {
      turn.bytes += static_cast<std::uint64_t>(got);
      if (static_cast<std::size_t>(got) < buffer_bytes_) break;
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    turn.closed = got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    break;
  }
  return turn;
}

}  // namespace zcal::probes
