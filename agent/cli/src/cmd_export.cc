// zcal export: the thresholds for one key, read from the segment with
// libzcal, in the form a consumer reads (env, libfabric, spdk, spdk-rpc,
// json), printed or written atomically (docs/export.md).

#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>

#include "export_options.h"
#include "zcal/agent/cli/commands.h"
#include "zcal/agent/report/export_format.h"
#include "zcal/common/atomic_file.h"
#include "zcal/common/clock.h"

namespace zcal::agent {

namespace {

struct ExportArgs {
  ExportKeyArgs key;
  ExportPlanOptions plan;
  std::string format;
  std::string output;
};

int Refuse(const Error& error) {
  std::cerr << "zcal export: " << error.message << ".\n";
  return ExitStatusOf(error);
}

int RunExport(const ExportArgs& args) {
  // Checked here rather than by CLI11, for a one-line message.
  if (args.format.empty())
    return Refuse(Error{Errc::kInvalidArgument,
                        "name a format with --format: env, json, libfabric, spdk or spdk-rpc"});
  auto format = ParseExportFormat(args.format);
  if (!format) return Refuse(format.error());
  auto plan = args.plan.Plan(std::span(&*format, 1));
  if (!plan) return Refuse(plan.error());
  // The file's directory is checked before the segment is read, and
  // nothing is written unless everything succeeded (the temporary file is
  // removed otherwise).
  std::unique_ptr<common::AtomicFile> file;
  if (!args.output.empty()) {
    common::AtomicFileOptions options;
    options.keep_existing = true;
    auto created = common::AtomicFile::Create(args.output, options);
    if (!created) return Refuse(created.error());
    file = std::move(*created);
  }
  std::ostringstream warnings;
  // A class asked on the command line must be one the segment holds.
  ExportKeyArgs key = args.key;
  key.require_class = !plan->depth_asked.empty();
  auto selection = SelectExport(key, *plan, "zcal export", warnings, common::RealtimeNs());
  std::cerr << warnings.str();
  if (!selection) return Refuse(selection.error());
  auto text = FormatExport(*format, selection->values, selection->show);
  if (!text) return Refuse(text.error());
  if (!file) {
    std::cout << *text << std::flush;
    if (!std::cout) return Refuse(Error{Errc::kIo, "cannot write to standard output"});
    return kExitOk;
  }
  if (auto r = file->Write(*text); !r) return Refuse(r.error());
  if (auto r = file->Commit(); !r) return Refuse(r.error());
  return kExitOk;
}

}  // namespace

Command AddExportCommand(CLI::App& parent) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* app = parent.add_subcommand(
      "export",
      "Print the thresholds this host publishes for one key, read from the segment, in "
      "the form a consumer reads: env (KEY=VALUE for sh and systemd), libfabric, spdk "
      "(a JSON config's sock subsystem), spdk-rpc (JSON-RPC requests) or json. Exit "
      "status 1 without a segment or without a usable entry for a method the consumer "
      "reads, unless --fallback; env marks the other methods it lacks.");
  app->add_option("--format", args->format, "env, libfabric, spdk, spdk-rpc or json (required)");
  AddExportKeyOptions(*app, args->key);
  args->plan.Add(*app);
  app->add_option("-o,--output", args->output,
                  "Write to this file atomically (keeping an existing file's mode and "
                  "owner) instead of standard output");
  return {app, [args] { return RunExport(*args); }};
}

}  // namespace zcal::agent
