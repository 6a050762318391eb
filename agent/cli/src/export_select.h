// The part `zcal export` and `zcal exec` share: the key options, and
// reading the values for a key from the segment with libzcal, with the
// refusal rules (no segment, no usable entry, a stale table under --fresh)
// and --fallback (docs/export.md).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "zcal/agent/cli/export_format.h"
#include "zcal/common/result.h"

namespace zcal::agent {

struct ExportKeyArgs {
  std::string segment;
  std::string for_address;
  std::string scope;
  std::string interface;
  std::string fallback;
  bool fresh = false;
};

/// --segment, --for, --scope, --interface, --fallback, --fresh.
void AddExportKeyOptions(CLI::App& app, ExportKeyArgs& args);

struct ExportSelection {
  ExportValues values;
  nlohmann::json show;  ///< zcal show --json's document; null without a segment
};

/// Reads the values of `methods` for the key. Warnings (a stale table, a
/// fallback used) go to `warnings` as lines starting with `command`. The
/// error is one sentence: kInvalidArgument for a bad option value, kNotFound
/// for no segment or no usable entry, others for a segment that cannot be
/// read.
Result<ExportSelection> SelectExport(const ExportKeyArgs& args,
                                     const std::vector<std::uint8_t>& methods,
                                     std::string_view command, std::ostream& warnings);

}  // namespace zcal::agent
