// zcal show: the published segment, header and entries, as a table or JSON;
// with --state, also what each result was measured under, from the state
// file (the segment's fixed-width entries have no room for the load).

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zcal/agent/cli/commands.h"
#include "zcal/agent/report/report.h"
#include "zcal/agent/report/segment_table.h"
#include "zcal/agent/state/decided_for_json.h"
#include "zcal/agent/state/load_json.h"
#include "zcal/agent/state/state.h"
#include "zcal/common/clock.h"
#include "zcal/common/text.h"
#include "zcal/zcal.hpp"

namespace zcal::agent {

namespace {

struct ShowArgs {
  std::string segment;
  std::string state;
  bool json = false;
};

std::string Utc(std::uint64_t ns) { return common::FormatUtc(ns, "%Y-%m-%dT%H:%M:%SZ", "never"); }

std::string Age(std::optional<double> seconds) {
  if (!seconds) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  if (*seconds < 120) out << *seconds << " s ago";
  else if (*seconds < 7200) out << *seconds / 60 << " min ago";
  else if (*seconds < 172800) out << *seconds / 3600 << " h ago";
  else out << *seconds / 86400 << " d ago";
  return out.str();
}

// The age of a stamp the agent wrote. One ahead of this clock (the wall
// clock was stepped back since, or the agent's is ahead of this one) has
// no age: say so instead of printing a negative or wrapped one. Under a
// second ahead is the usual race of two readings.
std::string AgeOf(std::uint64_t now_ns, std::uint64_t then_ns) {
  if (then_ns > now_ns && then_ns - now_ns >= 1'000'000'000ULL) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(0) << "age 0: stamped "
        << common::NsToSeconds(then_ns - now_ns)
        << " s ahead of this clock; the wall clock was stepped back";
    return out.str();
  }
  return Age(AgeSeconds(now_ns, then_ns));
}

void PrintTable(std::ostream& out, const std::string& name, const zcal_info& info,
                const std::vector<zcal_shm_entry>& entries, std::uint64_t now_ns) {
  out << "segment     " << name << " (" << info.segment_bytes << " bytes, ABI "
      << info.abi_major << "." << info.abi_minor << ")\n"
      << "agent pid   " << info.agent_pid << "\n"
      << "generation  " << info.generation << "\n"
      << "published   " << Utc(info.publish_time_ns) << " ("
      << AgeOf(now_ns, info.publish_time_ns) << ")\n"
      << "heartbeat   " << Utc(info.heartbeat_ns) << " ("
      << AgeOf(now_ns, info.heartbeat_ns) << ")\n"
      << "stale       "
      << ((info.flags & ZCAL_FLAG_STALE)
              ? "yes (republished from saved state, not yet confirmed)"
              : "no")
      << "\n";
  if (info.flags & ZCAL_FLAG_RETIRED)
    out << "retired     yes (a newer segment replaced this one)\n";
  out << "host default "
      << HostDefaultSentence(HostDefaultSourceOf(info.host_default_source)) << "\n";
  out << "entries     " << info.count << " of " << info.capacity << "\n";
  if (entries.empty()) return;

  constexpr int kColumns = 9;
  struct Row {
    std::string cells[kColumns];
  };
  std::vector<Row> rows;
  rows.push_back({{"SCOPE", "METHOD", "DEPTH", "VERDICT", "THRESHOLD", "CONFIDENCE",
                   "REASON", "MEASURED", "FINGERPRINT"}});
  for (const zcal_shm_entry& e : entries) {
    std::ostringstream confidence;
    if (auto c = Confidence(e)) confidence << std::fixed << std::setprecision(2) << *c;
    else confidence << "unknown";
    const char* reason = zcal_reason_name(e.reason);
    rows.push_back({{ScopeText(e) + (Estimated(e) ? " (estimated)" : ""),
                     zcal_method_name(e.method),
                     DepthText(e),
                     std::string(zcal_verdict_name(e.verdict)) +
                         (Contradicted(e) ? " (contradicted)" : ""),
                     (e.entry_flags & ZCAL_ENTRY_HAS_THRESHOLD)
                         ? std::to_string(e.threshold_bytes)
                         : std::string("-"),
                     confidence.str(), *reason ? reason : "-",
                     Utc(e.measured_at_ns) + " (" +
                         AgeOf(now_ns, e.measured_at_ns) + ")",
                     common::Hex64(e.fingerprint)}});
  }
  std::size_t width[kColumns] = {};
  for (const Row& row : rows)
    for (int c = 0; c < kColumns; ++c) width[c] = std::max(width[c], row.cells[c].size());
  out << "\n";
  for (const Row& row : rows) {
    for (int c = 0; c < kColumns; ++c) {
      out << row.cells[c];
      if (c < kColumns - 1) out << std::string(width[c] - row.cells[c].size() + 2, ' ');
    }
    out << "\n";
  }
}

// The state file's results, by path and method, with the load of each.
nlohmann::json LoadsJson(const std::string& file, const AgentState& state) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& [path, methods] : state.paths) {
    for (const auto& [key, s] : methods) {
      results.push_back({{"path", ToString(path)},
                         {"method", calibrator::MethodName(key.method)},
                         {"depth", DepthClassName(key.depth)},
                         {"measured_at_ns", s.measured_at_ns},
                         {"load", HostLoadToJson(s.load)}});
    }
  }
  nlohmann::json decided_for = nlohmann::json::object();
  for (const auto& [path, d] : state.decided_for) decided_for[ToString(path)] = DecidedForToJson(d);
  return {{"state", file}, {"results", std::move(results)}, {"decided_for", std::move(decided_for)}};
}

