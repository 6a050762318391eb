// The options `zcal export` and `zcal exec` share (docs/export.md).
#pragma once

#include <span>
#include <string>

#include <CLI/CLI.hpp>

#include "zcal/agent/domain/export_formats.h"
#include "zcal/agent/report/export_select.h"

namespace zcal::agent {

/// --segment, --for, --scope, --interface, --fallback, --fresh,
/// --strict-depth.
void AddExportKeyOptions(CLI::App& app, ExportKeyArgs& args);

/// --methods and --depth: what the consumer reads, and at which depth it
/// sends.
class ExportPlanOptions {
 public:
  void Add(CLI::App& app);
  /// The plan for `formats` with the methods and depth given (each
  /// format's default without --methods, their default class without
  /// --depth); kInvalidArgument for a bad list or depth.
  Result<ExportPlan> Plan(std::span<const ExportFormat> formats) const;

 private:
  std::string methods_;
  std::string depth_;
  CLI::Option* methods_option_ = nullptr;
  CLI::Option* depth_option_ = nullptr;
};

}  // namespace zcal::agent
