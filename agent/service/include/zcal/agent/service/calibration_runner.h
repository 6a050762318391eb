// Runs one calibration round (a list of path jobs) on a worker thread that
// it owns, and hands the outcome back to the thread that started it.
//
// Why a thread (std::jthread and its stop token) and not a child process:
// the probes account CPU time per thread and their discard path ties its
// namespace helper to the creating thread (PR_SET_PDEATHSIG), which a
// worker thread of its own keeps per round; a test replaces the calibration
// with a function of its own; and every blocking call of the probes waits
// at most a short slice before it checks the cancel flag, so a stop request
// ends the worker within about a second (scheduler.h, kStopGuard) and the
// destructor's join is bounded by the probes themselves. A child process
// would add a report protocol over a pipe and an exec (fork alone is unsafe
// in a process with threads) for a kill that the probes do not need.
//
// The worker never refers to its owner: it fills a shared mailbox that
// both hold, then calls the owner's `notify`, which the owner's destructor
// detaches under the mailbox's lock first. So an outcome that arrives while
// the owner goes away is dropped, not written into freed memory, and no
// std::_Exit or deliberate leak is ever needed.
//
// A round is a list of jobs, each a probes::CalibrationOptions with its own
// target (loopback, discard), then the peers of the round, which the peers
// room runs (peers/peer_round.h). What a path leaves of its budget share
// goes to the paths after it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "zcal/agent/config/config.h"
#include "zcal/agent/domain/path_id.h"
#include "zcal/agent/domain/peer_attempt.h"
#include "zcal/agent/domain/traffic_mix.h"
#include "zcal/agent/peers/peer_discovery.h"
#include "zcal/agent/peers/peer_round.h"
#include "zcal/common/result.h"
#include "zcal/probes/calibration/calibration.h"

namespace zcal::agent {

/// One path of a round: which, and what to calibrate there. options.cancel
/// is set by the runner; options.path_name is the path's text
/// (ToString(path)), which names it in the calibration's results.
struct PathJob {
  PathId path;
  probes::CalibrationOptions options;
  /// Which traffic options.decision weighs sizes for (ApplyMixes).
  DecidedFor decided_for;
};

/// What a round runs: the configured paths, then the peers.
struct RoundPlan {
  std::vector<PathJob> jobs;
  std::optional<PeerRoundPlan> peers;
  /// Which traffic the peers' decisions (peers->base.decision) weigh
  /// sizes for.
  DecidedFor peers_decided_for;
};

/// Decides each job of `plan` for the traffic of the scope its results
/// are published as (MixScopeOf: discard for the host default's, a peer
/// for the peers', loopback for none): its decision's traffic becomes the
/// applications' mix of that scope in `mixes` (Publisher::AppMixes),
/// unless config.decision.traffic is set, which wins; without a mix of
/// that scope, uniform as before. Sets each job's decided_for and
/// plan.peers_decided_for. `config` is the one the plan was made of.
void ApplyMixes(RoundPlan& plan, const Config& config, const ScopeMixes& mixes);

/// The jobs of a calibration round for `config`: one per configured path,
/// in configuration order, and, with peers configured, K peer slots, each
/// at the depth classes of its path (CalibratedDepths: config.depths on the
/// discard path and toward peers, stream on loopback; the probes split a
/// job's budget among its classes); all
/// share budget.seconds_per_calibration evenly. When the round runs, what a
/// path leaves of its share is added, evenly, to the budgets of the paths
/// after it (peers excluded: a peer's grant is asked before it starts).
/// `key` is what peers are shown (LoadPeerKey); `previous` and
/// `discovered_at` as in PeerRoundPlan.
RoundPlan PlanRound(const Config& config, std::string identity = {},
                    std::uint64_t peer_round = 0,
                    std::optional<probes::peer::PeerKey> key = std::nullopt,
                    std::optional<Discovery> previous = std::nullopt,
                    std::chrono::steady_clock::time_point discovered_at = {});

/// The agent's round: PlanRound with this host's identity (HostIdentity),
/// the next rendezvous round (asked of `next_round` only when peers are
/// configured) and the peers' key (LoadPeerKey). A key that cannot be read
/// leaves the round without peers, logged as an error: the other paths
/// still run.
RoundPlan PlanAgentRound(const Config& config,
                         const std::function<std::uint64_t()>& next_round,
                         std::optional<Discovery> previous,
                         std::chrono::steady_clock::time_point discovered_at);

/// The key presented to peers: the first of peers.key_file, or of
/// sink.key_file when that is empty; nullopt when both are empty. kIo or
/// kParse (naming the file) when it cannot be read.
Result<std::optional<probes::peer::PeerKey>> LoadPeerKey(const Config& config);

struct PathReport {
  PathId path;  ///< the job's path
  Result<probes::CalibrationReport> report;
  DecidedFor decided_for;  ///< the job's (the round's for a peer)
};

/// What a round produced. Jobs after a cancellation are not run.
struct RoundOutcome {
  /// In job order; for peers, one report per peer that calibrated
  /// (outcome success), under the peer's path.
  std::vector<PathReport> reports;
  std::vector<PeerAttempt> peer_attempts;  ///< every peer asked, in order
  /// The discovery this round ran a lookup for (nullopt when it reused the
  /// previous one, or without peers), and when (steady clock).
  std::optional<Discovery> discovery;
  std::chrono::steady_clock::time_point discovered_at{};
  double duration_seconds = 0;      ///< wall time of the whole round
  bool cancelled = false;  ///< a stop was requested, or a probe reported one
};

/// Thread safety: Start, RequestStop and TakeOutcome on the owner's thread.
/// Not copyable, not movable.
class CalibrationRunner {
 public:
  /// `notify` is called on the worker thread, once per round, after the
  /// outcome is ready for TakeOutcome(); it must not block or call back
  /// into the runner (post to the owner's event loop). It is never called
  /// once the destructor has begun.
  CalibrationRunner(CalibrateFn calibrate, std::function<void()> notify);
  /// Requests a stop of a running round and joins its worker.
  ~CalibrationRunner();
  CalibrationRunner(const CalibrationRunner&) = delete;
  CalibrationRunner& operator=(const CalibrationRunner&) = delete;

  /// Starts a round on a new worker. False (nothing started) while the
  /// previous round's outcome has not been taken.
  bool Start(RoundPlan plan);
  /// Asks the running round to end; its probes return what they measured
  /// within about a second and the outcome says cancelled. No-op when idle.
  void RequestStop();
  /// The finished round's outcome (joining its worker, which has then only
  /// to return), or nullopt while it runs or when none was started.
  std::optional<RoundOutcome> TakeOutcome();

 private:
  struct Mailbox;
  CalibrateFn calibrate_;
  std::shared_ptr<Mailbox> mailbox_;
  bool started_ = false;  // a round's outcome is still to be taken
  std::jthread worker_;   // last member: joined before the rest goes
};

}  // namespace zcal::agent
