// The key options `zcal export` and `zcal exec` share (docs/export.md).
#pragma once

#include <CLI/CLI.hpp>

#include "zcal/agent/report/export_select.h"

namespace zcal::agent {

/// --segment, --for, --scope, --interface, --fallback, --fresh.
void AddExportKeyOptions(CLI::App& app, ExportKeyArgs& args);

}  // namespace zcal::agent
