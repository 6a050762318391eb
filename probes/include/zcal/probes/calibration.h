// The calibration runner: drives the calibrator's sweep planner with real
// probes on one path, within a time budget.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/planner.h"
#include "zcal/common/result.h"
#include "zcal/calibrator/sample.h"
#include "zcal/probes/host_facts.h"
#include "zcal/probes/peer_keys.h"
#include "zcal/probes/target.h"

namespace zcal::probes {

struct CalibrationOptions {
  /// Where to send: loopback (an in-process sink on 127.0.0.1) or a peer's
  /// sink.
  Target target;
  /// The path's name in samples and results; "" = ToString(target).
  std::string path_name;
  std::vector<calibrator::Method> methods;  ///< empty = all five
  std::uint64_t min_size = 1024;            ///< bytes, >= 1
  std::uint64_t max_size = 256 * 1024;      ///< bytes, >= min_size
  calibrator::DecisionOptions decision;
  /// Seconds for the whole calibration, > 0. Over TCP, probe durations are
  /// cut to fit the planner's estimate of the probes left (20-250 ms); on
  /// the discard path every probe takes 10 ms and the calibration ends when
  /// the planner is done, often well before the budget; the budget also
  /// says how many refinement probes it may take (PlannerOptionsFor). When
  /// the budget is spent the calibration ends with what was measured.
  /// 5 s: what a five-method discard calibration needs here (2.6-3.5 s
  /// when the planner ends it, bench/calibration_seconds.py).
  double budget_seconds = 5;
  /// Average byte rate the probes may send, bytes per second; 0 = unlimited.
  /// Each probe sends at most this times its duration.
  std::uint64_t max_bytes_per_second = 0;
  /// When set to true by another thread (or a signal handler), the
  /// calibration stops within ~1 s and returns what was measured.
  const std::atomic<bool>* cancel = nullptr;
  std::string root = "/";  ///< sysfs/procfs root for host facts
  /// kPeer: the key presented to the peer's sink; absent = none (only a
  /// sink with `auth: none` accepts that).
  std::optional<peer::PeerKey> peer_key;

  /// path_name, or the target's spelling when it is empty.
  std::string PathName() const {
    return path_name.empty() ? ToString(target) : path_name;
  }
};

struct CalibrationProgress {
  std::size_t done = 0;   ///< probes finished
  std::size_t total = 0;  ///< planner's estimate of all probes, >= done + 1
  calibrator::Method method = calibrator::Method::kCopy;  ///< probe starting
  std::uint64_t size_bytes = 0;
};

/// A requested size the path cannot carry, and the size used instead.
struct SizeClamp {
  std::uint64_t requested_bytes = 0;
  std::uint64_t used_bytes = 0;
  std::string reason;  ///< "the largest UDP payload over IPv4"
};

struct CalibrationReport {
  calibrator::Analysis analysis;
  /// Set when max_size was above what the path carries (the discard
  /// path: 65,507 bytes, one UDP datagram) and the sweep stopped there.
  std::optional<SizeClamp> max_size_clamp;
  std::vector<calibrator::Sample> samples;
  HostFacts host;
  double duration_seconds = 0;
  std::size_t probes_run = 0;  ///< probes that sent (unsupported excluded)
  bool cancelled = false;
  /// A peer path whose session was lost after it was granted (a data
  /// connection could not be opened: the sink gone, its host unreachable):
  /// the sweep stopped there, and its samples are a partial measurement.
  /// `session_error` is the failed connection's sentence.
  bool session_lost = false;
  std::string session_error;
};

/// Checks the options; a sentence naming the bad field, or empty if valid.
std::string ValidateCalibrationOptions(const CalibrationOptions& options);

/// The sweep planner's options for these calibration options (path name,
/// methods, sizes, decision). On the discard path, whose probes have a
/// fixed length, the refinement may also use the probes the budget leaves
/// after the coarse grid (each zerocopy method's refine_probes raised to
/// all of them: the budget's end stops the calibration) and repeat a size
/// up to 16 times (max_repeats); elsewhere probes are stretched to fill the
/// budget instead.
calibrator::PlannerOptions PlannerOptionsFor(const CalibrationOptions& options);

/// Runs a calibration. Errors: Errc::kInvalidArgument for bad options (the
/// sentence of ValidateCalibrationOptions); Errc::kUnsupported when no probe
/// could run at all (every method unsupported, the sink unable to start),
/// with the reasons. On a peer path the calibration is one session of the
/// peer's sink (peer_client.h), and a session that does not open keeps the
/// code PeerSession::Open gave: kBusy (try later or another peer),
/// kPermission (the key), kInvalidArgument (over the sink's limits),
/// kUnsupported (no common version), kParse (a malformed answer), kFailed
/// (unreachable, closed, or no answer in time); a session lost after its
/// grant ends the sweep with session_lost set (and kFailed instead of
/// kUnsupported when not one probe had measured). Otherwise the report,
/// whatever the verdicts. `on_progress` is called on the calling thread before each
/// probe.
Result<CalibrationReport> RunCalibration(
    const CalibrationOptions& options,
    const std::function<void(const CalibrationProgress&)>& on_progress = {});

}  // namespace zcal::probes
