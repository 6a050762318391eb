// zcal show: the published segment, header and entries, as a table or JSON.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "zcal/zcal.hpp"
#include "zcal/common/clock.h"
#include "zcal/common/text.h"

namespace zcal::agent {

namespace {

struct ShowArgs {
  std::string segment;
  bool json = false;
};

std::optional<double> AgeSeconds(std::uint64_t now_ns, std::uint64_t then_ns) {
  if (then_ns == 0) return std::nullopt;
  if (then_ns >= now_ns) return 0.0;
  return static_cast<double>(now_ns - then_ns) / 1e9;
}

std::string Utc(std::uint64_t ns) {
  if (ns == 0) return "never";
  const time_t seconds = static_cast<time_t>(ns / 1000000000u);
  tm parts{};
  gmtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

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

std::string AddressText(const zcal_shm_entry& e) {
  char text[INET6_ADDRSTRLEN] = "?";
  inet_ntop(e.family == ZCAL_FAMILY_IPV4 ? AF_INET : AF_INET6, e.address, text,
            sizeof text);
  return text;
}

std::string InterfaceText(const zcal_shm_entry& e) {
  return std::string(e.interface, strnlen(e.interface, sizeof e.interface));
}

std::string ScopeText(const zcal_shm_entry& e) {
  switch (e.scope) {
    case ZCAL_SCOPE_PEER:
      return "peer " + AddressText(e) + "/" + std::to_string(e.prefix_len);
    case ZCAL_SCOPE_INTERFACE:
      return "interface " + InterfaceText(e);
    default:
      return zcal_scope_name(e.scope);
  }
}

std::optional<double> Confidence(const zcal_shm_entry& e) {
  if (e.confidence_ppm == ZCAL_CONFIDENCE_UNKNOWN) return std::nullopt;
  return e.confidence_ppm / 1e6;
}

nlohmann::json ToJson(const std::string& name, const zcal_info& info,
                      const std::vector<zcal_shm_entry>& entries,
                      std::uint64_t now_ns) {
  auto optional = [](std::optional<double> v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json doc;
  doc["segment"] = name;
  doc["abi"] = {{"major", info.abi_major}, {"minor", info.abi_minor}};
  doc["segment_bytes"] = info.segment_bytes;
  doc["capacity"] = info.capacity;
  doc["count"] = info.count;
  doc["generation"] = info.generation;
  doc["agent_pid"] = info.agent_pid;
  doc["created_ns"] = info.created_ns;
  doc["publish_time_ns"] = info.publish_time_ns;
  doc["publish_age_seconds"] = optional(AgeSeconds(now_ns, info.publish_time_ns));
  doc["heartbeat_ns"] = info.heartbeat_ns;
  doc["heartbeat_age_seconds"] = optional(AgeSeconds(now_ns, info.heartbeat_ns));
  doc["stale"] = (info.flags & ZCAL_FLAG_STALE) != 0;
  doc["retired"] = (info.flags & ZCAL_FLAG_RETIRED) != 0;
  doc["entries"] = nlohmann::json::array();
  for (const zcal_shm_entry& e : entries) {
    nlohmann::json j;
    j["scope"] = zcal_scope_name(e.scope);
    j["address"] = e.scope == ZCAL_SCOPE_PEER ? nlohmann::json(AddressText(e))
                                              : nlohmann::json(nullptr);
    j["prefix_len"] = e.scope == ZCAL_SCOPE_PEER ? nlohmann::json(e.prefix_len)
                                                 : nlohmann::json(nullptr);
    j["interface"] = e.scope == ZCAL_SCOPE_INTERFACE
                         ? nlohmann::json(InterfaceText(e))
                         : nlohmann::json(nullptr);
    j["method"] = zcal_method_name(e.method);
    j["verdict"] = zcal_verdict_name(e.verdict);
    j["threshold_bytes"] = (e.entry_flags & ZCAL_ENTRY_HAS_THRESHOLD)
                               ? nlohmann::json(e.threshold_bytes)
                               : nlohmann::json(nullptr);
    j["confidence"] = optional(Confidence(e));
    j["reason"] = e.reason == ZCAL_REASON_NONE ? nlohmann::json(nullptr)
                                               : nlohmann::json(zcal_reason_name(e.reason));
    j["measured_at_ns"] = e.measured_at_ns;
    j["age_seconds"] = optional(AgeSeconds(now_ns, e.measured_at_ns));
    j["fingerprint"] = common::Hex64(e.fingerprint);
    doc["entries"].push_back(std::move(j));
  }
  return doc;
}

void PrintTable(std::ostream& out, const std::string& name, const zcal_info& info,
                const std::vector<zcal_shm_entry>& entries, std::uint64_t now_ns) {
  out << "segment     " << name << " (" << info.segment_bytes << " bytes, ABI "
      << info.abi_major << "." << info.abi_minor << ")\n"
      << "agent pid   " << info.agent_pid << "\n"
      << "generation  " << info.generation << "\n"
      << "published   " << Utc(info.publish_time_ns) << " ("
      << Age(AgeSeconds(now_ns, info.publish_time_ns)) << ")\n"
      << "heartbeat   " << Utc(info.heartbeat_ns) << " ("
      << Age(AgeSeconds(now_ns, info.heartbeat_ns)) << ")\n"
      << "stale       "
      << ((info.flags & ZCAL_FLAG_STALE)
              ? "yes (republished from saved state, not yet confirmed)"
              : "no")
      << "\n";
  if (info.flags & ZCAL_FLAG_RETIRED)
    out << "retired     yes (a newer segment replaced this one)\n";
  out << "entries     " << info.count << " of " << info.capacity << "\n";
  if (entries.empty()) return;

  struct Row {
    std::string cells[8];
  };
  std::vector<Row> rows;
  rows.push_back({{"SCOPE", "METHOD", "VERDICT", "THRESHOLD", "CONFIDENCE",
                   "REASON", "MEASURED", "FINGERPRINT"}});
  for (const zcal_shm_entry& e : entries) {
    std::ostringstream confidence;
    if (auto c = Confidence(e)) confidence << std::fixed << std::setprecision(2) << *c;
    else confidence << "unknown";
    const char* reason = zcal_reason_name(e.reason);
    rows.push_back({{ScopeText(e), zcal_method_name(e.method),
                     zcal_verdict_name(e.verdict),
                     (e.entry_flags & ZCAL_ENTRY_HAS_THRESHOLD)
                         ? std::to_string(e.threshold_bytes)
                         : std::string("-"),
                     confidence.str(), *reason ? reason : "-",
                     Utc(e.measured_at_ns) + " (" +
                         Age(AgeSeconds(now_ns, e.measured_at_ns)) + ")",
                     common::Hex64(e.fingerprint)}});
  }
  std::size_t width[8] = {};
  for (const Row& row : rows)
    for (int c = 0; c < 8; ++c) width[c] = std::max(width[c], row.cells[c].size());
  out << "\n";
  for (const Row& row : rows) {
    for (int c = 0; c < 8; ++c) {
      out << row.cells[c];
      if (c < 7) out << std::string(width[c] - row.cells[c].size() + 2, ' ');
    }
    out << "\n";
  }
}

int RunShow(const ShowArgs& args) {
  const char* env = std::getenv(ZCAL_SEGMENT_ENV);
  const std::string name = !args.segment.empty() ? args.segment
                           : (env && *env)       ? std::string(env)
                                                 : std::string(ZCAL_DEFAULT_SEGMENT);
  auto segment = client::Segment::Open(name.c_str());
  int error = segment.error();
  std::string detail = segment.detail();
  std::optional<zcal_info> info;
  if (segment) {
    auto read = segment->Info();
    if (read) info = *read;
    error = read.error();
    detail = read.detail();
  }
  if (!info) {
    std::cerr << "zcal show: ";
    switch (-error) {
      case ENOENT:
        std::cerr << "no segment " << name << " (/dev/shm" << name
                  << " does not exist): no zcal agent has published on this "
                     "host. Start one with `zcal agent`, or name the segment "
                     "with --segment or "
                  << ZCAL_SEGMENT_ENV << ".\n";
        return kExitFailure;
      case EPROTO:
        // The detail says what is wrong and what to do.
        std::cerr << "incompatible or corrupt segment: " << detail << ".\n";
        return kExitFailure;
      case EACCES:
        std::cerr << "not allowed to read segment " << name << ": " << detail
                  << ". Run as a user that the segment's mode or group admits.\n";
        return kExitFailure;
      case EINVAL:
        std::cerr << detail << ".\n";
        return kExitUsage;
      default:
        std::cerr << "cannot read segment " << name << ": " << detail << ".\n";
        return kExitFailure;
    }
  }
  std::vector<zcal_shm_entry> entries;
  for (std::uint32_t i = 0; i < info->count; ++i) {
    if (auto entry = segment->Entry(i)) entries.push_back(*entry);
  }
  const std::uint64_t now_ns = common::RealtimeNs();
  if (args.json) {
    std::cout << ToJson(name, *info, entries, now_ns).dump(2) << "\n";
  } else {
    PrintTable(std::cout, name, *info, entries, now_ns);
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
  app->add_flag("--json", args->json, "Print JSON instead of a table");
  return {app, [args] { return RunShow(*args); }};
}

}  // namespace zcal::agent
