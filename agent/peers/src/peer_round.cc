#include "zcal/agent/peers/peer_round.h"

#include <algorithm>
#include <random>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/peers/peer_selection.h"

namespace zcal::agent {
namespace {

using calibrator::Method;

bool Cancelled(const std::atomic<bool>& cancel) {
  return cancel.load(std::memory_order_relaxed);
}

// Waits `pause`, or less when the round is cancelled.
void Pause(std::chrono::milliseconds pause, const std::atomic<bool>& cancel) {
  const auto until = std::chrono::steady_clock::now() + pause;
  while (!Cancelled(cancel) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Discovery Discover(const PeerRoundPlan& plan, PeerRoundOutcome& outcome) {
  const auto now = std::chrono::steady_clock::now();
  if (plan.previous && now - plan.discovered_at < plan.settings.refresh) {
    return *plan.previous;
  }
  std::vector<common::IpAddress> own;
  if (Result<std::vector<common::IpAddress>> listed = OwnAddresses()) {
    own = std::move(*listed);
  } else {
    spdlog::warn("peers: this host's addresses are unknown ({}); none is "
                 "excluded from the peers",
                 listed.error().message);
  }
  Discovery found = DiscoverPeers(plan.settings.static_peers, plan.settings.dns, own);
  if (found.dns_failure == DnsFailure::kTemporary && plan.previous) {
    // The resolver failed for now: the peers it named before are still the
    // best knowledge. An answer that the name or its records are gone is
    // taken as it is.
    for (const common::HostPort& peer : plan.previous->peers) {
      if (std::find(found.peers.begin(), found.peers.end(), peer) == found.peers.end()) {
        found.peers.push_back(peer);
      }
    }
  }
  outcome.discovery = found;
  outcome.discovered_at = now;
  return found;
}

// The peers asked when a slot's peer is busy: the ranking after the
// window, in order, each at most once in the round.
std::vector<std::size_t> Spares(const std::vector<std::size_t>& ranking,
                                const std::vector<std::size_t>& window) {
  std::vector<std::size_t> spares;
  if (window.empty()) return spares;
  for (std::size_t j = window.size(); j < ranking.size(); ++j) {
    spares.push_back(ranking[(window.front() + j) % ranking.size()]);
  }
  return spares;
}

// One calibration toward `peer`; false (and the outcome cancelled) when the
// round was cancelled.
bool AskPeer(const PeerRoundPlan& plan, const common::HostPort& peer,
             const CalibrateFn& calibrate, std::atomic<bool>& cancel,
             PeerRoundOutcome& outcome) {
  probes::CalibrationOptions options = plan.base;
  options.target = probes::Target::Peer(peer);
  PeerAttempt attempt;
  attempt.endpoint = peer;
  options.path_name = ToString(attempt.path());
  options.cancel = &cancel;
  Result<probes::CalibrationReport, probes::CalibrationError> report;
  try {
    report = calibrate(options, {});
  } catch (const std::exception& e) {
    report = probes::FailCalibration(
        Errc::kFailed, "calibration of path " + options.path_name + " threw: " + e.what());
  }
  if (Cancelled(cancel) || (report && report->cancelled)) {
    outcome.cancelled = true;
    return false;
  }
  attempt.outcome = ClassifyPeerCalibration(report);
  if (!report) attempt.detail = report.error().message;
  if (attempt.outcome == PeerOutcome::kSuccess) {
    if (Result<std::string> via = probes::EgressInterface(peer.address)) attempt.interface = *via;
    outcome.reports.push_back(PeerReport{attempt.path(), std::move(*report)});
  }
  outcome.attempts.push_back(std::move(attempt));
  return true;
}

}  // namespace

PeerRoundOutcome RunPeerRound(const PeerRoundPlan& plan, const CalibrateFn& calibrate,
                              std::atomic<bool>& cancel) {
  PeerRoundOutcome outcome;
  const Discovery discovery = Discover(plan, outcome);
  if (!discovery.dns_error.empty()) spdlog::warn("{}", discovery.dns_error);
  const std::vector<common::HostPort>& peers = discovery.peers;
  if (peers.empty()) {
    spdlog::info("peers: none found; no peer is probed this round");
    return outcome;
  }
  const std::vector<std::size_t> ranking = RankPeers(plan.identity, peers);
  const std::vector<std::size_t> window =
      RoundWindow(plan.round, peers.size(), plan.settings.per_calibration);
  const std::vector<std::size_t> spares = Spares(ranking, window);
  std::size_t next_spare = 0;
  std::mt19937_64 random(std::random_device{}());
  std::uniform_int_distribution<int> jitter(-200, 200);
  for (const std::size_t rank : window) {
    std::size_t index = ranking[rank];
    for (int tries = 1; !Cancelled(cancel); ++tries) {
      if (!AskPeer(plan, peers[index], calibrate, cancel, outcome)) break;
      const bool busy = outcome.attempts.back().outcome == PeerOutcome::kBusy;
      if (!busy || tries >= kPeerTriesPerSlot || next_spare >= spares.size()) break;
      Pause(kPeerBusyPause + std::chrono::milliseconds(jitter(random)), cancel);
      index = spares[next_spare++];
    }
    if (outcome.cancelled || Cancelled(cancel)) {
      outcome.cancelled = true;
      return outcome;
    }
  }
  return outcome;
}

PeerOutcome OutcomeOf(probes::PeerFailure failure) {
  using probes::PeerFailure;
  switch (failure) {
    case PeerFailure::kBusy: return PeerOutcome::kBusy;
    case PeerFailure::kAuthFailed: return PeerOutcome::kAuthFailed;
    case PeerFailure::kOverLimit: return PeerOutcome::kOverLimit;
    case PeerFailure::kUnsupportedVersion: return PeerOutcome::kUnsupportedVersion;
    case PeerFailure::kProtocolError: return PeerOutcome::kProtocolError;
    case PeerFailure::kUnreachable: return PeerOutcome::kUnreachable;
    case PeerFailure::kTimeout: return PeerOutcome::kTimeout;
    case PeerFailure::kVanished: return PeerOutcome::kVanished;
    case PeerFailure::kInvalidRequest:
    case PeerFailure::kLocalError:
      return PeerOutcome::kFailed;
  }
  return PeerOutcome::kFailed;
}

PeerOutcome ClassifyPeerCalibration(
    const Result<probes::CalibrationReport, probes::CalibrationError>& report) {
  if (!report) {
    return report.error().peer ? OutcomeOf(*report.error().peer) : PeerOutcome::kFailed;
  }
  if (report->session_lost) return OutcomeOf(report->session_lost->failure);
  const std::vector<calibrator::Sample>& samples = report->samples;
  // A session lost mid-probe (the peer killed, its link down) fails every
  // probe from then on, whatever the method; one method failing while the
  // others still measure is a result of that method instead.
  std::size_t first_failed = samples.size();
  std::set<Method> failed_methods;
  while (first_failed > 0 &&
         samples[first_failed - 1].status == calibrator::SampleStatus::kFailed) {
    --first_failed;
    failed_methods.insert(samples[first_failed].method);
  }
  const bool none_ok = std::none_of(samples.begin(), samples.end(),
                                    [](const calibrator::Sample& s) { return s.ok(); });
  if (!none_ok && failed_methods.size() < 2) return PeerOutcome::kSuccess;
  const std::size_t last = samples.empty() ? 0 : samples.size() - 1;
  const auto& failures = report->probe_failures;
  const auto it = std::find_if(failures.begin(), failures.end(),
                               [&](const probes::ProbeFailure& f) { return f.sample == last; });
  return it != failures.end() && it->failure == probes::PeerFailure::kTimeout
             ? PeerOutcome::kTimeout
             : PeerOutcome::kVanished;
}

}  // namespace zcal::agent
