// zcal analyze: the decision rule applied to a CSV of samples.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "commands.h"
#include "decision_args.h"
#include "report_text.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/report_json.h"
#include "zcal/calibrator/samples_csv.h"

namespace zcal::agent {

namespace {

namespace cal = zcal::calibrator;

struct AnalyzeArgs {
  DecisionArgs decision;
  bool json = false;
  std::string file;
};

// A sample file larger than this is not a sample file.
constexpr std::size_t kMaxInputBytes = 256u << 20;

Result<std::string> ReadInput(const std::string& file) {
  std::ostringstream buffer;
  if (file == "-") {
    buffer << std::cin.rdbuf();
    return buffer.str();
  }
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (std::filesystem::is_directory(status)) {
    return Fail(Errc::kIo, file + ": cannot read: is a directory, not a "
                                  "regular file; give a CSV file");
  }
  if (std::filesystem::is_regular_file(status) &&
      std::filesystem::file_size(file, ec) > kMaxInputBytes) {
    return Fail(Errc::kInvalidArgument,
                file + ": larger than a sample file can be (256 MiB)");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return Fail(Errc::kIo, file + ": cannot open: " + std::strerror(errno));
  }
  buffer << in.rdbuf();
  if (in.bad()) {
    return Fail(Errc::kIo, file + ": cannot read: " + std::strerror(errno));
  }
  return buffer.str();
}

int RunAnalyze(const AnalyzeArgs& args) {
  const cal::DecisionOptions options = args.decision.ToOptions();

  auto text = ReadInput(args.file);
  if (!text) {
    std::cerr << "zcal analyze: " << text.error().message << "\n";
    return kExitUsage;
  }
  auto samples = cal::ParseSamplesCsv(
      *text, args.file == "-" ? std::string("<stdin>") : args.file);
  if (!samples) {
    std::cerr << "zcal analyze: " << samples.error().message << "\n";
    return kExitUsage;
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
  app->add_option("FILE", args->file,
                  "CSV with a header row and the columns method, size, "
                  "mb_per_s, cpu_pct (optional: path, copied_pct, repeat); "
                  "- reads standard input")
      ->required();
  app->footer(
      "Exit status: 0 analysed; 2 bad arguments or bad input (the message "
      "names file:line:column).");
  return {app, [args] { return RunAnalyze(*args); }};
}

}  // namespace zcal::agent
