#include "zcal/probes/sink/sink.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "zcal/probes/sink/sink_core.h"

namespace zcal::probes {

// Every accepted connection is a data connection: read, and closed when its
// sender ends it or it stays idle.
struct Sink::Receiver final : SinkCore::Handler {
  Receiver(const SinkOptions& options, SinkCore& core)
      : options(options), core(core), data(options.read_bytes) {}

  void OnAccepted(int fd, const common::HostPort&) override {
    data.Adopt(fd);
    last_data[fd] = SinkClock::now();
  }

  void OnRefused(int, SinkRefusal) override {
    core.Update([&](const SinkCoreCounts&) { ++stats.connections_refused; });
  }

  void OnReadable(int fd) override {
    const SinkDataPath::Turn turn = data.Read(fd);
    Received(fd, turn.bytes);
    if (turn.closed) Close(fd, false);
  }

  std::chrono::milliseconds OnTick(SinkClock::time_point now) override {
    std::vector<int> idle;
    for (const auto& [fd, last] : last_data) {
      if (now - last > options.idle_timeout) idle.push_back(fd);
    }
    for (int fd : idle) {
      // Bytes below the low-water mark wake nobody; they are data all the same.
      const SinkDataPath::Turn turn = data.Drain(fd);
      Received(fd, turn.bytes);
      if (turn.closed || turn.bytes == 0) Close(fd, !turn.closed);
    }
    if (last_data.empty()) return std::chrono::milliseconds(-1);
    return std::min<std::chrono::milliseconds>(options.idle_timeout,
                                               std::chrono::milliseconds(200));
  }

  void OnStop() override {
    while (!last_data.empty()) Close(last_data.begin()->first, false);
  }

  void Received(int fd, std::uint64_t bytes) {
    if (bytes == 0) return;
    last_data[fd] = SinkClock::now();
    // The counter is read by other threads; one update per turn keeps the
    // lock off the data path.
    core.Update([&](const SinkCoreCounts&) { stats.bytes_received += bytes; });
  }

  void Close(int fd, bool timed_out) {
    last_data.erase(fd);
    if (timed_out) {
      core.Update([&](const SinkCoreCounts&) { ++stats.connections_timed_out; });
    }
    core.Close(fd);
  }

  const SinkOptions options;
  SinkCore& core;
  SinkDataPath data;
  std::unordered_map<int, SinkClock::time_point> last_data;
  SinkStats stats;  // the fields the core does not count; under its lock
};

Result<std::unique_ptr<Sink>> Sink::Start(const SinkOptions& options) {
  const std::string where = "sink on " + common::ToString(options.listen);
  if (options.max_connections == 0 || options.read_bytes == 0 ||
      options.idle_timeout.count() <= 0) {
    return Fail(Errc::kInvalidArgument,
                where + ": max_connections, read_bytes and idle_timeout must be positive");
  }
  SinkCoreOptions core_options;
  core_options.listen = options.listen;
  core_options.backlog = static_cast<int>(options.max_connections) + 16;
  core_options.max_connections = options.max_connections;
  auto core = SinkCore::Open(std::move(core_options), where);
  if (!core) return tl::unexpected(core.error());
  std::unique_ptr<Sink> sink(new Sink());
  sink->core_ = std::move(*core);
  sink->receiver_ = std::make_unique<Receiver>(options, *sink->core_);
  sink->core_->Run(*sink->receiver_);
  return sink;
}

Sink::~Sink() { Stop(); }

const common::HostPort& Sink::endpoint() const { return core_->endpoint(); }

void Sink::Stop() { core_->Stop(); }

SinkStats Sink::Stats() const {
  return core_->Locked([&](const SinkCoreCounts& counts) {
    SinkStats s = receiver_->stats;
    s.connections_accepted = counts.connections_accepted;
    s.connections_open = counts.connections_open;
    s.accept_pauses = counts.accept_pauses;
    return s;
  });
}

bool Sink::WaitIdle(std::uint64_t accepted, std::chrono::milliseconds timeout) const {
  return core_->WaitFor(
      [&](const SinkCoreCounts& c) {
        return c.connections_open == 0 && c.connections_accepted >= accepted;
      },
      timeout);
}

}  // namespace zcal::probes
