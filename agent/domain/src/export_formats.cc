#include "zcal/agent/domain/export_formats.h"

#include <string>
#include <utility>

namespace zcal::agent {

namespace {

constexpr std::pair<std::string_view, ExportFormat> kNames[] = {
    {"env", ExportFormat::kEnv},     {"json", ExportFormat::kJson},
    {"libfabric", ExportFormat::kLibfabric}, {"spdk", ExportFormat::kSpdk},
    {"spdk-rpc", ExportFormat::kSpdkRpc},
};

}  // namespace

Result<ExportFormat> ParseExportFormat(std::string_view text) {
  for (const auto& [name, format] : kNames)
    if (name == text) return format;
  return Fail(Errc::kInvalidArgument,
              "unknown format \"" + std::string(text) +
                  "\": the formats are env, json, libfabric, spdk and spdk-rpc");
}

std::string_view ExportFormatName(ExportFormat format) {
  for (const auto& [name, f] : kNames)
    if (f == format) return name;
  return "unknown";
}

}  // namespace zcal::agent