void PrintLoads(std::ostream& out, const std::string& file, const AgentState& state) {
  out << "\nmeasured under (from the state file " << file << ")\n";
  std::size_t width[3] = {4, 6, 5};
  for (const auto& [path, methods] : state.paths) {
    width[0] = std::max(width[0], ToString(path).size());
    for (const auto& [key, s] : methods) {
      width[1] = std::max(width[1], calibrator::MethodName(key.method).size());
      width[2] = std::max(width[2], DepthClassName(key.depth).size());
    }
  }
  const auto row = [&](std::string_view path, std::string_view method, std::string_view depth,
                       const std::string& load) {
    out << path << std::string(width[0] - path.size() + 2, ' ') << method
        << std::string(width[1] - method.size() + 2, ' ') << depth
        << std::string(width[2] - depth.size() + 2, ' ') << load << "\n";
  };
  row("PATH", "METHOD", "DEPTH", "LOAD");
  for (const auto& [path, methods] : state.paths) {
    for (const auto& [key, s] : methods) {
      row(ToString(path), calibrator::MethodName(key.method), DepthClassName(key.depth),
          DescribeLoad(s.load));
    }
  }
  if (state.decided_for.empty()) return;
  out << "\ndecided for (the traffic mix each path's thresholds weigh sizes by)\n";
  std::size_t path_width = 4;
  for (const auto& [path, d] : state.decided_for) {
    path_width = std::max(path_width, ToString(path).size());
  }
  out << "PATH" << std::string(path_width - 4 + 2, ' ') << "MIX\n";
  for (const auto& [path, d] : state.decided_for) {
    const std::string name = ToString(path);
    out << name << std::string(path_width - name.size() + 2, ' ') << DescribeDecidedFor(d)
        << "\n";
  }
}

// The pid of a running agent that publishes segment `name`: the one
// recorded in its lock file (/dev/shm/NAME.lock, see InstanceLock), if that
// process lives and is zcal. Read without locking, so that `zcal show` never
// makes an agent that starts meanwhile think the name is taken.
std::optional<long> AgentOf(const std::string& name) {
  std::ifstream lock("/dev/shm" + name + ".lock");
  long pid = 0;
  if (!(lock >> pid) || pid <= 0) return std::nullopt;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return std::nullopt;
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string command;
  if (!std::getline(comm, command) || command != "zcal") return std::nullopt;
  return pid;
}

// The library's sentence without the advice it gives any reader, for when
// the advice is wrong: the running agent repairs its own segment.
std::string WithoutAdvice(std::string detail) {
  for (const char* advice : {"; remove it or name the agent's segment",
                             "; restart the agent to recreate it"}) {
    const std::size_t at = detail.rfind(advice);
    if (at != std::string::npos && at + std::strlen(advice) == detail.size()) {
      detail.erase(at);
    }
  }
  return detail;
}

