// The forms in which thresholds are exported to a consumer (`zcal export
// --format`, the configuration's `exports:`), by name. The domain holds the
// names so that the configuration can check them; the text of each format
// is the report room's (zcal/agent/report/export_format.h).
#pragma once

#include <string_view>

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

}  // namespace zcal::agent
