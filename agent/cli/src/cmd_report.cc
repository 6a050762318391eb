// zcal report: the HTML page of a calibration, a samples CSV or an agent
// state.
#include <iostream>
#include <memory>
#include <string>

#include "decision_args.h"
#include "zcal/agent/cli/commands.h"
#include "zcal/agent/report/report_file.h"

namespace zcal::agent {

namespace {

struct ReportArgs {
  DecisionArgs decision;
  std::string out = "-";
  std::string input;
};

int RunReport(const ReportArgs& args) {
  // The input first: a bad one leaves no file behind, not even an empty one.
  auto model = LoadReportInput(args.input, args.decision.ToOptions());
  if (!model) {
    std::cerr << "zcal report: " << model.error().message << "\n";
    return ExitStatusOf(model.error(), kExitUsage);
  }
  auto file = PendingFile::Create(args.out);
  if (!file) {
    std::cerr << "zcal report: --out " << file.error().message << "\n";
    return kExitFailure;
  }
  if (auto written = WriteReport(**file, std::move(*model)); !written) {
    std::cerr << "zcal report: --out " << written.error().message << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

Command AddReportCommand(CLI::App& parent) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* app = parent.add_subcommand(
      "report",
      "Write one self-contained HTML page (it requests nothing) with the "
      "curves behind each verdict: throughput and CPU per byte against "
      "message size for every zerocopy method and its baseline, the "
      "threshold and its interval, and the host facts.");
  AddDecisionOptions(*app, args->decision);
  app->add_option("-o,--out", args->out,
                  "Write the page to this file (replaced whole, never left in part); "
                  "- is standard output")
      ->capture_default_str();
  app->add_option("INPUT", args->input,
                  "The JSON of `zcal calibrate --json` or `zcal analyze --json`, an "
                  "agent state file, or a samples CSV as `zcal analyze` reads it "
                  "(decided with the options above); - reads standard input")
      ->required();
  app->footer(
      "Exit status: 0 written; 1 the page could not be written; 2 bad "
      "arguments or bad input (the message names file:line:column).");
  return {app, [args] { return RunReport(*args); }};
}

}  // namespace zcal::agent
