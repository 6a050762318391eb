#include "zcal/agent/service.h"

#include <signal.h>
#include <sys/mman.h>
#include <time.h>

#include <deque>
#include <random>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "asio.h"
#include "zcal/agent/instance_lock.h"
#include "zcal/agent/metrics.h"
#include "zcal/agent/results.h"
#include "zcal/agent/shm_writer.h"
#include "zcal/agent/state.h"
#include "zcal/common/units.h"
#include "zcal/common/clock.h"
#include "zcal/common/text.h"

namespace zcal::agent {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using SteadyTimer = asio::steady_timer;

ShmWriterOptions WriterOptions(const SegmentConfig& segment) {
  ShmWriterOptions options;
  options.name = segment.name;
  options.mode = segment.mode;
  if (!segment.group.empty()) options.group = segment.group;
  return options;
}

// Logs a multi-line error message line by line, so that each problem of a
// configuration gets its own log record.
void LogLines(spdlog::level::level_enum level, const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) spdlog::log(level, "{}", line);
}

// Servers left running for the process exit (see FinishStop); never
// destroyed, and reachable from here.
std::vector<std::unique_ptr<MetricsServer>>& ServersLeftToExit() {
  static auto* servers = new std::vector<std::unique_ptr<MetricsServer>>();
  return *servers;
}

struct PathReport {
  std::string path;
  Result<probes::CalibrationReport> report;
};

// What a calibration worker hands back to the event loop.
struct Outcome {
  CalibrationTrigger trigger = CalibrationTrigger::kStartup;
  std::vector<PathReport> reports;
  double duration_seconds = 0;
  bool cancelled = false;
  HostSnapshot host;  // as when the calibration started
};

}  // namespace

class Service::Impl {
 public:
  Impl(Config config, std::string config_path, ServiceHooks hooks)
      : config_(std::move(config)),
        config_path_(std::move(config_path)),
        hooks_(std::move(hooks)),
        signals_(io_),
        calibration_timer_(io_),
        heartbeat_timer_(io_),
        poll_timer_(io_),
        stop_timer_(io_),
        metrics_(hooks_.metrics ? hooks_.metrics
                                : std::make_shared<Metrics>(ZCAL_VERSION)),
        random_(std::random_device{}()) {
    if (!hooks_.calibrate) hooks_.calibrate = probes::RunCalibration;
    if (!hooks_.collect_host) hooks_.collect_host = CollectHostSnapshot;
  }

  ~Impl() {
    if (worker_.joinable()) {
      cancel_ = true;
      worker_.join();
    }
  }

  int Run();
  void Stop() {
    asio::post(io_, [this] { BeginStop("stop requested"); });
  }
  void Reload() {
    asio::post(io_, [this] { DoReload(); });
  }
  void CalibrateNow() {
    asio::post(io_, [this] { StartCalibration(CalibrationTrigger::kSignal); });
  }

 private:
  bool Start();
  void LoadSavedState();
  void Publish();
  void OnSignal(const boost::system::error_code& ec, int signal);
  void ArmSignals();
  void ArmHeartbeat();
  void ArmFingerprintPoll();
  void ScheduleNext(milliseconds delay, CalibrationTrigger trigger);
  void ScheduleRegular();
  void StartCalibration(CalibrationTrigger trigger);
  void RunWorker(Config config, CalibrationTrigger trigger, HostSnapshot host);
  void OnCalibrationDone(Outcome outcome);
  double BudgetUsedSeconds();
  void DoReload();
  void BeginStop(const std::string& why);
  void FinishStop();

  Config config_;
  std::string config_path_;
  ServiceHooks hooks_;
  asio::io_context io_;
  asio::signal_set signals_;
  SteadyTimer calibration_timer_;
  SteadyTimer heartbeat_timer_;
  SteadyTimer poll_timer_;
  SteadyTimer stop_timer_;
  std::shared_ptr<Metrics> metrics_;
  std::unique_ptr<MetricsServer> metrics_server_;
  std::unique_ptr<InstanceLock> lock_;
  std::unique_ptr<ShmWriter> writer_;
  AgentState state_;
  bool stale_ = false;
  HostSnapshot host_;
  std::thread worker_;
  std::atomic<bool> cancel_{false};
  bool running_ = false;
  bool rerun_ = false;
  bool stopping_ = false;
  bool worker_abandoned_ = false;
  int exit_status_ = 0;
  // End time and duration of recent calibrations, for the hourly budget.
  std::deque<std::pair<steady_clock::time_point, double>> probe_history_;
  std::mt19937_64 random_;
};

