#include "zcal/agent/metrics/metrics.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "metrics_peers.h"
#include "metrics_sink.h"
#include "metrics_snapshot.h"
#include "zcal/common/clock.h"
#include "zcal/zcal.h"

namespace zcal::agent {
namespace {

using calibrator::Method;
using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;

constexpr CalibrationResult kResults[] = {CalibrationResult::kSuccess,
                                          CalibrationResult::kFailed,
                                          CalibrationResult::kCancelled};
constexpr CalibrationTrigger kTriggers[] = {
    CalibrationTrigger::kStartup, CalibrationTrigger::kSchedule,
    CalibrationTrigger::kSignal, CalibrationTrigger::kFingerprint,
    CalibrationTrigger::kRetry};
constexpr HttpDrop kDrops[] = {HttpDrop::kRequestTimeout,
                               HttpDrop::kWriteTimeout, HttpDrop::kClientLimit,
                               HttpDrop::kServerLimit};

constexpr const char* kProbeFailures = "zcal_probe_failures_total";
constexpr const char* kProbeFailuresHelp =
    "Probes that did not produce a measurement, by path, method and reason "
    "(unsupported, failed).";

Gauge& OneGauge(prometheus::Registry& registry, const std::string& name,
                const std::string& help, const prometheus::Labels& labels = {}) {
  return BuildGauge().Name(name).Help(help).Register(registry).Add(labels);
}

Counter& OneCounter(prometheus::Registry& registry, const std::string& name,
                    const std::string& help) {
  return BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

}  // namespace

// The live metrics. Every series of a fixed label value exists from the
// start, so that rate() and alerts see a 0 before the first event instead
// of no series.
struct Metrics::Live {
  Live(const std::string& version, double start_time_seconds);

  prometheus::Registry registry;
  std::map<CalibrationResult, Counter*> calibrations;
  std::map<CalibrationTrigger, Counter*> triggers;
  prometheus::Histogram* duration = nullptr;
  Gauge* last_success = nullptr;
  Gauge* running = nullptr;
  Gauge* next_calibration = nullptr;
  Gauge* budget_used = nullptr;
  Family<Counter>* probe_failures = nullptr;
  Counter* reloads_ok = nullptr;
  Counter* reloads_failed = nullptr;
  Counter* fingerprint_changes = nullptr;
  std::map<std::string, Counter*, std::less<>> state_errors;
  Gauge* state_unsaved = nullptr;
  Gauge* repair_failing = nullptr;
  Gauge* publish_failing = nullptr;
  Counter* publishes = nullptr;
  Gauge* entries = nullptr;
  Gauge* last_publish = nullptr;
  Gauge* heartbeat = nullptr;
  std::map<SegmentDamage, Counter*> repairs;
  Counter* wall_steps_forward = nullptr;
  Counter* wall_steps_back = nullptr;
  std::map<ExportFormat, Counter*> export_writes;
  std::map<ExportFormat, Counter*> export_errors;
  std::map<HttpDrop, Counter*> http_drops;
  Family<Counter>* http_responses = nullptr;
  Gauge* http_open = nullptr;

