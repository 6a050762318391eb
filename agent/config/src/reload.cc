#include "zcal/agent/config/reload.h"

#include <utility>
#include <vector>

namespace zcal::agent {

bool ConfigChange::Any() const { return *this != ConfigChange{}; }

std::string ConfigChange::Summary() const {
  const std::pair<bool, const char*> names[] = {
      {segment, "segment"},
      {metrics_listen, "metrics"},
      {sink, "sink"},
      {schedule, "schedule"},
      {retry, "retry delay"},
      {at_startup, "calibration at startup"},
      {fingerprint_poll, "fingerprint poll"},
      {heartbeat, "heartbeat"},
      {budget, "budget"},
      {paths_or_methods, "paths or methods"},
      {host_default, "host default"},
      {calibration, "calibration settings"},
      {state_path, "state path"},
      {log_level, "log level"},
      {host_root, "host root"},
      {exports, "exports"},
      {apps, "apps"},
  };
  std::string summary;
  for (const auto& [changed, name] : names) {
    if (!changed) continue;
    if (!summary.empty()) summary += ", ";
    summary += name;
  }
  return summary;
}

ConfigChange DiffConfig(const Config& running, const Config& next) {
  ConfigChange c;
  const SegmentConfig& rs = running.segment;
  const SegmentConfig& ns = next.segment;
  c.segment_name = ns.name != rs.name;
  c.segment = c.segment_name || ns.mode != rs.mode || ns.group != rs.group ||
              ns.capacity != rs.capacity;
  c.heartbeat = ns.heartbeat != rs.heartbeat;
  c.metrics_listen = next.metrics.listen != running.metrics.listen;
  c.sink = next.sink != running.sink;
  c.schedule = next.schedule.interval != running.schedule.interval ||
               next.schedule.jitter != running.schedule.jitter;
  c.retry = next.schedule.retry_after_failure !=
            running.schedule.retry_after_failure;
  c.at_startup = next.schedule.at_startup != running.schedule.at_startup;
  c.fingerprint_poll =
      next.schedule.fingerprint_poll != running.schedule.fingerprint_poll;
  c.budget = next.budget != running.budget;
  c.paths_or_methods = next.paths != running.paths || next.methods != running.methods ||
                       next.depths != running.depths;
  c.host_default = next.host_default != running.host_default;
  c.state_path = next.state_path != running.state_path;
  c.log_level = next.log_level != running.log_level;
  c.host_root = next.host_root != running.host_root;
  c.exports = next.exports != running.exports;
  c.apps = next.apps != running.apps;

  // Whatever the flags above do not name: `next` with every field they
  // cover put back to the running value. A key added to Config later lands
  // here (from the next calibration) instead of going unnoticed.
  Config rest = next;
  rest.segment = running.segment;
  rest.metrics = running.metrics;
  rest.sink = running.sink;
  rest.schedule = running.schedule;
  rest.budget = running.budget;
  rest.paths = running.paths;
  rest.methods = running.methods;
  rest.depths = running.depths;
  rest.host_default = running.host_default;
  rest.state_path = running.state_path;
  rest.log_level = running.log_level;
  rest.host_root = running.host_root;
  rest.exports = running.exports;
  rest.apps = running.apps;
  c.calibration = !EqualInEffect(running, rest);
  return c;
}

}  // namespace zcal::agent
