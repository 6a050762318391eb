// The forms in which thresholds are exported to a consumer (`zcal export
// --format`, the configuration's `exports:`), by name, and which zerocopy
// methods each form's consumer reads. The domain holds the names and the
// methods so that the configuration can check an entry; the text of each
// format is the report room's (zcal/agent/report/export_format.h).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zcal/agent/domain/depth_class.h"
#include "zcal/calibrator/method.h"
#include "zcal/common/result.h"

namespace zcal::agent {

enum class ExportFormat { kEnv, kJson, kLibfabric, kSpdk, kSpdkRpc };

inline constexpr ExportFormat kExportFormats[] = {
    ExportFormat::kEnv, ExportFormat::kJson, ExportFormat::kLibfabric,
    ExportFormat::kSpdk, ExportFormat::kSpdkRpc};

/// "env", "json", "libfabric", "spdk", "spdk-rpc"; kInvalidArgument naming
/// the text and the formats otherwise.
Result<ExportFormat> ParseExportFormat(std::string_view text);
std::string_view ExportFormatName(ExportFormat format);

/// The zerocopy methods a format can write, in output order: env and json
/// all three; libfabric msg_zerocopy (its tcp and net providers send with
/// MSG_ZEROCOPY); spdk and spdk-rpc msg_zerocopy (both of SPDK's modules,
/// posix and uring, send with MSG_ZEROCOPY: the uring module submits
/// sendmsg with that flag and reaps the socket's error queue, it does not
/// use io_uring's SEND_ZC).
std::span<const calibrator::Method> ExportFormatMethods(ExportFormat format);

/// `--methods` / `exports[].methods`: comma-separated zerocopy method
/// names ("msg_zerocopy,uring_send_zc"), each once. Returned in the
/// canonical order (calibrator::kZerocopyMethods). kInvalidArgument naming
/// the unknown, repeated or non-zerocopy name, or an empty list; the
/// message starts with `option`, as the user spelled it.
Result<std::vector<calibrator::Method>> ParseExportMethods(std::string_view list,
                                                           std::string_view option = "--methods");

/// The depth class a format's consumer sends at when no --depth is given:
/// how many zerocopy sends one of its connections keeps in flight
/// (docs/integrations.md has the evidence per transport). Every format's
/// consumer today keeps many in flight, so each is kStream: libfabric's
/// tcp and net providers queue zerocopy sends without waiting for their
/// completions, up to the endpoint's tx size (256 by default); SPDK's
/// posix and uring modules flush batched sendmsg calls with MSG_ZEROCOPY
/// and hold each request until its completion, as many as the queue
/// depth; env and json are generic (a consumer at a lower depth says
/// --depth).
DepthClass ExportFormatDefaultDepth(ExportFormat format);

/// A depth asked for (`--depth`, `exports[].depth`): "1", "4", "16",
/// "stream", or a whole number of sends in flight from 1 to 128, which
/// falls in its class by libzcal's rule (zcal_depth_class: the largest
/// class at or below it, stream from 32 on).
struct ExportDepth {
  DepthClass depth_class = DepthClass::kStream;
  std::string asked;  ///< as written: "8", "stream"
  bool operator==(const ExportDepth&) const = default;
};

/// kInvalidArgument with one sentence starting with `option` for anything
/// else ("--depth: '0' is out of range; ...").
Result<ExportDepth> ParseExportDepth(std::string_view text, std::string_view option = "--depth");

/// Which methods an export reads from the segment, and which of them must
/// have a usable entry (threshold, always or never) for it to be produced.
struct ExportPlan {
  /// Looked up and written, in canonical order.
  std::vector<calibrator::Method> methods;
  /// Without a usable entry and without --fallback, the export is refused.
  /// The others (env's, when no --methods names them) are written with a
  /// marker (ZCAL_<METHOD>_STATUS=missing).
  std::vector<calibrator::Method> required;
  /// The class whose entries are read: --depth's, else the formats'
  /// default (the shallowest of their ExportFormatDefaultDepth: a class
  /// below a consumer's depth errs towards copying, as libzcal's rule
  /// does). Where the key's scope has no entry of the class, its stream
  /// entry answers, and the output says so.
  DepthClass depth = DepthClass::kStream;
  /// What --depth said ("8" for class 4); "" for the formats' default.
  std::string depth_asked;
};

/// The plan for one or more formats (zcal exec sets the variables of
/// several) and the methods the consumer reads (`named`, from --methods;
/// empty: each format's default).
///
/// Default: each format's methods (ExportFormatMethods); required are those
/// of json, libfabric, spdk and spdk-rpc, none of env (a method env cannot
/// give is marked, not refused: its consumer may not read it).
/// With `named`: exactly those methods, all required; each must be one some
/// format writes, and each format must write at least one of them.
/// kInvalidArgument with one sentence, starting with `option`, otherwise.
/// `depth`: --depth's, or nullopt for the formats' default.
Result<ExportPlan> PlanExport(std::span<const ExportFormat> formats,
                              std::span<const calibrator::Method> named,
                              std::string_view option = "--methods",
                              const std::optional<ExportDepth>& depth = std::nullopt);

}  // namespace zcal::agent
