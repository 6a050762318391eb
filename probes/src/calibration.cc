#include "zcal/probes/calibration.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "probe_runner.h"
#include "zcal/calibrator/planner.h"
#include "zcal/probes/capabilities.h"
#include "zcal/probes/discard.h"
#include "zcal/probes/peer_client.h"
#include "zcal/probes/probe.h"
#include "zcal/probes/sink.h"

namespace zcal::probes {

namespace {

using calibrator::Method;
using calibrator::Sample;
using calibrator::SampleStatus;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;
using namespace std::chrono_literals;

// Probe durations over TCP: shorter ones are dominated by connection setup
// and the TCP ramp; longer ones would let a handful of probes eat the
// budget.
constexpr Seconds kMinProbe{0.02};
constexpr Seconds kMaxProbe{0.25};
// On the discard path (UDP, no ramp) a probe is set up in ~1-2 ms, and what
// scatters its CPU per byte is the machine from one probe to the next, not
// the probe's length (bench/discard_probe_durations: 20 or 50 ms probes
// scatter about as much as 10 ms ones, and cost two to five times as much of
// the budget). Below 10 ms start-up shows: CPU per byte ~10 % above that of
// long probes. So every discard probe takes 10 ms, and the calibration as
// long as the planner needs, not the whole budget.
constexpr Seconds kDiscardProbe{0.01};
// What a discard probe costs beyond sending, measured (set-up through the
// namespace helper, the planner's analysis): 1-3 ms.
constexpr Seconds kDiscardOverhead{0.0025};
// Repeats per size the planner may add on the discard path (its default: 9).
constexpr std::uint32_t kDiscardMaxRepeats = 16;
// What the end of a calibration takes after its last probe (the final
// analysis, 10-30 ms with five methods): kept out of the budget, so that a
// calibration that runs to its budget still ends within it (measured: 5.01
// s of wall for `--budget 5` before).
constexpr Seconds kFinishReserve{0.05};
// Share of the budget left for what is not sending (setup, drain, analysis).
constexpr double kBudgetShareForProbes = 0.85;

std::vector<Method> MethodsOf(const CalibrationOptions& options) {
  std::vector<Method> methods;
  const auto& wanted = options.methods.empty()
                           ? std::vector<Method>(calibrator::kAllMethods.begin(),
                                                 calibrator::kAllMethods.end())
                           : options.methods;
  for (Method m : wanted) {
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
  }
  return methods;
}

std::optional<SizeClamp> MaxSizeClamp(const CalibrationOptions& options) {
  if (options.target.kind != TargetKind::kDiscard || options.max_size <= kMaxUdpPayloadBytes) {
    return std::nullopt;
  }
  return SizeClamp{options.max_size, kMaxUdpPayloadBytes, "the largest UDP payload over IPv4"};
}


// How long a peer's sink may take to connect and answer a handshake.
constexpr auto kPeerConnectTimeout = std::chrono::milliseconds(3000);
// What a peer session adds to the budget: setup, the last probe's drain.
constexpr Seconds kPeerSessionSlack{2.0};

PeerResult<PeerSession> OpenPeerSession(const CalibrationOptions& options) {
  PeerSessionRequest request;
  const Seconds wanted = Seconds(options.budget_seconds) + kPeerSessionSlack;
  request.duration = std::chrono::milliseconds(static_cast<std::int64_t>(
      std::min(std::ceil(wanted.count() * 1000), double{peer::kMaxSessionMs})));
  request.max_bytes_per_second = options.max_bytes_per_second;
  if (options.max_bytes_per_second != 0) {
    request.max_bytes = static_cast<std::uint64_t>(std::min(
        static_cast<double>(options.max_bytes_per_second) * wanted.count(),
        static_cast<double>(peer::kMaxSessionBytes)));
    request.max_bytes = std::max<std::uint64_t>(request.max_bytes, 1);
  }
  return PeerSession::Open(options.target.peer, options.peer_key, request, kPeerConnectTimeout);
}

std::string NoProbeMessage(const CalibrationOptions& options,
                           const std::vector<Sample>& samples) {
  std::string text = "no probe could run on path " + options.PathName() + ":";
  std::set<std::string> seen;
  for (const Sample& s : samples) {
    if (s.ok() || !seen.insert(s.error).second) continue;
    text += "\n  " + std::string(calibrator::MethodName(s.method)) + ": " + s.error;
  }
  if (samples.empty()) text += " the budget ended before the first probe";
  return text;
}

}  // namespace

calibrator::PlannerOptions PlannerOptionsFor(const CalibrationOptions& options) {
  calibrator::PlannerOptions planner;
  planner.path = options.PathName();
  planner.methods = MethodsOf(options);
  planner.min_size = options.min_size;
  const auto clamp = MaxSizeClamp(options);
  planner.max_size = clamp ? clamp->used_bytes : options.max_size;
  planner.decision = options.decision;
  // Bad sizes are ValidateCalibrationOptions's to report, not this sizing's.
  if (options.target.kind == TargetKind::kDiscard && calibrator::ValidatePlannerOptions(planner)) {
    // A discard probe has a fixed length, so the budget says how many
    // probes fit: the refinement may use what the coarse grid leaves, up to
    // the planner's own stop (the threshold at the stated resolution). The
    // planner's default (54 per method) ended five-method calibrations
    // after ~230 probes, 2.9 s, with intervals still at +-10-50 % here.
    // Each method may use all of it, not a third: one whose crossover is
    // flat needs more than one that settles after a few rounds, and the
    // budget's end stops the calibration anyway (an even split left runs
    // ending at 2-3.7 s of 5 with a method short of its resolution).
    std::size_t zerocopy = 0;
    for (Method m : planner.methods) zerocopy += calibrator::IsZerocopy(m) ? 1 : 0;
    const std::size_t coarse =
        calibrator::CoarseGrid(planner).size() * planner.methods.size() * planner.repeats;
    const auto fit = static_cast<std::size_t>(options.budget_seconds * kBudgetShareForProbes /
                                              (kDiscardProbe + kDiscardOverhead).count());
    if (zerocopy > 0 && fit > coarse) {
      planner.refine_probes = std::max(planner.refine_probes, fit - coarse);
      // A flat crossover (uring_send_zc_fixed here: within 1-5 % of
      // uring_send over an octave) stayed 0.07-0.16 pp short of the
      // regret resolution after nine repeats of the sizes around it, with
      // seconds of the budget left.
      planner.max_repeats = std::max<std::uint32_t>(planner.max_repeats, kDiscardMaxRepeats);
    }
  }
  return planner;
}

std::string ValidateCalibrationOptions(const CalibrationOptions& options) {
  if (!(options.budget_seconds > 0) || !std::isfinite(options.budget_seconds) ||
      options.budget_seconds > 86400) {
    return "budget: must be more than 0 and at most 86400 seconds";
  }
  if (options.max_size > (1ULL << 30)) return "max_size: at most 1 GiB";
  if (options.target.kind == TargetKind::kDiscard && options.min_size > kMaxUdpPayloadBytes) {
    return "min_size: at most " + std::to_string(kMaxUdpPayloadBytes) +
           " bytes on the discard path (the largest UDP payload over IPv4)";
  }
  const Result<void> planner = calibrator::ValidatePlannerOptions(PlannerOptionsFor(options));
  return planner ? std::string() : planner.error().message;
}

Result<CalibrationReport> RunCalibration(
    const CalibrationOptions& options,
    const std::function<void(const CalibrationProgress&)>& on_progress) {
  if (std::string why = ValidateCalibrationOptions(options); !why.empty()) {
    return Fail(Errc::kInvalidArgument, why);
  }
  const auto start = Clock::now();
  auto budget_end = start + std::chrono::duration_cast<Clock::duration>(
                                      Seconds(options.budget_seconds));
  CalibrationReport report;
  report.host = CollectHostFacts({options.root, "", options.target});
  report.max_size_clamp = MaxSizeClamp(options);

  std::unique_ptr<Sink> sink;
  common::HostPort target = options.target.peer;
  if (options.target.kind == TargetKind::kLoopback) {
    auto started = Sink::Start(SinkOptions{});
    if (!started) {
      return Fail(Errc::kUnsupported,
                  "no probe could run on path loopback: " + started.error().message);
    }
    sink = std::move(*started);
    target = sink->endpoint();
  }
  // A peer path is one session of the peer's sink, for the whole budget.
  std::optional<PeerSession> session;
  if (options.target.kind == TargetKind::kPeer) {
    auto opened = OpenPeerSession(options);
    if (!opened) {
      // The codes stay as the session said (busy, key, limit, version,
      // protocol, unreachable): the agent counts a peer's refusals by them.
      return Fail(opened.error().code,
                  "no probe could run on path " + options.PathName() + ": " +
                      opened.error().message);
    }
    session = std::move(*opened);
    // The calibration ends with the grant, whatever the budget said.
    budget_end = std::min(budget_end, Clock::now() + session->granted_duration());
  }
  std::uint64_t peer_bytes_sent = 0;
  // The discard path's namespace lives as long as this calibration.
  std::unique_ptr<DiscardNamespace> discard;
  std::optional<Error> no_discard;
  if (options.target.kind == TargetKind::kDiscard) {
    auto created = DiscardNamespace::Create(DiscardNamespaceOptions{"blackhole", options.root});
    if (created) {
      discard = std::move(*created);
    } else if (created.error().code == Errc::kUnsupported) {
      no_discard = created.error();
    } else {
      return Fail(Errc::kUnsupported,
                  "no probe could run on path discard: " + created.error().message);
    }
  }

  calibrator::SweepPlanner planner(PlannerOptionsFor(options));
  std::map<Method, Support> support;
  for (Method m : planner.options().methods) {
    // The path, not the method, is missing: one sentence for all.
    support[m] = no_discard ? Support{false, no_discard->message}
                            : CheckSupport(m, CapabilityOptions{options.root});
  }
  auto cancelled = [&] {
    return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
  };

  while (auto request = planner.Next()) {
    if (cancelled()) {
      report.cancelled = true;
      break;
    }
    const auto now = Clock::now();
    const Seconds remaining = budget_end - now;
    const std::size_t total = std::max(planner.EstimatedTotal(), planner.issued());
    const std::size_t left = total - planner.issued() + 1;
    const Seconds duration =
        options.target.kind == TargetKind::kDiscard
            ? kDiscardProbe
            : std::clamp(remaining * kBudgetShareForProbes / static_cast<double>(left),
                         kMinProbe, kMaxProbe);
    if (remaining < duration * 2 + kFinishReserve) break;  // the budget is spent
    if (on_progress) {
      on_progress({planner.issued() - 1, total, request->method, request->size_bytes});
    }

    Sample sample;
    bool sent = false;
    const Support& supported = support[request->method];
    if (!supported.supported) {
      sample.path = options.PathName();
      sample.method = request->method;
      sample.size_bytes = request->size_bytes;
      sample.repeat = request->repeat;
      sample.status = SampleStatus::kUnsupported;
      sample.error = supported.reason;
    } else {
      ProbeOptions probe;
      probe.method = request->method;
      probe.size_bytes = request->size_bytes;
      probe.repeat = request->repeat;
      probe.path = options.PathName();
      probe.sink = target;
      probe.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(duration);
      probe.max_bytes = static_cast<std::uint64_t>(
          static_cast<double>(options.max_bytes_per_second) * duration.count());
      if (options.max_bytes_per_second != 0) {
        probe.max_bytes = std::max<std::uint64_t>(probe.max_bytes, request->size_bytes);
      }
      if (session) {
        // The session's bytes are granted once, for all its probes: each
        // probe gets its share of what is left.
        const std::uint64_t granted = session->granted_bytes();
        const std::uint64_t grant_left = granted - std::min(peer_bytes_sent, granted);
        const std::uint64_t share = std::max<std::uint64_t>(grant_left / left, request->size_bytes);
        if (grant_left < request->size_bytes) break;
        // A probe stops issuing once it reached its cap, so it may pass it
        // by less than one message: cap it one message short of the share.
        const std::uint64_t cap = share - request->size_bytes + 1;
        probe.max_bytes = probe.max_bytes == 0 ? cap : std::min(probe.max_bytes, cap);
      }
      probe.cancel = options.cancel;
      probe.root = options.root;
      const auto probe_start = Clock::now();
      if (discard) {
        sample = RunDiscardProbe(*discard, probe);
      } else if (session) {
        std::optional<Error> lost;
        sample = RunProbeOn(probe, [&session, &lost] {
          auto data = session->OpenData(kPeerConnectTimeout);
          if (!data) lost = data.error();
          return data;
        });
        peer_bytes_sent += sample.bytes;
        if (lost) {
          // The sink no longer takes this session's connections: every
          // further probe would fail the same way.
          report.session_lost = true;
          report.session_error = lost->message;
          planner.Record(sample);
          break;
        }
      } else {
        sample = RunProbe(probe);
      }
      sent = sample.status != SampleStatus::kUnsupported;
      if (options.max_bytes_per_second != 0) {
        // A probe that hit its byte cap early rests until its bytes fit the
        // average rate.
        const Seconds earliest_next(static_cast<double>(sample.bytes) /
                                    static_cast<double>(options.max_bytes_per_second));
        const auto resume = probe_start + std::chrono::duration_cast<Clock::duration>(earliest_next);
        while (Clock::now() < resume && !cancelled()) {
          std::this_thread::sleep_for(std::min<Clock::duration>(resume - Clock::now(), 50ms));
        }
      }
    }
    if (!sample.ok() && cancelled()) {
      // The probe was cut short: its numbers mean nothing.
      report.cancelled = true;
      break;
    }
    if (sent) ++report.probes_run;
    planner.Record(sample);
  }

  if (session && !report.session_lost && !report.cancelled) {
    // A sink that ended the session before its client did (its agent
    // killed, a limit) may have cut the last probe short even where the
    // probe ended on its clock without a failed send: the session's
    // results are not used (the peer's last good ones stay).
    if (auto open = session->StillOpen(); !open) {
      report.session_lost = true;
      report.session_error = open.error().message;
    } else if (std::any_of(planner.samples().begin(), planner.samples().end(),
                           [](const Sample& s) { return s.status == SampleStatus::kFailed; })) {
      // A probe failed while its connection was open (the peer killed, its
      // link down mid-send): whether the session is still there decides
      // whether the failure is the method's or the session's.
      auto alive = session->OpenData(std::chrono::milliseconds(1000));
      if (!alive) {
        report.session_lost = true;
        report.session_error = alive.error().message;
      }
    }
  }
  // The sink is free for its next client (and its own host's calibration)
  // once the probes are done, not after the analysis below, which may take
  // longer than the probes on a short budget.
  if (session) session->Close();
  report.samples = planner.samples();
  report.analysis = planner.Result();
  report.duration_seconds = Seconds(Clock::now() - start).count();
  const bool any_ok = std::any_of(report.samples.begin(), report.samples.end(),
                                  [](const Sample& s) { return s.ok(); });
  if (!any_ok && !report.cancelled) {
    if (report.session_lost) {
      return Fail(Errc::kFailed, "the session with the sink of path " + options.PathName() +
                                     " was lost before a probe measured: " +
                                     report.session_error);
    }
    return Fail(Errc::kUnsupported, NoProbeMessage(options, report.samples));
  }
  return report;
}

}  // namespace zcal::probes
