#include "zcal/calibrator/report_json.h"

#include <string>

namespace zcal::calibrator {

using nlohmann::json;

namespace {

template <typename T>
json OrNull(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

json SizeList(const std::vector<std::uint64_t>& sizes) {
  json list = json::array();
  for (std::uint64_t s : sizes) list.push_back(s);
  return list;
}

}  // namespace

json ToJson(const SizeStats& stats) {
  return json{
      {"samples", stats.samples},
      {"throughput_bytes_per_second", stats.throughput_bytes_per_second.median},
      {"throughput_spread", stats.throughput_bytes_per_second.spread},
      {"cpu_ns_per_byte", stats.cpu_ns_per_byte.median},
      {"cpu_ns_per_byte_spread", stats.cpu_ns_per_byte.spread},
      {"copied_fraction", OrNull(stats.copied_fraction)},
      {"enobufs", stats.enobufs},
  };
}

json ToJson(const MethodFit& fit) {
  return json{
      {"method", MethodName(fit.method)},
      {"per_byte_ns", fit.per_byte_ns},
      {"per_send_ns", fit.per_send_ns},
      {"line_rate_bytes_per_second", OrNull(fit.line_rate_bytes_per_second)},
      {"cpu_bound_cores", OrNull(fit.cpu_bound_cores)},
      {"per_byte_ns_se", fit.per_byte_ns_se},
      {"per_send_ns_se", fit.per_send_ns_se},
      {"per_byte_per_send_cov", fit.per_byte_per_send_cov},
      {"line_rate_se", OrNull(fit.line_rate_se)},
      {"cpu_bound_cores_se", OrNull(fit.cpu_bound_cores_se)},
      {"cpu_residual", fit.cpu_residual},
      {"throughput_residual", fit.throughput_residual},
      {"samples", fit.samples},
      {"sizes", fit.sizes},
      {"min_size_bytes", fit.min_size_bytes},
      {"max_size_bytes", fit.max_size_bytes},
  };
}

json ToJson(const MeasuredBracket& bracket) {
  return json{{"above_bytes", OrNull(bracket.above_bytes)},
              {"at_most_bytes", OrNull(bracket.at_most_bytes)}};
}

json ToJson(const CostModel& model) {
  json exceptions = json::array();
  for (const ModelException& e : model.exceptions) {
    exceptions.push_back(json{{"min_size_bytes", e.min_size_bytes},
                              {"max_size_bytes", e.max_size_bytes},
                              {"reason", e.reason}});
  }
  return json{
      {"accepted", model.accepted},
      {"rejection", model.rejection.empty() ? json(nullptr) : json(model.rejection)},
      {"rejected_sizes", model.rejection.empty()
                             ? json(nullptr)
                             : json{{"min_size_bytes", model.rejected_min_size_bytes},
                                    {"max_size_bytes", model.rejected_max_size_bytes},
                                    {"confirmed", model.rejection_confirmed}}},
      {"min_size_bytes", model.min_size_bytes},
      {"max_size_bytes", model.max_size_bytes},
      {"bootstrap_replicates", model.bootstrap_replicates},
      {"local_fit", model.local_fit},
      {"exceptions", std::move(exceptions)},
      {"zerocopy", ToJson(model.zerocopy)},
      {"baseline", ToJson(model.baseline)},
  };
}

namespace {

json ComparisonsJson(const std::vector<SizeComparison>& sizes) {
  json list = json::array();
  for (const SizeComparison& c : sizes) {
    list.push_back(json{
        {"size", c.size_bytes},
        {"zerocopy_wins", c.zerocopy_wins},
        {"decisive", c.decisive},
        {"throughput_ratio", c.throughput_ratio},
        {"cpu_ratio", c.cpu_ratio},
        {"relative_cost", c.relative_cost},
        {"throughput_acceptable", c.throughput_acceptable},
        {"zerocopy", ToJson(c.zerocopy)},
        {"baseline", ToJson(c.baseline)},
    });
  }
  return list;
}

json DisagreementsJson(const std::vector<CurveDisagreement>& disagreements) {
  json list = json::array();
  for (const CurveDisagreement& d : disagreements) {
    list.push_back(json{{"size", d.size_bytes},
                        {"measured", d.zerocopy_wins ? "wins" : "loses"},
                        {"relative_cost", d.relative_cost},
                        {"fitted_relative_cost", d.fitted_relative_cost},
                        {"bounds_threshold", d.bounds_threshold}});
  }
  return list;
}

json OverruledJson(const std::vector<OverruledSize>& overruled) {
  json list = json::array();
  for (const OverruledSize& o : overruled) {
    list.push_back(json{{"size", o.size_bytes},
                        {"measured", o.zerocopy_wins ? "wins" : "loses"},
                        {"clear", o.clear},
                        {"relative_cost", o.relative_cost},
                        {"excess_cost", o.excess_cost}});
  }
  return list;
}

json IntervalJson(const std::optional<ThresholdInterval>& interval) {
  if (!interval) return nullptr;
  return json{{"low_bytes", interval->low_bytes},
              {"high_bytes", OrNull(interval->high_bytes)},
              {"level", interval->level}};
}

json CurveChoiceJson(const std::optional<CurveChoice>& choice) {
  if (!choice) return nullptr;
  return json{{"threshold_bytes", OrNull(choice->threshold_bytes)}, {"regret", choice->regret}};
}

json StopJson(const std::optional<PlannerStop>& stop) {
  if (!stop) return nullptr;
  return json{{"reason", StopReasonName(stop->reason)}, {"detail", stop->detail}};
}

json ClassOffsetJson(const std::optional<ClassOffset>& offset) {
  if (!offset) return nullptr;
  return json{{"ns_per_send", offset->ns_per_send},
              {"standard_error", offset->standard_error},
              {"samples", offset->samples},
              {"sizes", offset->sizes},
              {"translated", offset->translated},
              {"rejected", offset->rejected.empty() ? json(nullptr) : json(offset->rejected)},
              {"threshold_low_bytes", OrNull(offset->threshold_low_bytes)},
              {"threshold_high_bytes", OrNull(offset->threshold_high_bytes)},
              {"set_aside", offset->set_aside.empty() ? json(nullptr) : json(offset->set_aside)}};
}

// An empty name (no reason, no rule) is written as null.
json NameOrNull(std::string_view name) { return name.empty() ? json(nullptr) : json(name); }

}  // namespace

json ToJson(const MethodResult& result) {
  return json{
      {"verdict", VerdictName(result.verdict)},
      {"threshold_bytes", OrNull(result.threshold_bytes)},
      {"reason", NameOrNull(ReasonName(result.reason))},
      {"detail", result.detail},
      {"baseline", MethodName(result.baseline)},
      {"baseline_substituted", result.baseline_substituted},
      {"confidence", OrNull(result.confidence)},
      {"rule", NameOrNull(RuleName(result.rule))},
      {"rule_detail", result.rule_detail},
      {"interval", IntervalJson(result.interval)},
      {"regret", OrNull(result.regret)},
      {"regret_never", OrNull(result.regret_never)},
      {"regret_always", OrNull(result.regret_always)},
      {"regret_excess", OrNull(result.regret_excess)},
      {"tail_threshold_bytes", OrNull(result.tail_threshold_bytes)},
      {"wins_below", SizeList(result.wins_below)},
      {"losses_above", SizeList(result.losses_above)},
      {"measured_bracket", result.measured_bracket ? ToJson(*result.measured_bracket)
                                                   : json(nullptr)},
      {"curve_choice", CurveChoiceJson(result.curve_choice)},
      {"curve_disagreements", DisagreementsJson(result.curve_disagreements)},
      {"overruled", OverruledJson(result.overruled)},
      {"overruled_cost", OrNull(result.overruled_cost)},
      {"model", result.model ? ToJson(*result.model) : json(nullptr)},
      {"stop", StopJson(result.stop)},
      {"class_offset", ClassOffsetJson(result.class_offset)},
      {"sizes", ComparisonsJson(result.sizes)},
  };
}

json ToJson(const Analysis& analysis) {
  json paths = json::object();
  for (const auto& [name, path] : analysis.paths) paths[name] = ToJson(path);
  return json{{"paths", std::move(paths)}};
}

json ToJson(const PathResult& path) {
  json methods = json::object();
  for (const auto& [method, result] : path.methods) {
    methods[std::string(MethodName(method))] = ToJson(result);
  }
  json drift = nullptr;
  if (path.drift) {
    const HostDrift& d = *path.drift;
    drift = json{{"samples", d.samples},   {"linked", d.linked},
                 {"cpu_low", d.cpu_low},   {"cpu_high", d.cpu_high},
                 {"wall_low", d.wall_low}, {"wall_high", d.wall_high},
                 {"noise", d.noise},       {"applied", d.applied}};
  }
  return json{{"methods", std::move(methods)}, {"drift", std::move(drift)}};
}

}  // namespace zcal::calibrator
