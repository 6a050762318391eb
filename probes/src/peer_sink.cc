#include "zcal/probes/peer_sink.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "zcal/common/errno_text.h"
#include "zcal/common/unique_fd.h"
#include "zcal/probes/peer_protocol.h"

namespace zcal::probes {

namespace {

using Clock = std::chrono::steady_clock;
using peer::AnswerCode;

// A data connection is read with blocking reads for as long as its data
// keep coming, up to kDataTurn, so that one fast sender cannot starve the
// others (or the handshakes); kDataReadWait without data ends a turn early.
// Why blocking: a thread waiting inside recv(2) owns the socket, so the
// segments that arrive meanwhile are queued to its backlog and processed
// by the reader. Between epoll wakeups nobody owns it, and on loopback the
// sender's own softirq then runs the whole receive path: the sender is
// charged the receiver's work and the sink caps what it measures (64 KiB
// uring_send probes reached 0.64x of a blocking SO_RCVLOWAT loop here with
// one read per epoll wakeup; bench/sink_throughput).
constexpr auto kDataTurn = std::chrono::milliseconds(20);
constexpr int kDataReadWaitUs = 5000;
// Data connections one session may hold open at once: a probe uses one,
// and a client that opens many is over a limit.
constexpr std::size_t kDataConnectionsPerSession = 4;
// How long past its grant a session may stay before the sink ends it.
constexpr auto kSessionGrace = std::chrono::seconds(2);
// Bytes a rate-capped session may run ahead of its average: one second's.
constexpr double kRateBurstSeconds = 1.0;

enum class Kind : std::uint8_t { kHandshake, kControl, kData };

struct Connection {
  Kind kind = Kind::kHandshake;
  common::HostPort client;
  common::HostPort local;
  peer::Nonce nonce{};
  // The one frame a client sends before it is authenticated: fixed size,
  // so a fixed buffer. `want` is 8 (the magic) until the magic names it.
  std::array<std::uint8_t, peer::kHelloBytes> frame{};
  std::size_t have = 0;
  std::size_t want = peer::kMagicBytes;
  Clock::time_point deadline;   // handshake: when it must be complete
  Clock::time_point last_data;  // data: for the idle timeout
  std::uint64_t session = 0;    // control and data: the session's id
};

struct Session {
  std::uint64_t id = 0;
  peer::Token token{};
  int control_fd = -1;
  common::IpAddress client;
  Clock::time_point start;
  Clock::time_point end;  // start + the granted duration
  std::uint64_t granted_bytes = 0;
  std::uint64_t bytes = 0;
  std::size_t data_open = 0;
};

common::HostPort LocalEndpoint(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  auto bound = common::FromSocketAddress(reinterpret_cast<const sockaddr*>(&storage), length);
  return bound ? *bound : common::HostPort{};
}

bool SendAll(int fd, std::span<const std::uint8_t> bytes) {
  // A frame of at most 48 bytes into a fresh socket's send buffer: one call.
  const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return sent == static_cast<ssize_t>(bytes.size());
}

void SendAnswer(int fd, AnswerCode code) {
  peer::Answer answer;
  answer.code = code;
  SendAll(fd, peer::Encode(answer));
}

}  // namespace

Result<std::unique_ptr<PeerSink>> PeerSink::Start(PeerSinkOptions options) {
  const std::string where = "sink on " + common::ToString(options.listen);
  if (std::string why = ValidatePeerSinkOptions(options); !why.empty()) {
    return Fail(Errc::kInvalidArgument, where + ": " + why);
  }
  const common::SocketAddress address = common::ToSocketAddress(options.listen);
  common::UniqueFd listen_fd(
      ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listen_fd) {
    return Fail(Errc::kIo, where + ": socket(2) failed with " + common::ErrnoText(errno));
  }
  const int one = 1;
  ::setsockopt(listen_fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd.get(), address.get(), address.length) != 0 ||
      ::listen(listen_fd.get(), 128) != 0) {
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
  const common::HostPort bound = LocalEndpoint(listen_fd.get());
  std::unique_ptr<PeerSink> sink(new PeerSink(std::move(options), bound));
  sink->listen_fd_ = listen_fd.Release();
  sink->wake_fd_ = wake_fd.Release();
  sink->epoll_fd_ = epoll_fd.Release();
  sink->thread_ = std::thread(
      [raw = sink.get()] { raw->Run(raw->listen_fd_, raw->wake_fd_, raw->epoll_fd_); });
  return sink;
}

PeerSink::PeerSink(PeerSinkOptions options, common::HostPort endpoint)
    : options_(std::move(options)), endpoint_(std::move(endpoint)) {}

PeerSink::~PeerSink() {
  Stop();
  ::close(listen_fd_);
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void PeerSink::Stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

PeerSinkStats PeerSink::Stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

bool PeerSink::TryBeginLocalProbe() {
  std::lock_guard lock(mutex_);
  if (stats_.sessions_open != 0) return false;
  local_probe_.store(true);
  return true;
}

// The event loop's state, owned by the sink's thread.
struct PeerSink::Loop {
  PeerSink& sink;
  const PeerSinkOptions& options;
  int listen_fd;
  int epoll_fd;
  std::unordered_map<int, Connection> connections;
  std::vector<Session> sessions;
  // The one read buffer, left uninitialised: its pages become resident only
  // once a data connection fills them, so an idle sink costs no memory.
  std::unique_ptr<std::byte[]> buffer;
  std::size_t buffer_bytes = 0;
  std::uint64_t next_session = 1;

  template <typename Change>
  void Update(Change&& change) {
    {
      std::lock_guard lock(sink.mutex_);
      change(sink.stats_);
    }
    sink.changed_.notify_all();
  }
  void Count(SinkOutcome outcome) {
    Update([&](PeerSinkStats& s) { ++s.outcomes[static_cast<std::size_t>(outcome)]; });
  }

  Session* FindSession(std::uint64_t id) {
    auto it = std::find_if(sessions.begin(), sessions.end(),
                           [&](const Session& s) { return s.id == id; });
    return it == sessions.end() ? nullptr : &*it;
  }

  void Close(int fd) {
    auto it = connections.find(fd);
    if (it == connections.end()) return;
    if (it->second.kind == Kind::kData) {
      if (Session* s = FindSession(it->second.session)) --s->data_open;
    }
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    connections.erase(it);
    Update([](PeerSinkStats& s) { --s.connections_open; });
  }

  // Ends a session: its control and data connections close. No outcome when
  // the sink itself stops.
  void EndSession(std::uint64_t id, std::optional<SinkOutcome> outcome) {
    Session* session = FindSession(id);
    if (session == nullptr) return;
    std::vector<int> fds;
    for (const auto& [fd, c] : connections) {
      if (c.kind != Kind::kHandshake && c.session == id) fds.push_back(fd);
    }
    for (int fd : fds) Close(fd);
    sessions.erase(sessions.begin() + (session - sessions.data()));
    Update([&](PeerSinkStats& s) {
      --s.sessions_open;
      if (outcome) ++s.outcomes[static_cast<std::size_t>(*outcome)];
    });
  }

  void Refuse(int fd, SinkOutcome outcome, std::optional<AnswerCode> answer) {
    if (answer) SendAnswer(fd, *answer);
    Close(fd);
    Count(outcome);
  }

  void Accept() {
    for (;;) {
      sockaddr_storage storage{};
      socklen_t length = sizeof storage;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&storage), &length,
                               SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;  // EAGAIN, or out of descriptors (retried next tick)
      auto client = common::FromSocketAddress(reinterpret_cast<const sockaddr*>(&storage), length);
      const bool allowed =
          client && (options.allow.empty() ||
                     std::any_of(options.allow.begin(), options.allow.end(),
                                 [&](const common::IpPrefix& p) { return p.Contains(client->address); }));
      if (!allowed) {
        ::close(fd);  // nothing read, nothing written
        Count(SinkOutcome::kNotAllowed);
        continue;
      }
      if (connections.size() >= options.max_connections) {
        ::close(fd);
        Count(SinkOutcome::kLimit);
        continue;
      }
      Connection c;
      c.client = *client;
      c.local = LocalEndpoint(fd);
      c.deadline = Clock::now() + options.handshake_deadline;
      peer::Greeting greeting;
      if (!peer::FillRandom(c.nonce) || !SendAll(fd, peer::Encode([&] {
            greeting.nonce = c.nonce;
            return greeting;
          }()))) {
        ::close(fd);
        Count(SinkOutcome::kProtocolError);
        continue;
      }
      epoll_event event{};
      event.events = EPOLLIN | EPOLLRDHUP;
      event.data.fd = fd;
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event);
      connections.emplace(fd, c);
      Update([](PeerSinkStats& s) {
        ++s.connections_accepted;
        ++s.connections_open;
      });
    }
  }

