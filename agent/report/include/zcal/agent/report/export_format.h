// What `zcal export`, `zcal exec` and the agent's `exports:` hand to a
// consumer: the thresholds chosen for one key (read from the segment,
// export_select.h), and the text of each format a transport reads
// (docs/export.md). Pure functions: the caller reads the segment and writes
// the file; this only formats.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "zcal/agent/domain/export_formats.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/method_result.h"
#include "zcal/common/result.h"

namespace zcal::agent {

/// The value the command prints for a method without a usable entry, when
/// asked to (--fallback): never, always, or a byte count.
struct ExportFallback {
  calibrator::Verdict verdict = calibrator::Verdict::kThreshold;  ///< threshold, always or never
  std::uint64_t threshold_bytes = 0;
};
/// "never", "always", or a size ("16384", "16KiB"); kInvalidArgument naming
/// the text otherwise.
Result<ExportFallback> ParseExportFallback(std::string_view text);

/// Where a method's exported value comes from.
enum class ExportSource {
  kSegment,   ///< an entry of the segment
  kFallback,  ///< --fallback, for want of a usable entry
  kMissing,   ///< no usable entry and no fallback: no value; only env
              ///< writes such a method, marked (ZCAL_<METHOD>_STATUS=missing)
};

/// One method's exported decision.
struct ExportedMethod {
  calibrator::Method method = calibrator::Method::kCopy;
  /// threshold, always or never; not for kMissing
  calibrator::Verdict verdict = calibrator::Verdict::kThreshold;
  std::uint64_t threshold_bytes = 0;  ///< with THRESHOLD
  /// Where it came from: "host_default", "loopback", "peer:10.1.0.0/16",
  /// "interface:eth0"; "fallback" for kFallback, "none" for kMissing.
  std::string scope;
  ExportSource source = ExportSource::kSegment;
  /// Why there is no value from the segment (kFallback, kMissing), as a
  /// token a script can compare: "no_segment", "stale" (refused by
  /// --fresh), "no_entry", "inconclusive" or "inconclusive:REASON"
  /// (REASON as calibrator::ReasonName: "noisy", ...), "no_depth_entry" (the
  /// scope has no entry of the asked class, and --strict-depth refuses
  /// its stream entry). "" for kSegment.
  std::string why;
  /// kSegment: the class of the entry that answered: the asked one, or
  /// kStream when the scope has no entry of that class (depth_fallback).
  DepthClass depth = DepthClass::kStream;
  /// kSegment: the scope's stream entry answered for an asked class it
  /// has no entry of.
  bool depth_fallback = false;
  bool estimated = false;
  std::uint64_t measured_at_ns = 0;  ///< 0 unless kSegment
  bool fallback() const { return source == ExportSource::kFallback; }
  bool missing() const { return source == ExportSource::kMissing; }
};

struct ExportValues {
  std::string segment;  ///< "/zcal"
  std::string key;      ///< what was asked: "host_default", "198.18.0.1", ...
  bool stale = false;   ///< the table is republished state, not confirmed
  DepthClass depth = DepthClass::kStream;  ///< the class asked for
  std::string depth_asked;  ///< --depth as written ("8"); "" for the default
  std::vector<ExportedMethod> methods;
  bool any_fallback() const;
  /// The names of the kMissing methods, comma-separated ("" for none).
  std::string MissingNames() const;
  /// The names of the methods whose stream entry answered for the asked
  /// class (depth_fallback), comma-separated ("" for none).
  std::string DepthFallbackNames() const;
};

/// The threshold in bytes, "always" or "never"; "" for a missing method.
std::string ThresholdText(const ExportedMethod& m);

/// The variables of an environment format (env or libfabric), unquoted,
/// for setenv; kInvalidArgument for the other formats, kNotFound for
/// libfabric when msg_zerocopy is missing (it has no marker: its consumer
/// would read nothing of it).
Result<std::vector<std::pair<std::string, std::string>>> ExportVariables(
    ExportFormat format, const ExportValues& values);

/// `NAME=value` lines read alike by sh and systemd's EnvironmentFile=
/// (values quoted only when they need it), after a comment line.
std::string EnvFileText(const std::vector<std::pair<std::string, std::string>>& variables,
                        std::string_view comment);

/// The whole text of `format` (a trailing newline included). `show` is
/// `zcal show --json`'s document of the table, for json (null without a
/// segment); the other formats ignore it. kNotFound when a method the
/// format writes is missing, except for env, which marks it.
Result<std::string> FormatExport(ExportFormat format, const ExportValues& values,
                                 const nlohmann::json& show = nullptr);

}  // namespace zcal::agent
