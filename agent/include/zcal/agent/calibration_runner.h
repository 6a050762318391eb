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
// Room for what follows (issues 9 and 10): a round is a list of jobs, each
// a probes::CalibrationOptions with its own target (loopback, discard, a
// peer chosen for this round); Probing() tells a sink on another thread to
// answer BUSY while the agent probes.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "zcal/agent/config.h"
#include "zcal/common/result.h"
#include "zcal/probes/calibration.h"

namespace zcal::agent {

/// The calibration of one path; probes::RunCalibration by default.
using CalibrateFn = std::function<Result<probes::CalibrationReport>(
    const probes::CalibrationOptions&,
    const std::function<void(const probes::CalibrationProgress&)>&)>;

/// One path of a round: what to calibrate there. options.cancel is set by
/// the runner; options.path_name names the path in results and metrics.
struct PathJob {
  probes::CalibrationOptions options;
};

/// The jobs of a calibration round for `config`: one per configured path,
/// in configuration order, sharing budget.seconds_per_calibration evenly.
/// When the round runs, what a path leaves of its share is added, evenly,
/// to the budgets of the paths after it.
std::vector<PathJob> PlanRound(const Config& config);

struct PathReport {
  std::string path;  ///< the job's path name
  Result<probes::CalibrationReport> report;
};

/// What a round produced. Jobs after a cancellation are not run.
struct RoundOutcome {
  std::vector<PathReport> reports;  ///< in job order
  double duration_seconds = 0;      ///< wall time of the whole round
  bool cancelled = false;  ///< a stop was requested, or a probe reported one
};

/// Thread safety: Start, RequestStop and TakeOutcome on the owner's thread;
/// Probing from any thread. Not copyable, not movable.
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
  bool Start(std::vector<PathJob> jobs);
  /// Asks the running round to end; its probes return what they measured
  /// within about a second and the outcome says cancelled. No-op when idle.
  void RequestStop();
  /// The finished round's outcome (joining its worker, which has then only
  /// to return), or nullopt while it runs or when none was started.
  std::optional<RoundOutcome> TakeOutcome();

  /// True from Start until the worker has stored its outcome.
  bool Probing() const;

 private:
  struct Mailbox;
  CalibrateFn calibrate_;
  std::shared_ptr<Mailbox> mailbox_;
  bool started_ = false;  // a round's outcome is still to be taken
  std::jthread worker_;   // last member: joined before the rest goes
};

}  // namespace zcal::agent
