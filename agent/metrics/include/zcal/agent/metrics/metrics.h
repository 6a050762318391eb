// The agent's Prometheus metrics (docs/metrics.md lists every one).
//
// Every family is rendered on each scrape from values held in memory:
// events (calibrations, triggers, probe failures, reloads, publishes, HTTP
// drops) as counts, gauges and a histogram; published results, the figures
// of the last calibration and the host facts as a snapshot replaced as a
// whole on each update, so that series of a path, method or size that no
// longer exists are dropped, not left at their old value.
// A path is given as its PathId and labelled path="ToString(PathId)":
// "loopback", "discard", "peer/10.0.0.2:7070".
// All member functions are thread-safe: scrapes run on the HTTP server's
// thread while the service updates.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "zcal/agent/apps/apps_reader.h"
#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/domain/app_traffic.h"
#include "zcal/agent/domain/calibration_event.h"
#include "zcal/agent/domain/export_formats.h"
#include "zcal/agent/domain/host_default_choice.h"
#include "zcal/agent/domain/host_info.h"
#include "zcal/agent/domain/peer_attempt.h"
#include "zcal/agent/domain/published_entry.h"
#include "zcal/agent/domain/segment_damage.h"
#include "zcal/agent/metrics/http_server.h"
#include "zcal/calibrator/sample.h"
#include "zcal/common/clock.h"
#include "zcal/probes/types/target.h"

namespace zcal::probes {
class PeerSink;
}  // namespace zcal::probes

namespace zcal::agent {


/// Which series a Metrics serves.
enum class MetricsRole : std::uint8_t {
  kAgent,  ///< every series of docs/metrics.md
  /// A standalone `zcal sink`: zcal_build_info, zcal_sink_* and
  /// zcal_http_* only, so that no agent series (calibrations, heartbeat,
  /// published results) stands at zero for a process that has none.
  kSink,
};

class Metrics final : public prometheus::Collectable {
 public:
  /// `version` is the zcal version for zcal_build_info.
  /// `clock` stamps zcal_agent_start_time_seconds (the service's clock).
  explicit Metrics(std::string version, MetricsRole role = MetricsRole::kAgent,
                   const std::shared_ptr<const common::Clock>& clock = common::SystemClock());
  ~Metrics() override;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  /// The published results, the entries of `table` that are a path's own
  /// (PublishedEntry::path; the table the segment's entries come from,
  /// publish/results.h), and whether they are stale. Replaces the previous
  /// ones: paths, methods and classes not given lose their series. Every
  /// family of a result has path (ToString of its PathId), method and depth
  /// labels.
  void SetPublished(std::span<const PublishedEntry> table, bool stale);
  /// Per-size figures and copied ratios of the last calibration of `path`
  /// (each zerocopy sample under the class of its depth, the copying
  /// baselines under stream; samples at a depth of no class are left out),
  /// and its verdicts before hysteresis per class (replaces those of
  /// `path`).
  void SetLastCalibration(const PathId& path,
                          std::span<const calibrator::Sample> samples,
                          const std::map<DepthClass, calibrator::PathResult>& fresh);
  void SetHost(const HostInfo& host);
  /// The paths results are kept for and their kinds: the configured
  /// loopback and discard paths, and the peers asked (zcal_path_info, its
  /// type label spelled by probes::TargetKindName; replaces the previous
  /// ones).
  void SetPaths(const std::map<PathId, probes::TargetKind>& kinds);
  /// Where the host default comes from and the NIC it stands for
  /// (zcal_host_default_info: the choice's source and interface), and its
  /// verdicts (zcal_host_default_threshold_bytes): the entries of scope
  /// kHostDefault of `table`, the table the segment got (others are left
  /// out). Replaces the previous ones.
  void SetHostDefault(const HostDefaultChoice& host_default,
                      std::span<const PublishedEntry> table = {});
  /// Drops every series of a path not in `paths` (published results, probe
  /// failures, last calibration, interface): call when a reload removed
  /// paths. A path that comes back counts its failures from 0.
  void RetainPaths(std::span<const PathId> paths);