int Service::Impl::Run() {
  if (!Start()) return 1;
  io_.run();
  if (worker_abandoned_) {
    // The worker still references this object; leaving through the normal
    // path would destroy it under the worker's feet.
    spdlog::shutdown();
    std::_Exit(exit_status_);
  }
  return exit_status_;
}

bool Service::Impl::Start() {
  spdlog::set_level(spdlog::level::from_str(config_.log_level));
  spdlog::info("zcal agent {} starting (pid {}), configuration: {}",
               ZCAL_VERSION, getpid(), config_.source);
  auto lock = InstanceLock::Acquire(config_.segment.name, hooks_.lock_dir);
  if (!lock) {
    spdlog::error("{}", lock.error().message);
    return false;
  }
  lock_ = std::move(*lock);
  auto writer = ShmWriter::Create(WriterOptions(config_.segment));
  if (!writer) {
    spdlog::error("segment {}: {}", config_.segment.name,
                  writer.error().message);
    return false;
  }
  writer_ = std::move(*writer);
  if (!config_.metrics.listen.empty()) {
    auto server = MetricsServer::Start(config_.metrics.listen, metrics_);
    if (!server) {
      spdlog::error("{}", server.error().message);
      return false;
    }
    metrics_server_ = std::move(*server);
  }
  host_ = hooks_.collect_host(config_);
  metrics_->SetHost(host_.info);
  LoadSavedState();
  Publish();
  spdlog::info("publishing thresholds in shared-memory segment {} "
               "(/dev/shm{}); `zcal show --segment {}` prints them",
               config_.segment.name, config_.segment.name,
               config_.segment.name);
  if (metrics_server_) {
    spdlog::info("serving metrics at {}", metrics_server_->Url());
  } else {
    spdlog::info("metrics disabled (metrics.listen is empty)");
  }
  ArmSignals();
  ArmHeartbeat();
  ArmFingerprintPoll();
  if (config_.schedule.at_startup) {
    asio::post(io_, [this] { StartCalibration(CalibrationTrigger::kStartup); });
  } else if (!state_.empty() && state_.fingerprint != host_.fingerprint) {
    spdlog::info("host facts changed since the saved calibration "
                 "(fingerprint {} -> {})",
                 common::Hex64(state_.fingerprint),
                 common::Hex64(host_.fingerprint));
    asio::post(io_,
               [this] { StartCalibration(CalibrationTrigger::kFingerprint); });
  } else {
    ScheduleRegular();
  }
  return true;
}

void Service::Impl::LoadSavedState() {
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
  std::size_t results = 0;
  for (const auto& [path, methods] : state_.paths) results += methods.size();
  spdlog::info("republishing {} saved results from {}, marked stale until a "
               "calibration confirms them",
               results, config_.state_path);
}

void Service::Impl::Publish() {
  const std::vector<PublishedEntry> entries = BuildEntries(state_, config_);
  const Result<void> published = writer_->Publish(entries, stale_);
  if (!published) {
    spdlog::error("segment {}: publishing {} entries failed: {}",
                  config_.segment.name, entries.size(),
                  published.error().message);
  } else {
    metrics_->RecordPublish(common::RealtimeNs(), entries.size());
    spdlog::debug("published {} entries{}", entries.size(),
                  stale_ ? " (stale)" : "");
  }
  metrics_->SetPublished(state_.paths, stale_);
}

void Service::Impl::ArmSignals() {
  signals_.add(SIGHUP);
  signals_.add(SIGUSR1);
  signals_.add(SIGTERM);
  signals_.add(SIGINT);
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    OnSignal(ec, signal);
  });
}

