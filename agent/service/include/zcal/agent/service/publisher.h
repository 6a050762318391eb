// What the agent publishes and keeps: the segment (with its single-instance
// lock), the state file and the published snapshot in the metrics. Every
// "save, publish, log" of the service goes through here, once.
//
// The table itself is built by BuildEntries (results.h), once per publish,
// the one place that decides which result is published under which scope;
// the segment gets its SegmentEntries and the metrics its entries of a path
// (Metrics::SetPublished), so that both show the same results. The
// host-default rules of peers (an aggregate per interface) and of the
// discard path (an estimate where the IOMMU does not translate) change that
// function only.
//
// Thread safety: none; the service's event loop owns it. The Metrics it
// updates are thread-safe (scrapes read them on other threads).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "zcal/agent/service/calibration_runner.h"
#include "zcal/agent/config/config.h"
#include "zcal/agent/service/exporter.h"
#include "zcal/agent/service/host_snapshot.h"
#include "zcal/agent/service/instance_lock.h"
#include "zcal/agent/metrics/metrics.h"
#include "zcal/agent/domain/app_traffic.h"
#include "zcal/agent/domain/apps_settings.h"
#include "zcal/agent/domain/traffic_mix.h"
#include "zcal/agent/publish/contradiction.h"
#include "zcal/agent/publish/results.h"
#include "zcal/agent/publish/shm_writer.h"
#include "zcal/agent/state/state.h"
#include "zcal/common/clock.h"
#include "zcal/common/result.h"

namespace zcal::agent {

/// ShmWriterOptions of a segment configuration, stamped by `clock`.
ShmWriterOptions WriterOptions(const SegmentConfig& segment,
                               std::shared_ptr<const common::Clock> clock = common::SystemClock());

/// Why Publisher::Accept did not take a path's report into the state.
enum class PathRefusal : std::uint8_t {
  kCalibrationFailed,  ///< the round's report of the path is an error
  kNotConfigured,      ///< a reload removed the path while the round ran
  kNoResults,          ///< the report holds no stream result for the path
};

/// A report refused: its kind, and the sentence logged for it.
struct PathRefused : Error {
  PathRefusal refusal = PathRefusal::kCalibrationFailed;
};

/// What the service must do after Publisher::ApplyAppReports.
struct AppReportsOutcome {
  /// A field contradiction was raised: pass the scheduler a
  /// ContradictionEvent (a calibration with trigger kContradiction, subject
  /// to the probe budget). Once per contradiction, not per heartbeat.
  bool recalibrate = false;
  /// The contradictions raised (already logged and counted).
  std::vector<Contradiction> raised;
};

/// The segment of a new configuration, made ready without giving up the
/// running one (see Publisher::PrepareSegment).
struct PreparedSegment {
  SegmentConfig config;
  std::unique_ptr<InstanceLock> lock;  ///< null when the name is unchanged
  std::unique_ptr<ShmWriter> writer;
};

class Publisher {
 public:
  /// Takes the lock of config.segment.name (lock files in `lock_dir`) and
  /// creates the segment (empty until the first Publish). Errors: those of
  /// InstanceLock::Acquire (kBusy naming the other agent), and of
  /// ShmWriter::Create prefixed with "segment NAME: ".
  /// Every stamp it writes (segment, state file, metrics) is `clock`'s
  /// Wall(); ages of what this process measured are on its Steady().
  static Result<std::unique_ptr<Publisher>> Open(
      const Config& config, std::string lock_dir,
      std::shared_ptr<Metrics> metrics,
      std::shared_ptr<const common::Clock> clock = common::SystemClock());
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;
  ~Publisher();  ///< releases the lock; the segment stays for its readers

  /// Reads config.state_path: its results (pruned to the configuration)
  /// become the published state, marked stale. A missing file is logged as
  /// normal; an unreadable or invalid one is logged, counted
  /// (zcal_state_errors_total{operation="load"}) and ignored.
  void LoadSaved();

