// The report page: static HTML for the verdicts and host facts (readable
// without scripts, and the charts' text alternative), canvases that
// report.js fills from the embedded data, and the embedded assets.
#include <cmath>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "html_text.h"
#include "report_apps.h"
#include "report_assets.h"
#include "zcal/agent/report/report.h"
#include "zcal/agent/state/decided_for_json.h"
#include "zcal/common/clock.h"
#include "zcal/common/text.h"
#include "zcal/common/units.h"

namespace zcal::agent {
namespace {

namespace cal = zcal::calibrator;
using nlohmann::json;

// Above this many entries the charts are drawn as they scroll into view
// (and all of them for print): a 256-entry state has 512 charts.
constexpr std::size_t kEagerEntries = 24;

std::string Size(std::uint64_t bytes) { return common::FormatSizeApprox(static_cast<double>(bytes)); }

std::string Utc(std::uint64_t ns) {
  return common::FormatUtc(ns, "%Y-%m-%d %H:%M:%S UTC", "unknown");
}

std::string Or(const std::string& value, const char* unknown = "unknown") {
  return value.empty() ? std::string(unknown) : value;
}

// Four significant digits: the charts need no more, and a 256-entry state
// stays small.
double Round(double value) {
  if (!std::isfinite(value) || value == 0) return 0;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(value))));
  return std::round(value * scale) / scale;
}

std::string VerdictText(const cal::MethodResult& r) {
  const std::string reason(cal::ReasonName(r.reason));
  switch (r.verdict) {
    case cal::Verdict::kThreshold:
      return "threshold " + Size(r.threshold_bytes.value_or(0));
    case cal::Verdict::kAlways:
      return "always" + (r.threshold_bytes ? " (from " + Size(*r.threshold_bytes) + ")"
                                           : std::string());
    case cal::Verdict::kNever:
      return "never" + (reason.empty() ? std::string() : " (" + reason + ")");
    case cal::Verdict::kInconclusive:
      return "inconclusive" + (reason.empty() ? std::string() : " (" + reason + ")");
  }
  return "unknown";
}

std::string IntervalText(const cal::MethodResult& r) {
  if (!r.interval) return "-";
  const cal::ThresholdInterval& i = *r.interval;
  if (!i.high_bytes) return "from " + Size(i.low_bytes) + ", may never pay off";
  if (i.level > 0) {
    return fmt::format("{} \u2013 {} ({:g} %)", Size(i.low_bytes), Size(*i.high_bytes),
                       std::round(i.level * 1000) / 10);
  }
  return "between " + Size(i.low_bytes) + " and " + Size(*i.high_bytes) + " (probed)";
}

std::string ConfidenceText(const cal::MethodResult& r) {
  return r.confidence ? fmt::format("{:.2f}", *r.confidence) : "unknown";
}

// The share of completions reported copied, over the probed sizes.
std::string CopiedText(const cal::MethodResult& r) {
  double low = 2, high = -1;
  for (const cal::SizeComparison& c : r.sizes) {
    if (!c.zerocopy.copied_fraction) continue;
    low = std::min(low, *c.zerocopy.copied_fraction);
    high = std::max(high, *c.zerocopy.copied_fraction);
  }
  if (high < 0) return "not reported";
  const auto pct = [](double f) { return fmt::format("{:g} %", std::round(f * 1000) / 10); };
  return low == high ? pct(low) + " at every size" : pct(low) + " \u2013 " + pct(high);
}

std::string RuleText(const cal::MethodResult& r) {
  switch (r.rule) {
    case cal::Rule::kModel: return "fitted model";
    case cal::Rule::kPerSize: return "per-size comparisons";
    case cal::Rule::kNone: return "a report";
  }
  return "-";
}

const char* KindText(ReportKind kind) {
  switch (kind) {
    case ReportKind::kCalibration: return "the calibration";
    case ReportKind::kAnalysis: return "the samples analysed in";
    case ReportKind::kState: return "the agent state";
    case ReportKind::kLive: return "the running agent of segment";
  }
  return "";
}

