#include "zcal/agent/metrics.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include <prometheus/text_serializer.h>

#include "zcal/calibrator/stats.h"
#include "zcal/common/clock.h"
#include "zcal/common/text.h"

namespace zcal::agent {
namespace {

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Verdict;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Builds one family at a time: Add() appends a sample with its labels.
class FamilyBuilder {
 public:
  FamilyBuilder(std::vector<MetricFamily>& out, std::string name,
                std::string help, MetricType type)
      : out_(out) {
    family_.name = std::move(name);
    family_.help = std::move(help);
    family_.type = type;
  }
  ~FamilyBuilder() { out_.push_back(std::move(family_)); }
  FamilyBuilder(const FamilyBuilder&) = delete;
  FamilyBuilder& operator=(const FamilyBuilder&) = delete;

  void Add(double value,
           std::initializer_list<std::pair<const char*, std::string>> labels =
               {}) {
    ClientMetric metric;
    for (const auto& [name, label_value] : labels) {
      metric.label.push_back({name, label_value});
    }
    if (family_.type == MetricType::Counter) {
      metric.counter.value = value;
    } else {
      metric.gauge.value = value;
    }
    family_.metric.push_back(std::move(metric));
  }
  void AddMetric(ClientMetric metric) {
    family_.metric.push_back(std::move(metric));
  }

