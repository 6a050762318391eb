#include "zcal/agent/metrics/metrics.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include <prometheus/text_serializer.h>

#include "metrics_apps.h"
#include "metrics_family.h"
#include "metrics_contradictions.h"
#include "metrics_live.h"
#include "metrics_peers.h"
#include "metrics_sink.h"
#include "metrics_snapshot.h"
#include "zcal/common/clock.h"
#include "zcal/zcal.h"

namespace zcal::agent {
namespace {

constexpr CalibrationResult kResults[] = {CalibrationResult::kSuccess,
                                          CalibrationResult::kFailed,
                                          CalibrationResult::kCancelled};
constexpr CalibrationTrigger kTriggers[] = {
    CalibrationTrigger::kStartup, CalibrationTrigger::kSchedule,
    CalibrationTrigger::kSignal, CalibrationTrigger::kFingerprint,
    CalibrationTrigger::kRetry, CalibrationTrigger::kContradiction};
constexpr HttpDrop kDrops[] = {HttpDrop::kRequestTimeout,
                               HttpDrop::kWriteTimeout, HttpDrop::kClientLimit,
                               HttpDrop::kServerLimit};

constexpr const char* kProbeFailures = "zcal_probe_failures_total";
constexpr const char* kProbeFailuresHelp =
    "Probes that did not produce a measurement, by path, method and reason "
    "(unsupported, failed).";

template <typename Key, typename Keys>
void ZeroEach(std::map<Key, std::uint64_t>& counts, const Keys& keys) {
  for (const Key& key : keys) counts[key] = 0;
}

double AsValue(std::uint64_t count) { return static_cast<double>(count); }

}  // namespace

Metrics::Live::Live(std::string build_version, double start_seconds)
    : version(std::move(build_version)), start_time_seconds(start_seconds) {
  ZeroEach(calibrations, kResults);
  ZeroEach(triggers, kTriggers);
  reloads[true] = reloads[false] = 0;
  ZeroEach(repairs, kSegmentDamages);
  wall_steps[true] = wall_steps[false] = 0;
  ZeroEach(export_writes, kExportFormats);
  ZeroEach(export_errors, kExportFormats);
  ZeroEach(http_drops, kDrops);
  http_responses[200] = 0;
}

void Metrics::Live::AppendCalibrationCounters(FamilyWriter& out) const {
  out.Counter("zcal_calibrations_total",
              "Calibrations finished, by result (success, failed, cancelled).");
  for (const CalibrationResult r : kResults) {
    out.Add(AsValue(calibrations.at(r)), {{"result", std::string(CalibrationResultName(r))}});
  }
  out.Counter("zcal_calibration_triggers_total", "Calibrations started, by what started them.");
  for (const CalibrationTrigger t : kTriggers) {
    out.Add(AsValue(triggers.at(t)), {{"trigger", std::string(CalibrationTriggerName(t))}});
  }
  // Served with HELP and TYPE even before the first failure, so that the
  // reference and what a scrape shows agree.
  out.Counter(kProbeFailures, kProbeFailuresHelp);
  for (const auto& [key, count] : probe_failures) {
    const auto& [path, method, reason] = key;
    out.Add(AsValue(count), {{"method", std::string(calibrator::MethodName(method))},
                             {"path", path},
                             {"reason", reason}});
  }
}

void Metrics::Live::AppendServiceCounters(FamilyWriter& out) const {
  out.Counter("zcal_config_reloads_total",
              "Configuration reloads (SIGHUP), by result (success, failure).")
      .Add(AsValue(reloads.at(true)), {{"result", "success"}})
      .Add(AsValue(reloads.at(false)), {{"result", "failure"}});
  out.Counter("zcal_fingerprint_changes_total",
              "Changes of the host-fact fingerprint seen while running.")
      .Add(AsValue(fingerprint_changes));
  out.Counter("zcal_state_errors_total", "State file errors, by operation (load, save).")
      .Add(AsValue(state_load_errors), {{"operation", "load"}})
      .Add(AsValue(state_save_errors), {{"operation", "save"}});
  out.Counter("zcal_segment_publishes_total", "Tables published to the shared-memory segment.")
      .Add(AsValue(publishes));
  out.Counter("zcal_segment_repairs_total",
              "Segments recreated because the agent found its segment damaged, by cause "
              "(removed, replaced, truncated, resized, header, table).");
  for (const SegmentDamage cause : kSegmentDamages) {
    out.Add(AsValue(repairs.at(cause)), {{"cause", std::string(SegmentDamageName(cause))}});
  }
  out.Counter("zcal_wall_clock_steps_total",
              "Steps of the wall clock (CLOCK_REALTIME) against the steady clock seen between "
              "two heartbeats, by direction (forward, back); intervals and the ages of this "
              "process's results run on the steady clock.")
      .Add(AsValue(wall_steps.at(true)), {{"direction", "forward"}})
      .Add(AsValue(wall_steps.at(false)), {{"direction", "back"}});
  out.Counter("zcal_export_writes_total",
              "Exported files (exports:) rewritten because their content changed, by format "
              "(env, json, libfabric, spdk, spdk-rpc).");
  for (const ExportFormat f : kExportFormats) {
    out.Add(AsValue(export_writes.at(f)), {{"format", std::string(ExportFormatName(f))}});
  }
  out.Counter("zcal_export_errors_total",
              "Exports (exports:) that could not be produced (no usable entry, no fallback) or "
              "written after a publish, by format; the file is left as it is.");
  for (const ExportFormat f : kExportFormats) {
    out.Add(AsValue(export_errors.at(f)), {{"format", std::string(ExportFormatName(f))}});
  }
  out.Counter("zcal_http_connections_dropped_total",
              "Connections to the metrics listener closed without a complete answer, by reason "
              "(request_timeout, write_timeout, client_limit, server_limit).");
  for (const HttpDrop d : kDrops) {
    out.Add(AsValue(http_drops.at(d)), {{"reason", std::string(HttpDropName(d))}});
  }
  out.Counter("zcal_http_responses_total",
              "Responses written by the metrics listener, by HTTP status code.");
  for (const auto& [code, count] : http_responses) {
    out.Add(AsValue(count), {{"code", std::to_string(code)}});
  }
}

void Metrics::Live::AppendGauges(FamilyWriter& out) const {
  out.Gauge("zcal_build_info", "zcal build: version and shared-memory ABI.")
      .Add(1, {{"abi_major", std::to_string(ZCAL_ABI_MAJOR)}, {"version", version}});
  out.Gauge("zcal_agent_start_time_seconds", "Unix time at which the agent started.")
      .Add(start_time_seconds);
  // The gauges without labels, in the order they are served.
  struct PlainGauge {
    const char* name;
    const char* help;
    double Live::*value;
  };
  static constexpr PlainGauge kPlainGauges[] = {
      {"zcal_last_success_timestamp_seconds",
       "Unix time at which the last successful calibration ended; 0 before the first.",
       &Live::last_success},
      {"zcal_calibration_running", "1 while a calibration is probing.", &Live::running},
      {"zcal_next_calibration_timestamp_seconds",
       "Unix time of the next scheduled calibration; 0 when none is scheduled.",
       &Live::next_calibration},
      {"zcal_probe_budget_used_seconds",
       "Seconds of probing within the last hour (compare with budget.seconds_per_hour).",
       &Live::budget_used},
      {"zcal_segment_repair_failing",
       "1 while the segment is damaged and recreating it fails (retried at each heartbeat).",
       &Live::repair_failing},
      {"zcal_segment_publish_failing",
       "1 while the last table could not be published (the segment could not grow: /dev/shm "
       "full); the segment keeps the previous table, retried at each heartbeat.",
       &Live::publish_failing},
      {"zcal_state_unsaved",
       "1 while the state file is older than the published state because saving it failed "
       "(retried at each heartbeat).",
       &Live::state_unsaved},
      {"zcal_segment_entries", "Entries in the shared-memory segment.", &Live::entries},
      {"zcal_segment_last_publish_timestamp_seconds",
       "Unix time of the last publish to the segment.", &Live::last_publish},
      {"zcal_segment_heartbeat_timestamp_seconds", "Unix time of the segment's last heartbeat.",
       &Live::heartbeat},
      {"zcal_http_open_connections", "Connections open to the metrics listener.",
       &Live::http_open},
  };
  for (const PlainGauge& g : kPlainGauges) out.Gauge(g.name, g.help).Add(this->*g.value);
}

void Metrics::Live::AppendTo(std::vector<prometheus::MetricFamily>& out) const {
  FamilyWriter writer(out);
  std::lock_guard lock(mutex);
  AppendCalibrationCounters(writer);
  AppendServiceCounters(writer);
  AppendGauges(writer);
  writer.Histogram("zcal_calibration_duration_seconds", "Wall time of finished calibrations.",
                   kDurationBuckets, duration_buckets, duration_sum);
}

Metrics::Metrics(std::string version, MetricsRole role,
                 const std::shared_ptr<const common::Clock>& clock)
    : live_(std::make_unique<Live>(std::move(version), common::NsToSeconds(clock->Wall()))),
      snapshot_(std::make_unique<Snapshot>()),
      sink_(std::make_unique<SinkView>()),
      peers_(std::make_unique<PeerView>()),
      apps_(std::make_unique<AppsView>()),
      contradictions_(std::make_unique<ContradictionView>()),
      role_(role) {}

Metrics::~Metrics() = default;

void Metrics::RetainPaths(std::span<const PathId> paths) {
  std::set<std::string> keep;
  for (const PathId& path : paths) keep.insert(ToString(path));
  snapshot_->Retain(keep);
  std::lock_guard lock(live_->mutex);
  std::erase_if(live_->probe_failures,
                [&](const auto& item) { return !keep.contains(std::get<0>(item.first)); });
}

void Metrics::RecordCalibration(CalibrationResult result, double duration_seconds,
                                std::uint64_t now_ns) {
  std::lock_guard lock(live_->mutex);
  ++live_->calibrations.at(result);
  // A bucket holds what is at most its bound.
  const auto bucket = std::lower_bound(std::begin(kDurationBuckets), std::end(kDurationBuckets),
                                       duration_seconds);
  ++live_->duration_buckets[static_cast<std::size_t>(bucket - std::begin(kDurationBuckets))];
  live_->duration_sum += duration_seconds;
  if (result == CalibrationResult::kSuccess) live_->last_success = common::NsToSeconds(now_ns);
}

void Metrics::RecordTrigger(CalibrationTrigger trigger) {
  std::lock_guard lock(live_->mutex);
  ++live_->triggers.at(trigger);
}

void Metrics::RecordProbeFailures(const PathId& id,
                                  std::span<const calibrator::Sample> samples) {
  const std::string path = ToString(id);
  std::lock_guard lock(live_->mutex);
  for (const calibrator::Sample& s : samples) {
    if (s.ok()) continue;
    const char* reason =
        s.status == calibrator::SampleStatus::kUnsupported ? "unsupported" : "failed";
    ++live_->probe_failures[{path, s.method, reason}];
  }
}

void Metrics::RecordReload(bool ok) {
  std::lock_guard lock(live_->mutex);
  ++live_->reloads.at(ok);
}

void Metrics::RecordFingerprintChange() {
  std::lock_guard lock(live_->mutex);
  ++live_->fingerprint_changes;
}

void Metrics::RecordStateError(std::string_view operation) {
  std::lock_guard lock(live_->mutex);
  // Only the documented operations have a series.
  if (operation == "load") ++live_->state_load_errors;
  if (operation == "save") ++live_->state_save_errors;
}

void Metrics::RecordPublish(std::uint64_t now_ns, std::size_t entries) {
  std::lock_guard lock(live_->mutex);
  ++live_->publishes;
  live_->entries = static_cast<double>(entries);
  live_->last_publish = common::NsToSeconds(now_ns);
  live_->heartbeat = common::NsToSeconds(now_ns);
}

void Metrics::RecordHeartbeat(std::uint64_t now_ns) {
  std::lock_guard lock(live_->mutex);
  live_->heartbeat = common::NsToSeconds(now_ns);
}

void Metrics::RecordSegmentRepair(SegmentDamage cause) {
  std::lock_guard lock(live_->mutex);
  if (const auto it = live_->repairs.find(cause); it != live_->repairs.end()) ++it->second;
}

void Metrics::RecordWallClockStep(bool forward) {
  std::lock_guard lock(live_->mutex);
  ++live_->wall_steps.at(forward);
}

void Metrics::RecordExportWrite(ExportFormat format) {
  std::lock_guard lock(live_->mutex);
  ++live_->export_writes.at(format);
}

void Metrics::RecordExportError(ExportFormat format) {
  std::lock_guard lock(live_->mutex);
  ++live_->export_errors.at(format);
}

void Metrics::SetSegmentRepairFailing(bool failing) {
  std::lock_guard lock(live_->mutex);
  live_->repair_failing = failing ? 1 : 0;
}

void Metrics::SetSegmentPublishFailing(bool failing) {
  std::lock_guard lock(live_->mutex);
  live_->publish_failing = failing ? 1 : 0;
}

void Metrics::SetStateUnsaved(bool unsaved) {
  std::lock_guard lock(live_->mutex);
  live_->state_unsaved = unsaved ? 1 : 0;
}

void Metrics::SetCalibrationRunning(bool running) {
  std::lock_guard lock(live_->mutex);
  live_->running = running ? 1 : 0;
}

void Metrics::SetNextCalibration(double unix_seconds) {
  std::lock_guard lock(live_->mutex);
  live_->next_calibration = unix_seconds;
}

void Metrics::SetBudgetUsed(double seconds) {
  std::lock_guard lock(live_->mutex);
  live_->budget_used = seconds;
}

void Metrics::RecordHttpDrop(HttpDrop drop) {
  std::lock_guard lock(live_->mutex);
  ++live_->http_drops.at(drop);
}

void Metrics::RecordHttpResponse(int status) {
  std::lock_guard lock(live_->mutex);
  ++live_->http_responses[status];
}

void Metrics::AddHttpOpenConnections(int change) {
  std::lock_guard lock(live_->mutex);
  live_->http_open += change;
}

std::vector<prometheus::MetricFamily> Metrics::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  live_->AppendTo(out);
  if (role_ == MetricsRole::kSink) {
    std::erase_if(out, [](const prometheus::MetricFamily& family) {
      return family.name != "zcal_build_info" && !family.name.starts_with("zcal_http_");
    });
    sink_->AppendTo(out);
    return out;
  }
  snapshot_->AppendTo(out);
  sink_->AppendTo(out);
  peers_->AppendTo(out);
  apps_->AppendTo(out);
  contradictions_->AppendTo(out);
  return out;
}

std::string Metrics::Text() const {
  return prometheus::TextSerializer().Serialize(Collect());
}

}  // namespace zcal::agent