std::string IommuText(const probes::InterfaceFacts& i) {
  if (i.iommu_group.empty()) return "no IOMMU group (no translation)";
  std::string mode = i.iommu_type;
  if (mode == "identity") mode = "identity (passthrough)";
  else if (mode == "DMA") mode = "DMA (translated, strict flush)";
  else if (mode == "DMA-FQ") mode = "DMA-FQ (translated, lazy flush)";
  return "group " + i.iommu_group + ", " + Or(mode);
}

void VerdictTable(std::string& out, const ReportModel& model) {
  const bool measured = model.kind == ReportKind::kState || model.kind == ReportKind::kLive;
  out += "<section id=\"verdicts\"><h2>Verdicts</h2>\n";
  if (model.entries.empty()) {
    out += "<p class=\"note\">No results in this input.</p></section>\n";
    return;
  }
  out += "<table class=\"verdicts\"><thead><tr><th>Path</th><th>Method</th>"
         "<th>Depth</th><th>Baseline</th><th>Verdict</th><th>Interval</th><th>Confidence</th>"
         "<th>Decided by</th><th>Copied by the kernel</th>";
  if (measured) out += "<th>Measured</th>";
  const bool load = CarriesLoad(model.kind);
  if (load) out += "<th>Measured under</th>";
  out += "</tr></thead><tbody>\n";
  for (std::size_t n = 0; n < model.entries.size(); ++n) {
    const ReportEntry& e = model.entries[n];
    const cal::MethodResult& r = e.result;
    out += fmt::format(
        "<tr><td>{}</td><td><a href=\"#e{}\">{}</a></td><td>{}</td><td>{}{}</td>"
        "<td class=\"verdict\">{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td>"
        "<td>{}</td>",
        HtmlEscape(e.path), n, cal::MethodName(r.method), DepthClassName(e.depth),
        cal::MethodName(r.baseline),
        r.baseline_substituted ? " (stand-in)" : "", HtmlEscape(VerdictText(r)),
        HtmlEscape(IntervalText(r)), ConfidenceText(r), RuleText(r), CopiedText(r));
    if (measured) out += "<td>" + Utc(e.measured_at_ns) + "</td>";
    if (load) out += "<td class=\"load\">" + HtmlEscape(DescribeLoad(e.load)) + "</td>";
    out += "</tr>\n";
  }
  out += "</tbody></table></section>\n";
}

void HostFacts(std::string& out, const ReportModel& model) {
  out += "<section id=\"host\"><h2>Host</h2>\n";
  if (!model.host) {
    out += "<p class=\"note\">This input carries no host facts (a samples CSV, or "
           "`zcal analyze --json`).</p></section>\n";
    return;
  }
  const probes::HostFacts& h = model.host->facts;
  std::string flags;
  for (const std::string& f : h.iommu_cmdline) flags += (flags.empty() ? "" : " ") + f;
  out += "<table class=\"facts\"><tbody>\n";
  const auto row = [&](std::string_view name, const std::string& value) {
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", name, HtmlEscape(value));
  };
  row("Kernel", Or(h.kernel_release));
  row("CPU", Or(h.cpu_model));
  row("IOMMU on the kernel command line", flags.empty() ? "none" : flags);
  for (const PathInterface& p : model.host->interfaces) {
    const probes::InterfaceFacts& i = p.facts;
    std::string nic = Or(i.name) + ", driver " + Or(i.driver, "none") + ", PCI " +
                      Or(i.pci_device, "none");
    if (i.speed_mbps && *i.speed_mbps >= 0) nic += fmt::format(", {} Mbit/s", *i.speed_mbps);
    row("NIC of path " + HtmlEscape(p.path), nic);
    row("IOMMU of path " + HtmlEscape(p.path), IommuText(i));
  }
  row("Fingerprint", h.fingerprint == 0 ? Or("") : common::Hex64(h.fingerprint));
  for (const std::string& note : h.notes) row("Note", note);
  out += "</tbody></table></section>\n";
}

