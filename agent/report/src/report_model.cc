// What a report shows, from each kind of input.
#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "zcal/agent/report/report.h"
#include "zcal/agent/state/host_json.h"
#include "zcal/agent/state/load_json.h"
#include "zcal/agent/state/state.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/report_json.h"
#include "zcal/common/text.h"

namespace zcal::agent {
namespace {

using nlohmann::json;

std::string Percent(double fraction) {
  return fmt::format("{:g} %", std::round(fraction * 1000) / 10);
}

std::string DecisionText(std::string_view objective, double tolerance, double margin) {
  return fmt::format("objective {}, tolerance {}, margin {}", objective,
                     Percent(tolerance), Percent(margin));
}

// Walks a calibrate/analyze document's "paths"; `where` follows the walk so
// that the caller can point at what is wrong.
Result<std::vector<ReportEntry>> EntriesOfDocument(const json& paths,
                                                   std::vector<std::string>& where) {
  std::vector<ReportEntry> entries;
  where = {"paths"};
  if (!paths.is_object()) return Fail(Errc::kParse, "paths: must be an object");
  for (const auto& [path, value] : paths.items()) {
    where = {"paths", path};
    const auto methods = value.is_object() ? value.find("methods") : value.end();
    if (!value.is_object() || methods == value.end() || !methods->is_object()) {
      return Fail(Errc::kParse, "paths." + path + ": must be {\"methods\": {...}}");
    }
    for (const auto& [name, result] : methods->items()) {
      where = {"paths", path, "methods", name};
      const std::string at = "paths." + path + ".methods." + name;
      const auto method = calibrator::ParseMethod(name);
      if (!method || !calibrator::IsZerocopy(*method)) {
        return Fail(Errc::kParse, at + ": not a zerocopy method (" +
                                      calibrator::MethodNames(calibrator::kZerocopyMethods) +
                                      ")");
      }
      auto parsed = MethodResultFromJson(result, *method);
      if (!parsed) {
        return Fail(Errc::kParse, "paths." + path + ".methods." + parsed.error().message);
      }
      entries.push_back({path, std::move(*parsed), 0, std::nullopt, std::nullopt});
    }
    where = {"paths", path, "drift"};
    auto drift = calibrator::ReadHostDrift(value, "paths." + path);
    if (!drift) return tl::unexpected(drift.error());
    for (ReportEntry& e : entries) {
      if (e.path == path) e.drift = *drift;
    }
  }
  where.clear();
  return entries;
}

}  // namespace

bool CarriesLoad(ReportKind kind) { return kind != ReportKind::kAnalysis; }

std::string DescribeLoad(const std::optional<probes::HostLoad>& load) {
  if (!load) return "load not measured";
  // A loopback calibration that finds `never` early probes for a tenth of
  // a second: one decimal would say 0.1 for anything up to 0.15.
  const int window_decimals = load->window_seconds < 1 ? 2 : 1;
  return fmt::format("host busy {}, steal {}, this process {}, runnable {:.1f} (max {}) over {:.{}f} s",
                     Percent(load->busy_share), Percent(load->steal_share),
                     Percent(load->own_share), load->runnable_mean, load->runnable_max,
                     load->window_seconds, window_decimals);
}

std::string DescribeDecision(const calibrator::DecisionOptions& options) {
  return DecisionText(calibrator::ObjectiveName(options.objective), options.tolerance,
                      options.margin);
}

std::vector<ReportEntry> EntriesOf(const calibrator::Analysis& analysis) {
  std::vector<ReportEntry> entries;
  for (const auto& [name, path] : analysis.paths) {
    for (const auto& [method, result] : path.methods) {
      ReportEntry e{name, result, 0, std::nullopt, std::nullopt};
      e.drift = path.drift;
      entries.push_back(std::move(e));
    }
  }
  return entries;
}

ReportModel ModelOfState(const AgentState& state, std::string source) {
  ReportModel model;
  model.kind = ReportKind::kState;
  model.source = std::move(source);
  if (!state.host.interfaces.empty()) {
    model.host = state.host;
    if (model.host->facts.fingerprint == 0) model.host->facts.fingerprint = state.fingerprint;
  }
  for (const auto& [path, methods] : state.paths) {
    const auto decided = state.decided_for.find(path);
    for (const auto& [key, s] : methods) {
      model.entries.push_back(
          {ToString(path), s.published, s.measured_at_ns, s.pending, s.load, key.depth,
           decided == state.decided_for.end() ? std::nullopt
                                              : std::optional<DecidedFor>(decided->second)});
    }
  }
  return model;
}

Result<ReportModel> ModelOfDocument(const json& document, std::string source,
                                    std::vector<std::string>& where) {
  where.clear();
  const char* const kExpected =
      "unknown document: expected the JSON of `zcal calibrate --json` or "
      "`zcal analyze --json` (an object with \"paths\") or an agent state file "
      "(\"format\": \"zcal-state\")";
  if (!document.is_object()) return Fail(Errc::kParse, kExpected);
  if (document.contains("format")) {
    if (document.value("format", json()) != "zcal-state") {
      where = {"format"};
      return Fail(Errc::kParse, kExpected);
    }
    auto state = ParseState(document.dump());
    if (!state) return Fail(Errc::kParse, state.error().message);
    return ModelOfState(*state, std::move(source));
  }
  if (!document.contains("paths")) return Fail(Errc::kParse, kExpected);
  auto entries = EntriesOfDocument(document.at("paths"), where);
  if (!entries) return tl::unexpected(entries.error());
  ReportModel model;
  model.source = std::move(source);
  model.entries = std::move(*entries);
  const bool calibration = document.contains("host");
  model.kind = calibration ? ReportKind::kCalibration : ReportKind::kAnalysis;
  if (calibration) {
    const std::string path = model.entries.empty() ? "" : model.entries.front().path;
    model.host = HostFromFactsJson(document.at("host"), path);
    // Written since the load was measured: without it, not measured.
    if (const auto load = document.find("host_load"); load != document.end()) {
      auto parsed = HostLoadFromJson(*load);
      if (!parsed) {
        where = {"host_load"};
        return Fail(Errc::kParse, "host_load: " + parsed.error().message);
      }
      for (ReportEntry& e : model.entries) e.load = *parsed;
    }
  }
  if (document.value("objective", json()).is_string() &&
      document.value("tolerance", json()).is_number() &&
      document.value("margin", json()).is_number()) {
    model.decision = DecisionText(document.at("objective").get<std::string>(),
                                  document.at("tolerance").get<double>(),
                                  document.at("margin").get<double>());
  }
  return model;
}

}  // namespace zcal::agent