void Service::Impl::OnSignal(const boost::system::error_code& ec, int signal) {
  if (ec) return;
  switch (signal) {
    case SIGHUP:
      spdlog::info("SIGHUP: reloading the configuration");
      DoReload();
      break;
    case SIGUSR1:
      spdlog::info("SIGUSR1: calibrating now");
      StartCalibration(CalibrationTrigger::kSignal);
      break;
    default:
      BeginStop(signal == SIGTERM ? "SIGTERM" : "SIGINT");
      break;
  }
  signals_.async_wait([this](const boost::system::error_code& e, int s) {
    OnSignal(e, s);
  });
}

void Service::Impl::ArmHeartbeat() {
  heartbeat_timer_.expires_after(config_.segment.heartbeat);
  heartbeat_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    writer_->Heartbeat();
    metrics_->RecordHeartbeat(common::RealtimeNs());
    ArmHeartbeat();
  });
}

void Service::Impl::ArmFingerprintPoll() {
  poll_timer_.cancel();
  if (config_.schedule.fingerprint_poll.count() == 0) return;
  poll_timer_.expires_after(config_.schedule.fingerprint_poll);
  poll_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    HostSnapshot now = hooks_.collect_host(config_);
    const bool changed = now.fingerprint != host_.fingerprint;
    if (changed) {
      spdlog::info("host facts changed (fingerprint {} -> {}); calibrating "
                   "early",
                   common::Hex64(host_.fingerprint),
                   common::Hex64(now.fingerprint));
      metrics_->RecordFingerprintChange();
    }
    host_ = std::move(now);
    metrics_->SetHost(host_.info);
    if (changed) StartCalibration(CalibrationTrigger::kFingerprint);
    ArmFingerprintPoll();
  });
}

void Service::Impl::ScheduleNext(milliseconds delay,
                                 CalibrationTrigger trigger) {
  calibration_timer_.expires_after(delay);
  calibration_timer_.async_wait(
      [this, trigger](const boost::system::error_code& ec) {
        if (!ec) StartCalibration(trigger);
      });
  metrics_->SetNextCalibration(
      common::RealtimeSeconds() + static_cast<double>(delay.count()) * 1e-3);
  spdlog::debug("next calibration ({}) in {}", CalibrationTriggerName(trigger),
                common::FormatDuration(delay));
}

void Service::Impl::ScheduleRegular() {
  const milliseconds jitter = config_.schedule.jitter;
  milliseconds delay = config_.schedule.interval;
  if (jitter.count() > 0) {
    std::uniform_int_distribution<std::int64_t> spread(-jitter.count(),
                                                       jitter.count());
    delay += milliseconds(spread(random_));
  }
  ScheduleNext(std::max(delay, milliseconds(1000)),
               CalibrationTrigger::kSchedule);
}

double Service::Impl::BudgetUsedSeconds() {
  const auto hour_ago = steady_clock::now() - std::chrono::hours(1);
  while (!probe_history_.empty() && probe_history_.front().first < hour_ago) {
    probe_history_.pop_front();
  }
  double used = 0;
  for (const auto& [end, seconds] : probe_history_) used += seconds;
  return used;
}

void Service::Impl::StartCalibration(CalibrationTrigger trigger) {
  if (stopping_) return;
  if (running_) {
    if (trigger == CalibrationTrigger::kFingerprint) {
      rerun_ = true;
      spdlog::info("a calibration is running; another follows it because "
                   "the host facts changed");
    } else {
      spdlog::info("a calibration is already running; request ignored");
    }
    return;
  }
  const double used = BudgetUsedSeconds();
  const double need = config_.budget.seconds_per_calibration;
  if (used + need > config_.budget.seconds_per_hour) {
    // Wait until enough of the oldest calibrations leave the hour window.
    double freed = 0;
    auto when = steady_clock::now();
    for (const auto& [end, seconds] : probe_history_) {
      freed += seconds;
      when = end + std::chrono::hours(1);
      if (used - freed + need <= config_.budget.seconds_per_hour) break;
    }
    const auto wait = std::max(
        milliseconds(1000), std::chrono::duration_cast<milliseconds>(
                                when - steady_clock::now()));
    spdlog::warn("probe budget: {:.1f} s of {:.1f} s used in the last hour; "
                 "the {} calibration waits {}",
                 used, config_.budget.seconds_per_hour,
                 CalibrationTriggerName(trigger), common::FormatDuration(wait));
    ScheduleNext(wait, trigger);
    return;
  }
  calibration_timer_.cancel();
  metrics_->SetNextCalibration(0);
  running_ = true;
  cancel_ = false;
  metrics_->RecordTrigger(trigger);
  metrics_->SetCalibrationRunning(true);
  host_ = hooks_.collect_host(config_);
  metrics_->SetHost(host_.info);
  spdlog::info("calibration started ({}): {} path(s), budget {} s",
               CalibrationTriggerName(trigger), config_.paths.size(),
               config_.budget.seconds_per_calibration);
  worker_ = std::thread(&Impl::RunWorker, this, config_, trigger, host_);
}