void AgentSection(std::string& out, const ReportModel& model) {
  if (model.kind != ReportKind::kLive) return;
  out += "<section id=\"agent\"><h2>Published now</h2>\n";
  const json& p = model.published;
  if (!p.is_object()) {
    out += "<p class=\"note\">The segment could not be read.</p></section>\n";
    return;
  }
  out += fmt::format(
      "<p>Segment {} (generation {}), {} entries{}. Host default: {}. The same table "
      "as JSON: <a href=\"api/v1/thresholds\">/api/v1/thresholds</a>; metrics: <a "
      "href=\"metrics\">/metrics</a>. This page reloads every minute.</p>\n",
      HtmlEscape(p.value("segment", "")), p.value("generation", std::uint64_t{0}),
      p.value("count", std::uint64_t{0}),
      model.stale ? ", <strong>stale</strong>: republished from the saved state, not yet "
                    "confirmed by a calibration"
                  : "",
      HtmlEscape(p.contains("host_default") ? p["host_default"].value("text", "") : ""));
  out += "<table class=\"verdicts\"><thead><tr><th>Scope</th><th>Method</th>"
         "<th>Depth</th><th>Verdict</th><th>Threshold</th><th>Confidence</th><th>Reason</th>"
         "</tr></thead><tbody>\n";
  for (const json& e : p.value("entries", json::array())) {
    std::string scope = e.value("scope", "");
    if (e.value("address", json()).is_string()) {
      scope += " " + e["address"].get<std::string>() + "/" +
               std::to_string(e.value("prefix_len", 0));
    }
    if (e.value("interface", json()).is_string()) scope += " " + e["interface"].get<std::string>();
    if (e.value("estimated", false)) scope += " (estimated)";
    // The applications' reports contradict it: libzcal answers copy for it.
    if (e.value("contradicted", false)) scope += " (contradicted by the applications: copy)";
    const json threshold = e.value("threshold_bytes", json());
    const json confidence = e.value("confidence", json());
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td>{}</td></tr>\n",
        HtmlEscape(scope), HtmlEscape(e.value("method", "")), HtmlEscape(e.value("depth", "stream")),
        HtmlEscape(e.value("verdict", "")),
        threshold.is_number() ? Size(threshold.get<std::uint64_t>()) : "-",
        confidence.is_number() ? fmt::format("{:.2f}", confidence.get<double>()) : "unknown",
        HtmlEscape(e.value("reason", json()).is_string() ? e["reason"].get<std::string>() : "-"));
  }
  out += "</tbody></table></section>\n";
}

// How to read the charts is said once, above them (kHowToRead).
void Canvas(std::string& out, std::size_t n, const ReportEntry& e, const char* kind,
            const char* what) {
  out += fmt::format(
      "<figure><div class=\"chart\"><canvas data-entry=\"e{}\" data-kind=\"{}\" "
      "data-path=\"{}\" data-method=\"{}\" data-depth=\"{}\" role=\"img\" "
      "aria-label=\"{} against size; numbers in the verdict table\"></canvas></div></figure>\n",
      n, kind, HtmlEscape(e.path), cal::MethodName(e.result.method), DepthClassName(e.depth), what);
}

constexpr const char* kHowToRead =
    "<p class=\"note\">In each chart: markers are the medians at each probed size, "
    "with whiskers of \u00b1 one spread (a robust standard deviation); dashed lines "
    "are the calibrator's fitted model where it was accepted; the black line is the "
    "threshold and the grey band its interval. Vermillion triangles: the zerocopy "
    "method; blue circles: its baseline.</p>\n";

std::string Outcome(bool zerocopy_wins) { return zerocopy_wins ? "wins" : "loses"; }

std::string FixedPercent(double fraction) { return fmt::format("{:.1f} %", 100 * fraction); }

