// The event part of Metrics: counters, gauges and the duration histogram
// that the service updates as things happen (metrics.cc).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <prometheus/metric_family.h>

#include "metrics_family.h"
#include "zcal/agent/metrics/metrics.h"

namespace zcal::agent {

struct Metrics::Live {
  // Every series of a fixed label value exists from the start (0), so that
  // rate() and alerts see a 0 before the first event instead of no series.
  template <typename Key>
  using Counts = std::map<Key, std::uint64_t>;

  mutable std::mutex mutex;
  std::string version;
  double start_time_seconds = 0;

  Counts<CalibrationResult> calibrations;
  Counts<CalibrationTrigger> triggers;
  // Per bucket of kDurationBuckets, and the one above them (+Inf).
  std::array<std::uint64_t, std::size(kDurationBuckets) + 1> duration_buckets{};
  double duration_sum = 0;
  // (path, method, reason); a path's series go with the path.
  Counts<std::tuple<std::string, calibrator::Method, std::string>> probe_failures;
  Counts<bool> reloads;  // by success
  std::uint64_t fingerprint_changes = 0;
  std::uint64_t state_load_errors = 0;
  std::uint64_t state_save_errors = 0;
  std::uint64_t publishes = 0;
  Counts<SegmentDamage> repairs;
  Counts<bool> wall_steps;  // by forward
  Counts<ExportFormat> export_writes;
  Counts<ExportFormat> export_errors;
  Counts<HttpDrop> http_drops;
  Counts<int> http_responses;  // by status code

  // Gauges without labels.
  double last_success = 0;
  double running = 0;
  double next_calibration = 0;
  double budget_used = 0;
  double repair_failing = 0;
  double publish_failing = 0;
  double state_unsaved = 0;
  double entries = 0;
  double last_publish = 0;
  double heartbeat = 0;
  double http_open = 0;

  Live(std::string build_version, double start_seconds);
  void AppendTo(std::vector<prometheus::MetricFamily>& out) const;

 private:
  void AppendCalibrationCounters(FamilyWriter& out) const;
  void AppendServiceCounters(FamilyWriter& out) const;
  void AppendGauges(FamilyWriter& out) const;
};

}  // namespace zcal::agent
