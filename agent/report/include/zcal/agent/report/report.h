// The HTML report of a calibration (`zcal report`, `zcal calibrate
// --report`, `zcal analyze --report`) and the agent's live status page:
// one self-contained page, charts drawn by the embedded Chart.js, that
// requests nothing (docs/report.md).
//
// A ReportModel is what a page shows; the loaders build one from each kind
// of input, RenderReport turns it into the page. Everything here is pure
// (no I/O) and thread-compatible: distinct objects may be used from
// different threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zcal/agent/domain/agent_state.h"
#include "zcal/agent/domain/app_traffic.h"
#include "zcal/agent/domain/host_info.h"
#include "zcal/calibrator/decision.h"
#include "zcal/common/result.h"
#include "zcal/probes/host/cpu_accounting.h"

namespace zcal::agent {

/// One zerocopy method on one path, at one depth class.
struct ReportEntry {
  std::string path;
  calibrator::MethodResult result;
  std::uint64_t measured_at_ns = 0;  ///< CLOCK_REALTIME; 0 unknown
  /// A differing verdict waiting for the next calibration (agent state).
  std::optional<calibrator::MethodResult> pending;
  /// The host's load over the probes of the calibration behind `result`;
  /// nullopt when not measured (or the input carries none).
  std::optional<probes::HostLoad> load;
  /// The depth class it was measured at (an agent state has one entry per
  /// class; calibrate/analyze documents are stream).
  DepthClass depth = DepthClass::kStream;
  /// Which traffic mix the path's thresholds were decided for (an agent
  /// state's decided_for); nullopt when the input does not say.
  std::optional<DecidedFor> decided_for = std::nullopt;
  /// How the host's speed moved during the path's calibration, where the
  /// input says (a calibrate or analyze document of samples with their
  /// order); nullopt otherwise.
  std::optional<calibrator::HostDrift> drift = std::nullopt;
};

/// What the page was made from.
enum class ReportKind : std::uint8_t {
  kCalibration,  ///< `zcal calibrate --json` (or its --report)
  kAnalysis,     ///< `zcal analyze --json`, or a samples CSV analysed
  kState,        ///< the agent's state file
  kLive,         ///< the running agent's page at "/"
};

struct ReportModel {
  ReportKind kind = ReportKind::kAnalysis;
  std::string source;  ///< the input's name, for the title
  std::uint64_t generated_at_ns = 0;
  std::optional<HostInfo> host;  ///< nullopt: the input has none
  /// "efficiency, tolerance 2 %, margin 3 %"; "" when the input says not.
  std::string decision;
  std::vector<ReportEntry> entries;  ///< by path, then method, then class (stream first)
  /// kLive: the agent's published table (the /api/v1/thresholds JSON, or
  /// null when it could not be read) and whether it is stale.
  nlohmann::json published;
  bool stale = false;
  /// What the applications' libzcal reports say (the live agent's last
  /// read): a table per application and method and a chart of its sizes.
  /// nullopt: the input carries none (a calibration, an analysis, a state
  /// file), and the page has no such section; empty: "no application
  /// reports".
  std::optional<AppsSnapshot> apps;
};

/// True when the input says what load its results were measured under
/// (a calibration, a state, the live agent; an analysis of samples does
/// not).
bool CarriesLoad(ReportKind kind);

/// "host busy 34 %, steal 0 %, this process 18 %, runnable 2.1 (max 4)
/// over 2.3 s", or "load not measured".
std::string DescribeLoad(const std::optional<probes::HostLoad>& load);

/// "efficiency, tolerance 2 %, margin 3 %".
std::string DescribeDecision(const calibrator::DecisionOptions& options);

/// The entries of an analysis (a CSV analysed, or a calibration's).
std::vector<ReportEntry> EntriesOf(const calibrator::Analysis& analysis);

/// The model of a state (kState; kLive sets the rest itself).
ReportModel ModelOfState(const AgentState& state, std::string source);

/// Builds the model of a parsed JSON document: `zcal calibrate --json`,
/// `zcal analyze --json`, or a state file (a calibration's "host_load" is
/// the load of all its entries). kParse, with a message that
/// starts with the JSON path of what is wrong ("paths.loopback.methods:
/// ...") or with "unknown document" for another shape; the caller adds the
/// file and position. `where` is set to the keys leading to the bad value.
Result<ReportModel> ModelOfDocument(const nlohmann::json& document,
                                    std::string source,
                                    std::vector<std::string>& where);

/// The page. Deterministic for a given model (no clock read).
std::string RenderReport(const ReportModel& model);

/// The Content-Security-Policy the page states in a <meta> element (and
/// the agent sends as a header): default-src 'none' plus the SHA-256
/// hashes of its inline scripts and its style sheet.
const std::string& ReportContentSecurityPolicy();

}  // namespace zcal::agent
