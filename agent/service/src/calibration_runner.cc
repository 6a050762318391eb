#include "zcal/agent/service/calibration_runner.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>
#include <set>
#include <stop_token>
#include <thread>

#include <spdlog/spdlog.h>

#include "zcal/agent/service/host_snapshot.h"
#include "zcal/agent/publish/peer_results.h"
#include "zcal/agent/peers/peer_selection.h"
#include "zcal/agent/state/state.h"

namespace zcal::agent {

using calibrator::Method;

struct CalibrationRunner::Mailbox {
  std::mutex mutex;
  std::optional<RoundOutcome> outcome;
  std::function<void()> notify;
  std::atomic<bool> probing{false};
};

namespace {

void RunPeers(const PeerRoundPlan& plan, const CalibrateFn& calibrate,
              std::atomic<bool>& cancel, RoundOutcome& outcome);

RoundOutcome RunRound(const std::stop_token& stop, const CalibrateFn& calibrate,
                      RoundPlan& plan) {
  std::vector<PathJob>& jobs = plan.jobs;
  std::atomic<bool> cancel{false};
  const std::stop_callback on_stop(stop, [&cancel] {
    cancel.store(true, std::memory_order_relaxed);
  });
  const auto started = std::chrono::steady_clock::now();
  RoundOutcome outcome;
  // What a path leaves of its share goes to the paths after it, evenly: a
  // loopback path whose zerocopy sends the kernel copies is done in a few
  // probes, and the discard path after it can use the rest.
  double unspent = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    PathJob& job = jobs[i];
    const double carried = unspent / static_cast<double>(jobs.size() - i);
    unspent -= carried;
    job.options.budget_seconds += carried;
    const auto job_started = std::chrono::steady_clock::now();
    job.options.cancel = &cancel;
    const std::string name = job.options.PathName();
    const auto progress = [&name](const probes::CalibrationProgress& p) {
      spdlog::debug("{}: probe {} of ~{}: {} at {} bytes", name, p.done + 1,
                    p.total, calibrator::MethodName(p.method), p.size_bytes);
    };
    Result<probes::CalibrationReport> report;
    try {
      report = calibrate(job.options, progress);
    } catch (const std::exception& e) {
      report = Fail(Errc::kFailed,
                    "calibration of path " + name + " threw: " + e.what());
    }
    const bool cancelled = cancel.load(std::memory_order_relaxed) ||
                           (report && report->cancelled);
    const double used =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - job_started).count();
    unspent += std::max(0.0, job.options.budget_seconds - used);
    outcome.reports.push_back(PathReport{name, std::move(report)});
    if (cancelled) {
      outcome.cancelled = true;
      break;
    }
  }
  if (plan.peers && !outcome.cancelled) RunPeers(*plan.peers, calibrate, cancel, outcome);
  outcome.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  return outcome;
}

