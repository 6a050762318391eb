// The forms in which thresholds are exported to a consumer (`zcal export
// --format`, the configuration's `exports:`), by name, and which zerocopy
// methods each form's consumer reads. The domain holds the names and the
// methods so that the configuration can check an entry; the text of each
// format is the report room's (zcal/agent/report/export_format.h).
#pragma once

#include <span>
#include <string_view>
#include <vector>

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

/// Which methods an export reads from the segment, and which of them must
/// have a usable entry (threshold, always or never) for it to be produced.
struct ExportPlan {
  /// Looked up and written, in canonical order.
  std::vector<calibrator::Method> methods;
  /// Without a usable entry and without --fallback, the export is refused.
  /// The others (env's, when no --methods names them) are written with a
  /// marker (ZCAL_<METHOD>_STATUS=missing).
  std::vector<calibrator::Method> required;
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
Result<ExportPlan> PlanExport(std::span<const ExportFormat> formats,
                              std::span<const calibrator::Method> named,
                              std::string_view option = "--methods");

}  // namespace zcal::agent
