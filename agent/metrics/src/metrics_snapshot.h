// The snapshot part of Metrics: published results, the last calibration's
// figures and the host facts, replaced by Metrics' Set* functions
// (metrics_snapshot.cc) and rendered as families on each scrape.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

#include "metrics_family.h"
#include "zcal/agent/metrics/metrics.h"

namespace zcal::agent {

struct Metrics::Snapshot {
  using PathMethod = std::pair<std::string, MethodKey>;
  struct SizeKey {
    std::string path;
    MethodKey key;
    std::uint64_t size_bytes;
    bool operator<(const SizeKey& o) const {
      return std::tie(path, key, size_bytes) < std::tie(o.path, o.key, o.size_bytes);
    }
  };
  struct SizeFigures {
    double throughput_bytes_per_second = 0;
    double cpu_seconds_per_byte = 0;
  };

  mutable std::mutex mutex;
  /// The published table's entries of a path (PublishedEntry::path), in
  /// the order of their path, method and class.
  std::map<std::pair<PathId, MethodKey>, PublishedEntry> published;
  bool stale = false;
  std::map<SizeKey, SizeFigures> sizes;
  std::map<PathMethod, double> copied;
  std::map<PathMethod, calibrator::MethodResult> fresh;
  std::optional<HostInfo> host;
  std::map<std::string, probes::TargetKind> path_kinds;
  std::optional<HostDefaultChoice> host_default;
  std::vector<PublishedEntry> host_default_entries;

  /// Drops what belongs to a path not in `paths`.
  void Retain(const std::set<std::string>& paths);
  /// Appends the snapshot's families.
  void AppendTo(std::vector<prometheus::MetricFamily>& out) const;

 private:
  void AppendPublishedResults(FamilyWriter& out) const;
  void AppendPublishedLoad(FamilyWriter& out) const;
  void AppendLastCalibration(FamilyWriter& out) const;
  void AppendHost(FamilyWriter& out) const;
  void AppendHostDefault(FamilyWriter& out) const;
};

}  // namespace zcal::agent
