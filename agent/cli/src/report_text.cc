#include "report_text.h"

#include <string>
#include <vector>

#include <fmt/format.h>

namespace zcal::agent {

namespace cal = zcal::calibrator;

namespace {

// Exact: whole KiB, or quarters of one (the planner's sizes and the model's
// thresholds are multiples of 256 bytes), else bytes.
std::string Bytes(std::uint64_t n) {
  if (n >= 1024 && n % 1024 == 0) return fmt::format("{} KiB", n / 1024);
  if (n >= 1024 && n % 256 == 0) {
    std::string text = fmt::format("{:.2f}", static_cast<double>(n) / 1024);
    if (text.back() == '0') text.pop_back();
    return text + " KiB";
  }
  return fmt::format("{} B", n);
}

std::string Percent(double fraction) { return fmt::format("{:.1f} %", 100 * fraction); }

std::string Sizes(const std::vector<std::uint64_t>& sizes) {
  if (sizes.empty()) return "none";
  std::string text;
  for (std::uint64_t s : sizes) text += (text.empty() ? "" : ", ") + Bytes(s);
  return text;
}

std::string Rate(double bytes_per_second) {
  return fmt::format("{:.2f} GB/s", bytes_per_second / 1e9);
}

// `bootstrapped`: the standard errors exist (not for a rejected model).
std::string Fit(const cal::MethodFit& f, bool bootstrapped) {
  std::string text = fmt::format("CPU {:.4f} ns/B + {:.0f} ns/send", f.per_byte_ns, f.per_send_ns);
  if (bootstrapped) text += fmt::format(" (+-{:.4f}, +-{:.0f})", f.per_byte_ns_se, f.per_send_ns_se);
  if (f.line_rate_bytes_per_second) {
    text += "; line rate " + Rate(*f.line_rate_bytes_per_second);
    if (f.cpu_bound_cores) text += fmt::format(", CPU-bound below it at {:.2f} cores", *f.cpu_bound_cores);
  } else if (f.cpu_bound_cores) {
    text += fmt::format("; CPU-bound at every size at {:.2f} cores", *f.cpu_bound_cores);
  }
  text += fmt::format("; residuals {:.1f} % CPU, {:.1f} % throughput; {} samples at {} sizes",
                      100 * f.cpu_residual, 100 * f.throughput_residual, f.samples, f.sizes);
  return text;
}

std::string Outcome(bool wins) { return wins ? "wins" : "loses"; }

// What the probed sizes say against the curves, and what the threshold
// overrules.
void PrintMeasured(std::ostream& out, const cal::MethodResult& r) {
  if (r.measured_bracket &&
      (r.measured_bracket->above_bytes || r.measured_bracket->at_most_bytes)) {
    out << "    the probed sizes put the threshold";
    if (r.measured_bracket->above_bytes) {
      out << " above " << Bytes(*r.measured_bracket->above_bytes)
          << " (zerocopy loses clearly there and below)";
    }
    if (r.measured_bracket->above_bytes && r.measured_bracket->at_most_bytes) out << " and";
    if (r.measured_bracket->at_most_bytes) {
      out << " at or below " << Bytes(*r.measured_bracket->at_most_bytes)
          << " (zerocopy wins clearly there and above)";
    }
    out << "\n";
  }
  if (r.curve_choice) {
    out << "    on the fitted curves alone: "
        << (r.curve_choice->threshold_bytes ? "from " + Bytes(*r.curve_choice->threshold_bytes)
                                            : std::string("never"))
        << fmt::format(" (expected excess cost {} there)\n", Percent(r.curve_choice->regret));
  }
  if (!r.curve_disagreements.empty()) {
    out << "    the fitted curves disagree with probed sizes beyond their noise:";
    for (const cal::CurveDisagreement& d : r.curve_disagreements) {
      out << fmt::format(" {} (measured: zerocopy {}, cost {:.3f}; curves {:.3f}{})",
                         Bytes(d.size_bytes), Outcome(d.zerocopy_wins), d.relative_cost,
                         d.fitted_relative_cost, d.bounds_threshold ? "; bounds the threshold" : "");
    }
    out << "\n";
  }
  if (!r.overruled.empty()) {
    out << "    the threshold overrules:";
    for (const cal::OverruledSize& o : r.overruled) {
      out << fmt::format(" {} (zerocopy {}{}; {} dearer there)", Bytes(o.size_bytes),
                         Outcome(o.zerocopy_wins), o.clear ? " clearly" : " within noise",
                         Percent(o.excess_cost));
    }
    out << fmt::format("; together {} expected excess cost\n", Percent(r.overruled_cost.value_or(0)));
  }
}

// A numeric class's cost per send over the stream class's, and whether
// the stream's samples, moved by it, decided the class with its own.
void PrintClassOffset(std::ostream& out, const cal::MethodResult& r) {
  if (!r.class_offset) return;
  const cal::ClassOffset& o = *r.class_offset;
  if (!o.rejected.empty()) {
    out << "    decided on this class's own samples: " << o.rejected << "\n";
    return;
  }
  out << fmt::format(
      "    cost per send: the stream class's {:+.0f} ns (+-{:.0f} ns, 95 %; {} samples of this "
      "class at {} sizes); the stream class's {} samples, moved by that, decide with this "
      "class's own\n",
      o.ns_per_send, o.Reach95(), o.samples, o.sizes, o.translated);
  if (!o.set_aside.empty()) {
    out << "    set aside, as the comparison there reads the same either way: " << o.set_aside
        << "\n";
  }
  if (o.standard_error > 0 && r.threshold_bytes) {
    out << fmt::format("    with that cost at its 95 % bounds the threshold is {} .. {}\n",
                       o.threshold_low_bytes ? Bytes(*o.threshold_low_bytes) : "never",
                       o.threshold_high_bytes ? Bytes(*o.threshold_high_bytes) : "never");
  }
}

// How the verdict came about: the rule, the model, the interval, what the
// threshold costs, and the sizes where a single threshold is wrong.
void PrintRule(std::ostream& out, const cal::MethodResult& r) {
  if (r.rule == cal::Rule::kNone) return;
  if (r.rule == cal::Rule::kModel && r.model && r.model->local_fit) {
    out << "    rule: least expected cost on a local fit of the probed sizes' costs";
  } else if (r.rule == cal::Rule::kModel) {
    out << "    rule: least expected cost on the fitted cost model";
  } else {
    out << "    rule: least expected cost over the probed sizes";
  }
  if (!r.rule_detail.empty()) out << " (" << r.rule_detail << ")";
  out << "\n";
  if (r.interval) {
    if (!r.interval->high_bytes) {
      out << fmt::format("    threshold interval{}: {} or above, or never\n",
                         r.interval->level > 0
                             ? fmt::format(" ({:.0f} %)", 100 * r.interval->level)
                             : std::string(),
                         Bytes(r.interval->low_bytes));
    } else if (r.interval->level > 0) {
      out << fmt::format("    threshold interval ({:.0f} %): {} to {}\n",
                         100 * r.interval->level, Bytes(r.interval->low_bytes),
                         Bytes(*r.interval->high_bytes));
    } else {
      out << fmt::format("    threshold between the probed sizes {} and {}\n",
                         Bytes(r.interval->low_bytes), Bytes(*r.interval->high_bytes));
    }
  }
  if (r.regret_excess) {
    out << fmt::format("    this threshold costs at most {:.2f} % more than the best one ({:.0f} %)\n",
                       100 * *r.regret_excess, 100 * (r.interval ? r.interval->level : 0.95));
  }
  if (r.regret) {
    out << fmt::format("    expected excess cost {} (never zerocopy: {}, always: {})",
                       Percent(*r.regret), Percent(r.regret_never.value_or(0)),
                       Percent(r.regret_always.value_or(0)));
    out << "; winning tail of probed sizes from "
        << (r.tail_threshold_bytes ? Bytes(*r.tail_threshold_bytes) : "none") << "\n";
  }
  if (r.model) {
    out << fmt::format("    fit {:<20} {}\n", std::string(cal::MethodName(r.model->zerocopy.method)) + ":",
                       Fit(r.model->zerocopy, r.model->bootstrap_replicates > 0));
    out << fmt::format("    fit {:<20} {}\n", std::string(cal::MethodName(r.model->baseline.method)) + ":",
                       Fit(r.model->baseline, r.model->bootstrap_replicates > 0));
  }
  if (r.verdict != cal::Verdict::kInconclusive) {
    out << "    probed sizes below the threshold where zerocopy wins: " << Sizes(r.wins_below)
        << "; at or above it where it loses: " << Sizes(r.losses_above) << "\n";
  }
  PrintMeasured(out, r);
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
    if (path.drift && path.drift->applied) {
      const cal::HostDrift& d = *path.drift;
      out << fmt::format(
          "  the host's speed moved during the calibration: its probes cost from {:.2f} to "
          "{:.2f} times the run's level (CPU per byte; wall time {:.2f} to {:.2f}), measured "
          "by {} of its {} samples (those of a method, depth and size probed at times "
          "apart); each sample was put on the run's level before deciding\n",
          d.cpu_low, d.cpu_high, d.wall_low, d.wall_high, d.linked, d.samples);
    }
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
      if (r.stop) {
        out << fmt::format("    probes ended ({}): {}\n", cal::StopReasonName(r.stop->reason),
                           r.stop->detail);
      }
      PrintClassOffset(out, r);
      PrintRule(out, r);
      if (r.sizes.empty()) continue;
      out << fmt::format("    {:>10} {:>10} {:>10} {:>7} {:>8} {:>8} {:>7} {:>6} {:>4} {}\n",
                         "size", "zc MB/s", "base MB/s", "ratio", "zc ns/B",
                         "base ns/B", "ratio", "cost", "n", "zerocopy");
      for (const cal::SizeComparison& c : r.sizes) {
        out << fmt::format(
            "    {:>10} {:>10.1f} {:>10.1f} {:>7.3f} {:>8.4f} {:>8.4f} {:>7.3f} "
            "{:>6.3f} {:>4} {}{}\n",
            Bytes(c.size_bytes),
            c.zerocopy.throughput_bytes_per_second.median / 1e6,
            c.baseline.throughput_bytes_per_second.median / 1e6,
            c.throughput_ratio, c.zerocopy.cpu_ns_per_byte.median,
            c.baseline.cpu_ns_per_byte.median, c.cpu_ratio, c.relative_cost,
            std::min(c.zerocopy.samples, c.baseline.samples),
            c.zerocopy_wins ? "wins" : "loses",
            c.decisive ? "" : " (within noise)");
      }
    }
  }
}

}  // namespace zcal::agent