  /// The host facts the table depends on (the host-default NIC); call it
  /// whenever they are read anew. Publish uses the last ones given.
  void SetHost(const HostInfo& host);

  /// Publishes the table of the current state (BuildEntries) with the stale
  /// flag, and the snapshot in the metrics (its published results and host
  /// default from the same table). A failure is logged once (until its kind, the error's Errc,
  /// changes or it ends), zcal_segment_publish_failing is 1 meanwhile, and
  /// the segment keeps its previous table; one of the file system (the
  /// segment could not grow for a larger table: /dev/shm full) is retried
  /// at each heartbeat. A segment that grew is logged in one line. The segment is checked first,
  /// as by Heartbeat. After a publish that succeeded, the exported files
  /// whose content changed are rewritten (Exporter).
  void Publish();

  /// Takes a finished round. Each path's report updates the metrics of its
  /// last calibration and passes the hysteresis into the state, per depth
  /// class of the report (one log line per method and class); a class that
  /// the probes did not probe for a method (ClassAnalysis::not_probed) is
  /// removed from the state, logged once with why; failed paths are logged; paths and methods no longer
  /// configured (a reload while it ran) are skipped. When at least one path
  /// succeeded, the state takes `host` (as when the round started) and
  /// `now_ns`, loses its stale flag, and is published and saved. Peers
  /// asked are recorded (outcome metrics, their records, the M kept)
  /// whatever the rest did. Returns whether one path succeeded. A cancelled round must not be passed.
  bool Accept(const RoundOutcome& outcome, const HostInfo& host,
              std::uint64_t now_ns);

  /// Checks the segment (ShmWriter::Heal): a damaged one is recreated with
  /// the last table, logged in one warning line and counted
  /// (zcal_segment_repairs_total{cause}); a repair that fails is logged
  /// once until it succeeds or fails otherwise (another damage or Errc).
  /// Then refreshes the
  /// segment's heartbeat (and its metric), and retries a save of the state
  /// file that failed (a full or read-only state directory): each failed
  /// attempt counts in zcal_state_errors_total{operation="save"}, the
  /// outage logs one error line and, when it ends, one info line, and
  /// zcal_state_unsaved is 1 meanwhile. A step of the wall clock since the
  /// previous heartbeat (common::WallStepDetector) is logged in one line
  /// and counted (zcal_wall_clock_steps_total{direction}); the stamps that
  /// follow are on the stepped clock, as readers' clocks are.
  void Heartbeat();

  /// Learns from the applications' reports (docs/operations.md, "Field
  /// contradictions"; docs/calibrator.md, "The host's real mix"): `window`
  /// is AppHistory::Recent() of the reads so far, `settings` the `apps:`
  /// section, `now_ns` CLOCK_REALTIME. Keeps the mix of each scope for the
  /// next round (AppMixes), and applies the field-contradiction rule to the
  /// table last published: a contradiction raised is logged in one warning
  /// line and counted (zcal_app_contradictions_total), one cleared in one
  /// info line; either republishes the table with the entries' flags
  /// (ZCAL_ENTRY_CONTRADICTED). Call it after each read of the reports.
  AppReportsOutcome ApplyAppReports(const AppsWindow& window, const AppsSettings& settings,
                                    std::uint64_t now_ns);
  /// Says in the segment whether this agent takes the applications'
  /// closed report objects (ZCAL_FLAG_TAKES_REPORTS): it reads them and
  /// may remove any user's. Stored at once after the first publish.
  void SetTakesReports(bool takes) { writer_->SetTakesReports(takes); }
  /// The mixes of the last ApplyAppReports (none before it, or with
  /// apps.mix off): what the next round decides for (ApplyMixes,
  /// calibration_runner.h).
  const ScopeMixes& AppMixes() const { return app_mixes_; }
  /// The contradictions in force.
  const std::map<ContradictionKey, Contradiction>& contradictions() const {
    return contradictions_.active();
  }