void Service::Impl::RunWorker(Config config, CalibrationTrigger trigger,
                              HostSnapshot host) {
  const auto started = steady_clock::now();
  Outcome outcome;
  outcome.trigger = trigger;
  outcome.host = std::move(host);
  for (const PathConfig& path : config.paths) {
    probes::CalibrationOptions options;
    options.target = ProbeTarget(path);
    options.path_name = path.name;
    options.methods = config.methods;
    options.min_size = config.min_size_bytes;
    options.max_size = config.max_size_bytes;
    options.decision = config.decision;
    options.budget_seconds = config.budget.seconds_per_calibration /
                             static_cast<double>(config.paths.size());
    options.max_bytes_per_second = config.budget.bytes_per_second;
    options.cancel = &cancel_;
    options.root = config.host_root;
    const std::string name = path.name;
    auto progress = [&name](const probes::CalibrationProgress& p) {
      spdlog::debug("{}: probe {} of ~{}: {} at {} bytes", name, p.done + 1,
                    p.total, calibrator::MethodName(p.method), p.size_bytes);
    };
    Result<probes::CalibrationReport> report;
    try {
      report = hooks_.calibrate(options, progress);
    } catch (const std::exception& e) {
      report = Fail(Errc::kFailed, std::string("calibration threw: ") + e.what());
    }
    const bool cancelled = cancel_ || (report && report->cancelled);
    outcome.reports.push_back(PathReport{name, std::move(report)});
    if (cancelled) {
      outcome.cancelled = true;
      break;
    }
  }
  outcome.duration_seconds =
      std::chrono::duration<double>(steady_clock::now() - started).count();
  asio::post(io_, [this, outcome = std::move(outcome)]() mutable {
    OnCalibrationDone(std::move(outcome));
  });
}

void Service::Impl::OnCalibrationDone(Outcome outcome) {
  if (worker_.joinable()) worker_.join();
  stop_timer_.cancel();
  running_ = false;
  metrics_->SetCalibrationRunning(false);
  probe_history_.emplace_back(steady_clock::now(), outcome.duration_seconds);
  metrics_->SetBudgetUsed(BudgetUsedSeconds());
  const std::uint64_t now_ns = common::RealtimeNs();
  if (outcome.cancelled) {
    metrics_->RecordCalibration(CalibrationResult::kCancelled,
                                outcome.duration_seconds, now_ns);
    spdlog::info("calibration cancelled after {:.1f} s; its results are "
                 "discarded",
                 outcome.duration_seconds);
    if (stopping_) FinishStop();
    return;
  }
  bool any_success = false;
  for (PathReport& r : outcome.reports) {
    if (!r.report) {
      spdlog::warn("calibration of path {} failed: {}", r.path,
                   r.report.error().message);
      continue;
    }
    const probes::CalibrationReport& report = *r.report;
    metrics_->RecordProbeFailures(r.path, report.samples);
    const PathConfig* path = nullptr;
    for (const PathConfig& p : config_.paths) {
      if (p.name == r.path) path = &p;
    }
    if (path == nullptr) continue;  // removed by a reload meanwhile
    auto found = report.analysis.paths.find(path->name);
    if (found == report.analysis.paths.end() &&
        report.analysis.paths.size() == 1) {
      found = report.analysis.paths.begin();
    }
    if (found == report.analysis.paths.end()) {
      spdlog::warn("calibration of path {} produced no results", r.path);
      continue;
    }
    calibrator::PathResult fresh = found->second;
    std::erase_if(fresh.methods, [&](const auto& item) {
      return std::find(config_.methods.begin(), config_.methods.end(),
                       item.first) == config_.methods.end();
    });
    metrics_->SetLastCalibration(r.path, report.samples, fresh);
    for (const std::string& line :
         MergeCalibration(state_, r.path, fresh, now_ns, config_.hysteresis)) {
      spdlog::info("{}", line);
    }
    any_success = true;
  }
  if (!any_success) {
    metrics_->RecordCalibration(CalibrationResult::kFailed,
                                outcome.duration_seconds, now_ns);
    spdlog::warn("calibration failed; still serving what was published "
                 "before; retrying in {}",
                 common::FormatDuration(config_.schedule.retry_after_failure));
    if (!stopping_) {
      ScheduleNext(config_.schedule.retry_after_failure,
                   CalibrationTrigger::kRetry);
    }
  } else {
    metrics_->RecordCalibration(CalibrationResult::kSuccess,
                                outcome.duration_seconds, now_ns);
    state_.fingerprint = outcome.host.fingerprint;
    state_.host = outcome.host.facts;
    state_.last_success_ns = now_ns;
    state_.saved_at_ns = now_ns;
    stale_ = false;
    Publish();
    if (const Result<void> saved = SaveState(state_, config_.state_path);
        !saved) {
      spdlog::error("saving the state failed: {}", saved.error().message);
      metrics_->RecordStateError("save");
    }
    spdlog::info("calibration finished in {:.1f} s", outcome.duration_seconds);
    if (!stopping_) ScheduleRegular();
  }
  // A stop requested after the worker had finished probing: its results
  // were kept above, now finish the stop.
  if (stopping_) {
    FinishStop();
    return;
  }
  if (rerun_) {
    rerun_ = false;
    StartCalibration(CalibrationTrigger::kFingerprint);
  }
}