// What the probed sizes say of the threshold, where the fitted curves
// disagree with them, and what the threshold overrules (docs/calibrator.md,
// "Measured sizes bound the threshold").
void MeasuredNotes(std::string& out, const cal::MethodResult& r) {
  if (r.measured_bracket && (r.measured_bracket->above_bytes || r.measured_bracket->at_most_bytes)) {
    std::string bracket;
    if (r.measured_bracket->above_bytes) {
      bracket += "above " + Size(*r.measured_bracket->above_bytes) +
                 " (zerocopy loses clearly there and below)";
    }
    if (r.measured_bracket->at_most_bytes) {
      bracket += std::string(bracket.empty() ? "" : " and ") + "at or below " +
                 Size(*r.measured_bracket->at_most_bytes) +
                 " (zerocopy wins clearly there and above)";
    }
    out += "<p class=\"note measured\">The probed sizes put the threshold " + HtmlEscape(bracket) +
           ".</p>\n";
  }
  if (r.curve_choice) {
    out += fmt::format(
        "<p class=\"note measured\">On the fitted curves alone the threshold would be {} "
        "(expected excess cost {}); the probed sizes moved it.</p>\n",
        r.curve_choice->threshold_bytes ? "from " + Size(*r.curve_choice->threshold_bytes)
                                        : std::string("never"),
        FixedPercent(r.curve_choice->regret));
  }
  if (!r.curve_disagreements.empty()) {
    std::string sizes;
    for (const cal::CurveDisagreement& d : r.curve_disagreements) {
      sizes += fmt::format("{}{} (measured: zerocopy {}, cost {:.3f}; curves {:.3f}{})",
                           sizes.empty() ? "" : ", ", Size(d.size_bytes), Outcome(d.zerocopy_wins),
                           d.relative_cost, d.fitted_relative_cost,
                           d.bounds_threshold ? "; bounds the threshold" : "");
    }
    out += "<p class=\"note measured\">The fitted curves disagree with probed sizes beyond "
           "their noise: " + HtmlEscape(sizes) + ".</p>\n";
  }
  if (!r.overruled.empty()) {
    std::string sizes;
    for (const cal::OverruledSize& o : r.overruled) {
      sizes += fmt::format("{}{} (zerocopy {}{}; {} dearer there)", sizes.empty() ? "" : ", ",
                           Size(o.size_bytes), Outcome(o.zerocopy_wins),
                           o.clear ? " clearly" : " within noise", FixedPercent(o.excess_cost));
    }
    out += "<p class=\"note measured\">The threshold overrules " + HtmlEscape(sizes) +
           fmt::format("; together {} expected excess cost.</p>\n",
                       FixedPercent(r.overruled_cost.value_or(0)));
  }
}

// Why a calibration stopped probing a method, for people.
std::string_view StopText(cal::StopReason reason) {
  switch (reason) {
    case cal::StopReason::kResolution: return "at the stated resolution";
    case cal::StopReason::kNoise: return "the noise, not the budget, limited its resolution";
    case cal::StopReason::kProbes: return "its refinement probes were spent";
    case cal::StopReason::kBudget: return "the budget ran out first";
  }
  return "";
}

