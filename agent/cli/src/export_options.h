// The options `zcal export` and `zcal exec` share (docs/export.md).
#pragma once

#include <span>
#include <string>

#include <CLI/CLI.hpp>

#include "zcal/agent/domain/export_formats.h"
#include "zcal/agent/report/export_select.h"

namespace zcal::agent {

/// --segment, --for, --scope, --interface, --fallback, --fresh.
void AddExportKeyOptions(CLI::App& app, ExportKeyArgs& args);

/// --methods: the methods the consumer reads.
class ExportMethodsOption {
 public:
  void Add(CLI::App& app);
  /// The plan for `formats` with the methods given (each format's default
  /// without --methods); kInvalidArgument for a bad list.
  Result<ExportPlan> Plan(std::span<const ExportFormat> formats) const;

 private:
  std::string text_;
  CLI::Option* option_ = nullptr;
};

}  // namespace zcal::agent