  /// At stop: saves the state (when there is one) and leaves a last
  /// heartbeat.
  void Stop();

  /// For a reload: a lock on a new segment name (kBusy when another agent
  /// holds it) and a new segment for a new name, mode or group. Nothing of
  /// the running segment changes; errors as Open.
  Result<PreparedSegment> PrepareSegment(const SegmentConfig& next) const;
  /// Publishes in the prepared segment from now on. With a new name the old
  /// segment is removed, so that its readers find nothing instead of a
  /// table nobody refreshes, and its lock released.
  void SwitchSegment(PreparedSegment prepared);

  /// Applies a new configuration: results of paths and methods no longer
  /// configured are dropped (from the state, the table and every metric
  /// series of the path), the exports list is taken, and the table is
  /// published; a new state path gets
  /// the state at once. The segment is switched separately.
  void Reconfigure(const Config& next);

  /// The rendezvous round for the next calibration with peers; each call
  /// moves on by one (kept in the state, so across restarts too).
  std::uint64_t NextPeerRound();

  const AgentState& state() const { return state_; }
  bool stale() const { return stale_; }
  /// Whether a discard path is configured, has results, and each of its
  /// methods' stream results is inconclusive: nothing of it can stand for
  /// the host default yet.
  bool DiscardInconclusive() const;
  const std::string& segment_name() const { return config_.segment.name; }

 private:
  Publisher(Config config, std::shared_ptr<Metrics> metrics,
            std::unique_ptr<InstanceLock> lock,
            std::unique_ptr<ShmWriter> writer, std::string lock_dir,
            std::shared_ptr<const common::Clock> clock);
  void CheckWallClock();
  void Save();
  void CheckSegment();
  // Takes one path's report into the state (and its metrics), or says why
  // not; Accept logs the refusal.
  tl::expected<void, PathRefused> AcceptPath(const PathReport& r, std::uint64_t now_ns);
  // The report's results per published depth class, limited to the
  // configured methods.
  std::map<DepthClass, calibrator::PathResult> FreshResults(const PathReport& r) const;
  // The table into the segment, logged and counted.
  void WriteSegment(const std::vector<PublishedEntry>& entries, HostDefaultSource host_default);
  // The published snapshot into the metrics, the host default from `table`.
  void PublishMetrics(PublishedTable table, std::uint64_t now_ns, std::int64_t steady_ns);
  // The round's discovery and peer attempts: metrics, log, the peers'
  // records, and the kept M.
  void AcceptPeers(const RoundOutcome& outcome, std::uint64_t now_ns);
  std::vector<PathId> KeptPaths() const;  // configured and kept peers'


  Config config_;
  std::shared_ptr<Metrics> metrics_;
  std::unique_ptr<InstanceLock> lock_;
  std::unique_ptr<ShmWriter> writer_;
  std::string lock_dir_;
  AgentState state_;
  bool stale_ = false;
  HostDefaultNic host_default_nic_;
  std::string host_default_explanation_;
  // The kind of the last repair failure logged; nullopt when none.
  std::optional<std::pair<SegmentDamage, Errc>> repair_failure_;
  std::optional<Errc> publish_failure_;  // likewise for Publish
  std::uint64_t failed_publishes_ = 0;  // since the last publish that succeeded
  bool publish_pending_ = false;  // the last table is not in the segment; retry
  Exporter exporter_;
  ContradictionTracker contradictions_;
  ScopeMixes app_mixes_;
  // The entries of the last table built (before its flags): what the
  // field-contradiction rule checks the reports against.
  std::vector<PublishedEntry> last_entries_;
  std::uint64_t failed_saves_ = 0;  // since the last save that succeeded
  std::shared_ptr<const common::Clock> clock_;
  common::WallStepDetector wall_steps_;
};

}  // namespace zcal::agent
