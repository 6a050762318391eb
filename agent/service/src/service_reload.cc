// A reload: the new file read and checked, what can fail prepared first
// (segment, metrics listener, sink), then everything switched over at once.
#include <optional>
#include <sstream>
#include <string>

#include <spdlog/spdlog.h>

#include "service_impl.h"
#include "zcal/agent/config/reload.h"

namespace zcal::agent {
namespace {

// Logs a multi-line error message line by line, so that each problem of a
// configuration gets its own log record.
void LogLines(spdlog::level::level_enum level, const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) spdlog::log(level, "{}", line);
}

}  // namespace

void Service::Impl::DoReload() {
  if (Stopping()) return;
  if (config_path_.empty()) {
    spdlog::info("running with the embedded default configuration; there is "
                 "no file to reload (start with --config FILE)");
    metrics_->RecordReload(true);
    return;
  }
  Result<Config> loaded = LoadConfigFile(config_path_);
  if (!loaded) {
    LogLines(spdlog::level::err, loaded.error().message);
    RejectReload("");
    return;
  }
  ApplyReload(std::move(*loaded));
}

void Service::Impl::RejectReload(const std::string& why) {
  if (!why.empty()) spdlog::error("{}", why);
  spdlog::warn("configuration reload rejected; the running configuration "
               "stays in effect");
  metrics_->RecordReload(false);
}

void Service::Impl::ApplyReload(Config next) {
  const ConfigChange change = DiffConfig(config_, next);
  // First what can fail, touching nothing that runs.
  std::optional<PreparedSegment> segment;
  if (change.segment) {
    Result<PreparedSegment> prepared = publisher_->PrepareSegment(next.segment);
    if (!prepared) return RejectReload(prepared.error().message);
    segment = std::move(*prepared);
  }
  std::optional<std::unique_ptr<MetricsServer>> server;
  if (change.metrics_listen) {
    auto bound = BindMetrics(next.metrics.listen);
    if (!bound) return RejectReload(bound.error().message);
    server = std::move(*bound);
  }
  // The sink last: replacing it on the same address means closing the old
  // one first, which only a reload that goes through may do.
  if (Result<bool> replaced = sink_.Replace(config_.sink, next.sink, scheduler_.Probing());
      !replaced) {
    return RejectReload(replaced.error().message);
  }
  // Then switch over.
  if (segment) publisher_->SwitchSegment(std::move(*segment));
  if (server) ServeMetrics(std::move(*server));
  // Peers found under other settings are not the peers of these.
  if (next.peers != config_.peers) discovery_.reset();
  config_ = std::move(next);
  if (change.log_level) {
    spdlog::set_level(spdlog::level::from_str(config_.log_level));
  }
  publisher_->Reconfigure(config_);
  if (change.apps) ReconfigureApps();
  ShowStatus();
  if (change.host_root || change.paths_or_methods) AdoptHost(hooks_.collect_host(config_));
  if (change.fingerprint_poll) ArmFingerprintPoll();
  metrics_->RecordReload(true);
  const std::string summary = change.Summary();
  spdlog::info("configuration reloaded from {}{}", config_path_,
               !summary.empty() ? "; changed: " + summary
               : change.Any()   ? std::string()
                                : "; nothing changed");
  if (change.Scheduling()) {
    Handle(ReloadedEvent{ScheduleOptions::From(config_)});
  }
}

Result<std::unique_ptr<MetricsServer>> Service::Impl::BindMetrics(
    const std::string& listen) const {
  if (listen.empty()) return std::unique_ptr<MetricsServer>();
  MetricsServerOptions options;
  options.routes = status_->Routes();
  return MetricsServer::Start(listen, metrics_, std::move(options));
}

void Service::Impl::ServeMetrics(std::unique_ptr<MetricsServer> server) {
  // The server being replaced stops within milliseconds (metrics_server.h).
  metrics_server_ = std::move(server);
  if (metrics_server_) {
    spdlog::info("serving metrics at {}", metrics_server_->Url());
  } else {
    spdlog::info("metrics disabled (metrics.listen is empty)");
  }
}

}  // namespace zcal::agent