void MethodSection(std::string& out, std::size_t n, const ReportEntry& e) {
  const cal::MethodResult& r = e.result;
  out += fmt::format(
      "<article class=\"method\" id=\"e{}\"><h3>{} against {} <span class=\"sub\">on "
      "path {}{}</span></h3>\n<p class=\"summary\"><span class=\"verdict\">{}</span>; "
      "interval {}; confidence {}; decided by {}.</p>\n"
      "<p class=\"note\">Completions the kernel reported as copied: {}.</p>\n",
      n, cal::MethodName(r.method), cal::MethodName(r.baseline), HtmlEscape(e.path),
      e.depth == DepthClass::kStream ? std::string()
                                     : ", depth " + std::string(DepthClassName(e.depth)),
      HtmlEscape(VerdictText(r)), HtmlEscape(IntervalText(r)), ConfidenceText(r), RuleText(r),
      CopiedText(r));
  for (const std::string* text : {&r.detail, &r.rule_detail}) {
    if (!text->empty()) out += "<p class=\"note\">" + HtmlEscape(*text) + "</p>\n";
  }
  if (r.stop) {
    out += "<p class=\"note\">The calibration stopped probing it: " +
           HtmlEscape(std::string(StopText(r.stop->reason))) + " (" + HtmlEscape(r.stop->detail) +
           ").</p>\n";
  }
  if (r.class_offset) {
    const cal::ClassOffset& o = *r.class_offset;
    out += o.rejected.empty()
               ? fmt::format(
                     "<p class=\"note\">At this depth each zerocopy send costs {:+.0f} ns of CPU "
                     "over the stream class's (&plusmn;{:.0f} ns, 95 %; {} samples at {} sizes): the "
                     "stream class's {} samples, moved by that, decided it with this class's "
                     "own.</p>\n",
                     o.ns_per_send, o.Reach95(), o.samples, o.sizes, o.translated)
               : "<p class=\"note\">Decided on this depth's own samples: " +
                     HtmlEscape(o.rejected) + ".</p>\n";
    if (o.rejected.empty() && !o.set_aside.empty()) {
      out += "<p class=\"note\">Off that cost per send, and set aside as zerocopy wins or "
             "loses there either way: " +
             HtmlEscape(o.set_aside) + ".</p>\n";
    }
  }
  if (e.drift && e.drift->applied) {
    out += fmt::format(
        "<p class=\"note\">The host's speed moved during this calibration: its probes cost "
        "from {:.2f} to {:.2f} times the run's level (CPU per byte), measured by {} of its {} "
        "samples; each sample was put on the run's level before deciding.</p>\n",
        e.drift->cpu_low, e.drift->cpu_high, e.drift->linked, e.drift->samples);
  }
  MeasuredNotes(out, r);
  if (r.model && !r.model->accepted && !r.model->rejection.empty()) {
    out += "<p class=\"note\">The fitted model was rejected: " +
           HtmlEscape(r.model->rejection) + "; its curves are not drawn.</p>\n";
  }
  if (e.decided_for) {
    out += "<p class=\"note\">Decided for the traffic mix: " +
           HtmlEscape(DescribeDecidedFor(*e.decided_for)) + ".</p>\n";
  }
  if (e.pending) {
    out += "<p class=\"note\">A differing result (" + HtmlEscape(VerdictText(*e.pending)) +
           ") waits for the next calibration to agree before it is published.</p>\n";
  }
  if (r.sizes.empty()) {
    out += "<p class=\"nochart\">Nothing was measured to draw.</p></article>\n";
    return;
  }
  out += "<div class=\"charts\">\n";
  Canvas(out, n, e, "throughput", "Throughput");
  Canvas(out, n, e, "cpu", "CPU per byte");
  out += "</div></article>\n";
}

json Fit(const cal::MethodFit& f) {
  const auto cap = [](const std::optional<double>& v) { return v ? json(Round(*v)) : json(); };
  return json::array({Round(f.per_byte_ns), Round(f.per_send_ns),
                      cap(f.line_rate_bytes_per_second), cap(f.cpu_bound_cores)});
}