void Service::Impl::DoReload() {
  if (stopping_) return;
  if (config_path_.empty()) {
    spdlog::info("running with the embedded default configuration; there is "
                 "no file to reload (start with --config FILE)");
    metrics_->RecordReload(true);
    return;
  }
  Result<Config> loaded = LoadConfigFile(config_path_);
  if (!loaded) {
    LogLines(spdlog::level::err, loaded.error().message);
    spdlog::warn("configuration reload rejected; the running configuration "
                 "stays in effect");
    metrics_->RecordReload(false);
    return;
  }
  Config next = std::move(*loaded);
  const auto reject = [&](const std::string& why) {
    spdlog::error("{}", why);
    spdlog::warn("configuration reload rejected; the running configuration "
                 "stays in effect");
    metrics_->RecordReload(false);
  };
  std::vector<std::string> changed;
  const bool name_changed = next.segment.name != config_.segment.name;
  const bool segment_changed = name_changed ||
                               next.segment.mode != config_.segment.mode ||
                               next.segment.group != config_.segment.group;
  std::unique_ptr<InstanceLock> new_lock;
  std::unique_ptr<ShmWriter> new_writer;
  if (name_changed) {
    auto lock = InstanceLock::Acquire(next.segment.name, hooks_.lock_dir);
    if (!lock) return reject(lock.error().message);
    new_lock = std::move(*lock);
  }
  if (segment_changed) {
    auto writer = ShmWriter::Create(WriterOptions(next.segment));
    if (!writer) {
      return reject("segment " + next.segment.name + ": " +
                    writer.error().message);
    }
    new_writer = std::move(*writer);
  }
  const bool metrics_changed = next.metrics.listen != config_.metrics.listen;
  std::unique_ptr<MetricsServer> new_server;
  if (metrics_changed && !next.metrics.listen.empty()) {
    auto server = MetricsServer::Start(next.metrics.listen, metrics_);
    if (!server) return reject(server.error().message);
    new_server = std::move(*server);
  }

  // Everything that could fail has succeeded: switch over.
  if (segment_changed) {
    const std::string old_name = config_.segment.name;
    writer_ = std::move(new_writer);
    if (name_changed) {
      // Readers of the old name find nothing instead of a table nobody
      // refreshes.
      shm_unlink(old_name.c_str());
      lock_ = std::move(new_lock);
    }
    changed.push_back("segment");
    spdlog::info("publishing in segment {} now", next.segment.name);
  }
  if (metrics_changed) {
    // Stopping civetweb blocks for 1.5 s; heartbeats must not wait for it.
    std::thread([old = std::move(metrics_server_)]() mutable {
      old.reset();
    }).detach();
    metrics_server_ = std::move(new_server);
    changed.push_back("metrics");
    if (metrics_server_) {
      spdlog::info("serving metrics at {}", metrics_server_->Url());
    } else {
      spdlog::info("metrics disabled");
    }
  }
  const bool schedule_changed =
      next.schedule.interval != config_.schedule.interval ||
      next.schedule.jitter != config_.schedule.jitter;
  const bool poll_changed =
      next.schedule.fingerprint_poll != config_.schedule.fingerprint_poll;
  const bool root_changed = next.host_root != config_.host_root;
  const bool state_moved = next.state_path != config_.state_path;
  if (schedule_changed) changed.push_back("schedule");
  if (next.segment.heartbeat != config_.segment.heartbeat) {
    changed.push_back("heartbeat");
  }
  if (next.log_level != config_.log_level) changed.push_back("log level");
  if (next.paths.size() != config_.paths.size() ||
      next.methods != config_.methods) {
    changed.push_back("paths or methods");
  }
  if (state_moved) changed.push_back("state path");
  config_ = std::move(next);
  spdlog::set_level(spdlog::level::from_str(config_.log_level));
  PruneState(state_, config_);
  Publish();
  if (root_changed) {
    host_ = hooks_.collect_host(config_);
    metrics_->SetHost(host_.info);
    changed.push_back("host root");
  }
  if (state_moved && !state_.empty()) {
    if (const Result<void> saved = SaveState(state_, config_.state_path);
        !saved) {
      spdlog::error("saving the state failed: {}", saved.error().message);
      metrics_->RecordStateError("save");
    }
  }
  if (schedule_changed && !running_) ScheduleRegular();
  if (poll_changed) ArmFingerprintPoll();
  metrics_->RecordReload(true);
  std::string summary;
  for (const std::string& c : changed) {
    summary += summary.empty() ? c : ", " + c;
  }
  spdlog::info("configuration reloaded from {}{}", config_path_,
               summary.empty() ? "" : "; changed: " + summary);
}

