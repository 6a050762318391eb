// zcal analyze: the decision rule applied to a CSV of samples.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "zcal/agent/cli/commands.h"
#include "decision_args.h"
#include "zcal/agent/report/report_file.h"
#include "report_text.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/report_json.h"
#include "zcal/calibrator/samples_csv.h"
#include "zcal/common/bounded_read.h"

namespace zcal::agent {

namespace {

namespace cal = zcal::calibrator;

struct AnalyzeArgs {
  DecisionArgs decision;
  bool json = false;
  std::string report;
  std::string file;
};

// Streams the samples file through the CSV reader: memory grows with the
// (path, method, size) groups, not with the rows (docs/units.md).
Result<std::vector<cal::Sample>> ReadSamples(const std::string& file) {
  const std::string name = file == "-" ? std::string("<stdin>") : file;
  Result<common::UniqueFd> fd =
      common::OpenInput(file, common::InputKind::kRegularOrPipe, "samples CSV");
  if (!fd) return tl::unexpected(fd.error());
  cal::SamplesCsvReader reader(name);
  std::vector<char> buffer(1 << 20);
  while (true) {
    const Result<std::size_t> n = common::ReadSome(fd->get(), name, buffer.data(), buffer.size());
    if (!n) return tl::unexpected(n.error());
    if (*n == 0) break;
    if (auto ok = reader.Feed(std::string_view(buffer.data(), *n)); !ok) {
      return tl::unexpected(ok.error());
    }
  }
  return reader.Finish();
}

int RunAnalyze(const AnalyzeArgs& args) {
  const cal::DecisionOptions options = args.decision.ToOptions();

  auto samples = ReadSamples(args.file);
  if (!samples) {
    std::cerr << "zcal analyze: " << samples.error().message << "\n";
    return kExitUsage;
  }
  std::unique_ptr<PendingFile> report;
  if (!args.report.empty()) {
    auto created = PendingFile::Create(args.report);
    if (!created) {
      std::cerr << "zcal analyze: --report " << created.error().message << "\n";
      return kExitFailure;
    }
    report = std::move(*created);
  }
  const cal::Analysis analysis = cal::Analyze(*samples, options);
  if (args.json) {
    nlohmann::json doc = cal::ToJson(analysis);
    doc["objective"] = args.decision.objective;
    doc["tolerance"] = options.tolerance;
    doc["margin"] = options.margin;
    std::cout << doc.dump(2) << "\n";
  } else {
    PrintAnalysis(std::cout, analysis, options);
  }
  if (report) {
    ReportModel model;
    model.kind = ReportKind::kAnalysis;
    model.source = args.file == "-" ? "<stdin>" : args.file;
    model.decision = DescribeDecision(options);
    model.entries = EntriesOf(analysis);
    if (auto written = WriteReport(*report, std::move(model)); !written) {
      std::cerr << "zcal analyze: --report " << written.error().message << "\n";
      return kExitFailure;
    }
  }
  return kExitOk;
}

}  // namespace

Command AddAnalyzeCommand(CLI::App& parent) {
  auto args = std::make_shared<AnalyzeArgs>();
  CLI::App* app = parent.add_subcommand(
      "analyze",
      "Decide from a CSV of samples (e.g. pasted benchmark results, or "
      "`zcal calibrate --samples-out`) from which size each zerocopy method "
      "pays off.");
  AddDecisionOptions(*app, args->decision);
  app->add_flag("--json", args->json, "Print one JSON object on stdout");
  app->add_option("--report", args->report,
                  "Also write the HTML page of `zcal report` to this file (- is "
                  "standard output)");
  app->add_option("FILE", args->file,
                  "CSV with a header row and the columns method, size, "
                  "mb_per_s, cpu_pct (optional: path, copied_pct, repeat); "
                  "- reads standard input. Read as a stream: a group of "
                  "(path, method, size) keeps at most 256 samples")
      ->required();
  app->footer(
      "Exit status: 0 analysed; 1 the --report page could not be written; 2 "
      "bad arguments or bad input (the message names file:line:column).");
  return {app, [args] { return RunAnalyze(*args); }};
}

}  // namespace zcal::agent
