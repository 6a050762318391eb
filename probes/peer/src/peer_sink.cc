#include "zcal/probes/peer/peer_sink.h"

#include <sodium.h>
#include <sys/socket.h>

#include <algorithm>
#include <unordered_map>

#include "zcal/probes/peer/peer_protocol.h"
#include "zcal/probes/sink/sink_core.h"

namespace zcal::probes {

namespace {

using Clock = SinkClock;
using peer::AnswerCode;

// Data connections one session may hold open at once: a probe uses one,
// and a client that opens many is over a limit.
constexpr std::size_t kDataConnectionsPerSession = 4;
// How long past its grant a session may stay before the sink ends it.
constexpr auto kSessionGrace = std::chrono::seconds(2);
// Bytes a rate-capped session may run ahead of its average: one second's.
constexpr double kRateBurstSeconds = 1.0;
// The resolution of deadlines, timeouts and session ends while any
// connection is open (an idle sink sleeps until a client or Stop()).
constexpr auto kTick = std::chrono::milliseconds(100);

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

// The handshake and the sessions over the core's connections; owned by the
// core's thread except `stats` and `local_probe`, which are under its lock.
struct PeerSink::Server final : SinkCore::Handler {
  Server(const PeerSinkOptions& options, SinkCore& core)
      : options(options), core(core), data(options.read_bytes) {}

  const PeerSinkOptions options;
  SinkCore& core;
  SinkDataPath data;
  std::unordered_map<int, Connection> connections;
  std::vector<Session> sessions;
  std::uint64_t next_session = 1;
  PeerSinkStats stats;       // the fields the core does not count
  bool local_probe = false;  // the agent is probing (TryBeginLocalProbe)

