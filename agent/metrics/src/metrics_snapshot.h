// The snapshot part of Metrics: published results, the last calibration's
// figures and the host facts, rendered as families on each scrape.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "zcal/agent/metrics/metrics.h"

namespace zcal::agent {

class Metrics::Snapshot {
 public:
  void SetPublished(const std::map<std::string, MethodStates>& paths, bool stale);
  void SetLastCalibration(const std::string& path,
                          std::span<const calibrator::Sample> samples,
                          const std::map<DepthClass, calibrator::PathResult>& fresh);
  void SetHost(const HostInfo& host);
  void SetPaths(const std::map<std::string, probes::TargetKind>& kinds);
  void SetHostDefault(const HostDefaultInfo& host_default);
  void RetainPaths(const std::set<std::string>& paths);

  /// Appends the snapshot's families.
  void AppendTo(std::vector<prometheus::MetricFamily>& out) const;

 private:
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

  void AppendPublished(std::vector<prometheus::MetricFamily>& out) const;
  void AppendLastCalibration(std::vector<prometheus::MetricFamily>& out) const;
  void AppendHost(std::vector<prometheus::MetricFamily>& out) const;
  void AppendHostDefault(std::vector<prometheus::MetricFamily>& out) const;

  mutable std::mutex mutex_;
  std::map<std::string, MethodStates> published_;
  bool stale_ = false;
  std::map<SizeKey, SizeFigures> sizes_;
  std::map<PathMethod, double> copied_;
  std::map<PathMethod, calibrator::MethodResult> fresh_;
  std::optional<HostInfo> host_;
  std::map<std::string, probes::TargetKind> path_kinds_;
  std::optional<HostDefaultInfo> host_default_;
};

}  // namespace zcal::agent
