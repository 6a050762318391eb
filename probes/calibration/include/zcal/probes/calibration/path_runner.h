// One path of a calibration behind one interface: what the path sets up (a
// sink, a peer's session, a network namespace), how long and how much each
// of its probes may send, one probe, and how the path ended. The
// calibration loop (calibration.cc) knows only this; each path is one file
// (loopback_path.cc, peer_path.cc, discard_path.cc).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "zcal/calibrator/method.h"
#include "zcal/calibrator/sample.h"
#include "zcal/probes/calibration/calibration_types.h"
#include "zcal/probes/send/buffer_pool.h"
#include "zcal/probes/send/capabilities.h"
#include "zcal/probes/send/probe.h"
#include "zcal/probes/send/probe_runner.h"

namespace zcal::probes {

using PathClock = std::chrono::steady_clock;
using PathSeconds = std::chrono::duration<double>;

/// Share of the budget the probes of a TCP path are sized to (the rest is
/// for what is not sending: setup, drain, analysis).
inline constexpr double kBudgetShareForProbes = 0.85;

/// The length of every probe of the discard path, and what one costs
/// beyond sending (its set-up, the drain of its completions, the planner's
/// analysis): together they say how many probes a budget holds
/// (PlannerOptionsFor). docs/probes.md has the measurements behind both.
inline constexpr PathSeconds kDiscardProbe{0.01};
inline constexpr PathSeconds kDiscardOverhead{0.0015};

/// One probe of a path.
struct PathProbe {
  ProbeOutcome outcome;
  /// The path takes no further probe (a peer's sink stopped taking the
  /// session's connections): the sweep ends after this sample, and `loss`
  /// says how.
  std::optional<SessionLoss> loss;
};

/// A path opened for one calibration. Not thread-safe: the calibration's
/// thread opens, probes and closes it.
class PathRunner {
 public:
  virtual ~PathRunner() = default;

  /// Whether `method` can run on this path; by default what the host
  /// allows (CheckSupport under `root`).
  virtual Support SupportOf(calibrator::Method method, const std::string& root) const;

  /// The latest instant the path allows probes until (a peer's grant);
  /// time_point::max() when only the budget bounds it.
  virtual PathClock::time_point Deadline() const { return PathClock::time_point::max(); }

  /// How long the next probe sends, given the budget's `remaining` time and
  /// the `left` probes the planner still expects (>= 1).
  virtual PathSeconds ProbeDuration(PathSeconds remaining, std::size_t left) const = 0;

  /// Sets where `probe` sends and applies the path's own caps to its
  /// max_bytes (0 = none yet). Errc::kFailed, with a message that says why
  /// (reported as the unfinished methods' stop), when the path has no room
  /// for it (a peer's granted bytes are spent): the sweep ends there.
  virtual Result<void> Prepare(ProbeOptions& probe, std::size_t left) = 0;

  /// Runs one prepared probe.
  virtual PathProbe Probe(const ProbeOptions& probe) = 0;

  /// After the last probe (`stopped` when the sweep was cancelled): frees
  /// the path's resources and says whether it was lost meanwhile though no
  /// probe saw it (a peer's sink that ended the session). Called once.
  virtual std::optional<SessionLoss> Close(const std::vector<calibrator::Sample>& samples,
                                           bool stopped) = 0;

 protected:
  /// The buffers of the path's probes, one mapping for the calibration.
  BufferArena arena_{kPoolReserveBytes};
};

/// Probe durations of the TCP paths: the budget's remaining share per
/// probe left, within 20-250 ms.
PathSeconds TcpProbeDuration(PathSeconds remaining, std::size_t left);

/// The path of `options.target`. Errors are RunCalibration's for a path
/// that cannot be set up (the sink, the peer's session, the namespace).
Result<std::unique_ptr<PathRunner>, CalibrationError> OpenPath(const CalibrationOptions& options);

/// RunCalibration (calibration.h) on `path`, opened by the caller and
/// closed by the calibration: for a path that is not one of OpenPath's (a
/// simulated one, in tests). `options.target` still says which kind of
/// path it stands for (its grid, its classes); no host facts are read
/// (`read_host` is not consulted), and the budget counts from the call.
Result<CalibrationReport, CalibrationError> RunCalibrationOn(
    const CalibrationOptions& options, PathRunner& path,
    const std::function<void(const CalibrationProgress&)>& on_progress = {});

/// One per path, each in its own file.
Result<std::unique_ptr<PathRunner>, CalibrationError> OpenLoopbackPath(
    const CalibrationOptions& options);
Result<std::unique_ptr<PathRunner>, CalibrationError> OpenPeerPath(
    const CalibrationOptions& options);
Result<std::unique_ptr<PathRunner>, CalibrationError> OpenDiscardPath(
    const CalibrationOptions& options);

}  // namespace zcal::probes