  // The probe-failure series by (path, method, reason), to drop a path's.
  std::mutex failures_mutex;
  std::map<std::tuple<std::string, Method, std::string>, Counter*> failures;
};

Metrics::Live::Live(const std::string& version, double start_time_seconds) {
  OneGauge(registry, "zcal_build_info",
           "zcal build: version and shared-memory ABI.",
           {{"version", version}, {"abi_major", std::to_string(ZCAL_ABI_MAJOR)}})
      .Set(1);
  OneGauge(registry, "zcal_agent_start_time_seconds",
           "Unix time at which the agent started.")
      .Set(start_time_seconds);

  auto& calibrations_family =
      BuildCounter()
          .Name("zcal_calibrations_total")
          .Help("Calibrations finished, by result (success, failed, "
                "cancelled).")
          .Register(registry);
  for (const CalibrationResult r : kResults) {
    calibrations[r] = &calibrations_family.Add(
        {{"result", std::string(CalibrationResultName(r))}});
  }
  auto& triggers_family = BuildCounter()
                              .Name("zcal_calibration_triggers_total")
                              .Help("Calibrations started, by what started "
                                    "them.")
                              .Register(registry);
  for (const CalibrationTrigger t : kTriggers) {
    triggers[t] = &triggers_family.Add(
        {{"trigger", std::string(CalibrationTriggerName(t))}});
  }
  duration = &prometheus::BuildHistogram()
                  .Name("zcal_calibration_duration_seconds")
                  .Help("Wall time of finished calibrations.")
                  .Register(registry)
                  .Add({}, prometheus::Histogram::BucketBoundaries(
                               std::begin(kDurationBuckets),
                               std::end(kDurationBuckets)));
  last_success = &OneGauge(registry, "zcal_last_success_timestamp_seconds",
                           "Unix time at which the last successful "
                           "calibration ended; 0 before the first.");
  running = &OneGauge(registry, "zcal_calibration_running",
                      "1 while a calibration is probing.");
  next_calibration =
      &OneGauge(registry, "zcal_next_calibration_timestamp_seconds",
                "Unix time of the next scheduled calibration; 0 when none "
                "is scheduled.");
  budget_used = &OneGauge(registry, "zcal_probe_budget_used_seconds",
                          "Seconds of probing within the last hour (compare "
                          "with budget.seconds_per_hour).");
  probe_failures = &BuildCounter()
                        .Name(kProbeFailures)
                        .Help(kProbeFailuresHelp)
                        .Register(registry);

  auto& reloads = BuildCounter()
                      .Name("zcal_config_reloads_total")
                      .Help("Configuration reloads (SIGHUP), by result "
                            "(success, failure).")
                      .Register(registry);
  reloads_ok = &reloads.Add({{"result", "success"}});
  reloads_failed = &reloads.Add({{"result", "failure"}});
  fingerprint_changes =
      &OneCounter(registry, "zcal_fingerprint_changes_total",
                  "Changes of the host-fact fingerprint seen while running.");
  auto& state_family = BuildCounter()
                           .Name("zcal_state_errors_total")
                           .Help("State file errors, by operation (load, "
                                 "save).")
                           .Register(registry);
  for (const char* operation : {"load", "save"}) {
    state_errors[operation] = &state_family.Add({{"operation", operation}});
  }
  repair_failing = &OneGauge(registry, "zcal_segment_repair_failing",
                             "1 while the segment is damaged and recreating it "
                             "fails (retried at each heartbeat).");
  publish_failing = &OneGauge(registry, "zcal_segment_publish_failing",
                              "1 while the last table could not be published (the segment "
                              "could not grow: /dev/shm full); the segment keeps the previous "
                              "table, retried at each heartbeat.");
  state_unsaved = &OneGauge(registry, "zcal_state_unsaved",
                            "1 while the state file is older than the published "
                            "state because saving it failed (retried at each "
                            "heartbeat).");
  publishes = &OneCounter(registry, "zcal_segment_publishes_total",
                          "Tables published to the shared-memory segment.");
  entries = &OneGauge(registry, "zcal_segment_entries",
                      "Entries in the shared-memory segment.");
  last_publish = &OneGauge(registry,
                           "zcal_segment_last_publish_timestamp_seconds",
                           "Unix time of the last publish to the segment.");
  heartbeat = &OneGauge(registry, "zcal_segment_heartbeat_timestamp_seconds",
                        "Unix time of the segment's last heartbeat.");
  auto& repairs_family =
      BuildCounter()
          .Name("zcal_segment_repairs_total")
          .Help("Segments recreated because the agent found its segment damaged, by "
                "cause (removed, replaced, truncated, resized, header, table).")
          .Register(registry);
  for (const SegmentDamage cause : kSegmentDamages) {
    repairs[cause] = &repairs_family.Add({{"cause", std::string(SegmentDamageName(cause))}});
  }

  auto& wall_steps_family =
      BuildCounter()
          .Name("zcal_wall_clock_steps_total")
          .Help("Steps of the wall clock (CLOCK_REALTIME) against the steady clock seen "
                "between two heartbeats, by direction (forward, back); intervals and the "
                "ages of this process's results run on the steady clock.")
          .Register(registry);
  wall_steps_forward = &wall_steps_family.Add({{"direction", "forward"}});
  wall_steps_back = &wall_steps_family.Add({{"direction", "back"}});

  auto& export_writes_family =
      BuildCounter()
          .Name("zcal_export_writes_total")
          .Help("Exported files (exports:) rewritten because their content changed, by "
                "format (env, json, libfabric, spdk, spdk-rpc).")
          .Register(registry);
  auto& export_errors_family =
      BuildCounter()
          .Name("zcal_export_errors_total")
          .Help("Exports (exports:) that could not be produced (no usable entry, no "
                "fallback) or written after a publish, by format; the file is left as it is.")
          .Register(registry);
  for (const ExportFormat format : kExportFormats) {
    const std::string name(ExportFormatName(format));
    export_writes[format] = &export_writes_family.Add({{"format", name}});
    export_errors[format] = &export_errors_family.Add({{"format", name}});
  }

  auto& drops = BuildCounter()
                    .Name("zcal_http_connections_dropped_total")
                    .Help("Connections to the metrics listener closed "
                          "without a complete answer, by reason "
                          "(request_timeout, write_timeout, client_limit, "
                          "server_limit).")
                    .Register(registry);
  for (const HttpDrop d : kDrops) {
    http_drops[d] = &drops.Add({{"reason", std::string(HttpDropName(d))}});
  }
  http_responses = &BuildCounter()
                        .Name("zcal_http_responses_total")
                        .Help("Responses written by the metrics listener, by "
                              "HTTP status code.")
                        .Register(registry);
  http_responses->Add({{"code", "200"}});
  http_open = &OneGauge(registry, "zcal_http_open_connections",
                        "Connections open to the metrics listener.");
}

Metrics::Metrics(std::string version, MetricsRole role,
                 const std::shared_ptr<const common::Clock>& clock)
    : live_(std::make_unique<Live>(version, common::NsToSeconds(clock->Wall()))),
      snapshot_(std::make_unique<Snapshot>()),
      sink_(std::make_unique<SinkView>()),
      peers_(std::make_unique<PeerView>()),
      role_(role) {}

Metrics::~Metrics() = default;

void Metrics::SetPublished(const std::map<std::string, MethodStates>& paths, bool stale) {
  snapshot_->SetPublished(paths, stale);
}

void Metrics::SetLastCalibration(const std::string& path,
                                 std::span<const calibrator::Sample> samples,
                                 const std::map<DepthClass, calibrator::PathResult>& fresh) {
  snapshot_->SetLastCalibration(path, samples, fresh);
}

void Metrics::SetHost(const HostInfo& host) { snapshot_->SetHost(host); }

void Metrics::SetPaths(const std::map<std::string, probes::TargetKind>& kinds) {
  snapshot_->SetPaths(kinds);
}

void Metrics::SetHostDefault(const HostDefaultInfo& host_default) {
  snapshot_->SetHostDefault(host_default);
}

void Metrics::RetainPaths(std::span<const std::string> paths) {
  const std::set<std::string> keep(paths.begin(), paths.end());
  snapshot_->RetainPaths(keep);
  std::lock_guard lock(live_->failures_mutex);
  std::erase_if(live_->failures, [&](const auto& item) {
    if (keep.contains(std::get<0>(item.first))) return false;
    live_->probe_failures->Remove(item.second);
    return true;
  });
}

void Metrics::RecordCalibration(CalibrationResult result,
                                double duration_seconds,
                                std::uint64_t now_ns) {
  live_->calibrations.at(result)->Increment();
  live_->duration->Observe(duration_seconds);
  if (result == CalibrationResult::kSuccess) {
    live_->last_success->Set(common::NsToSeconds(now_ns));
  }
}

void Metrics::RecordTrigger(CalibrationTrigger trigger) {
  live_->triggers.at(trigger)->Increment();
}

void Metrics::RecordProbeFailures(const std::string& path,
                                  std::span<const calibrator::Sample> samples) {
  std::lock_guard lock(live_->failures_mutex);
  for (const calibrator::Sample& s : samples) {
    if (s.ok()) continue;
    const std::string reason =
        s.status == calibrator::SampleStatus::kUnsupported ? "unsupported"
                                                           : "failed";
    Counter*& counter = live_->failures[{path, s.method, reason}];
    if (counter == nullptr) {
      counter = &live_->probe_failures->Add(
          {{"path", path},
           {"method", std::string(calibrator::MethodName(s.method))},
           {"reason", reason}});
    }
    counter->Increment();
  }
}

void Metrics::SetPeersEnabled(bool enabled) { peers_->SetEnabled(enabled); }
void Metrics::RecordPeerAttempt(PeerOutcome outcome) { peers_->RecordAttempt(outcome); }
void Metrics::RecordPeerDiscovery(std::size_t peers, DnsFailure failure) {
  peers_->RecordDiscovery(peers, failure);
}
void Metrics::SetPeers(std::map<std::string, bool> stale, InterfaceAggregates interfaces) {
  peers_->SetPublished(std::move(stale), std::move(interfaces));
}

void Metrics::RecordReload(bool ok) {
  (ok ? live_->reloads_ok : live_->reloads_failed)->Increment();
}

void Metrics::RecordFingerprintChange() {
  live_->fingerprint_changes->Increment();
}

void Metrics::RecordStateError(std::string_view operation) {
  // Only the documented operations have a series.
  if (const auto it = live_->state_errors.find(operation);
      it != live_->state_errors.end()) {
    it->second->Increment();
  }
}

void Metrics::RecordPublish(std::uint64_t now_ns, std::size_t entries) {
  live_->publishes->Increment();
  live_->entries->Set(static_cast<double>(entries));
  live_->last_publish->Set(common::NsToSeconds(now_ns));
  live_->heartbeat->Set(common::NsToSeconds(now_ns));
}

void Metrics::RecordHeartbeat(std::uint64_t now_ns) {
  live_->heartbeat->Set(common::NsToSeconds(now_ns));
}

void Metrics::RecordSegmentRepair(SegmentDamage cause) {
  if (const auto it = live_->repairs.find(cause); it != live_->repairs.end()) {
    it->second->Increment();
  }
}

void Metrics::RecordWallClockStep(bool forward) {
  (forward ? live_->wall_steps_forward : live_->wall_steps_back)->Increment();
}

void Metrics::RecordExportWrite(ExportFormat format) {
  live_->export_writes.at(format)->Increment();
}

void Metrics::RecordExportError(ExportFormat format) {
  live_->export_errors.at(format)->Increment();
}

void Metrics::SetSegmentRepairFailing(bool failing) {
  live_->repair_failing->Set(failing ? 1 : 0);
}

void Metrics::SetSegmentPublishFailing(bool failing) {
  live_->publish_failing->Set(failing ? 1 : 0);
}

void Metrics::SetStateUnsaved(bool unsaved) {
  live_->state_unsaved->Set(unsaved ? 1 : 0);
}

void Metrics::SetCalibrationRunning(bool running) {
  live_->running->Set(running ? 1 : 0);
}

void Metrics::SetNextCalibration(double unix_seconds) {
  live_->next_calibration->Set(unix_seconds);
}

void Metrics::SetBudgetUsed(double seconds) { live_->budget_used->Set(seconds); }

void Metrics::SetSink(std::shared_ptr<const probes::PeerSink> sink) {
  sink_->Set(std::move(sink));
}

void Metrics::RecordHttpDrop(HttpDrop drop) {
  live_->http_drops.at(drop)->Increment();
}

void Metrics::RecordHttpResponse(int status) {
  live_->http_responses->Add({{"code", std::to_string(status)}}).Increment();
}

void Metrics::AddHttpOpenConnections(int change) {
  if (change >= 0) {
    live_->http_open->Increment(change);
  } else {
    live_->http_open->Decrement(-change);
  }
}

std::vector<prometheus::MetricFamily> Metrics::Collect() const {
  std::vector<prometheus::MetricFamily> out = live_->registry.Collect();
  if (role_ == MetricsRole::kSink) {
    std::erase_if(out, [](const prometheus::MetricFamily& family) {
      return family.name != "zcal_build_info" && !family.name.starts_with("zcal_http_");
    });
    sink_->AppendTo(out);
    return out;
  }
  // prometheus-cpp leaves out a family without series; its HELP and TYPE
  // are still served, as for every other family, so that the reference
  // and what a scrape shows agree before the first failure.
  if (std::none_of(out.begin(), out.end(), [](const auto& family) {
        return family.name == kProbeFailures;
      })) {
    out.push_back({kProbeFailures, kProbeFailuresHelp,
                   prometheus::MetricType::Counter, {}});
  }
  snapshot_->AppendTo(out);
  sink_->AppendTo(out);
  peers_->AppendTo(out);
  return out;
}

std::string Metrics::Text() const {
  return prometheus::TextSerializer().Serialize(Collect());
}

}  // namespace zcal::agent
