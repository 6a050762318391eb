#include "zcal/agent/service/publisher.h"

#include <sys/mman.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "zcal/agent/publish/peer_results.h"
#include "zcal/agent/publish/results.h"
#include "zcal/common/clock.h"

namespace zcal::agent {

namespace {

PathRefused Refused(PathRefusal refusal, std::string message) {
  PathRefused refused;
  refused.code = refusal == PathRefusal::kNotConfigured ? Errc::kNotFound : Errc::kFailed;
  refused.message = std::move(message);
  refused.refusal = refusal;
  return refused;
}

// The result of `path` in an analysis: under its name, or the only one
// (a calibration names its one path itself).
const calibrator::PathResult* FindPathResult(const calibrator::Analysis& analysis,
                                             const std::string& path) {
  auto found = analysis.paths.find(path);
  if (found == analysis.paths.end() && analysis.paths.size() == 1) {
    found = analysis.paths.begin();
  }
  return found == analysis.paths.end() ? nullptr : &found->second;
}

}  // namespace

ShmWriterOptions WriterOptions(const SegmentConfig& segment,
                               std::shared_ptr<const common::Clock> clock) {
  ShmWriterOptions options;
  options.clock = std::move(clock);
  options.name = segment.name;
  options.mode = segment.mode;
  options.capacity = segment.capacity;
  if (!segment.group.empty()) options.group = segment.group;
  return options;
}

namespace {

Result<std::unique_ptr<ShmWriter>> CreateWriter(const SegmentConfig& segment,
                                                std::shared_ptr<const common::Clock> clock) {
  // The writer's messages start with "segment NAME: " themselves.
  return ShmWriter::Create(WriterOptions(segment, std::move(clock)));
}

}  // namespace

Publisher::Publisher(Config config, std::shared_ptr<Metrics> metrics,
                     std::unique_ptr<InstanceLock> lock,
                     std::unique_ptr<ShmWriter> writer, std::string lock_dir,
                     std::shared_ptr<const common::Clock> clock)
    : config_(std::move(config)),
      metrics_(std::move(metrics)),
      lock_(std::move(lock)),
      writer_(std::move(writer)),
      lock_dir_(std::move(lock_dir)),
      exporter_(metrics_, clock),
      clock_(std::move(clock)) {
  exporter_.Configure(config_.exports);
  (void)wall_steps_.Check(*clock_);  // the offset steps are measured from
}

Publisher::~Publisher() = default;

Result<std::unique_ptr<Publisher>> Publisher::Open(
    const Config& config, std::string lock_dir,
    std::shared_ptr<Metrics> metrics, std::shared_ptr<const common::Clock> clock) {
  if (!clock) return Fail(Errc::kInvalidArgument, "the publisher needs a clock");
  auto lock = InstanceLock::Acquire(config.segment.name, lock_dir);
  if (!lock) return tl::unexpected(lock.error());
  auto writer = CreateWriter(config.segment, clock);
  if (!writer) return tl::unexpected(writer.error());
  return std::unique_ptr<Publisher>(
      new Publisher(config, std::move(metrics), std::move(*lock),
                    std::move(*writer), std::move(lock_dir), std::move(clock)));
}

void Publisher::LoadSaved() {
  Result<AgentState> loaded = LoadState(config_.state_path);
  if (!loaded) {
    if (loaded.error().code == Errc::kNotFound) {
      spdlog::info("no saved state at {}; nothing to republish before the "
                   "first calibration",
                   config_.state_path);
    } else {
      spdlog::warn("ignoring the saved state: {}; it will be replaced after "
                   "the next calibration",
                   loaded.error().message);
      metrics_->RecordStateError("load");
    }
    return;
  }
  PruneState(*loaded, config_);
  state_ = std::move(*loaded);
  stale_ = !state_.empty();
  contradictions_.Restore(state_.contradictions);
  if (!contradictions_.active().empty()) {
    spdlog::info("{} field contradiction(s) of the saved state stay flagged until their scopes "
                 "are measured again",
                 contradictions_.active().size());
  }
  std::size_t results = 0;
  for (const auto& [path, methods] : state_.paths) results += methods.size();
  spdlog::info("republishing {} saved results from {}, marked stale until a "
               "calibration confirms them",
               results, config_.state_path);
}

void Publisher::SetHost(const HostInfo& host) {
  host_default_nic_ = host.host_default_nic;
}

void Publisher::Publish() {
  const std::uint64_t now_ns = clock_->Wall();
  const std::int64_t steady_ns = common::SteadyNs(*clock_);
  PublishedTable table = BuildEntries(state_, config_, host_default_nic_, now_ns, steady_ns);
  last_entries_ = table.entries;
  contradictions_.Mark(table.entries);
  if (table.host_default.explanation != host_default_explanation_) {
    // Logged when it changes, not on every publish.
    spdlog::info("{}", table.host_default.explanation);
    host_default_explanation_ = table.host_default.explanation;
  }
  CheckSegment();
  WriteSegment(SegmentEntries(table.entries), table.host_default.source);
  PublishMetrics(std::move(table), now_ns, steady_ns);
}

void Publisher::WriteSegment(const std::vector<PublishedEntry>& entries,
                             HostDefaultSource host_default) {
  const std::uint32_t capacity = writer_->capacity();
  const Result<void> published = writer_->Publish(entries, stale_, host_default);
  // Only a failure of the file system (a segment that could not grow on a
  // full /dev/shm) can go away by itself; the table is then retried at
  // each heartbeat.
  publish_pending_ = !published && published.error().code == Errc::kIo;
  metrics_->SetSegmentPublishFailing(!published);
  if (!published) {
    ++failed_publishes_;
    const Error& failure = published.error();
    if (publish_failure_ != failure.code) {
      spdlog::error("segment {}: publishing {} entries failed: {}{}", config_.segment.name,
                    entries.size(), failure.message,
                    publish_pending_ ? " (tried again at each heartbeat)" : "");
      publish_failure_ = failure.code;
    } else {
      spdlog::debug("segment {}: publishing failed again: {}", config_.segment.name,
                    failure.message);
    }
    return;
  }
  if (writer_->capacity() != capacity) {
    spdlog::info("segment {} grew from {} to {} entries for a table of {}; its readers move "
                 "to the new one",
                 config_.segment.name, capacity, writer_->capacity(), entries.size());
  }
  if (failed_publishes_ != 0) {
    spdlog::info("segment {}: published {} entries after {} failed attempt(s)",
                 config_.segment.name, entries.size(), failed_publishes_);
  }
  failed_publishes_ = 0;
  publish_failure_.reset();
  metrics_->RecordPublish(clock_->Wall(), entries.size());
  spdlog::debug("published {} entries{}", entries.size(), stale_ ? " (stale)" : "");
  // Read back from the segment, as a consumer's zcal export would.
  exporter_.Update(config_.segment.name);
}

void Publisher::PublishMetrics(PublishedTable table, std::uint64_t now_ns,
                               std::int64_t steady_ns) {
  metrics_->SetPublished(table.entries, stale_);
  std::map<PathId, probes::TargetKind> types;
  for (const PathConfig& path : config_.paths) types[PathId::Configured(path.name)] = path.type;
  std::map<PathId, bool> stale_peers;
  for (const auto& [path, peer] : state_.peers) {
    types[path] = probes::TargetKind::kPeer;
    stale_peers[path] = PeerStale(peer, config_, now_ns, steady_ns);
  }
  metrics_->SetPaths(types);
  metrics_->SetPeersEnabled(config_.peers.enabled());
  metrics_->SetHostDefault(table.host_default, table.entries);
  metrics_->SetPeers(std::move(stale_peers), std::move(table.interfaces));
}

void Publisher::Save() {
  const Result<void> saved = SaveState(state_, config_.state_path);
  if (!saved) {
    metrics_->RecordStateError("save");
    // One error line per outage, not one per heartbeat that retries.
    if (failed_saves_++ == 0) {
      spdlog::error("saving the state failed: {}; the published table is kept "
                    "and the save is retried at each heartbeat",
                    saved.error().message);
    } else {
      spdlog::debug("saving the state failed again: {}", saved.error().message);
    }
    metrics_->SetStateUnsaved(true);
    return;
  }
  if (failed_saves_ != 0) {
    spdlog::info("state saved to {} after {} failed attempt(s)", config_.state_path,
                 failed_saves_);
    failed_saves_ = 0;
    metrics_->SetStateUnsaved(false);
  }
}

std::map<DepthClass, calibrator::PathResult> Publisher::FreshResults(
    const PathReport& r) const {
  const probes::CalibrationReport& report = *r.report;
  // Each class calibrated; a report without classes is its stream
  // analysis alone.
  std::vector<probes::ClassAnalysis> stream_only;
  if (report.classes.empty()) stream_only.push_back({calibrator::kStreamDepth, report.analysis, {}, {}});
  const std::vector<probes::ClassAnalysis>& classes =
      report.classes.empty() ? stream_only : report.classes;
  std::map<DepthClass, calibrator::PathResult> fresh;
  for (const probes::ClassAnalysis& c : classes) {
    const std::optional<DepthClass> depth = DepthClassOf(c.depth);
    const calibrator::PathResult* found = FindPathResult(c.analysis, ToString(r.path));
    // The agent asks for published classes only (config.depths).
    if (!depth || found == nullptr) continue;
    calibrator::PathResult result = *found;
    std::erase_if(result.methods, [&](const auto& item) {
      return std::find(config_.methods.begin(), config_.methods.end(), item.first) ==
             config_.methods.end();
    });
    fresh.emplace(*depth, std::move(result));
  }
  return fresh;
}

tl::expected<void, PathRefused> Publisher::AcceptPath(const PathReport& r,
                                                       std::uint64_t now_ns) {
  if (!r.report) {
    return tl::unexpected(Refused(PathRefusal::kCalibrationFailed,
                                  "calibration of path " + ToString(r.path) +
                                      " failed: " + r.report.error().message));
  }
  const probes::CalibrationReport& report = *r.report;
  const std::string name = ToString(r.path);
  metrics_->RecordProbeFailures(r.path, report.samples);
  if (r.path.IsPeer() ? !config_.peers.enabled() : !PathKind(config_, r.path)) {
    return tl::unexpected(
        Refused(PathRefusal::kNotConfigured,
                "path " + name + " is no longer configured; its results are dropped"));
  }
  const std::map<DepthClass, calibrator::PathResult> fresh = FreshResults(r);
  if (!fresh.contains(DepthClass::kStream)) {
    return tl::unexpected(Refused(PathRefusal::kNoResults,
                                  "calibration of path " + name + " produced no results"));
  }
  metrics_->SetLastCalibration(r.path, report.samples, fresh);
  state_.decided_for[r.path] = r.decided_for;
  for (const auto& [depth, result] : fresh) {
    for (const std::string& line : MergeCalibration(state_, r.path, result, now_ns, report.load,
                                                    config_.hysteresis, depth)) {
      spdlog::info("{}", line);
    }
  }
  for (const probes::ClassAnalysis& c : report.classes) {
    const std::optional<DepthClass> depth = DepthClassOf(c.depth);
    if (!depth) continue;
    for (const auto& [method, why] : c.not_probed) {
      if (const auto line = DropClass(state_, r.path, {method, *depth}, why)) {
        spdlog::info("{}", *line);
      }
    }
  }
  return {};
}

bool Publisher::Accept(const RoundOutcome& outcome, const HostInfo& host,
                       std::uint64_t now_ns) {
  bool any = false;
  for (const PathReport& r : outcome.reports) {
    const tl::expected<void, PathRefused> accepted = AcceptPath(r, now_ns);
    if (accepted) {
      any = true;
    } else if (accepted.error().refusal == PathRefusal::kNotConfigured) {
      spdlog::info("{}", accepted.error().message);  // a reload's doing, not a fault
    } else {
      spdlog::warn("{}", accepted.error().message);
    }
  }
  AcceptPeers(outcome, now_ns);
  if (!any) {
    if (!outcome.peer_attempts.empty()) {
      // No result, but the peers' records changed (their last attempts).
      Publish();
      Save();
    }
    return false;
  }
  state_.fingerprint = host.facts.fingerprint;
  state_.host = host;
  SetHost(host);
  state_.last_success_ns = now_ns;
  state_.saved_at_ns = now_ns;
  stale_ = false;
  Publish();
  Save();
  return true;
}

AppReportsOutcome Publisher::ApplyAppReports(const AppsWindow& window,
                                             const AppsSettings& settings,
                                             std::uint64_t now_ns) {
  app_mixes_ = MixesOf(window, settings);
  AppReportsOutcome outcome;
  const ContradictionUpdate update =
      contradictions_.Apply(window, settings, last_entries_, now_ns);
  for (const Contradiction& c : update.raised) {
    spdlog::warn("{}", DescribeRaised(c, last_entries_));
    metrics_->RecordContradiction(c.key.scope, c.key.method);
  }
  for (const auto& [c, why] : update.cleared) spdlog::info("{}", DescribeCleared(c, why));
  // Kept in the state (saved with it), so that a restart keeps the flags.
  state_.contradictions = contradictions_.Records();
  if (update.changed()) {
    Publish();
    if (!state_.empty()) Save();
  }
  outcome.recalibrate = !update.raised.empty();
  outcome.raised = update.raised;
  return outcome;
}

void Publisher::AcceptPeers(const RoundOutcome& outcome, std::uint64_t now_ns) {
  if (outcome.discovery) {
    const Discovery& d = *outcome.discovery;
    metrics_->RecordPeerDiscovery(d.peers.size(), d.dns_failure);
    spdlog::info("peers: {} found{}", d.peers.size(),
                 d.own_excluded == 0
                     ? std::string()
                     : " (" + std::to_string(d.own_excluded) + " of this host's own left out)");
  }
  for (const PeerAttempt& attempt : outcome.peer_attempts) {
    metrics_->RecordPeerAttempt(attempt.outcome);
    if (attempt.outcome != PeerOutcome::kSuccess) {
      const bool kept = state_.paths.contains(attempt.path());
      spdlog::warn("{}: {} ({}){}", ToString(attempt.path()), PeerOutcomeName(attempt.outcome),
                   attempt.detail,
                   kept ? "; its last good result stays published" : "");
    }
  }
  RecordPeerAttempts(state_, outcome.peer_attempts, now_ns, common::SteadyNs(*clock_));
  PrunePeers(state_, config_);
  PruneDecidedFor(state_);
  metrics_->RetainPaths(KeptPaths());
}

std::vector<PathId> Publisher::KeptPaths() const {
  std::vector<PathId> paths;
  for (const PathConfig& path : config_.paths) paths.push_back(PathId::Configured(path.name));
  for (const auto& [path, peer] : state_.peers) paths.push_back(path);
  return paths;
}

std::uint64_t Publisher::NextPeerRound() { return state_.peer_round++; }

void Publisher::CheckSegment() {
  const SegmentHealth health = writer_->Heal();
  metrics_->SetSegmentRepairFailing(health.damage != SegmentDamage::kNone && !health.repaired);
  if (health.damage == SegmentDamage::kNone) return;
  const std::string& name = config_.segment.name;
  if (!health.repaired) {
    const std::pair failure{health.damage, health.repaired.error().code};
    if (repair_failure_ != failure) {
      spdlog::error("segment {}: {}; recreating it failed: {}; readers use their "
                    "fallback until it succeeds (tried again at each heartbeat)",
                    name, health.found, health.repaired.error().message);
      repair_failure_ = failure;
    } else {
      spdlog::debug("segment {}: still cannot recreate it: {}", name,
                    health.repaired.error().message);
    }
    return;
  }
  repair_failure_.reset();
  metrics_->RecordSegmentRepair(health.damage);
  spdlog::warn("segment {} repaired ({}): {}; recreated it and republished the last "
               "table, and its readers move to the new one",
               name, SegmentDamageName(health.damage), health.found);
}

void Publisher::CheckWallClock() {
  const std::optional<std::int64_t> step = wall_steps_.Check(*clock_);
  if (!step) return;
  const bool forward = *step > 0;
  const std::int64_t magnitude = forward ? *step : -*step;
  metrics_->RecordWallClockStep(forward);
  spdlog::warn("wall clock stepped {} by {:.0f} s; ages are measured on the steady clock, "
               "and the segment's heartbeat and the saved stamps follow the new wall time",
               forward ? "forward" : "back", static_cast<double>(magnitude) * 1e-9);
}

void Publisher::Heartbeat() {
  CheckWallClock();
  if (publish_pending_) {
    Publish();  // checks the segment first
  } else {
    CheckSegment();
  }
  if (writer_->Heartbeat()) metrics_->RecordHeartbeat(clock_->Wall());
  if (failed_saves_ != 0) Save();
}

void Publisher::Stop() {
  if (!state_.empty()) {
    state_.saved_at_ns = clock_->Wall();
    Save();
  }
  CheckSegment();
  if (writer_->Heartbeat()) metrics_->RecordHeartbeat(clock_->Wall());
}

Result<PreparedSegment> Publisher::PrepareSegment(
    const SegmentConfig& next) const {
  PreparedSegment prepared;
  prepared.config = next;
  if (next.name != config_.segment.name) {
    auto lock = InstanceLock::Acquire(next.name, lock_dir_);
    if (!lock) return tl::unexpected(lock.error());
    prepared.lock = std::move(*lock);
  }
  auto writer = CreateWriter(next, clock_);
  if (!writer) return tl::unexpected(writer.error());
  prepared.writer = std::move(*writer);
  return prepared;
}

void Publisher::SwitchSegment(PreparedSegment prepared) {
  const std::string old_name = config_.segment.name;
  writer_ = std::move(prepared.writer);
  if (prepared.lock) {
    shm_unlink(old_name.c_str());
    lock_ = std::move(prepared.lock);
  }
  config_.segment = prepared.config;
  repair_failure_.reset();  // a failure of the old segment's repair
  spdlog::info("publishing in segment {} now", config_.segment.name);
}

void Publisher::Reconfigure(const Config& next) {
  const bool state_moved = next.state_path != config_.state_path;
  // The segment changes through SwitchSegment only, so that a reload whose
  // new segment could not be prepared keeps publishing where it did.
  const SegmentConfig segment = config_.segment;
  config_ = next;
  config_.segment = segment;
  exporter_.Configure(config_.exports);
  PruneState(state_, config_);
  metrics_->RetainPaths(KeptPaths());
  Publish();
  if (state_moved && !state_.empty()) Save();
}

bool Publisher::DiscardInconclusive() const {
  for (const PathConfig& path : config_.paths) {
    if (path.type != probes::TargetKind::kDiscard) continue;
    const auto it = state_.paths.find(PathId::Configured(path.name));
    if (it == state_.paths.end()) continue;
    bool any = false;
    for (const auto& [key, s] : it->second) {
      if (key.depth != DepthClass::kStream) continue;
      if (s.published.verdict != calibrator::Verdict::kInconclusive) return false;
      any = true;
    }
    if (any) return true;
  }
  return false;
}

}  // namespace zcal::agent
