// DiffConfig: each key of the configuration, changed alone, raises exactly
// the flag that tells the service what to do, and nothing else.
#include "zcal/agent/config/reload.h"

#include <functional>

#include <gtest/gtest.h>

namespace zcal::agent::reload_test {
namespace {

using std::chrono::milliseconds;

struct Case {
  const char* what;
  std::function<void(Config&)> change;
  std::function<void(ConfigChange&)> expect;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"segment.name", [](Config& c) { c.segment.name = "/other"; },
       [](ConfigChange& e) { e.segment = e.segment_name = true; }},
      {"segment.mode", [](Config& c) { c.segment.mode = 0640; },
       [](ConfigChange& e) { e.segment = true; }},
      {"segment.group", [](Config& c) { c.segment.group = "zcal"; },
       [](ConfigChange& e) { e.segment = true; }},
      {"segment.heartbeat", [](Config& c) { c.segment.heartbeat = milliseconds(500); },
       [](ConfigChange& e) { e.heartbeat = true; }},
      {"metrics.listen", [](Config& c) { c.metrics.listen = ""; },
       [](ConfigChange& e) { e.metrics_listen = true; }},
      {"schedule.interval", [](Config& c) { c.schedule.interval = std::chrono::hours(1); },
       [](ConfigChange& e) { e.schedule = true; }},
      {"schedule.jitter", [](Config& c) { c.schedule.jitter = milliseconds(0); },
       [](ConfigChange& e) { e.schedule = true; }},
      {"schedule.retry_after_failure",
       [](Config& c) { c.schedule.retry_after_failure = milliseconds(1000); },
       [](ConfigChange& e) { e.retry = true; }},
      {"schedule.at_startup", [](Config& c) { c.schedule.at_startup = false; },
       [](ConfigChange& e) { e.at_startup = true; }},
      {"schedule.fingerprint_poll",
       [](Config& c) { c.schedule.fingerprint_poll = milliseconds(0); },
       [](ConfigChange& e) { e.fingerprint_poll = true; }},
      {"budget.seconds_per_calibration",
       [](Config& c) { c.budget.seconds_per_calibration = 2; },
       [](ConfigChange& e) { e.budget = true; }},
      {"budget.seconds_per_hour", [](Config& c) { c.budget.seconds_per_hour = 600; },
       [](ConfigChange& e) { e.budget = true; }},
      {"budget.bytes_per_second", [](Config& c) { c.budget.bytes_per_second = 1 << 20; },
       [](ConfigChange& e) { e.budget = true; }},
      {"paths", [](Config& c) { c.paths[0].name = "lo"; },
       [](ConfigChange& e) { e.paths_or_methods = true; }},
      {"methods", [](Config& c) { c.methods.pop_back(); },
       [](ConfigChange& e) { e.paths_or_methods = true; }},
      {"depths", [](Config& c) { c.depths = {1, calibrator::kStreamDepth}; },
       [](ConfigChange& e) { e.paths_or_methods = true; }},
      {"host_default", [](Config& c) { c.host_default.enabled = false; },
       [](ConfigChange& e) { e.host_default = true; }},
      {"sizes.min", [](Config& c) { c.min_size_bytes = 4096; },
       [](ConfigChange& e) { e.calibration = true; }},
      {"sizes.max", [](Config& c) { c.max_size_bytes = 65536; },
       [](ConfigChange& e) { e.calibration = true; }},
      {"decision", [](Config& c) { c.decision.margin = 0.2; },
       [](ConfigChange& e) { e.calibration = true; }},
      {"hysteresis", [](Config& c) { c.hysteresis.threshold_tolerance = 0.25; },
       [](ConfigChange& e) { e.calibration = true; }},
      {"sink.listen", [](Config& c) { c.sink.options.emplace(); },
       [](ConfigChange& e) { e.sink = true; }},
      {"sink.max_sessions",
       [](Config& c) { c.sink.options.emplace().max_sessions = 2; },
       [](ConfigChange& e) { e.sink = true; }},
      {"sink.allow",
       [](Config& c) { c.sink.options.emplace().allow = {*common::ParsePrefix("10.0.0.0/8")}; },
       [](ConfigChange& e) { e.sink = true; }},
      {"sink.key_file",
       [](Config& c) {
         c.sink.options.emplace().keys = probes::peer::KeyRing{{{"k1", {1, 2, 3}}}, {}};
       },
       [](ConfigChange& e) { e.sink = true; }},
      {"state.path", [](Config& c) { c.state_path = "/tmp/elsewhere.json"; },
       [](ConfigChange& e) { e.state_path = true; }},
      {"log.level", [](Config& c) { c.log_level = "debug"; },
       [](ConfigChange& e) { e.log_level = true; }},
      {"host.root", [](Config& c) { c.host_root = "/tmp/root"; },
       [](ConfigChange& e) { e.host_root = true; }},
      {"exports",
       [](Config& c) { c.exports.push_back(ExportConfig{ExportFormat::kEnv, "/run/zcal/zcal.env", "", "", "loopback", "", {}, std::nullopt, false}); },
       [](ConfigChange& e) { e.exports = true; }},
      {"exports[0].fallback",
       [](Config& c) {
         c.exports.push_back(ExportConfig{ExportFormat::kEnv, "/run/zcal/zcal.env", "", "", "loopback", "", {}, std::nullopt, false});
         c.exports[0].fallback = "never";
       },
       [](ConfigChange& e) { e.exports = true; }},
  };
  return cases;
}

