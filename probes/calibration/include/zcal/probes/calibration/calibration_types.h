// What a calibration is asked (its options) and what it returns (its
// report, or how it failed): the types the calibration loop and every
// PathRunner share, apart from the loop itself.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/sample.h"
#include "zcal/common/result.h"
#include "zcal/probes/host/cpu_accounting.h"
#include "zcal/probes/host/host_facts.h"
#include "zcal/probes/peer/peer_keys.h"
#include "zcal/probes/send/buffer_pool.h"
#include "zcal/probes/types/peer_failure.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes {

struct CalibrationOptions {
  /// Where to send: loopback (an in-process sink on 127.0.0.1) or a peer's
  /// sink.
  Target target;
  /// The path's name in samples and results; "" = ToString(target).
  std::string path_name;
  std::vector<calibrator::Method> methods;  ///< empty = all five
  /// The depth classes calibrated in this one run (calibrator/depth.h: the
  /// zerocopy sends in flight in each zerocopy probe; kStreamDepth as many
  /// as the pool holds), at most kMaxDepthClasses, none twice; empty =
  /// stream only. The budget covers them all, and the baselines (which
  /// have no depth) are probed once for all of them. A class whose verdict
  /// cannot differ from its neighbours' is not probed (ClassAnalysis).
  std::vector<std::uint32_t> depths;
  /// Whether the report carries the host facts (CalibrationReport::host),
  /// read at the start. The agent reads them once per round for every
  /// path and sets this false; `zcal calibrate` prints them.
  bool read_host = true;
  std::uint64_t min_size = 1024;            ///< bytes, >= 1
  std::uint64_t max_size = 256 * 1024;      ///< bytes, >= min_size
  calibrator::DecisionOptions decision;
  /// Seconds for the whole calibration, > 0. Over TCP, probe durations are
  /// cut to fit the planner's estimate of the probes left (20-250 ms); on
  /// the discard path every probe takes 10 ms and the calibration ends when
  /// the planner is done, often well before the budget; the budget also
  /// says how many refinement probes it may take (PlannerOptionsFor). When
  /// the budget is spent the calibration ends with what was measured.
  /// 5 s: what a five-method discard calibration needs here (1.2-3 s
  /// when the planner ends it, the budget ends it in noisy minutes;
  /// docs/calibrator.md, bench/calibration_seconds.py).
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
  /// The probes' buffer memory (ProbeOptions::buffers): 4 KiB pages or
  /// 2 MiB huge pages. One kind per calibration.
  BufferMemory buffers = BufferMemory::kPages;

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

/// How a peer path's session was lost after its grant.
struct SessionLoss {
  /// kVanished: the sink closed or reset the session, or stopped taking
  /// its data connections (its process ended, its host unreachable);
  /// kTimeout: a data connection of the session got no answer in time (a
  /// link down).
  PeerFailure failure = PeerFailure::kVanished;
  std::string message;  ///< the failed connection's sentence
};

/// How one probe failed: one entry per sample of status kFailed.
struct ProbeFailure {
  std::size_t sample = 0;  ///< index into CalibrationReport::samples
  /// kTimeout (a deadline passed: connect, a socket that accepted nothing
  /// or completions that did not come for 1.2 s, not one byte sent by the
  /// probe's end), kVanished (the receiver reset or closed the
  /// connection, a peer's session no longer takes connections),
  /// kUnreachable (the connection was refused or found no route), or
  /// kLocalError (this host's part: buffers, sockets, io_uring, cancel).
  PeerFailure failure = PeerFailure::kLocalError;
};

/// One depth class's decision.
struct ClassAnalysis {
  std::uint32_t depth = calibrator::kStreamDepth;
  /// Its zerocopy methods at this depth against every baseline probed in
  /// the run (of every class).
  calibrator::Analysis analysis;
  /// Zerocopy methods not probed at this depth, and why ("depths 1 and
  /// stream are both never (slower)"): a deeper class pays less per send,
  /// so a class between two that agree on never or always, a class
  /// shallower than one where zerocopy never wins, and every class of a
  /// method that cannot run or whose sends the kernel copied at the first
  /// class, has their answer, which the stream entry gives its readers.
  std::map<calibrator::Method, std::string> not_probed;
  /// Why the probes of each refined method ended (its planner's account,
  /// or kBudget when the class's share of the time ran out first); copied
  /// into the analysis's results (MethodResult::stop).
  std::map<calibrator::Method, calibrator::PlannerStop> stops;
};

struct CalibrationReport {
  /// The stream class's analysis (of the one class calibrated when that is
  /// not stream): what one calibration decided before depth classes.
  calibrator::Analysis analysis;
  /// Every class of CalibrationOptions::depths (stream only when it is
  /// empty), numeric classes ascending, stream last (ParseDepthClasses's
  /// order; they are probed stream first, then the shallowest, then the
  /// others from the deepest).
  std::vector<ClassAnalysis> classes;
  /// Set when max_size was above what the path carries (the discard
  /// path: 65,507 bytes, one UDP datagram) and the sweep stopped there.
  std::optional<SizeClamp> max_size_clamp;
  std::vector<calibrator::Sample> samples;
  PathFacts host;  ///< empty unless CalibrationOptions::read_host
  /// The host's load over the probes (cpu_accounting.h); nullopt when
  /// /proc/stat could not be read or the probes took less than a tick.
  std::optional<HostLoad> load;
  double duration_seconds = 0;
  std::size_t probes_run = 0;  ///< probes that sent (unsupported excluded)
  bool cancelled = false;
  /// Set on a peer path whose session was lost after it was granted (a
  /// data connection could not be opened, the sink ended the session):
  /// the sweep stopped there, and its samples are a partial measurement.
  std::optional<SessionLoss> session_lost;
  /// How each failed sample failed, in the order of `samples`.
  std::vector<ProbeFailure> probe_failures;
};

/// Why RunCalibration returned no report. On a peer path whose session
/// failed (refused by the sink, not reached, lost before a probe
/// measured), `peer` says how, so that callers branch on it and not on
/// the message; nullopt for every other failure.
struct CalibrationError : Error {
  std::optional<PeerFailure> peer;

  CalibrationError() = default;
  /// Implicit, so that a Result<T> converts to a Result<T, CalibrationError>
  /// with no peer kind (a caller's own failure, a fake in a test).
  CalibrationError(Error error, std::optional<PeerFailure> kind = std::nullopt)
      : Error(std::move(error)), peer(kind) {}
};

/// Builds the unexpected value of a Result<T, CalibrationError>.
inline tl::unexpected<CalibrationError> FailCalibration(
    Errc code, std::string message, std::optional<PeerFailure> peer = std::nullopt) {
  return tl::unexpected<CalibrationError>(
      CalibrationError(Error{code, std::move(message)}, peer));
}

/// Checks the options: Errc::kInvalidArgument with a sentence naming the
/// bad field.
Result<void> ValidateCalibrationOptions(const CalibrationOptions& options);

}  // namespace zcal::probes