 private:
  std::vector<MetricFamily>& out_;
  MetricFamily family_;
};

std::string MethodLabel(Method method) {
  return std::string(calibrator::MethodName(method));
}

// +Inf for never: no size is large enough. Inconclusive has no value.
std::optional<double> ThresholdValue(const MethodResult& result) {
  switch (result.verdict) {
    case Verdict::kThreshold:
    case Verdict::kAlways:
      if (result.threshold_bytes) {
        return static_cast<double>(*result.threshold_bytes);
      }
      return result.verdict == Verdict::kAlways ? std::optional<double>(0)
                                                : std::nullopt;
    case Verdict::kNever:
      return std::numeric_limits<double>::infinity();
    case Verdict::kInconclusive:
      break;
  }
  return std::nullopt;
}

}  // namespace

std::string_view CalibrationResultName(CalibrationResult result) {
  switch (result) {
    case CalibrationResult::kSuccess:
      return "success";
    case CalibrationResult::kFailed:
      return "failed";
    case CalibrationResult::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string_view CalibrationTriggerName(CalibrationTrigger trigger) {
  switch (trigger) {
    case CalibrationTrigger::kStartup:
      return "startup";
    case CalibrationTrigger::kSchedule:
      return "schedule";
    case CalibrationTrigger::kSignal:
      return "signal";
    case CalibrationTrigger::kFingerprint:
      return "fingerprint";
    case CalibrationTrigger::kRetry:
      return "retry";
  }
  return "unknown";
}

Metrics::Metrics(std::string version)
    : version_(std::move(version)),
      start_time_seconds_(common::RealtimeSeconds()),
      duration_buckets_(std::size(kDurationBuckets), 0) {
  // Every label value exists from the start, so that rate() and alerts see
  // a 0 before the first event instead of no series.
  for (const CalibrationResult r :
       {CalibrationResult::kSuccess, CalibrationResult::kFailed,
        CalibrationResult::kCancelled}) {
    calibrations_[r] = 0;
  }
  for (const CalibrationTrigger t :
       {CalibrationTrigger::kStartup, CalibrationTrigger::kSchedule,
        CalibrationTrigger::kSignal, CalibrationTrigger::kFingerprint,
        CalibrationTrigger::kRetry}) {
    triggers_[t] = 0;
  }
  state_errors_["load"] = 0;
  state_errors_["save"] = 0;
}

void Metrics::SetPublished(
    const std::map<std::string, std::map<Method, MethodState>>& paths,
    bool stale) {
  std::lock_guard lock(mutex_);
  published_ = paths;
  stale_ = stale;
}

void Metrics::SetLastCalibration(const std::string& path,
                                 std::span<const calibrator::Sample> samples,
                                 const calibrator::PathResult& fresh) {
  std::map<SizeKey, std::vector<calibrator::Sample>> groups;
  std::map<Method, std::pair<std::uint64_t, std::uint64_t>> copied;
  for (const calibrator::Sample& s : samples) {
    if (!s.ok()) continue;
    groups[SizeKey{path, s.method, s.size_bytes}].push_back(s);
    if (calibrator::IsZerocopy(s.method)) {
      copied[s.method].first += s.zc_copied;
      copied[s.method].second += s.zc_completions;
    }
  }
  std::lock_guard lock(mutex_);
  std::erase_if(sizes_, [&](const auto& item) { return item.first.path == path; });
  std::erase_if(copied_, [&](const auto& item) { return item.first.first == path; });
  std::erase_if(fresh_, [&](const auto& item) { return item.first.first == path; });
  for (const auto& [key, group] : groups) {
    const calibrator::SizeStats stats = calibrator::Aggregate(group);
    sizes_[key] = SizeFigures{stats.throughput_bytes_per_second.median,
                              stats.cpu_ns_per_byte.median * 1e-9};
  }
  for (const auto& [method, counts] : copied) {
    if (counts.second == 0) continue;
    copied_[{path, method}] = static_cast<double>(counts.first) /
                              static_cast<double>(counts.second);
  }
  for (const auto& [method, result] : fresh.methods) {
    fresh_[{path, method}] = result;
  }
}

void Metrics::SetHost(const HostInfo& host) {
  std::lock_guard lock(mutex_);
  host_ = host;
}

void Metrics::RecordCalibration(CalibrationResult result,
                                double duration_seconds,
                                std::uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  ++calibrations_[result];
  ++duration_count_;
  duration_sum_ += duration_seconds;
  for (std::size_t i = 0; i < std::size(kDurationBuckets); ++i) {
    if (duration_seconds <= kDurationBuckets[i]) ++duration_buckets_[i];
  }
  if (result == CalibrationResult::kSuccess) {
    last_success_seconds_ = common::NsToSeconds(now_ns);
  }
}

void Metrics::RecordTrigger(CalibrationTrigger trigger) {
  std::lock_guard lock(mutex_);
  ++triggers_[trigger];
}

void Metrics::RecordProbeFailures(const std::string& path,
                                  std::span<const calibrator::Sample> samples) {
  std::lock_guard lock(mutex_);
  for (const calibrator::Sample& s : samples) {
    if (s.ok()) continue;
    const char* reason =
        s.status == calibrator::SampleStatus::kUnsupported ? "unsupported"
                                                           : "failed";
    ++probe_failures_[FailureKey{path, s.method, reason}];
  }
}

void Metrics::RecordReload(bool ok) {
  std::lock_guard lock(mutex_);
  ++(ok ? reloads_ok_ : reloads_failed_);
}

void Metrics::RecordFingerprintChange() {
  std::lock_guard lock(mutex_);
  ++fingerprint_changes_;
}

void Metrics::RecordStateError(std::string_view operation) {
  std::lock_guard lock(mutex_);
  ++state_errors_[std::string(operation)];
}

void Metrics::RecordPublish(std::uint64_t now_ns, std::size_t entries) {
  std::lock_guard lock(mutex_);
  ++publishes_;
  entries_ = entries;
  last_publish_seconds_ = common::NsToSeconds(now_ns);
  heartbeat_seconds_ = last_publish_seconds_;
}

void Metrics::RecordHeartbeat(std::uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  heartbeat_seconds_ = common::NsToSeconds(now_ns);
}

void Metrics::SetCalibrationRunning(bool running) {
  std::lock_guard lock(mutex_);
  running_ = running;
}

void Metrics::SetNextCalibration(double unix_seconds) {
  std::lock_guard lock(mutex_);
  next_calibration_seconds_ = unix_seconds;
}

void Metrics::SetBudgetUsed(double seconds) {
  std::lock_guard lock(mutex_);
  budget_used_seconds_ = seconds;
}

std::vector<MetricFamily> Metrics::Collect() const {
  std::lock_guard lock(mutex_);
  std::vector<MetricFamily> out;
  {
    FamilyBuilder f(out, "zcal_build_info",
                    "zcal build: version and shared-memory ABI.",
                    MetricType::Gauge);
    f.Add(1, {{"version", version_}, {"abi_major", "1"}});
  }
  {
    FamilyBuilder f(out, "zcal_agent_start_time_seconds",
                    "Unix time at which the agent started.",
                    MetricType::Gauge);
    f.Add(start_time_seconds_);
  }

  // Published results.
  {
    FamilyBuilder f(out, "zcal_threshold_bytes",
                    "Published message size from which zerocopy send pays "
                    "off; +Inf when it never does; absent when inconclusive.",
                    MetricType::Gauge);
    for (const auto& [path, methods] : published_) {
      for (const auto& [method, s] : methods) {
        if (const auto value = ThresholdValue(s.published)) {
          f.Add(*value, {{"path", path}, {"method", MethodLabel(method)}});
        }
      }
    }
  }
  {
    FamilyBuilder f(out, "zcal_verdict",
                    "Published verdict: 1 for the current one of threshold, "
                    "always, never, inconclusive; 0 for the others.",
                    MetricType::Gauge);
    for (const auto& [path, methods] : published_) {
      for (const auto& [method, s] : methods) {
        for (const Verdict v : {Verdict::kThreshold, Verdict::kAlways,
                                Verdict::kNever, Verdict::kInconclusive}) {
          f.Add(s.published.verdict == v ? 1 : 0,
                {{"path", path},
                 {"method", MethodLabel(method)},
                 {"verdict", std::string(calibrator::VerdictName(v))}});
        }
      }
    }
  }
  {
    FamilyBuilder f(out, "zcal_verdict_reason_info",
                    "Why the published verdict is what it is (reason none "
                    "for a threshold or always).",
                    MetricType::Gauge);
    for (const auto& [path, methods] : published_) {
      for (const auto& [method, s] : methods) {
        const std::string_view reason =
            calibrator::ReasonName(s.published.reason);
        f.Add(1, {{"path", path},
                  {"method", MethodLabel(method)},
                  {"reason", reason.empty() ? "none" : std::string(reason)}});
      }
    }
  }
  {
    FamilyBuilder f(out, "zcal_threshold_confidence_ratio",
                    "Share (0 to 1) of the compared sizes whose comparison "
                    "was decisive; absent when unknown.",
                    MetricType::Gauge);
    for (const auto& [path, methods] : published_) {
      for (const auto& [method, s] : methods) {
        if (s.published.confidence) {
          f.Add(*s.published.confidence,
                {{"path", path}, {"method", MethodLabel(method)}});
        }
      }
    }
  }
  {
    FamilyBuilder f(out, "zcal_result_measured_timestamp_seconds",
                    "Unix time of the calibration behind the published "
                    "result (or the last one that agreed with it).",
                    MetricType::Gauge);
    for (const auto& [path, methods] : published_) {
      for (const auto& [method, s] : methods) {
        f.Add(common::NsToSeconds(s.measured_at_ns),
              {{"path", path}, {"method", MethodLabel(method)}});
      }
    }
  }
  {
    FamilyBuilder f(out, "zcal_hysteresis_pending",
                    "1 while a differing result waits for a second "
                    "calibration to agree before it is published.",
                    MetricType::Gauge);
    for (const auto& [path, methods] : published_) {
      for (const auto& [method, s] : methods) {
        f.Add(s.pending ? 1 : 0,
              {{"path", path}, {"method", MethodLabel(method)}});
      }
    }
  }
  {
    FamilyBuilder f(out, "zcal_published_stale",
                    "1 while the published results come from the state file "
                    "and no calibration has confirmed them yet.",
                    MetricType::Gauge);
    f.Add(stale_ ? 1 : 0);
  }

  // The last calibration.
  {
    FamilyBuilder f(out, "zcal_measured_threshold_bytes",
                    "Threshold found by the last calibration, before "
                    "hysteresis; +Inf for never; absent when inconclusive.",
                    MetricType::Gauge);
    for (const auto& [key, result] : fresh_) {
      if (const auto value = ThresholdValue(result)) {
        f.Add(*value, {{"path", key.first}, {"method", MethodLabel(key.second)}});
      }
    }
  }
  {
    FamilyBuilder f(out, "zcal_throughput_bytes_per_second",
                    "Median throughput of the last calibration's probes, by "
                    "method and message size.",
                    MetricType::Gauge);
    for (const auto& [key, figures] : sizes_) {
      f.Add(figures.throughput_bytes_per_second,
            {{"path", key.path},
             {"method", MethodLabel(key.method)},
             {"size_bytes", std::to_string(key.size_bytes)}});
    }
  }
  {
    FamilyBuilder f(out, "zcal_cpu_seconds_per_byte",
                    "Median sender CPU time per byte sent in the last "
                    "calibration, by method and message size.",
                    MetricType::Gauge);
    for (const auto& [key, figures] : sizes_) {
      f.Add(figures.cpu_seconds_per_byte,
            {{"path", key.path},
             {"method", MethodLabel(key.method)},
             {"size_bytes", std::to_string(key.size_bytes)}});
    }
  }
  {
    FamilyBuilder f(out, "zcal_copied_ratio",
                    "Share (0 to 1) of zerocopy completions the kernel "
                    "reported as copied in the last calibration.",
                    MetricType::Gauge);
    for (const auto& [key, ratio] : copied_) {
      f.Add(ratio, {{"path", key.first}, {"method", MethodLabel(key.second)}});
    }
  }

  // Calibrations.
  {
    FamilyBuilder f(out, "zcal_calibrations_total",
                    "Calibrations finished, by result (success, failed, "
                    "cancelled).",
                    MetricType::Counter);
    for (const auto& [result, count] : calibrations_) {
      f.Add(static_cast<double>(count),
            {{"result", std::string(CalibrationResultName(result))}});
    }
  }
  {
    FamilyBuilder f(out, "zcal_calibration_triggers_total",
                    "Calibrations started, by what started them.",
                    MetricType::Counter);
    for (const auto& [trigger, count] : triggers_) {
      f.Add(static_cast<double>(count),
            {{"trigger", std::string(CalibrationTriggerName(trigger))}});
    }
  }
  {
    FamilyBuilder f(out, "zcal_calibration_duration_seconds",
                    "Wall time of finished calibrations.",
                    MetricType::Histogram);
    ClientMetric metric;
    metric.histogram.sample_count = duration_count_;
    metric.histogram.sample_sum = duration_sum_;
    for (std::size_t i = 0; i < std::size(kDurationBuckets); ++i) {
      metric.histogram.bucket.push_back({duration_buckets_[i], kDurationBuckets[i]});
    }
    metric.histogram.bucket.push_back(
        {duration_count_, std::numeric_limits<double>::infinity()});
    f.AddMetric(std::move(metric));
  }
  {
    FamilyBuilder f(out, "zcal_last_success_timestamp_seconds",
                    "Unix time at which the last successful calibration "
                    "ended; 0 before the first.",
                    MetricType::Gauge);
    f.Add(last_success_seconds_);
  }
  {
    FamilyBuilder f(out, "zcal_calibration_running",
                    "1 while a calibration is probing.", MetricType::Gauge);
    f.Add(running_ ? 1 : 0);
  }
  {
    FamilyBuilder f(out, "zcal_next_calibration_timestamp_seconds",
                    "Unix time of the next scheduled calibration; 0 when none "
                    "is scheduled.",
                    MetricType::Gauge);
    f.Add(next_calibration_seconds_);
  }
  {
    FamilyBuilder f(out, "zcal_probe_budget_used_seconds",
                    "Seconds of probing within the last hour (compare with "
                    "budget.seconds_per_hour).",
                    MetricType::Gauge);
    f.Add(budget_used_seconds_);
  }
  {
    FamilyBuilder f(out, "zcal_probe_failures_total",
                    "Probes that did not produce a measurement, by path, "
                    "method and reason (unsupported, failed).",
                    MetricType::Counter);
    for (const auto& [key, count] : probe_failures_) {
      f.Add(static_cast<double>(count), {{"path", key.path},
                                         {"method", MethodLabel(key.method)},
                                         {"reason", key.reason}});
    }
  }

  // Configuration, state, segment.
  {
    FamilyBuilder f(out, "zcal_config_reloads_total",
                    "Configuration reloads (SIGHUP), by result (success, "
                    "failure).",
                    MetricType::Counter);
    f.Add(static_cast<double>(reloads_ok_), {{"result", "success"}});
    f.Add(static_cast<double>(reloads_failed_), {{"result", "failure"}});
  }
  {
    FamilyBuilder f(out, "zcal_fingerprint_changes_total",
                    "Changes of the host-fact fingerprint seen while running.",
                    MetricType::Counter);
    f.Add(static_cast<double>(fingerprint_changes_));
  }
  {
    FamilyBuilder f(out, "zcal_state_errors_total",
                    "State file errors, by operation (load, save).",
                    MetricType::Counter);
    for (const auto& [operation, count] : state_errors_) {
      f.Add(static_cast<double>(count), {{"operation", operation}});
    }
  }
  {
    FamilyBuilder f(out, "zcal_segment_publishes_total",
                    "Tables published to the shared-memory segment.",
                    MetricType::Counter);
    f.Add(static_cast<double>(publishes_));
  }
  {
    FamilyBuilder f(out, "zcal_segment_entries",
                    "Entries in the shared-memory segment.",
                    MetricType::Gauge);
    f.Add(static_cast<double>(entries_));
  }
  {
    FamilyBuilder f(out, "zcal_segment_last_publish_timestamp_seconds",
                    "Unix time of the last publish to the segment.",
                    MetricType::Gauge);
    f.Add(last_publish_seconds_);
  }
  {
    FamilyBuilder f(out, "zcal_segment_heartbeat_timestamp_seconds",
                    "Unix time of the segment's last heartbeat.",
                    MetricType::Gauge);
    f.Add(heartbeat_seconds_);
  }

  // Host facts.
  if (host_) {
    {
      FamilyBuilder f(out, "zcal_host_info",
                      "Host facts the calibration depends on; the "
                      "fingerprint changes when any of them changes.",
                      MetricType::Gauge);
      f.Add(1, {{"kernel_release", host_->kernel_release},
                {"cpu_model", host_->cpu_model},
                {"iommu_cmdline", host_->iommu_cmdline},
                {"fingerprint", common::Hex64(host_->fingerprint)}});
    }
    FamilyBuilder f(out, "zcal_interface_info",
                    "Egress interface of each path: driver, PCI device, "
                    "link speed, MTU, IOMMU group and type.",
                    MetricType::Gauge);
    for (const InterfaceInfo& i : host_->interfaces) {
      f.Add(1, {{"path", i.path},
                {"interface", i.interface},
                {"driver", i.driver},
                {"pci_device", i.pci_device},
                {"speed_bits_per_second", i.speed_bits_per_second},
                {"mtu_bytes", i.mtu_bytes},
                {"iommu_group", i.iommu_group},
                {"iommu_type", i.iommu_type}});
    }
  }
  return out;
}

std::string Metrics::Text() const {
  return prometheus::TextSerializer().Serialize(Collect());
}

}  // namespace zcal::agent