// Why the segment could not be read, in a sentence that says what to do;
// the exit status.
int ReportUnreadable(const SegmentTable& table, const std::string& name) {
  const std::string& detail = table.detail;
  std::cerr << "zcal show: ";
  switch (-table.error) {
    case ENOENT:
      std::cerr << "no segment " << name << " (/dev/shm" << name
                << " does not exist): no zcal agent has published on this "
                   "host. Start one with `zcal agent`, or name the segment "
                   "with --segment or "
                << ZCAL_SEGMENT_ENV << ".\n";
      return kExitFailure;
    case EPROTO:
      if (const std::optional<long> agent = AgentOf(name)) {
        // The agent checks its segment at each heartbeat and puts a new
        // one in place of a damaged one.
        std::cerr << "incompatible or corrupt segment: " << WithoutAdvice(detail)
                  << ". It is the segment of the running agent (pid " << *agent
                  << "), which checks it at every heartbeat and recreates a damaged "
                     "one: run `zcal show` again in a moment, and restart the agent "
                     "if it stays corrupt.\n";
        return kExitFailure;
      }
      // The detail says what is wrong and what to do.
      std::cerr << "incompatible or corrupt segment: " << detail << ".\n";
      return kExitFailure;
    case EACCES:
      std::cerr << "not allowed to read segment " << name << ": " << detail
                << ". Run as a user that the segment's mode or group admits.\n";
      return kExitFailure;
    case EINVAL:
      std::cerr << detail << ".\n";
      return ExitStatusOf(Errc::kInvalidArgument);
    default:
      std::cerr << "cannot read segment " << name << ": " << detail << ".\n";
      return kExitFailure;
  }
}

std::string SegmentName(const ShowArgs& args) {
  const char* env = std::getenv(ZCAL_SEGMENT_ENV);
  return !args.segment.empty() ? args.segment
         : (env && *env)       ? std::string(env)
                               : std::string(ZCAL_DEFAULT_SEGMENT);
}

int RunShow(const ShowArgs& args) {
  const std::string name = SegmentName(args);
  const SegmentTable table = ReadSegmentTable(name);
  if (!table.info) return ReportUnreadable(table, name);
  std::optional<AgentState> state;
  if (!args.state.empty()) {
    Result<AgentState> loaded = LoadState(args.state);
    if (!loaded) {
      std::cerr << "zcal show: --state " << loaded.error().message
                << (loaded.error().code == Errc::kNotFound
                        ? "; name the file of the agent's state.path"
                        : "")
                << ".\n";
      return kExitFailure;
    }
    state = std::move(*loaded);
  }
  const std::uint64_t now_ns = common::RealtimeNs();
  if (args.json) {
    nlohmann::json document = ThresholdsJson(table, now_ns);
    if (state) document["measured_under"] = LoadsJson(args.state, *state);
    std::cout << document.dump(2) << "\n";
  } else {
    PrintTable(std::cout, name, *table.info, table.entries, now_ns);
    if (state) PrintLoads(std::cout, args.state, *state);
  }
  return kExitOk;
}

}  // namespace

Command AddShowCommand(CLI::App& parent) {
  auto args = std::make_shared<ShowArgs>();
  CLI::App* app = parent.add_subcommand(
      "show",
      "Print the thresholds this host publishes: the shared-memory segment's "
      "header and every entry, with ages and the stale flag. Exit status 1 "
      "when there is no segment or it is incompatible.");
  app->add_option("--segment", args->segment,
                  "Segment name, \"/NAME\" (default: $ZCAL_SEGMENT, else /zcal)");
  app->add_option("--state", args->state,
                  "Also print the load each result was measured under and the traffic mix "
                  "each path was decided for, from this state file (the agent's state.path): "
                  "the segment has no room for them");
  app->add_flag("--json", args->json, "Print JSON instead of a table");
  return {app, [args] { return RunShow(*args); }};
}

}  // namespace zcal::agent
