#include "zcal/agent/service/calibration_runner.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stop_token>

#include <spdlog/spdlog.h>

#include "zcal/agent/publish/results.h"
#include "zcal/agent/service/host_snapshot.h"

namespace zcal::agent {

struct CalibrationRunner::Mailbox {
  std::mutex mutex;
  std::optional<RoundOutcome> outcome;
  std::function<void()> notify;
};

namespace {

// The round's one edge with the calibration it is given (RunCalibration,
// or a test's function): whatever that throws becomes the failed report of
// its path here, for the paths and the peers alike, so that nothing thrown
// ends the worker thread (and the process with it).
CalibrateFn Guarded(const CalibrateFn& calibrate) {
  return [&calibrate](const probes::CalibrationOptions& options,
                      const std::function<void(const probes::CalibrationProgress&)>& progress)
             -> Result<probes::CalibrationReport, probes::CalibrationError> {
    try {
      return calibrate(options, progress);
    } catch (const std::exception& e) {
      return Fail(Errc::kFailed,
                  "calibration of path " + options.PathName() + " threw: " + e.what());
    }
  };
}

RoundOutcome RunRound(const std::stop_token& stop, const CalibrateFn& unguarded,
                      RoundPlan& plan) {
  const CalibrateFn calibrate = Guarded(unguarded);
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
    Result<probes::CalibrationReport> report = calibrate(job.options, progress);
    const bool cancelled = cancel.load(std::memory_order_relaxed) ||
                           (report && report->cancelled);
    const double used =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - job_started).count();
    unspent += std::max(0.0, job.options.budget_seconds - used);
    outcome.reports.push_back(PathReport{job.path, std::move(report), job.decided_for});
    if (cancelled) {
      outcome.cancelled = true;
      break;
    }
  }
  if (plan.peers && !outcome.cancelled) {
    PeerRoundOutcome peers = RunPeerRound(*plan.peers, calibrate, cancel);
    for (PeerReport& r : peers.reports) {
      outcome.reports.push_back(
          PathReport{std::move(r.path), std::move(r.report), plan.peers_decided_for});
    }
    outcome.peer_attempts = std::move(peers.attempts);
    outcome.discovery = std::move(peers.discovery);
    outcome.discovered_at = peers.discovered_at;
    outcome.cancelled = peers.cancelled;
  }
  outcome.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  return outcome;
}

}  // namespace

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
  // The service reads the host's facts once per round (collect_host), so
  // the calibrations do not read them again.
  common.read_host = false;
  for (const PathConfig& path : config.paths) {
    PathJob job;
    job.path = PathId::Configured(path.name);
    job.options = common;
    job.options.target = ProbeTarget(path);
    job.options.path_name = ToString(job.path);
    job.options.depths = CalibratedDepths(config, path.type);
    jobs.push_back(std::move(job));
  }
  if (config.peers.enabled()) {
    PeerRoundPlan peers;
    peers.settings = config.peers;
    peers.identity = std::move(identity);
    peers.round = peer_round;
    peers.base = common;
    peers.base.depths = CalibratedDepths(config, probes::TargetKind::kPeer);
    peers.base.peer_key = std::move(key);
    peers.previous = std::move(previous);
    peers.discovered_at = discovered_at;
    plan.peers = std::move(peers);
  }
  // As configured (or uniform) until the service hands the applications'
  // mixes (ApplyMixes again).
  ApplyMixes(plan, config, {});
  return plan;
}

void ApplyMixes(RoundPlan& plan, const Config& config, const ScopeMixes& mixes) {
  for (PathJob& job : plan.jobs) {
    const std::optional<probes::TargetKind> kind = PathKind(config, job.path);
    auto [decision, decided_for] =
        DecisionFor(config.decision, kind ? MixScopeOf(*kind) : std::nullopt, mixes);
    job.options.decision = std::move(decision);
    job.decided_for = std::move(decided_for);
  }
  if (plan.peers) {
    auto [decision, decided_for] =
        DecisionFor(config.decision, MixScopeOf(probes::TargetKind::kPeer), mixes);
    plan.peers->base.decision = std::move(decision);
    plan.peers_decided_for = std::move(decided_for);
  }
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
  worker_ = std::jthread(
      [mailbox = mailbox_, calibrate = calibrate_, plan = std::move(plan)](
          const std::stop_token& stop) mutable {
        RoundOutcome outcome = RunRound(stop, calibrate, plan);
        const std::lock_guard lock(mailbox->mutex);
        mailbox->outcome = std::move(outcome);
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

}  // namespace zcal::agent