  template <typename Change>
  void Update(Change&& change) {
    core.Update([&](const SinkCoreCounts&) { change(stats); });
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
    connections.erase(it);
    core.Close(fd);
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

  void OnRefused(int fd, SinkRefusal refusal) override {
    switch (refusal) {
      case SinkRefusal::kNotAllowed:
        return Count(SinkOutcome::kNotAllowed);  // nothing read, nothing written
      case SinkRefusal::kPerSource:
        // Said in place of the greeting, so that the client names the limit
        // instead of seeing a connection closed after 0 bytes.
        SendAnswer(fd, AnswerCode::kSourceLimit);
        return Count(SinkOutcome::kLimit);
      case SinkRefusal::kConnections:
        SendAnswer(fd, AnswerCode::kConnectionLimit);
        return Count(SinkOutcome::kLimit);
    }
  }

  void OnAccepted(int fd, const common::HostPort& client) override {
    Connection c;
    c.client = client;
    c.local = SocketEndpoint(fd, true);
    c.deadline = Clock::now() + options.handshake_deadline;
    peer::Greeting greeting;
    if (!peer::FillRandom(c.nonce)) {
      core.Close(fd);
      return Count(SinkOutcome::kProtocolError);
    }
    greeting.nonce = c.nonce;
    if (!SendAll(fd, peer::Encode(greeting))) {
      core.Close(fd);
      return Count(SinkOutcome::kProtocolError);
    }
    connections.emplace(fd, c);
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
      busy = local_probe || s.sessions_open >= options.max_sessions;
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
    // The handshake was read without blocking; the data path blocks.
    data.Adopt(fd);
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

  // What a data connection delivered, against its session's grant and rate.
  void Received(int fd, Connection& c, const SinkDataPath::Turn& turn) {
    const std::uint64_t id = c.session;
    if (turn.bytes != 0) {
      c.last_data = Clock::now();
      Update([&](PeerSinkStats& s) { s.bytes_received += turn.bytes; });
      if (Session* session = FindSession(id)) {
        session->bytes += turn.bytes;
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
    }
    if (turn.closed) Close(fd);
  }

  void OnReadable(int fd) override {
    auto it = connections.find(fd);
    if (it == connections.end()) return;
    switch (it->second.kind) {
      case Kind::kHandshake: return OnHandshakeReadable(fd, it->second);
      case Kind::kControl: return OnControlReadable(fd, it->second);
      case Kind::kData: return Received(fd, it->second, data.Read(fd));
    }
  }

  std::chrono::milliseconds OnTick(Clock::time_point now) override {
    std::vector<int> late;
    std::vector<int> quiet;
    for (const auto& [fd, c] : connections) {
      // A handshake's deadline holds however its client dribbles: no byte
      // moves it.
      if (c.kind == Kind::kHandshake && now > c.deadline) late.push_back(fd);
      if (c.kind == Kind::kData && now - c.last_data > options.idle_timeout) quiet.push_back(fd);
    }
    for (int fd : quiet) {
      const auto it = connections.find(fd);
      if (it == connections.end()) continue;  // its session ended meanwhile
      // Bytes below the low-water mark wake nobody; they are data all the same.
      Connection& c = it->second;
      const SinkDataPath::Turn turn = data.Drain(fd);
      if (turn.bytes == 0 && !turn.closed) {
        late.push_back(fd);
      } else {
        Received(fd, c, turn);
      }
    }
    for (int fd : late) {
      if (!connections.contains(fd)) continue;
      Close(fd);
      Count(SinkOutcome::kTimeout);
    }
    std::vector<std::uint64_t> overdue;
    for (const Session& s : sessions) {
      if (now > s.end + kSessionGrace) overdue.push_back(s.id);
    }
    for (std::uint64_t id : overdue) EndSession(id, SinkOutcome::kLimit);
    return connections.empty() ? std::chrono::milliseconds(-1) : kTick;
  }

  void OnStop() override {
    while (!sessions.empty()) EndSession(sessions.front().id, std::nullopt);
    while (!connections.empty()) Close(connections.begin()->first);
  }
};

Result<std::unique_ptr<PeerSink>> PeerSink::Start(PeerSinkOptions options) {
  const std::string where = "sink on " + common::ToString(options.listen);
  if (auto valid = ValidatePeerSinkOptions(options); !valid) {
    return Fail(Errc::kInvalidArgument, where + ": " + valid.error().message);
  }
  SinkCoreOptions core_options;
  core_options.listen = options.listen;
  core_options.max_connections = options.max_connections;
  core_options.max_connections_per_source = options.max_connections_per_source;
  core_options.allow = options.allow;
  auto core = SinkCore::Open(std::move(core_options), where);
  if (!core) return tl::unexpected(core.error());
  std::unique_ptr<PeerSink> sink(new PeerSink());
  sink->core_ = std::move(*core);
  sink->server_ = std::make_unique<Server>(options, *sink->core_);
  sink->core_->Run(*sink->server_);
  return sink;
}

PeerSink::~PeerSink() { Stop(); }

void PeerSink::Stop() { core_->Stop(); }

const common::HostPort& PeerSink::endpoint() const { return core_->endpoint(); }

namespace {

PeerSinkStats Compose(const PeerSinkStats& own, const SinkCoreCounts& counts) {
  PeerSinkStats s = own;
  s.connections_accepted = counts.connections_accepted;
  s.connections_open = counts.connections_open;
  s.refused_per_source = counts.refused_per_source;
  s.accept_pauses = counts.accept_pauses;
  return s;
}

}  // namespace

PeerSinkStats PeerSink::Stats() const {
  return core_->Locked(
      [&](const SinkCoreCounts& counts) { return Compose(server_->stats, counts); });
}

bool PeerSink::WaitForStats(const std::function<bool(const PeerSinkStats&)>& predicate,
                            std::chrono::milliseconds timeout) const {
  return core_->WaitFor(
      [&](const SinkCoreCounts& counts) { return predicate(Compose(server_->stats, counts)); },
      timeout);
}

bool PeerSink::TryBeginLocalProbe() {
  return core_->Locked([&](const SinkCoreCounts&) {
    if (server_->stats.sessions_open != 0) return false;
    server_->local_probe = true;
    return true;
  });
}

void PeerSink::EndLocalProbe() {
  core_->Locked([&](const SinkCoreCounts&) {
    server_->local_probe = false;
    return true;
  });
}

}  // namespace zcal::probes
