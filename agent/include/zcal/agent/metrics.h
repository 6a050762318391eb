// The agent's Prometheus metrics (docs/metrics.md lists every one) and the
// HTTP endpoint that serves them.
//
// Metrics keeps a snapshot of what the agent knows, updated by the service,
// and renders it on each scrape (it is a prometheus::Collectable), so that
// series of methods or sizes that disappear are dropped, not left behind.
// All member functions are thread-safe: scrapes run on the HTTP server's
// threads while the service updates.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "zcal/agent/state.h"
#include "zcal/common/result.h"
#include "zcal/calibrator/sample.h"

namespace prometheus {
class Exposer;
}

namespace zcal::agent {

/// Facts of the egress interface of one path (zcal_interface_info).
struct InterfaceInfo {
  std::string path;
  std::string interface;
  std::string driver;
  std::string pci_device;
  std::string speed_bits_per_second;  ///< "" when unknown
  std::string mtu_bytes;              ///< "" when unknown
  std::string iommu_group;
  std::string iommu_type;  ///< "" when the device has no IOMMU group
};

/// Host facts (zcal_host_info).
struct HostInfo {
  std::string kernel_release;
  std::string cpu_model;
  std::string iommu_cmdline;  ///< words joined by spaces
  std::uint64_t fingerprint = 0;
  std::vector<InterfaceInfo> interfaces;
};

/// How a calibration ended (label `result` of zcal_calibrations_total).
enum class CalibrationResult : std::uint8_t { kSuccess, kFailed, kCancelled };

/// What started a calibration (label `trigger`).
enum class CalibrationTrigger : std::uint8_t {
  kStartup,
  kSchedule,
  kSignal,
  kFingerprint,
  kRetry,
};

std::string_view CalibrationResultName(CalibrationResult result);
std::string_view CalibrationTriggerName(CalibrationTrigger trigger);

class Metrics final : public prometheus::Collectable {
 public:
  /// `version` is the zcal version for zcal_build_info.
  explicit Metrics(std::string version);

  /// The published results and whether they are stale.
  void SetPublished(
      const std::map<std::string, std::map<calibrator::Method, MethodState>>&
          paths,
      bool stale);
  /// Per-size figures and copied ratios of the last calibration of `path`,
  /// and its verdicts before hysteresis.
  void SetLastCalibration(const std::string& path,
                          std::span<const calibrator::Sample> samples,
                          const calibrator::PathResult& fresh);
  void SetHost(const HostInfo& host);

  void RecordCalibration(CalibrationResult result, double duration_seconds,
                         std::uint64_t now_ns);
  void RecordTrigger(CalibrationTrigger trigger);
  /// Counts the samples whose status is not ok, by path, method and status.
  void RecordProbeFailures(const std::string& path,
                           std::span<const calibrator::Sample> samples);
  void RecordReload(bool ok);
  void RecordFingerprintChange();
  void RecordStateError(std::string_view operation);  ///< "load" or "save"
  void RecordPublish(std::uint64_t now_ns, std::size_t entries);
  void RecordHeartbeat(std::uint64_t now_ns);
  void SetCalibrationRunning(bool running);
  /// Unix seconds of the next scheduled calibration; 0 for none.
  void SetNextCalibration(double unix_seconds);
  /// Probe seconds spent within the last hour.
  void SetBudgetUsed(double seconds);

  std::vector<prometheus::MetricFamily> Collect() const override;

  /// The text exposition format of Collect(), as served on /metrics.
  std::string Text() const;

 private:
  struct SizeKey {
    std::string path;
    calibrator::Method method;
    std::uint64_t size_bytes;
    bool operator<(const SizeKey& o) const {
      return std::tie(path, method, size_bytes) <
             std::tie(o.path, o.method, o.size_bytes);
    }
  };
  struct SizeFigures {
    double throughput_bytes_per_second = 0;
    double cpu_seconds_per_byte = 0;
  };
  struct FailureKey {
    std::string path;
    calibrator::Method method;
    std::string reason;
    bool operator<(const FailureKey& o) const {
      return std::tie(path, method, reason) <
             std::tie(o.path, o.method, o.reason);
    }
  };

  mutable std::mutex mutex_;
  const std::string version_;
  const double start_time_seconds_;
  std::map<std::string, std::map<calibrator::Method, MethodState>> published_;
  bool stale_ = false;
  std::map<SizeKey, SizeFigures> sizes_;
  std::map<std::pair<std::string, calibrator::Method>, double> copied_;
  std::map<std::pair<std::string, calibrator::Method>,
           calibrator::MethodResult>
      fresh_;
  std::optional<HostInfo> host_;
  std::map<CalibrationResult, std::uint64_t> calibrations_;
  std::map<CalibrationTrigger, std::uint64_t> triggers_;
  std::vector<std::uint64_t> duration_buckets_;  // cumulative per bound
  std::uint64_t duration_count_ = 0;
  double duration_sum_ = 0;
  double last_success_seconds_ = 0;
  std::map<FailureKey, std::uint64_t> probe_failures_;
  std::uint64_t reloads_ok_ = 0;
  std::uint64_t reloads_failed_ = 0;
  std::uint64_t fingerprint_changes_ = 0;
  std::map<std::string, std::uint64_t> state_errors_;
  std::uint64_t publishes_ = 0;
  std::size_t entries_ = 0;
  double last_publish_seconds_ = 0;
  double heartbeat_seconds_ = 0;
  bool running_ = false;
  double next_calibration_seconds_ = 0;
  double budget_used_seconds_ = 0;
};

/// Upper bounds of zcal_calibration_duration_seconds, seconds.
inline constexpr double kDurationBuckets[] = {0.5, 1, 2, 4, 8, 16, 32, 64,
                                              128, 300};

/// The HTTP endpoint: GET /metrics renders a Collectable.
class MetricsServer {
 public:
  /// Listens on "IPv4:PORT" (port 0 picks a free one). kInvalidArgument for
  /// an address that does not parse, kBusy/kPermission/kIo when binding
  /// fails, with the errno text and what to do.
  static Result<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen,
      const std::shared_ptr<prometheus::Collectable>& collectable);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  const std::string& listen() const { return listen_; }
  /// The port actually bound (differs from the configured one for 0).
  int port() const { return port_; }
  /// "http://127.0.0.1:PORT/metrics"
  std::string Url() const;

 private:
  MetricsServer() = default;
  std::string listen_;
  std::string host_;
  int port_ = 0;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace zcal::agent