void Service::Impl::BeginStop(const std::string& why) {
  if (stopping_) {
    spdlog::info("{}: already stopping", why);
    return;
  }
  stopping_ = true;
  spdlog::info("{}: stopping", why);
  calibration_timer_.cancel();
  poll_timer_.cancel();
  if (!running_) {
    FinishStop();
    return;
  }
  cancel_ = true;
  // Probes honour the cancel flag within about a second; this bound only
  // guards against a probe stuck in the kernel.
  stop_timer_.expires_after(std::chrono::seconds(5));
  stop_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !running_) return;
    spdlog::error("the calibration did not stop within 5 s; exiting without "
                  "waiting for it");
    worker_.detach();
    worker_abandoned_ = true;
    FinishStop();
  });
}

void Service::Impl::FinishStop() {
  if (!state_.empty()) {
    state_.saved_at_ns = common::RealtimeNs();
    if (const Result<void> saved = SaveState(state_, config_.state_path);
        !saved) {
      spdlog::error("saving the state failed: {}", saved.error().message);
    }
  }
  writer_->Heartbeat();
  heartbeat_timer_.cancel();
  stop_timer_.cancel();
  signals_.cancel();
  // civetweb takes 1.5 s to stop its threads; the process is about to exit
  // and takes them along, so the server is left to the exit. A global keeps
  // it reachable, which is what it is (LeakSanitizer agrees).
  if (metrics_server_) ServersLeftToExit().push_back(std::move(metrics_server_));
  spdlog::info("stopped; segment {} keeps its last table and heartbeat",
               config_.segment.name);
  io_.stop();
}

Service::Service(Config config, std::string config_path, ServiceHooks hooks)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(config_path),
                                   std::move(hooks))) {}

Service::~Service() = default;

int Service::Run() { return impl_->Run(); }
void Service::Stop() { impl_->Stop(); }
void Service::Reload() { impl_->Reload(); }
void Service::CalibrateNow() { impl_->CalibrateNow(); }

}  // namespace zcal::agent
