#include "report_text.h"

#include <string>

#include <fmt/format.h>

namespace zcal::agent {

namespace cal = zcal::calibrator;

namespace {

std::string Bytes(std::uint64_t n) {
  if (n >= 1024 && n % 1024 == 0) return fmt::format("{} KiB", n / 1024);
  return fmt::format("{} B", n);
}

std::string Confidence(const std::optional<double>& c) {
  return c ? fmt::format("{:.2f}", *c) : std::string("unknown");
}

std::string Objective(const cal::DecisionOptions& o) {
  switch (o.objective) {
    case cal::Objective::kEfficiency:
      return fmt::format(
          "efficiency (wins: throughput >= {:.1f} % of baseline and CPU/byte "
          "<= {:.1f} %)",
          100 * (1 - o.tolerance), 100 * (1 - o.margin));
    case cal::Objective::kThroughput:
      return fmt::format("throughput (wins: throughput >= {:.1f} % of baseline)",
                         100 * (1 + o.margin));
    case cal::Objective::kCpu:
      return fmt::format("cpu (wins: CPU/byte <= {:.1f} % of baseline)",
                         100 * (1 - o.margin));
  }
  return {};
}

}  // namespace

void PrintAnalysis(std::ostream& out, const cal::Analysis& analysis,
                   const cal::DecisionOptions& options) {
  out << "objective: " << Objective(options) << "\n";
  for (const auto& [name, path] : analysis.paths) {
    out << "\npath " << name << "\n";
    out << fmt::format("  {:<20} {:<13} {:>10}  {:<14} {:>10}  {}\n", "method",
                       "verdict", "threshold", "reason", "confidence",
                       "baseline");
    for (const auto& [method, r] : path.methods) {
      const std::string reason(cal::ReasonName(r.reason));
      std::string baseline(cal::MethodName(r.baseline));
      if (r.baseline_substituted) baseline += " (uring_send missing)";
      out << fmt::format("  {:<20} {:<13} {:>10}  {:<14} {:>10}  {}\n",
                         cal::MethodName(method), cal::VerdictName(r.verdict),
                         r.threshold_bytes ? Bytes(*r.threshold_bytes) : "-",
                         reason.empty() ? "-" : reason,
                         Confidence(r.confidence), baseline);
    }
    for (const auto& [method, r] : path.methods) {
      out << fmt::format("\n  {} vs {}: {}\n", cal::MethodName(method),
                         cal::MethodName(r.baseline), r.detail);
      if (r.sizes.empty()) continue;
      out << fmt::format("    {:>9} {:>10} {:>10} {:>7} {:>8} {:>8} {:>7} {:>4} {}\n",
                         "size", "zc MB/s", "base MB/s", "ratio", "zc ns/B",
                         "base ns/B", "ratio", "n", "zerocopy");
      for (const cal::SizeComparison& c : r.sizes) {
        out << fmt::format(
            "    {:>9} {:>10.1f} {:>10.1f} {:>7.3f} {:>8.4f} {:>8.4f} {:>7.3f} "
            "{:>4} {}{}\n",
            Bytes(c.size_bytes),
            c.zerocopy.throughput_bytes_per_second.median / 1e6,
            c.baseline.throughput_bytes_per_second.median / 1e6,
            c.throughput_ratio, c.zerocopy.cpu_ns_per_byte.median,
            c.baseline.cpu_ns_per_byte.median, c.cpu_ratio,
            std::min(c.zerocopy.samples, c.baseline.samples),
            c.zerocopy_wins ? "wins" : "loses",
            c.decisive ? "" : " (within noise)");
      }
    }
  }
}

}  // namespace zcal::agent
