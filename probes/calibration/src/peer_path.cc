// A peer path: TCP to another host's sink, as one session of that sink
// (peer_client.h) for the whole calibration. The session grants time and
// bytes once; every probe's data connection presents its token.
#include <algorithm>
#include <cmath>
#include <memory>

#include "zcal/probes/calibration/path_runner.h"
#include "zcal/probes/peer/peer_client.h"

namespace zcal::probes {

namespace {

using calibrator::Sample;
using calibrator::SampleStatus;

// How long a peer's sink may take to connect and answer a handshake.
constexpr auto kPeerConnectTimeout = std::chrono::milliseconds(3000);
// What a peer session adds to the budget: setup, the last probe's drain.
constexpr PathSeconds kPeerSessionSlack{2.0};
// How long the check that a session outlived a failed probe may wait.
constexpr auto kAliveTimeout = std::chrono::milliseconds(1000);

// A data connection of a granted session that fails means the session is
// gone (the sink no longer takes its connections), unless it timed out.
PeerFailure LossOf(const PeerError& error) {
  return error.failure == PeerFailure::kTimeout ? PeerFailure::kTimeout : PeerFailure::kVanished;
}

class PeerPath final : public PathRunner {
 public:
  PeerPath(PeerSession session, PathClock::time_point granted_at)
      : session_(std::move(session)),
        deadline_(granted_at + std::chrono::duration_cast<PathClock::duration>(
                                   session_.granted_duration())) {}

  // The calibration ends with the grant, whatever the budget said.
  PathClock::time_point Deadline() const override { return deadline_; }

  PathSeconds ProbeDuration(PathSeconds remaining, std::size_t left) const override {
    return TcpProbeDuration(remaining, left);
  }

  Result<void> Prepare(ProbeOptions& probe, std::size_t left) override {
    probe.sink = session_.sink();
    // The session's bytes are granted once, for all its probes: each probe
    // gets its share of what is left.
    const std::uint64_t granted = session_.granted_bytes();
    const std::uint64_t grant_left = granted - std::min(bytes_sent_, granted);
    if (grant_left < probe.size_bytes) {
      return Fail(Errc::kFailed, "the path's allowance for probes was spent");
    }
    const std::uint64_t share = std::max<std::uint64_t>(grant_left / left, probe.size_bytes);
    // A probe stops issuing once it reached its cap, so it may pass it by
    // less than one message: cap it one message short of the share.
    const std::uint64_t cap = share - probe.size_bytes + 1;
    probe.max_bytes = probe.max_bytes == 0 ? cap : std::min(probe.max_bytes, cap);
    return {};
  }

  PathProbe Probe(const ProbeOptions& probe) override {
    std::optional<SessionLoss> loss;
    auto connect = [this, &loss]() -> Result<common::UniqueFd, PeerError> {
      auto data = session_.OpenData(kPeerConnectTimeout);
      if (data) return std::move(*data);
      // The sink no longer takes this session's connections: every further
      // probe would fail the same way.
      loss = SessionLoss{LossOf(data.error()), data.error().message};
      return FailPeer(loss->failure, data.error().code, data.error().message);
    };
    ProbeOutcome outcome = ProbeOn(probe, connect, &arena_);
    bytes_sent_ += outcome.sample.bytes;
    return {std::move(outcome), std::move(loss)};
  }

  std::optional<SessionLoss> Close(const std::vector<Sample>& samples,
                                   bool ended_early) override {
    std::optional<SessionLoss> loss;
    if (!ended_early) loss = CheckStillThere(samples);
    // The sink is free for its next client (and its own host's calibration)
    // once the probes are done, not after the analysis, which may take
    // longer than the probes on a short budget.
    session_.Close();
    return loss;
  }

 private:
  // A sink that ended the session before its client did (its agent killed,
  // a limit) may have cut the last probe short even where the probe ended
  // on its clock without a failed send: the session's results are not used
  // (the peer's last good ones stay).
  std::optional<SessionLoss> CheckStillThere(const std::vector<Sample>& samples) {
    if (auto open = session_.StillOpen(); !open) {
      return SessionLoss{PeerFailure::kVanished, open.error().message};
    }
    const bool any_failed = std::any_of(samples.begin(), samples.end(), [](const Sample& s) {
      return s.status == SampleStatus::kFailed;
    });
    if (!any_failed) return std::nullopt;
    // A probe failed while its connection was open (the peer killed, its
    // link down mid-send): whether the session is still there decides
    // whether the failure is the method's or the session's.
    auto alive = session_.OpenData(kAliveTimeout);
    if (alive) return std::nullopt;
    return SessionLoss{LossOf(alive.error()), alive.error().message};
  }

  PeerSession session_;
  PathClock::time_point deadline_;
  std::uint64_t bytes_sent_ = 0;
};

}  // namespace

Result<std::unique_ptr<PathRunner>, CalibrationError> OpenPeerPath(
    const CalibrationOptions& options) {
  PeerSessionRequest request;
  const PathSeconds wanted = PathSeconds(options.budget_seconds) + kPeerSessionSlack;
  request.duration = std::chrono::milliseconds(static_cast<std::int64_t>(
      std::min(std::ceil(wanted.count() * 1000), double{peer::kMaxSessionMs})));
  request.max_bytes_per_second = options.max_bytes_per_second;
  if (options.max_bytes_per_second != 0) {
    request.max_bytes = static_cast<std::uint64_t>(
        std::min(static_cast<double>(options.max_bytes_per_second) * wanted.count(),
                 static_cast<double>(peer::kMaxSessionBytes)));
    request.max_bytes = std::max<std::uint64_t>(request.max_bytes, 1);
  }
  auto opened =
      PeerSession::Open(options.target.peer, options.peer_key, request, kPeerConnectTimeout);
  if (!opened) {
    // The codes stay as the session said (busy, key, limit, version,
    // protocol, unreachable): the agent counts a peer's refusals by them.
    return FailCalibration(
        opened.error().code,
        "no probe could run on path " + options.PathName() + ": " + opened.error().message,
        opened.error().failure);
  }
  return std::make_unique<PeerPath>(std::move(*opened), PathClock::now());
}

}  // namespace zcal::probes