  void OnHello(int fd, Connection& c) {
    auto hello = peer::DecodeHello(std::span(c.frame).first(peer::kHelloBytes));
    if (!hello) return Refuse(fd, SinkOutcome::kProtocolError, AnswerCode::kProtocolError);
    const peer::Request& request = hello->request;
    if (request.version < 1 || request.version > peer::kProtocolVersion) {
      return Refuse(fd, SinkOutcome::kUnsupportedVersion, AnswerCode::kUnsupportedVersion);
    }
    if (options.keys) {
      const peer::PeerKey* key = options.keys->Find(hello->key_id);
      // The MAC is computed for a missing key too, so that an unknown id and
      // a wrong MAC take the same time.
      static const std::vector<std::uint8_t> kNoKey(peer::kMinSecretBytes, 0);
      const peer::Mac expected = peer::ComputeMac(key ? key->secret : kNoKey, c.nonce,
                                                  c.client, c.local, request);
      if (!peer::MacEqual(expected, hello->mac) || key == nullptr) {
        return Refuse(fd, SinkOutcome::kAuthFailed, AnswerCode::kBadAuth);
      }
    }
    if (options.max_bytes_per_second != 0 &&
        (request.max_bytes_per_second == 0 ||
         request.max_bytes_per_second > options.max_bytes_per_second)) {
      return Refuse(fd, SinkOutcome::kLimit, AnswerCode::kOverLimit);
    }
    Session session;
    session.id = next_session++;
    if (!peer::FillRandom(session.token)) {
      return Refuse(fd, SinkOutcome::kProtocolError, AnswerCode::kProtocolError);
    }
    // The grant and the busy check are one step under the lock, so that an
    // agent beginning a probe of its own (TryBeginLocalProbe) and a peer's
    // session never overlap.
    bool busy = false;
    Update([&](PeerSinkStats& s) {
      busy = sink.local_probe_.load() || s.sessions_open >= options.max_sessions;
      if (!busy) {
        ++s.sessions_open;
        s.max_sessions_seen = std::max(s.max_sessions_seen, s.sessions_open);
      }
    });
    if (busy) return Refuse(fd, SinkOutcome::kBusy, AnswerCode::kBusy);

    const auto max_ms = static_cast<std::uint32_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(options.max_session_seconds).count());
    peer::Answer answer;
    answer.code = AnswerCode::kAccept;
    answer.granted_ms = std::min(request.duration_ms, max_ms);
    answer.granted_bytes = std::min(request.max_bytes, options.max_session_bytes);
    answer.token = session.token;
    session.control_fd = fd;
    session.client = c.client.address;
    session.start = Clock::now();
    session.end = session.start + std::chrono::milliseconds(answer.granted_ms);
    session.granted_bytes = answer.granted_bytes;
    sessions.push_back(session);
    c.kind = Kind::kControl;
    c.session = session.id;
    if (!SendAll(fd, peer::Encode(answer))) EndSession(session.id, SinkOutcome::kProtocolError);
  }

  void OnDataOpen(int fd, Connection& c) {
    auto token = peer::DecodeDataOpen(std::span(c.frame).first(peer::kDataOpenBytes));
    if (!token) return Refuse(fd, SinkOutcome::kProtocolError, std::nullopt);
    Session* session = nullptr;
    for (Session& s : sessions) {
      if (sodium_memcmp(s.token.data(), token->data(), token->size()) == 0) session = &s;
    }
    // A token is good only from the address that opened its session.
    if (session == nullptr || !(session->client == c.client.address)) {
      return Refuse(fd, SinkOutcome::kAuthFailed, std::nullopt);
    }
    if (session->data_open >= kDataConnectionsPerSession) {
      return Refuse(fd, SinkOutcome::kLimit, std::nullopt);
    }
    ++session->data_open;
    // Wake for a good part of a buffer, not for every segment: a probe's
    // stream arrives faster than one wakeup per segment can drain it, and
    // every wakeup is an epoll_wait more than a blocking recv loop pays.
    // The end of the stream (EOF) wakes regardless.
    const int low_water = static_cast<int>(buffer_bytes / 2);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &low_water, sizeof low_water);
    // Blocking from here on, each read bounded by kDataReadWait (see
    // kDataTurn); the handshake before it was read without blocking.
    const timeval wait{0, kDataReadWaitUs};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    c.kind = Kind::kData;
    c.session = session->id;
    c.last_data = Clock::now();
  }

  void OnHandshakeReadable(int fd, Connection& c) {
    const ssize_t got = ::recv(fd, c.frame.data() + c.have, c.want - c.have, 0);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (got <= 0) return Refuse(fd, SinkOutcome::kProtocolError, std::nullopt);
    c.have += static_cast<std::size_t>(got);
    if (c.have < c.want) return;
    if (c.want == peer::kMagicBytes) {
      c.want = peer::ClientFrameBytes(std::span(c.frame).first(peer::kMagicBytes));
      if (c.want == 0) return Refuse(fd, SinkOutcome::kProtocolError, AnswerCode::kProtocolError);
      return;
    }
    if (c.want == peer::kHelloBytes) return OnHello(fd, c);
    OnDataOpen(fd, c);
  }

  void OnControlReadable(int fd, const Connection& c) {
    std::array<std::uint8_t, 64> scratch{};
    const ssize_t got = ::recv(fd, scratch.data(), scratch.size(), 0);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
    // The client ends its session by closing the control connection; it has
    // nothing else to say on it.
    EndSession(c.session, got == 0 ? SinkOutcome::kServed : SinkOutcome::kProtocolError);
  }

  void OnDataReadable(int fd, Connection& c) {
    std::uint64_t received = 0;
    bool closed = false;
    const auto turn_end = Clock::now() + kDataTurn;
    for (;;) {
      // Returns at the low-water mark, at EOF, or after kDataReadWait with
      // what there is (EAGAIN when nothing came).
      const ssize_t got = ::recv(fd, buffer.get(), buffer_bytes, 0);
      if (got > 0) {
        received += static_cast<std::uint64_t>(got);
        if (Clock::now() >= turn_end) break;
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      closed = got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
      break;
    }
    const std::uint64_t id = c.session;
    if (received != 0) {
      c.last_data = Clock::now();
      std::lock_guard lock(sink.mutex_);
      sink.stats_.bytes_received += received;
    }
    Session* session = FindSession(id);
    if (session != nullptr && received != 0) {
      session->bytes += received;
      const double elapsed =
          std::chrono::duration<double>(Clock::now() - session->start).count();
      const bool over_rate =
          options.max_bytes_per_second != 0 &&
          static_cast<double>(session->bytes) >
              static_cast<double>(options.max_bytes_per_second) * (elapsed + kRateBurstSeconds);
      if (session->bytes > session->granted_bytes || over_rate) {
        return EndSession(id, SinkOutcome::kLimit);
      }
    }
    if (closed) Close(fd);
  }

  void OnReadable(int fd) {
    auto it = connections.find(fd);
    if (it == connections.end()) return;
    switch (it->second.kind) {
      case Kind::kHandshake: return OnHandshakeReadable(fd, it->second);
      case Kind::kControl: return OnControlReadable(fd, it->second);
      case Kind::kData: return OnDataReadable(fd, it->second);
    }
  }

  void Expire() {
    const auto now = Clock::now();
    std::vector<int> late;
    for (const auto& [fd, c] : connections) {
      if ((c.kind == Kind::kHandshake && now > c.deadline) ||
          (c.kind == Kind::kData && now - c.last_data > options.idle_timeout)) {
        late.push_back(fd);
      }
    }
    for (int fd : late) {
      Close(fd);
      Count(SinkOutcome::kTimeout);
    }
    std::vector<std::uint64_t> overdue;
    for (const Session& s : sessions) {
      if (now > s.end + kSessionGrace) overdue.push_back(s.id);
    }
    for (std::uint64_t id : overdue) EndSession(id, SinkOutcome::kLimit);
  }

  void CloseAll() {
    while (!sessions.empty()) EndSession(sessions.front().id, std::nullopt);
    while (!connections.empty()) Close(connections.begin()->first);
  }
};

void PeerSink::Run(int listen_fd, int wake_fd, int epoll_fd) {
  Loop loop{*this, options_, listen_fd, epoll_fd, {}, {}, {}, 0, 1};
  loop.buffer = std::make_unique_for_overwrite<std::byte[]>(options_.read_bytes);
  loop.buffer_bytes = options_.read_bytes;
  std::vector<epoll_event> events(64);
  for (;;) {
    // 100 ms: the resolution of deadlines, timeouts and session ends. With
    // no connection there is nothing to expire, and an idle sink sleeps
    // until a client or Stop() wakes it.
    const int timeout_ms = loop.connections.empty() ? -1 : 100;
    const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), timeout_ms);
    if (n < 0 && errno != EINTR) break;
    bool stop = false;
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      if (fd == wake_fd) {
        stop = true;
      } else if (fd == listen_fd) {
        loop.Accept();
      } else {
        loop.OnReadable(fd);
      }
    }
    if (stop) break;
    loop.Expire();
  }
  loop.CloseAll();
}

}  // namespace zcal::probes
