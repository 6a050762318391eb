// The agent as its readers see it: its segment, heartbeat and last
// calibration.
#include <cerrno>
#include <cstdio>
#include <map>

#include "zcal/agent/doctor/doctor.h"
#include "zcal/calibrator/decision.h"
#include "zcal/common/errno_text.h"

namespace zcal::agent::doctor {

namespace {

std::string Seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f s", seconds);
  return text;
}

Finding Unreadable(const DoctorOptions& options, const SegmentTable& table) {
  Finding f{"agent.segment", Status::kFail, "", ""};
  switch (-table.error) {
    case ENOENT:
      f.detail = "no segment " + options.segment + " (/dev/shm" + options.segment +
                 "): no zcal agent publishes on this host, so applications fall back to "
                 "their own thresholds";
      f.fix = "start the agent (systemctl start zcal-agent, or zcal agent), or name its segment "
              "with --segment or --config";
      break;
    case EACCES:
      f.detail = "segment " + options.segment + " is not readable by this user: " + table.detail;
      f.fix = "run as a user that the segment's mode or group (segment.group) admits";
      break;
    case EPROTO:
      f.detail = "segment " + options.segment + " is incompatible or corrupt: " + table.detail;
      f.fix = "restart the agent; if it persists, use a zcal of the agent's version";
      break;
    default:
      f.detail = "segment " + options.segment + " cannot be read: " +
                 (table.detail.empty() ? common::ErrnoText(-table.error) : table.detail);
      f.fix = "check /dev/shm" + options.segment + " and the agent's log";
  }
  return f;
}

Finding Segment(const DoctorOptions& options, const Observations& seen) {
  const SegmentTable& table = seen.segment;
  if (!table.info) return Unreadable(options, table);
  const zcal_info& info = *table.info;
  const std::string pid = std::to_string(info.agent_pid);
  const std::optional<double> age = AgeSeconds(seen.now_ns, info.heartbeat_ns);
  const std::string beat = age ? Seconds(*age) + " ago" : "ahead of this clock";
  if (age && *age > options.max_heartbeat_age_seconds) {
    return {"agent.segment", Status::kFail,
            "segment " + options.segment + " of agent pid " + pid + ": its heartbeat is " +
                beat + " (over " + Seconds(options.max_heartbeat_age_seconds) +
                "): the agent is gone or hung, and readers treat its data as stale",
            "restart the agent (systemctl restart zcal-agent) and read its log (journalctl -u "
            "zcal-agent)"};
  }
  if (info.flags & ZCAL_FLAG_RETIRED) {
    return {"agent.segment", Status::kWarn,
            "segment " + options.segment + " is retired: a newer segment replaced it",
            "name the agent's current segment with --segment or --config"};
  }
  const std::string about = "segment " + options.segment + " of agent pid " + pid +
                            ", heartbeat " + beat + ", " + std::to_string(info.count) +
                            " entries; host default: " +
                            std::string(HostDefaultSentence(
                                HostDefaultSourceOf(info.host_default_source)));
  if (info.flags & ZCAL_FLAG_STALE) {
    return {"agent.segment", Status::kWarn,
            about + "; stale: republished from saved state, not yet confirmed by a "
                    "calibration",
            "wait for the next calibration, or start one now: kill -USR1 " + pid};
  }
  return {"agent.segment", Status::kOk, about, ""};
}

Finding Calibration(const DoctorOptions& options, const Observations& seen) {
  if (!seen.state) {
    const Error& e = seen.state.error();
    return {"agent.calibration", Status::kWarn,
            e.code == Errc::kNotFound
                ? "no state file " + options.state_path + ": no calibration has completed"
                : "the state file cannot be read: " + e.message,
            e.code == Errc::kNotFound
                ? "wait for the first calibration (kill -USR1 the agent to start it now), or "
                  "name the agent's configuration with --config (state.path)"
                : "run zcal doctor as the agent's user or root"};
  }
  const AgentState& state = *seen.state;
  if (state.last_success_ns == 0 || state.empty()) {
    return {"agent.calibration", Status::kWarn,
            "the state file " + options.state_path + " holds no calibration result",
            "wait for the first calibration, or read the agent's log for why it failed"};
  }
  std::map<std::string, int> verdicts;
  for (const auto& [path, methods] : state.paths) {
    for (const auto& [method, s] : methods) {
      ++verdicts[std::string(calibrator::VerdictName(s.published.verdict))];
    }
  }
  std::string counts;
  for (const auto& [verdict, n] : verdicts) {
    counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + verdict;
  }
  const std::optional<double> age = AgeSeconds(seen.now_ns, state.last_success_ns);
  return {"agent.calibration", Status::kOk,
          "last calibration " + (age ? Seconds(*age) + " ago" : std::string("ahead of this clock")) +
              ": " + counts + " (zcal show --state " + options.state_path + ")",
          ""};
}

}  // namespace

std::vector<Finding> CheckAgent(const DoctorOptions& options, const Observations& seen) {
  return {Segment(options, seen), Calibration(options, seen)};
}

}  // namespace zcal::agent::doctor