// Waits `pause`, or less when the round is cancelled.
void Pause(std::chrono::milliseconds pause, const std::atomic<bool>& cancel) {
  const auto until = std::chrono::steady_clock::now() + pause;
  while (!cancel.load(std::memory_order_relaxed) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Discovery Discover(const PeerRoundPlan& plan, RoundOutcome& outcome) {
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

void RunPeers(const PeerRoundPlan& plan, const CalibrateFn& calibrate,
              std::atomic<bool>& cancel, RoundOutcome& outcome) {
  const Discovery discovery = Discover(plan, outcome);
  if (!discovery.dns_error.empty()) spdlog::warn("{}", discovery.dns_error);
  const std::vector<common::HostPort>& peers = discovery.peers;
  const std::size_t n = peers.size();
  if (n == 0) {
    spdlog::info("peers: none found; no peer is probed this round");
    return;
  }
  const std::vector<std::size_t> ranking = RankPeers(plan.identity, peers);
  const std::vector<std::size_t> window =
      RoundWindow(plan.round, n, plan.settings.per_calibration);
  // The peers asked when a slot's peer is busy: the ranking after the
  // window, in order, each at most once in the round.
  std::vector<std::size_t> spares;
  if (!window.empty()) {
    for (std::size_t j = window.size(); j < n; ++j) {
      spares.push_back(ranking[(window.front() + j) % n]);
    }
  }
  std::size_t next_spare = 0;
  std::mt19937_64 random(std::random_device{}());
  std::uniform_int_distribution<int> jitter(-200, 200);
  for (const std::size_t rank : window) {
    std::size_t index = ranking[rank];
    for (int tries = 1; !cancel.load(std::memory_order_relaxed); ++tries) {
      const common::HostPort& peer = peers[index];
      probes::CalibrationOptions options = plan.base;
      options.target = probes::Target::Peer(peer);
      options.path_name = std::string(kPeerPathPrefix) + common::ToString(peer);
      options.cancel = &cancel;
      PeerAttempt attempt;
      attempt.path = options.path_name;
      attempt.endpoint = common::ToString(peer);
      Result<probes::CalibrationReport> report;
      try {
        report = calibrate(options, {});
      } catch (const std::exception& e) {
        report = Fail(Errc::kFailed, "calibration of path " + attempt.path +
                                         " threw: " + e.what());
      }
      if (cancel.load(std::memory_order_relaxed) || (report && report->cancelled)) {
        outcome.cancelled = true;
        return;
      }
      attempt.outcome = PeerOutcome(report);
      if (!report) attempt.detail = report.error().message;
      if (attempt.outcome == "success") {
        if (Result<std::string> via = EgressInterface(peer.address)) {
          attempt.interface = *via;
        }
        outcome.reports.push_back(PathReport{attempt.path, std::move(report)});
      }
      const bool busy = attempt.outcome == "busy";
      outcome.peer_attempts.push_back(std::move(attempt));
      if (!busy || tries >= kPeerTriesPerSlot || next_spare >= spares.size()) break;
      Pause(kPeerBusyPause + std::chrono::milliseconds(jitter(random)), cancel);
      index = spares[next_spare++];
    }
    if (cancel.load(std::memory_order_relaxed)) {
      outcome.cancelled = true;
      return;
    }
  }
}

}  // namespace

namespace {

// The session's and connect's own words for a deadline that passed
// (peer_client.cc, target.cc).
bool SaysTimeout(const std::string& message) {
  return message.find("in time") != std::string::npos ||
         message.find("timed out") != std::string::npos;
}

}  // namespace

std::string PeerOutcome(const Result<probes::CalibrationReport>& report) {
  if (report) {
    const std::vector<calibrator::Sample>& samples = report->samples;
    // A session lost mid-probe (the peer killed, its link down) fails every
    // probe from then on, whatever the method; one method failing while
    // the others still measure is a result of that method instead.
    std::size_t first_failed = samples.size();
    std::set<Method> failed_methods;
    while (first_failed > 0 &&
           samples[first_failed - 1].status == calibrator::SampleStatus::kFailed) {
      --first_failed;
      failed_methods.insert(samples[first_failed].method);
    }
    if (report->session_lost) {
      return SaysTimeout(report->session_error) ? "timeout" : "vanished";
    }
    const bool none_ok = std::none_of(samples.begin(), samples.end(),
                                      [](const calibrator::Sample& s) { return s.ok(); });
    if (none_ok || failed_methods.size() >= 2) {
      return !samples.empty() && SaysTimeout(samples.back().error) ? "timeout" : "vanished";
    }
    return "success";
  }
  const std::string& message = report.error().message;
  switch (report.error().code) {
    case Errc::kBusy:
      return "busy";
    case Errc::kPermission:
      return "auth_failed";
    case Errc::kInvalidArgument:
      return "over_limit";
    case Errc::kUnsupported:
      return "unsupported_version";
    case Errc::kParse:
      return "protocol_error";
    case Errc::kFailed:
      if (message.find("was lost before a probe measured") != std::string::npos) {
        return SaysTimeout(message) ? "timeout" : "vanished";
      }
      return SaysTimeout(message) ? "timeout" : "unreachable";
    default:
      return "failed";
  }
}

Result<std::optional<probes::peer::PeerKey>> LoadPeerKey(const Config& config) {
  const std::string& file =
      config.peers.key_file.empty() ? config.sink.key_file : config.peers.key_file;
  if (file.empty()) return std::optional<probes::peer::PeerKey>();
  Result<probes::peer::KeyRing> ring = probes::peer::LoadKeyFile(file);
  if (!ring) return tl::unexpected(ring.error());
  for (const std::string& warning : ring->warnings) spdlog::warn("{}", warning);
  // The first key is the one presented (docs/peers.md, "Keys and their
  // rotation").
  return std::optional<probes::peer::PeerKey>(ring->keys.front());
}

RoundPlan PlanAgentRound(const Config& config,
                         const std::function<std::uint64_t()>& next_round,
                         std::optional<Discovery> previous,
                         std::chrono::steady_clock::time_point discovered_at) {
  if (!config.peers.enabled()) return PlanRound(config);
  Result<std::optional<probes::peer::PeerKey>> key = LoadPeerKey(config);
  if (!key) {
    spdlog::error("peers are not probed this round: {}", key.error().message);
    RoundPlan plan = PlanRound(config);
    plan.peers.reset();
    return plan;
  }
  return PlanRound(config, HostIdentity(), next_round(), std::move(*key), std::move(previous),
                   discovered_at);
}

RoundPlan PlanRound(const Config& config, std::string identity,
                    std::uint64_t peer_round,
                    std::optional<probes::peer::PeerKey> key,
                    std::optional<Discovery> previous,
                    std::chrono::steady_clock::time_point discovered_at) {
  RoundPlan plan;
  std::vector<PathJob>& jobs = plan.jobs;
  const std::size_t slots =
      config.paths.size() + (config.peers.enabled() ? config.peers.per_calibration : 0);
  const double share =
      config.budget.seconds_per_calibration / static_cast<double>(std::max<std::size_t>(slots, 1));
  // What every job of the round shares; the target is set per job.
  probes::CalibrationOptions common;
  common.methods = config.methods;
  common.min_size = config.min_size_bytes;
  common.max_size = config.max_size_bytes;
  common.decision = config.decision;
  common.budget_seconds = share;
  common.max_bytes_per_second = config.budget.bytes_per_second;
  common.root = config.host_root;
  for (const PathConfig& path : config.paths) {
    PathJob job;
    job.options = common;
    job.options.target = ProbeTarget(path);
    job.options.path_name = path.name;
    jobs.push_back(std::move(job));
  }
  if (config.peers.enabled()) {
    PeerRoundPlan peers;
    peers.settings = config.peers;
    peers.identity = std::move(identity);
    peers.round = peer_round;
    peers.base = common;
    peers.base.peer_key = std::move(key);
    peers.previous = std::move(previous);
    peers.discovered_at = discovered_at;
    plan.peers = std::move(peers);
  }
  return plan;
}

CalibrationRunner::CalibrationRunner(CalibrateFn calibrate,
                                     std::function<void()> notify)
    : calibrate_(std::move(calibrate)), mailbox_(std::make_shared<Mailbox>()) {
  mailbox_->notify = std::move(notify);
}

CalibrationRunner::~CalibrationRunner() {
  {
    const std::lock_guard lock(mailbox_->mutex);
    mailbox_->notify = nullptr;
  }
  worker_.request_stop();
  if (worker_.joinable()) worker_.join();
}

bool CalibrationRunner::Start(RoundPlan plan) {
  if (started_) return false;
  started_ = true;
  mailbox_->probing.store(true, std::memory_order_release);
  worker_ = std::jthread(
      [mailbox = mailbox_, calibrate = calibrate_, plan = std::move(plan)](
          const std::stop_token& stop) mutable {
        RoundOutcome outcome = RunRound(stop, calibrate, plan);
        const std::lock_guard lock(mailbox->mutex);
        mailbox->outcome = std::move(outcome);
        mailbox->probing.store(false, std::memory_order_release);
        if (mailbox->notify) mailbox->notify();
      });
  return true;
}

void CalibrationRunner::RequestStop() { worker_.request_stop(); }

std::optional<RoundOutcome> CalibrationRunner::TakeOutcome() {
  std::optional<RoundOutcome> outcome;
  {
    const std::lock_guard lock(mailbox_->mutex);
    outcome.swap(mailbox_->outcome);
  }
  if (!outcome) return std::nullopt;
  // The worker stored its outcome as its last act; this join only waits
  // for it to return.
  worker_.join();
  started_ = false;
  return outcome;
}

bool CalibrationRunner::Probing() const {
  return mailbox_->probing.load(std::memory_order_acquire);
}

}  // namespace zcal::agent
