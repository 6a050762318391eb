// A reload (SIGHUP) as data: what differs between the running configuration
// and a new one, grouped by what the service does about it (docs/config.md,
// "What a reload changes"). The service first prepares what can fail (a new
// segment and lock, a new metrics listener), then applies the rest.
#pragma once

#include <string>

#include "zcal/agent/config/config.h"

namespace zcal::agent {

struct ConfigChange {
  bool segment = false;       ///< segment.name, mode or group: a new segment
  bool segment_name = false;  ///< segment.name (then also a new lock)
  bool metrics_listen = false;  ///< metrics.listen: a new endpoint
  /// sink.*: a new sink is started (or none), then the old one stopped.
  /// A sink whose settings are the same is kept, unless its key file now
  /// holds other keys (the service compares those, DiffConfig does not).
  bool sink = false;
  bool schedule = false;  ///< schedule.interval or jitter: re-arm the timer
  bool retry = false;     ///< schedule.retry_after_failure: next failure
  bool at_startup = false;        ///< schedule.at_startup: next start
  bool fingerprint_poll = false;  ///< restart the poll timer
  bool heartbeat = false;         ///< segment.heartbeat: next heartbeat
  bool budget = false;  ///< budget.*: a calibration waiting for it is re-run
  /// paths, methods or depths: drop what is no longer configured (new
  /// ones come with the next calibration)
  bool paths_or_methods = false;
  bool host_default = false;      ///< the host-default path: republish
  /// Everything else (sizes, decision, hysteresis, and any key added later):
  /// from the next calibration.
  bool calibration = false;
  bool state_path = false;  ///< the state is written there at once
  bool log_level = false;
  bool host_root = false;  ///< host facts are re-read at once
  /// exports: the new list is taken and the table republished, so that a
  /// new or changed export is written at once (an unchanged one is not).
  bool exports = false;
  /// apps.*: the reader takes the new settings at its next read (each
  /// heartbeat); a new window restarts the history of reads.
  bool apps = false;

  /// True when anything that takes effect differs (`source` does not).
  bool Any() const;
  /// True when the scheduler's options (ScheduleOptions) may differ.
  bool Scheduling() const { return schedule || retry || at_startup || budget; }
  /// "segment, metrics, schedule": what changed, for the log; "" for none.
  std::string Summary() const;

  bool operator==(const ConfigChange&) const = default;
};

/// What differs from `running` to `next`. Any() is false exactly when
/// EqualInEffect(running, next).
ConfigChange DiffConfig(const Config& running, const Config& next);

}  // namespace zcal::agent
