// zcal analyze: the decision rule applied to a CSV of samples.
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "decision_args.h"
#include "report_text.h"
#include "zcal/agent/cli/commands.h"
#include "zcal/agent/report/report_file.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/method.h"
#include "zcal/calibrator/report_json.h"
#include "zcal/calibrator/samples_csv.h"
#include "zcal/common/bounded_read.h"

#include <nlohmann/json.hpp>

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

// The zerocopy methods of each path that were probed at some class but not
// at `depth`: a calibration leaves a class out where its neighbours bound
// the answer (docs/calibrator.md), and the file does not say why, only
// that this class has no answer of its own. Path -> methods, in order.
std::map<std::string, std::vector<cal::Method>> NotProbedAt(
    const std::vector<cal::Sample>& samples, std::uint32_t depth) {
  std::map<std::string, std::set<cal::Method>> anywhere, here;
  for (const cal::Sample& s : samples) {
    if (!cal::IsZerocopy(s.method)) continue;
    anywhere[s.path].insert(s.method);
    if (s.depth == depth) here[s.path].insert(s.method);
  }
  std::map<std::string, std::vector<cal::Method>> missing;
  for (const auto& [path, methods] : anywhere) {
    for (cal::Method m : methods) {
      if (!here[path].contains(m)) missing[path].push_back(m);
    }
  }
  return missing;
}

nlohmann::json NotProbedJson(const std::map<std::string, std::vector<cal::Method>>& missing) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [path, methods] : missing) {
    nlohmann::json names = nlohmann::json::array();
    for (cal::Method m : methods) names.push_back(cal::MethodName(m));
    out[path] = std::move(names);
  }
  return out;
}

void PrintNotProbed(std::ostream& out,
                    const std::map<std::string, std::vector<cal::Method>>& missing) {
  for (const auto& [path, methods] : missing) {
    for (cal::Method m : methods) {
      out << "  " << path << " " << cal::MethodName(m)
          << ": not probed at this depth (the file has no samples of it here; its "
             "other classes bound the answer)\n";
    }
  }
}

int RunAnalyze(const AnalyzeArgs& args) {
  const cal::DecisionOptions options = args.decision.ToOptions();

  auto samples = ReadSamples(args.file);
  if (!samples) {
    std::cerr << "zcal analyze: " << samples.error().message << "\n";
    return ExitStatusOf(samples.error(), kExitUsage);
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
  // One decision per depth class the zerocopy samples were probed at; the
  // stream class's (or the deepest numeric one's) stands where the only
  // analysis stood before classes existed.
  const std::vector<std::uint32_t> depths = cal::DepthsOf(*samples);
  std::vector<cal::Analysis> analyses;
  for (std::uint32_t depth : depths) analyses.push_back(cal::Analyze(*samples, options, depth));
  const cal::Analysis& analysis = analyses.back();
  if (args.json) {
    nlohmann::json doc = cal::ToJson(analysis);
    doc["depth"] = cal::DepthName(depths.back());
    doc["depths"] = nlohmann::json::array();
    for (std::size_t i = 0; i < depths.size(); ++i) {
      nlohmann::json one = cal::ToJson(analyses[i]);
      one["depth"] = cal::DepthName(depths[i]);
      one["not_probed"] = NotProbedJson(NotProbedAt(*samples, depths[i]));
      doc["depths"].push_back(std::move(one));
    }
    doc["objective"] = args.decision.objective;
    doc["tolerance"] = options.tolerance;
    doc["margin"] = options.margin;
    std::cout << doc.dump(2) << "\n";
  } else {
    const bool several = depths.size() > 1 || depths.front() != cal::kStreamDepth;
    for (std::size_t i = 0; i < depths.size(); ++i) {
      if (several) {
        std::cout << (i == 0 ? "" : "\n") << "depth " << cal::DepthName(depths[i])
                  << " (zerocopy sends in flight):\n";
      }
      PrintAnalysis(std::cout, analyses[i], options);
      PrintNotProbed(std::cout, NotProbedAt(*samples, depths[i]));
    }
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
                  "mb_per_s, cpu_pct (optional: path, copied_pct, repeat, depth: "
                  "1 to 128 zerocopy sends in flight or stream, absent = stream; "
                  "a numeric class on its own rows and the stream rows moved by its "
                  "cost per send, where that is the same at every size; seq: the "
                  "probe's place in the calibration's order, by which the host's speed "
                  "moving during it is measured and corrected); - reads standard "
                  "input. Read as a stream: a group of (path, method, depth, "
                  "size) keeps at most 256 samples")
      ->required();
  app->footer(
      "Exit status: 0 analysed; 1 the --report page could not be written; 2 "
      "bad arguments or bad input (the message names file:line:column).");
  return {app, [args] { return RunAnalyze(*args); }};
}

}  // namespace zcal::agent
