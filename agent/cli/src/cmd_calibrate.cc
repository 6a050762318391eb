// zcal calibrate: real probes on one path, driven by the sweep planner.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "decision_args.h"
#include "report_text.h"
#include "zcal/agent/cli/commands.h"
#include "zcal/agent/report/report.h"
#include "zcal/agent/report/report_file.h"
#include "zcal/agent/state/load_json.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/depth.h"
#include "zcal/calibrator/report_json.h"
#include "zcal/calibrator/samples_csv.h"
#include "zcal/common/units.h"
#include "zcal/probes/calibration/calibration.h"
#include "zcal/probes/host/host_facts_json.h"

namespace zcal::agent {

namespace {

namespace cal = zcal::calibrator;
namespace probes = zcal::probes;

struct CalibrateArgs {
  std::string path = "loopback";
  std::vector<std::string> methods;
  std::string min_size = "1KiB";
  std::string max_size = "256KiB";
  DecisionArgs decision;
  double budget_seconds = 2;
  std::string max_rate = "0";
  bool json = false;
  std::string samples_out;
  std::string report;
  std::string root = "/";
  std::string buffers = "pages";
  std::string key_file;
  std::optional<std::string> depths;  ///< --depth: classes; absent = stream only
};

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free,
              "set from a signal handler");

extern "C" void OnInterrupt(int) { g_interrupted.store(true); }

// An option's value in the units grammar, its name in the message.
Result<std::uint64_t> ParseBytes(const std::string& option, const std::string& text,
                                 bool rate) {
  Result<std::uint64_t> value = rate ? common::ParseRate(text) : common::ParseSize(text);
  if (!value) return Fail(Errc::kInvalidArgument, option + ": " + value.error().message);
  return value;
}

Result<probes::CalibrationOptions> ToOptions(const CalibrateArgs& args) {
  probes::CalibrationOptions options;
  Result<probes::Target> target = probes::ParseTarget(args.path);
  if (!target) return Fail(Errc::kInvalidArgument, "--" + target.error().message);
  options.target = *target;
  for (const std::string& name : args.methods) {
    const auto method = cal::ParseMethod(name);
    if (!method) {
      return Fail(Errc::kInvalidArgument,
                  "--methods: unknown method \"" + name + "\"; choose from " +
                      cal::MethodNames());
    }
    options.methods.push_back(*method);
  }
  auto min = ParseBytes("--min", args.min_size, false);
  if (!min) return tl::unexpected(min.error());
  auto max = ParseBytes("--max", args.max_size, false);
  if (!max) return tl::unexpected(max.error());
  auto rate = ParseBytes("--max-rate", args.max_rate, true);
  if (!rate) return tl::unexpected(rate.error());
  options.min_size = *min;
  options.max_size = *max;
  options.max_bytes_per_second = *rate;
  options.decision = args.decision.ToOptions();
  options.budget_seconds = args.budget_seconds;
  options.cancel = &g_interrupted;
  options.root = args.root;
  const auto buffers = probes::ParseBufferMemory(args.buffers);
  if (!buffers) {
    return Fail(Errc::kInvalidArgument, "--buffers: unknown buffer memory \"" + args.buffers +
                                            "\"; choose pages or hugepages");
  }
  options.buffers = *buffers;
  if (!args.key_file.empty()) {
    if (options.target.kind != probes::TargetKind::kPeer) {
      return Fail(Errc::kInvalidArgument,
                  "--key-file: only a peer path (--path ADDR:PORT) presents a key");
    }
    auto keys = probes::peer::LoadKeyFile(args.key_file);
    if (!keys) return Fail(Errc::kInvalidArgument, "--key-file: " + keys.error().message);
    for (const std::string& warning : keys->warnings) {
      std::cerr << "zcal calibrate: warning: " << warning << "\n";
    }
    options.peer_key = keys->Presented();
  }
  if (auto valid = probes::ValidateCalibrationOptions(options); !valid) {
    return tl::unexpected(valid.error());
  }
  return options;
}

// What was probed per requested method, baselines included: the analysis
// lists only the zerocopy methods.
nlohmann::json ProbesJson(const probes::CalibrationOptions& options,
                          const std::vector<cal::Sample>& samples) {
  nlohmann::json doc = nlohmann::json::object();
  const std::vector<cal::Method> methods =
      options.methods.empty()
          ? std::vector<cal::Method>(cal::kAllMethods.begin(), cal::kAllMethods.end())
          : options.methods;
  for (cal::Method m : methods) {
    std::uint64_t ok = 0, unsupported = 0, failed = 0;
    std::string error;
    for (const cal::Sample& s : samples) {
      if (s.method != m) continue;
      ok += s.ok() ? 1 : 0;
      unsupported += s.status == cal::SampleStatus::kUnsupported ? 1 : 0;
      failed += s.status == cal::SampleStatus::kFailed ? 1 : 0;
      if (error.empty()) error = s.error;
    }
    doc[std::string(cal::MethodName(m))] = {
        {"ok", ok},
        {"unsupported", unsupported},
        {"failed", failed},
        {"error", error.empty() ? nlohmann::json(nullptr) : nlohmann::json(error)},
    };
  }
  return doc;
}

std::string Known(const std::string& value) { return value.empty() ? "-" : value; }

template <typename T>
std::string Known(const std::optional<T>& value, const char* unit = "") {
  return value ? fmt::format("{}{}", *value, unit) : std::string("unknown");
}

std::string OnOff(const std::optional<bool>& value) {
  return value ? (*value ? "on" : "off") : "unknown";
}

void PrintHost(std::ostream& out, const probes::PathFacts& facts) {
  const probes::HostFacts& host = facts.host;
  const probes::InterfaceFacts& i = facts.interface;
  std::string cmdline;
  for (const std::string& flag : host.iommu_cmdline) cmdline += (cmdline.empty() ? "" : " ") + flag;
  out << "\nhost (fingerprint " << fmt::format("{:016x}", host.fingerprint) << ")\n"
      << "  kernel       " << Known(host.kernel_release) << "\n"
      << "  cpu          " << Known(host.cpu_model) << "\n"
      << "  iommu flags  " << (cmdline.empty() ? "none on the kernel command line" : cmdline)
      << "\n"
      << "  interface    " << Known(i.name) << ": driver " << Known(i.driver) << ", pci "
      << Known(i.pci_device) << ", speed " << Known(i.speed_mbps, " Mbit/s") << ", mtu "
      << Known(i.mtu) << ", sg " << OnOff(i.sg) << ", tso " << OnOff(i.tso) << "\n"
      << "  iommu        "
      << (i.iommu_group.empty() ? std::string("none (no IOMMU group)")
                                : "group " + i.iommu_group + ", type " + Known(i.iommu_type))
      << "\n";
  for (const std::string& note : host.notes) out << "  note: " << note << "\n";
}

// The load in the words of the report and `zcal show`, and why it can be
// missing, which only this command's reader is there to act on.
void PrintHostLoad(std::ostream& out, const std::optional<probes::HostLoad>& load) {
  out << "  load         " << DescribeLoad(load)
      << (load ? "" : " (/proc/stat unreadable, or the probes took under a tick)") << "\n";
}

class ProgressLine {
 public:
  ProgressLine() : enabled_(::isatty(STDERR_FILENO) == 1) {}
  ~ProgressLine() { Clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void Show(const probes::CalibrationProgress& p) {
    if (!enabled_) return;
    std::cerr << fmt::format("\r\033[Kcalibrating: probe {} of ~{}: {} at {} bytes",
                             p.done + 1, p.total, cal::MethodName(p.method), p.size_bytes)
              << std::flush;
    shown_ = true;
  }
  void Clear() {
    if (!shown_) return;
    std::cerr << "\r\033[K" << std::flush;
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

// The class whose results stand where one class's did before depths: the
// stream class when it was calibrated, else the first (the shallowest).
const probes::ClassAnalysis& MainClass(const probes::CalibrationReport& report) {
  for (const probes::ClassAnalysis& c : report.classes) {
    if (c.depth == cal::kStreamDepth) return c;
  }
  return report.classes.front();
}

// --depth's classes; without it the agent's default: the default classes
// on the discard path and towards a peer, stream on loopback (where the
// kernel copies at every depth).
Result<std::vector<std::uint32_t>> DepthClassesOf(const CalibrateArgs& args,
                                                  const probes::CalibrationOptions& options) {
  if (!args.depths) {
    if (probes::TraitsOf(options.target.kind).kernel_copies_every_send) {
      return std::vector<std::uint32_t>{cal::kStreamDepth};
    }
    return cal::DefaultDepthClasses();
  }
  auto classes = cal::ParseDepthClasses(*args.depths);
  if (!classes) return Fail(Errc::kInvalidArgument, "--" + classes.error().message);
  return classes;
}

// Every class's analysis as JSON, with the methods it did not probe.
nlohmann::json ClassJson(const probes::ClassAnalysis& c) {
  nlohmann::json one = cal::ToJson(c.analysis);
  one["depth"] = cal::DepthName(c.depth);
  one["not_probed"] = nlohmann::json::object();
  for (const auto& [method, why] : c.not_probed) {
    one["not_probed"][std::string(cal::MethodName(method))] = why;
  }
  return one;
}

nlohmann::json CalibrationJson(const CalibrateArgs& args, const probes::CalibrationOptions& options,
                               const probes::CalibrationReport& all, probes::PageKind pages) {
  // The top level is the stream class's document (or the shallowest
  // class's), as before depth classes existed; "depths" has every class's.
  const probes::CalibrationReport& report = all;
  nlohmann::json doc = cal::ToJson(report.analysis);
  doc["depth"] = cal::DepthName(MainClass(all).depth);
  doc["depths"] = nlohmann::json::array();
  for (const probes::ClassAnalysis& c : all.classes) doc["depths"].push_back(ClassJson(c));
  doc["objective"] = args.decision.objective;
  doc["tolerance"] = options.decision.tolerance;
  doc["margin"] = options.decision.margin;
  doc["host"] = probes::ToJson(report.host);
  doc["host_load"] = HostLoadToJson(report.load);
  doc["buffers"] = {{"memory", probes::BufferMemoryName(options.buffers)},
                    {"pages", probes::PageKindName(pages)}};
  doc["probes"] = ProbesJson(options, all.samples);
  doc["timings"] = {
      {"duration_seconds", all.duration_seconds},
      {"budget_seconds", options.budget_seconds},
      {"probes_run", all.probes_run},
      {"samples", all.samples.size()},
      {"cancelled", all.cancelled},
      {"session_lost", all.session_lost.has_value()},
  };
  if (const auto& lost = all.session_lost) {
    doc["timings"]["session_error"] = lost->message;
    doc["timings"]["session_failure"] = probes::PeerFailureName(lost->failure);
  }
  doc["size_clamp"] = nullptr;
  if (const auto& clamp = report.max_size_clamp) {
    doc["size_clamp"] = {
        {"requested_max_bytes", clamp->requested_bytes},
        {"max_bytes", clamp->used_bytes},
        {"reason", clamp->reason},
    };
  }
  return doc;
}

// One method's answer at one class, in a cell of the summary.
std::string ClassCell(const probes::ClassAnalysis& c, cal::Method method) {
  if (c.not_probed.contains(method)) return "(as stream)";
  for (const auto& [path, result] : c.analysis.paths) {
    const auto it = result.methods.find(method);
    if (it == result.methods.end()) continue;
    const cal::MethodResult& r = it->second;
    // Short of the resolution: "~" where the noise ended its probes, "*"
    // where the budget did (the legend follows the table).
    std::string mark;
    if (r.stop && r.stop->reason == cal::StopReason::kNoise) mark = " ~";
    if (r.stop && r.stop->reason == cal::StopReason::kBudget) mark = " *";
    if (r.verdict == cal::Verdict::kThreshold && r.threshold_bytes) {
      return common::FormatSizeApprox(static_cast<double>(*r.threshold_bytes)) + mark;
    }
    return std::string(cal::VerdictName(r.verdict)) + mark;
  }
  return "-";
}

// The thresholds of every class side by side, after the classes' details:
// what a user compares.
void PrintClassSummary(std::ostream& out, const probes::CalibrationReport& all) {
  out << "\nzerocopy from, by depth (zerocopy sends in flight; \"(as stream)\": not probed, "
         "its neighbours answer):\n";
  out << fmt::format("  {:<20}", "method");
  for (const probes::ClassAnalysis& c : all.classes) out << fmt::format(" {:>12}", cal::DepthName(c.depth));
  out << "\n";
  bool noise = false;
  bool budget = false;
  for (cal::Method method : cal::kAllMethods) {
    if (!cal::IsZerocopy(method)) continue;
    std::string row = fmt::format("  {:<20}", cal::MethodName(method));
    bool any = false;
    for (const probes::ClassAnalysis& c : all.classes) {
      const std::string cell = ClassCell(c, method);
      any |= cell != "-";
      noise |= cell.ends_with(" ~");
      budget |= cell.ends_with(" *");
      row += fmt::format(" {:>12}", cell);
    }
    if (any) out << row << "\n";
  }
  if (noise) out << "  ~: the noise limited its resolution (\"probes ended (noise)\" above)\n";
  if (budget) out << "  *: the budget ended its probes before the resolution\n";
}

void PrintCalibration(std::ostream& out, const probes::CalibrationOptions& options,
                      const probes::CalibrationReport& all, probes::PageKind pages) {
  const bool several = all.classes.size() > 1 || all.classes.front().depth != cal::kStreamDepth;
  for (const probes::ClassAnalysis& c : all.classes) {
    if (several) {
      out << (&c == &all.classes.front() ? "" : "\n") << "depth " << cal::DepthName(c.depth)
          << " (zerocopy sends in flight):\n";
    }
    PrintAnalysis(out, c.analysis, options.decision);
    for (const auto& [method, why] : c.not_probed) {
      out << fmt::format("  {:<20} not probed at this depth: {}\n", cal::MethodName(method), why);
    }
  }
  if (all.classes.size() > 1) PrintClassSummary(out, all);
  const probes::CalibrationReport& last = all;
  if (const auto& clamp = last.max_size_clamp) {
    out << fmt::format("\nnote: --max {} bytes is above {} ({} bytes); probed up to {} bytes\n",
                       clamp->requested_bytes, clamp->reason, clamp->used_bytes,
                       clamp->used_bytes);
  }
  PrintHost(out, last.host);
  PrintHostLoad(out, last.load);
  out << "  buffers      " << probes::BufferMemoryName(options.buffers) << ": "
      << probes::PageKindName(pages) << "\n";
  out << fmt::format("\n{} probes ({} samples) in {:.1f} s of a {:.0f} s budget\n",
                     all.probes_run, all.samples.size(), all.duration_seconds,
                     options.budget_seconds);
}

Result<void> WriteCalibrationReport(PendingFile& file, const CalibrateArgs& args,
                                    const probes::CalibrationOptions& options,
                                    const probes::CalibrationReport& all) {
  ReportModel model;
  model.kind = ReportKind::kCalibration;
  model.source = "zcal calibrate --path " + args.path;
  model.decision = DescribeDecision(options.decision);
  // The page draws one curve per path and method: the stream class's (or
  // the only class's); the other classes are in the text and the JSON.
  model.host = HostInfoOf(all.host, args.path);
  model.entries = EntriesOf(all.analysis);
  for (ReportEntry& e : model.entries) e.load = all.load;
  return WriteReport(file, std::move(model));
}

// The files the command writes, created before measuring so that a bad
// path costs no calibration; a calibration that fails leaves an earlier
// file as it was.
Result<std::unique_ptr<PendingFile>> CreateOutput(const std::string& option,
                                                  const std::string& path) {
  if (path.empty()) return std::unique_ptr<PendingFile>();
  auto created = PendingFile::Create(path);
  if (!created) return Fail(created.error().code, option + " " + created.error().message);
  return std::move(*created);
}

// Runs the calibrations with Ctrl-C turned into a cancel of the probes.
Result<probes::CalibrationReport, probes::CalibrationError> CalibrateInterruptibly(
    const probes::CalibrationOptions& options) {
  g_interrupted.store(false);
  struct sigaction action{};
  action.sa_handler = OnInterrupt;
  action.sa_flags = SA_RESETHAND;  // a second Ctrl-C ends it at once
  struct sigaction previous{};
  ::sigaction(SIGINT, &action, &previous);
  ProgressLine progress;
  auto calibrated = probes::RunCalibration(
      options, [&](const probes::CalibrationProgress& p) { progress.Show(p); });
  ::sigaction(SIGINT, &previous, nullptr);
  return calibrated;
}

int RunCalibrate(const CalibrateArgs& args) {
  auto options = ToOptions(args);
  auto depths = options ? DepthClassesOf(args, *options) : tl::unexpected(options.error());
  if (!depths) {
    std::cerr << "zcal calibrate: " << depths.error().message << "\n";
    return ExitStatusOf(depths.error(), kExitUsage);
  }
  auto samples_out = CreateOutput("--samples-out", args.samples_out);
  auto report_file = samples_out ? CreateOutput("--report", args.report)
                                 : tl::unexpected(samples_out.error());
  if (!report_file) {
    std::cerr << "zcal calibrate: " << report_file.error().message << "\n";
    return ExitStatusOf(report_file.error(), kExitUsage);
  }

  // Huge pages that cannot be had fail here, once, not in every probe.
  const auto pages = probes::CheckBufferMemory(options->buffers, options->root);
  if (!pages) {
    std::cerr << "zcal calibrate: --buffers " << args.buffers << ": " << pages.error().message
              << "\n";
    return kExitNoProbe;
  }
  options->depths = *depths;
  auto all = CalibrateInterruptibly(*options);
  if (!all) {
    std::cerr << "zcal calibrate: " << all.error().message << "\n";
    return ExitStatusOf(all.error(), kExitNoProbe);
  }
  if (*samples_out) {
    if (auto written = (*samples_out)->Commit(cal::WriteSamplesCsv(all->samples)); !written) {
      std::cerr << "zcal calibrate: --samples-out " << written.error().message << "\n";
      return kExitFailure;
    }
  }
  if (args.json) {
    std::cout << CalibrationJson(args, *options, *all, *pages).dump(2) << "\n";
  } else {
    PrintCalibration(std::cout, *options, *all, *pages);
  }
  if (*report_file) {
    if (auto written = WriteCalibrationReport(**report_file, args, *options, *all); !written) {
      std::cerr << "zcal calibrate: --report " << written.error().message << "\n";
      return kExitFailure;
    }
  }
  if (all->cancelled) {
    std::cerr << "zcal calibrate: interrupted; the results are partial\n";
    return kExitFailure;
  }
  if (all->session_lost) {
    std::cerr << "zcal calibrate: the session was lost ("
              << probes::PeerFailureName(all->session_lost->failure) << ": "
              << all->session_lost->message
              << "); the results are partial, an agent would not use them\n";
    return kExitFailure;
  }
  return kExitOk;
}

// What is measured: the path, the methods and sizes.
void AddMeasureOptions(CLI::App* app, CalibrateArgs& args) {
  app->add_option("--path", args.path,
                  "loopback (an in-process sink), discard (UDP dropped in a private "
                  "namespace: real zerocopy, the sender's costs only; sizes up to "
                  "65507 bytes) or ADDRESS:PORT of a peer's sink")
      ->capture_default_str();
  app->add_option("--methods", args.methods,
                  "Comma-separated methods (default: all): " + cal::MethodNames())
      ->delimiter(',');
  app->add_option("--min", args.min_size,
                  "Smallest message size (4096, 4K = 4KiB = 4096, 10kB = 10000; docs/units.md)")
      ->capture_default_str();
  app->add_option("--max", args.max_size, "Largest message size")->capture_default_str();
}

// How long and how fast it may probe, and how the verdicts are decided.
void AddBudgetOptions(CLI::App* app, CalibrateArgs& args) {
  AddDecisionOptions(*app, args.decision);
  app->add_option("--budget", args.budget_seconds,
                  "Seconds for the whole calibration; probes are shortened to fit")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app->add_option("--max-rate", args.max_rate,
                  "Average rate the probes may send (100M = 100MiB/s, 100MB/s, "
                  "10Gbit/s; docs/units.md); 0 = unlimited")
      ->capture_default_str();
}

// Where the results go besides the printed verdicts.
void AddOutputOptions(CLI::App* app, CalibrateArgs& args) {
  app->add_flag("--json", args.json,
                "Print one JSON object: the `zcal analyze --json` document plus "
                "\"host\", \"host_load\" (the load the probes ran under), \"probes\" "
                "(per method), \"timings\" and \"size_clamp\" (null, or the --max the "
                "path could not carry); the top level is the stream class's, "
                "\"depths\" holds every class's analysis with its \"depth\"");
  app->add_option("--samples-out", args.samples_out,
                  "Write the raw samples as CSV (what `zcal analyze` reads)");
  app->add_option("--report", args.report,
                  "Also write the HTML page of `zcal report` (curves, verdicts, host "
                  "facts) to this file");
}

// How the probes run: the depth classes, the key a peer is shown, the
// buffers' memory, where host facts are read.
void AddProbeOptions(CLI::App* app, CalibrateArgs& args) {
  app->add_option("--key-file", args.key_file,
                  "With a peer path: the key file whose first key is presented to "
                  "the peer's sink (lines KEYID HEXSECRET, zcal keygen)");
  app->add_option("--depth", args.depths,
                  "Depth classes to calibrate, comma-separated: how many zerocopy "
                  "sends of a connection may be in flight (1 to 128, or stream: as "
                  "many as the probe's buffers allow, a bulk stream), at most 8. All "
                  "in one calibration: the baselines probed once, a class not probed "
                  "where its neighbours answer for it (default: 1,4,16,stream on the "
                  "discard path and towards a peer, stream on loopback)");
  app->add_option("--buffers", args.buffers,
                  "Memory of the probes' buffers: pages (4 KiB) or hugepages (2 MiB: "
                  "hugetlbfs when vm.nr_hugepages reserves some, else transparent huge "
                  "pages; fails with what to do when neither can be had)")
      ->capture_default_str();
  app->add_option("--root", args.root,
                  "Read sysfs and procfs under this directory instead of / (tests)")
      ->capture_default_str();
}

}  // namespace

Command AddCalibrateCommand(CLI::App& parent) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* app = parent.add_subcommand(
      "calibrate",
      "Measure on this host, with real sends, from which message size each "
      "zerocopy method pays off, and print the verdicts.");
  AddMeasureOptions(app, *args);
  AddBudgetOptions(app, *args);
  AddOutputOptions(app, *args);
  AddProbeOptions(app, *args);
  app->footer(
      "Exit status: 0 calibration completed (whatever the verdicts); 1 "
      "interrupted, the peer's session lost mid-calibration (partial "
      "results), or the samples file or the --report page could not be "
      "written; 2 bad arguments; 3 no probe could run (the message says why "
      "per method, or why the peer's sink refused the session).");
  return {app, [args] { return RunCalibrate(*args); }};
}

}  // namespace zcal::agent