  void RecordCalibration(CalibrationResult result, double duration_seconds,
                         std::uint64_t now_ns);
  void RecordTrigger(CalibrationTrigger trigger);
  /// Counts the samples whose status is not ok, by path, method and status.
  void RecordProbeFailures(const PathId& path,
                           std::span<const calibrator::Sample> samples);
  void RecordReload(bool ok);
  void RecordFingerprintChange();
  void RecordStateError(std::string_view operation);  ///< "load" or "save"
  /// zcal_state_unsaved: whether the last save of the state file failed.
  void SetStateUnsaved(bool unsaved);
  void RecordPublish(std::uint64_t now_ns, std::size_t entries);
  void RecordHeartbeat(std::uint64_t now_ns);
  /// A segment recreated because it was found damaged
  /// (zcal_segment_repairs_total{cause}); kNone counts nothing.
  void RecordSegmentRepair(SegmentDamage cause);
  /// A step of the wall clock against the steady clock
  /// (zcal_wall_clock_steps_total{direction="forward"|"back"}).
  void RecordWallClockStep(bool forward);
  /// An exported file rewritten (zcal_export_writes_total{format}), or an
  /// export that could not be produced or written
  /// (zcal_export_errors_total{format}).
  void RecordExportWrite(ExportFormat format);
  void RecordExportError(ExportFormat format);
  /// zcal_segment_repair_failing: whether the last check found the segment
  /// damaged and could not recreate it.
  void SetSegmentRepairFailing(bool failing);
  /// zcal_segment_publish_failing: whether the last table could not be
  /// published (the segment keeps the previous one).
  void SetSegmentPublishFailing(bool failing);
  void SetCalibrationRunning(bool running);
  /// Unix seconds of the next scheduled calibration; 0 for none.
  void SetNextCalibration(double unix_seconds);
  /// Probe seconds spent within the last hour.
  void SetBudgetUsed(double seconds);

  /// The sink whose counters are served as zcal_sink_* (docs/metrics.md),
  /// read from PeerSink::Stats() at each scrape; nullptr = no sink, and no
  /// zcal_sink_* series. The totals of a sink replaced by another (a
  /// reload) are carried over, so that the counters never go down.
  void SetSink(std::shared_ptr<const probes::PeerSink> sink);

  /// Peers (metrics_peers.cc): whether they are configured (without, no
  /// zcal_peer* series), each peer asked and how it ended (PeerOutcome),
  /// each discovery (its peers, and why DNS gave none),
  /// and, at each publish, the kept peers' staleness and the interface
  /// aggregates.
  void SetPeersEnabled(bool enabled);
  void RecordPeerAttempt(PeerOutcome outcome);
  void RecordPeerDiscovery(std::size_t peers, DnsFailure failure);
  void SetPeers(std::map<PathId, bool> stale, InterfaceAggregates interfaces);

  /// The applications' reported sends (zcal_app_*, docs/metrics.md): the
  /// last read of the report objects (replaces the previous one; its
  /// totals include the processes that exited, so counters never go
  /// down) and the reader's stats summed since start.
  void SetApps(AppsSnapshot snapshot, const AppsReadStats& totals);
  /// A field contradiction raised (publish/contradiction.h) on a scope kind
  /// (host_default, peer, interface) and method:
  /// zcal_app_contradictions_total{scope,method}
  /// (metrics_contradictions.cc).
  void RecordContradiction(AppScope scope, calibrator::Method method);

  /// The HTTP listener's events (MetricsServer reports them).
  void RecordHttpDrop(HttpDrop drop);
  void RecordHttpResponse(int status);
  void AddHttpOpenConnections(int change);

  std::vector<prometheus::MetricFamily> Collect() const override;

  /// The text exposition format of Collect(), as served on /metrics.
  std::string Text() const;

 private:
  // The four parts: each holds its values under its own lock and renders
  // them at each scrape (metrics_family.h); the functions above that
  // update a part are defined in its file.
  struct Live;      // events (metrics.cc)
  struct Snapshot;  // published results, last calibration, host (metrics_snapshot.cc)
  struct SinkView;  // zcal_sink_* (metrics_sink.cc)
  struct PeerView;  // zcal_peer*, zcal_interface_* (metrics_peers.cc)
  struct AppsView;  // zcal_app_* (metrics_apps.cc)
  struct ContradictionView;  // zcal_app_contradictions_total (metrics_contradictions.cc)
  std::unique_ptr<Live> live_;
  std::unique_ptr<Snapshot> snapshot_;
  std::unique_ptr<SinkView> sink_;
  std::unique_ptr<PeerView> peers_;
  std::unique_ptr<AppsView> apps_;
  std::unique_ptr<ContradictionView> contradictions_;
  MetricsRole role_;
};

/// Upper bounds of zcal_calibration_duration_seconds, seconds.
inline constexpr double kDurationBuckets[] = {0.5, 1, 2, 4, 8, 16, 32, 64,
                                              128, 300};

}  // namespace zcal::agent