// What report.js draws: one row per size, the columns kColumns names.
std::string DataJson(const ReportModel& model) {
  json entries = json::array();
  for (std::size_t n = 0; n < model.entries.size(); ++n) {
    const cal::MethodResult& r = model.entries[n].result;
    json sizes = json::array();
    for (const cal::SizeComparison& c : r.sizes) {
      const auto side = [](json& row, const cal::SizeStats& s) {
        row.push_back(Round(s.throughput_bytes_per_second.median));
        row.push_back(Round(s.throughput_bytes_per_second.spread));
        row.push_back(Round(s.cpu_ns_per_byte.median));
        row.push_back(Round(s.cpu_ns_per_byte.spread));
      };
      json row = json::array({c.size_bytes});
      side(row, c.zerocopy);
      side(row, c.baseline);
      sizes.push_back(std::move(row));
    }
    json interval;
    if (r.interval) {
      interval = json::array({r.interval->low_bytes,
                              r.interval->high_bytes ? json(*r.interval->high_bytes) : json()});
    }
    json fit;
    if (r.model && r.model->accepted) {
      fit = {{"zerocopy", Fit(r.model->zerocopy)}, {"baseline", Fit(r.model->baseline)}};
    }
    entries.push_back({{"id", "e" + std::to_string(n)},
                       {"method", cal::MethodName(r.method)},
                       {"depth", DepthClassName(model.entries[n].depth)},
                       {"baseline", cal::MethodName(r.baseline)},
                       {"threshold", r.threshold_bytes ? json(*r.threshold_bytes) : json()},
                       {"interval", std::move(interval)},
                       {"sizes", std::move(sizes)},
                       {"fit", std::move(fit)}});
  }
  const json doc = {{"lazy", model.entries.size() > kEagerEntries},
                    {"entries", std::move(entries)}};
  // '<' only occurs inside JSON strings, where \u003c reads back the same;
  // so no "</script" or "<!--" can end or disturb the data block.
  std::string text;
  for (const char c : doc.dump()) {
    if (c == '<') text += "\\u003c";
    else text += c;
  }
  return text;
}

}  // namespace

std::string RenderReport(const ReportModel& model) {
  std::string out;
  out.reserve(model.entries.size() * 3000 + 240000);
  const std::string title = "zcal report: " + model.source;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<!-- A zcal report: one self-contained file that requests nothing. Its policy\n"
         "     (below) allows no source at all (default-src 'none') except its own two\n"
         "     inline scripts and its style sheet, by their SHA-256 hashes: no\n"
         "     'unsafe-inline'. The data are a JSON block, which is not executed.\n"
         "     Charts: Chart.js 3.9.1, (c) 2022 Chart.js Contributors, and\n"
         "     @kurkle/color 0.2.1, (c) 2022 Jukka Kurkela, both MIT License, embedded\n"
         "     from Debian's libjs-chart.js. -->\n";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
         HtmlEscape(ReportContentSecurityPolicy()) + "\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  if (model.kind == ReportKind::kLive) out += "<meta http-equiv=\"refresh\" content=\"60\">\n";
  out += "<title>" + HtmlEscape(title) + "</title>\n<style>" + report_assets::Style() +
         "</style>\n</head>\n<body>\n";
  out += "<header><h1>zcal: from which message size zerocopy send pays off</h1>\n";
  out += fmt::format("<p class=\"sub\">Made from {} <strong>{}</strong>{}{}.</p>\n",
                     KindText(model.kind), HtmlEscape(model.source),
                     model.generated_at_ns ? ", " + Utc(model.generated_at_ns) : "",
                     model.decision.empty() ? "" : "; decision: " + HtmlEscape(model.decision));
  out += "<p class=\"note\">Each zerocopy method is judged against the copying send of its "
         "transport: it wins at a size when it meets the decision's objective, and the "
         "threshold is the size from which using it costs least.</p></header>\n";
  out += "<div id=\"zcal-errors\" class=\"errors\" role=\"alert\" hidden>"
         "<strong>This page could not draw everything:</strong><ul></ul></div>\n";
  VerdictTable(out, model);
  AgentSection(out, model);
  AppsSection(out, model);
  HostFacts(out, model);
  std::string path;
  for (std::size_t n = 0; n < model.entries.size(); ++n) {
    const ReportEntry& e = model.entries[n];
    if (n == 0 || e.path != path) {
      if (n != 0) out += "</section>\n";
      path = e.path;
      out += "<section class=\"path\"><h2>Path " + HtmlEscape(path) + "</h2>\n";
      if (n == 0) out += kHowToRead;
    }
    MethodSection(out, n, e);
  }
  if (!model.entries.empty()) out += "</section>\n";
  out += "<script type=\"application/json\" id=\"zcal-data\">" + DataJson(model) +
         "</script>\n";
  out += "<script>" + report_assets::Script() + "</script>\n";
  out += "<script>" + report_assets::ChartJs() + "</script>\n";
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace zcal::agent