TEST(DiffConfig, EachKeyChangedAloneRaisesItsFlagOnly) {
  const Config running;
  for (const Case& c : Cases()) {
    Config next = running;
    c.change(next);
    ASSERT_FALSE(EqualInEffect(running, next)) << c.what << ": the case changes nothing";
    ConfigChange expected;
    c.expect(expected);
    EXPECT_EQ(DiffConfig(running, next), expected) << c.what;
    EXPECT_TRUE(DiffConfig(running, next).Any()) << c.what;
  }
}

TEST(DiffConfig, OnlyTheSourceDifferingIsNoChange) {
  const Config running;
  Config next = running;
  next.source = "/etc/zcal/agent.yaml";
  const ConfigChange change = DiffConfig(running, next);
  EXPECT_FALSE(change.Any());
  EXPECT_EQ(change.Summary(), "");
  EXPECT_FALSE(change.Scheduling());
}

TEST(DiffConfig, ChangesAddUp) {
  const Config running;
  Config next = running;
  next.segment.name = "/other";
  next.metrics.listen = "127.0.0.1:9999";
  next.schedule.interval = std::chrono::hours(1);
  next.log_level = "warn";
  const ConfigChange change = DiffConfig(running, next);
  EXPECT_TRUE(change.segment && change.segment_name && change.metrics_listen &&
              change.schedule && change.log_level);
  EXPECT_FALSE(change.calibration);
  EXPECT_EQ(change.Summary(), "segment, metrics, schedule, log level");
}

TEST(DiffConfig, TheSchedulerHearsOfScheduleAndBudgetChanges) {
  const Config running;
  for (const Case& c : Cases()) {
    Config next = running;
    c.change(next);
    const std::string what = c.what;
    const bool scheduling = what.starts_with("schedule.") && what != "schedule.fingerprint_poll";
    EXPECT_EQ(DiffConfig(running, next).Scheduling(),
              scheduling || what.starts_with("budget."))
        << what;
  }
}

TEST(ConfigChange, SummaryNamesEveryFlag) {
  ConfigChange all;
  all.segment = all.segment_name = all.metrics_listen = all.sink = all.schedule = all.retry =
      all.at_startup = all.fingerprint_poll = all.heartbeat = all.budget =
          all.paths_or_methods = all.host_default = all.calibration =
              all.state_path = all.log_level = all.host_root = all.exports = true;
  EXPECT_EQ(all.Summary(),
            "segment, metrics, sink, schedule, retry delay, calibration at startup, "
            "fingerprint poll, heartbeat, budget, paths or methods, host "
            "default, calibration settings, state path, log level, host root, exports");
}

}  // namespace
}  // namespace zcal::agent::reload_test
