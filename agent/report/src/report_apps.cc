#include "report_apps.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "html_text.h"
#include "zcal/common/units.h"

namespace zcal::agent {
namespace {

namespace cal = zcal::calibrator;
using nlohmann::json;

// Names apart from report_html.cc's, with which a unity build joins this file.

// The chart's geometry, in SVG user units.
constexpr int kBarWidth = 16, kBarGap = 2, kPlotHeight = 90, kTop = 14, kAxis = 26;

std::string AppsSize(double bytes) { return common::FormatSizeApprox(bytes); }

std::string AppsShare(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  return fmt::format("{:.1f} %", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// The published host default's stream threshold per method name, from the
// live page's table (the /api/v1/thresholds JSON): what the sizes are sent
// against for a destination without an entry of its own.
std::map<std::string, std::uint64_t> HostDefaultThresholds(const json& published) {
  std::map<std::string, std::uint64_t> out;
  if (!published.is_object()) return out;
  for (const json& e : published.value("entries", json::array())) {
    if (e.value("scope", "") != "host_default" || e.value("depth", "") != "stream" ||
        e.value("verdict", "") != "threshold" || !e.value("threshold_bytes", json()).is_number())
      continue;
    out[e.value("method", "")] = e["threshold_bytes"].get<std::uint64_t>();
  }
  return out;
}

// A bar per power-of-two bucket from the smallest to the largest size sent
// (and the threshold's), drawn without script: the page's policy admits no
// style attribute, and SVG's presentation attributes need none.
void SizeChart(std::string& out, const std::string& app, std::string_view method,
               const AppCounters& c, std::optional<std::uint64_t> threshold) {
  std::size_t lo = kAppSizeBuckets, hi = 0;
  std::uint64_t most = 0;
  for (std::size_t b = 0; b < kAppSizeBuckets; ++b) {
    if (c.sizes[b] == 0) continue;
    lo = std::min(lo, b);
    hi = std::max(hi, b);
    most = std::max(most, c.sizes[b]);
  }
  if (most == 0) return;
  std::optional<double> at;  // the threshold's position in buckets
  if (threshold && *threshold > 0) {
    at = std::log2(static_cast<double>(*threshold));
    const auto b = static_cast<std::size_t>(std::min<double>(*at, kAppSizeBuckets - 1));
    lo = std::min(lo, b);
    hi = std::max(hi, b);
  }
  const int bars = static_cast<int>(hi - lo + 1);
  const int width = bars * (kBarWidth + kBarGap) + kBarGap;
  const int height = kTop + kPlotHeight + kAxis;
  out += fmt::format(
      "<figure class=\"apps\"><svg class=\"sizes\" viewBox=\"0 0 {} {}\" width=\"{}\" "
      "height=\"{}\" role=\"img\" aria-label=\"Message sizes {} sent with {}, by "
      "power-of-two bucket{}; counts in the table\">\n",
      width, height, width, height, HtmlEscape(app), method,
      threshold ? "; the line is the published host-default threshold, " + AppsSize(static_cast<double>(*threshold))
                : std::string());
  for (std::size_t b = lo; b <= hi; ++b) {
    const int x = kBarGap + static_cast<int>(b - lo) * (kBarWidth + kBarGap);
    const double h = c.sizes[b] == 0 ? 0
                                     : std::max(1.0, kPlotHeight * static_cast<double>(c.sizes[b]) /
                                                         static_cast<double>(most));
    out += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"#0072B2\">"
        "<title>{} \u2013 {}: {} sends</title></rect>\n",
        x, kTop + kPlotHeight - h, kBarWidth, h, AppsSize(std::ldexp(1.0, static_cast<int>(b))),
        b + 1 == kAppSizeBuckets ? std::string("more") : AppsSize(std::ldexp(1.0, static_cast<int>(b) + 1)),
        c.sizes[b]);
    if ((b - lo) % 2 == 0) {
      out += fmt::format(
          "<text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"start\" fill=\"#555\">{}</text>\n",
          x, kTop + kPlotHeight + 12, AppsSize(std::ldexp(1.0, static_cast<int>(b))));
    }
  }
  if (at) {
    const double x = kBarGap + (*at - static_cast<double>(lo)) * (kBarWidth + kBarGap);
    out += fmt::format(
        "<line class=\"threshold\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" "
        "stroke=\"#000\" stroke-width=\"2\"/><text x=\"{0:.1f}\" y=\"{3}\" font-size=\"9\" "
        "fill=\"#000\">threshold {4}</text>\n",
        x, kTop - 2, kTop + kPlotHeight, kTop - 4, AppsSize(static_cast<double>(*threshold)));
  }
  out += "</svg></figure>\n";
}

}  // namespace

void AppsSection(std::string& out, const ReportModel& model) {
  if (!model.apps) return;
  out += "<section id=\"apps\"><h2>What the applications sent</h2>\n";
  if (model.apps->apps.empty()) {
    out += "<p class=\"note\">No application reports: no process on this host counts its "
           "sends (libzcal's ZCAL_REPORT=NAME or zcal_report_open; docs/client.md, "
           "\u201cReporting what was sent\u201d).</p></section>\n";
    return;
  }
  const std::map<std::string, std::uint64_t> thresholds = HostDefaultThresholds(model.published);
  out += "<p class=\"note\">As the applications' libzcal counted them, summed over the "
         "scopes that answered and over each name's processes (those that exited "
         "included). Zerocopy share: of the bytes sent; copied: of the zerocopy completions "
         "reported, the share the kernel copied after all. The charts show the message sizes "
         "against the published host-default threshold of the method.</p>\n";
  out += "<table class=\"verdicts apps\"><thead><tr><th>Application</th><th>Method</th>"
         "<th>Sends</th><th>Bytes</th><th>Sent with zerocopy (bytes)</th>"
         "<th>Completions</th><th>Copied by the kernel</th><th>Processes</th>"
         "</tr></thead><tbody>\n";
  struct Row {
    std::string app;
    cal::Method method;
    AppCounters counters;
  };
  std::vector<Row> rows;
  for (const auto& [name, totals] : model.apps->apps) {
    std::map<cal::Method, AppCounters> by_method;
    for (const auto& [key, counters] : totals.cells) by_method[key.method] += counters;
    for (const auto& [method, counters] : by_method) {
      const std::uint64_t bytes = counters.bytes[0] + counters.bytes[1];
      out += fmt::format(
          "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{} running, {} exited</td></tr>\n",
          HtmlEscape(name), cal::MethodName(method), counters.Sends(), AppsSize(static_cast<double>(bytes)),
          AppsShare(counters.bytes[1], bytes), counters.completions,
          AppsShare(counters.copied, counters.completions), totals.live_processes,
          totals.exited_processes);
      rows.push_back({name, method, counters});
    }
  }
  out += "</tbody></table>\n<div class=\"apps-charts\">\n";
  for (const Row& row : rows) {
    const std::string method(cal::MethodName(row.method));
    const auto t = thresholds.find(method);
    out += "<div><h3>" + HtmlEscape(row.app) + " <span class=\"sub\">" + method + "</span></h3>\n";
    SizeChart(out, row.app, method, row.counters,
              t == thresholds.end() ? std::nullopt : std::optional<std::uint64_t>(t->second));
    out += "</div>\n";
  }
  out += "</div></section>\n";
}

}  // namespace zcal::agent
