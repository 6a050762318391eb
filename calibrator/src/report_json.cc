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

// Field readers for ReadModelFields: absent or null leaves the default; a
// value of the wrong type is an error naming the field.
class Reader {
 public:
  Reader(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

  bool Has(const char* key) const {
    const auto it = object_.find(key);
    return it != object_.end() && !it->is_null();
  }
  const json& At(const char* key) const { return object_.at(key); }

  void Number(const char* key, double& out) {
    if (!Has(key)) return;
    if (!At(key).is_number()) return Bad(key, "a number");
    out = At(key).get<double>();
  }
  void Number(const char* key, std::optional<double>& out) {
    if (!Has(key)) return;
    double value = 0;
    Number(key, value);
    if (error_.empty()) out = value;
  }
  template <typename T>
  void Whole(const char* key, T& out) {
    if (!Has(key)) return;
    if (!At(key).is_number_unsigned()) return Bad(key, "a whole number");
    out = At(key).get<T>();
  }
  void Whole(const char* key, std::optional<std::uint64_t>& out) {
    if (!Has(key)) return;
    std::uint64_t value = 0;
    Whole(key, value);
    if (error_.empty()) out = value;
  }
  void Text(const char* key, std::string& out) {
    if (!Has(key)) return;
    if (!At(key).is_string()) return Bad(key, "a string");
    out = At(key).get<std::string>();
  }
  void Flag(const char* key, bool& out) {
    if (!Has(key)) return;
    if (!At(key).is_boolean()) return Bad(key, "true or false");
    out = At(key).get<bool>();
  }
  void Sizes(const char* key, std::vector<std::uint64_t>& out) {
    if (!Has(key)) return;
    if (!At(key).is_array()) return Bad(key, "a list of sizes");
    out.clear();
    for (const json& s : At(key)) {
      if (!s.is_number_unsigned()) return Bad(key, "a list of sizes");
      out.push_back(s.get<std::uint64_t>());
    }
  }
  void MethodField(const char* key, Method& out) {
    if (!Has(key)) return;
    const auto parsed = At(key).is_string() ? ParseMethod(At(key).get<std::string>())
                                            : std::nullopt;
    if (!parsed) return Bad(key, "a method name");
    out = *parsed;
  }
  bool Object(const char* key) {
    if (!Has(key)) return false;
    if (!At(key).is_object()) {
      Bad(key, "an object");
      return false;
    }
    return true;
  }
  void Bad(const char* key, const char* expected) {
    if (error_.empty()) error_ = where_ + ": '" + key + "' must be " + expected;
  }
  const std::string& error() const { return error_; }
  const std::string& where() const { return where_; }

 private:
  const json& object_;
  std::string where_;
  std::string error_;
};

std::string ReadFit(const json& j, const std::string& where, MethodFit& fit) {
  Reader in(j, where);
  in.MethodField("method", fit.method);
  in.Number("per_byte_ns", fit.per_byte_ns);
  in.Number("per_send_ns", fit.per_send_ns);
  in.Number("line_rate_bytes_per_second", fit.line_rate_bytes_per_second);
  in.Number("cpu_bound_cores", fit.cpu_bound_cores);
  in.Number("per_byte_ns_se", fit.per_byte_ns_se);
  in.Number("per_send_ns_se", fit.per_send_ns_se);
  in.Number("per_byte_per_send_cov", fit.per_byte_per_send_cov);
  in.Number("line_rate_se", fit.line_rate_se);
  in.Number("cpu_bound_cores_se", fit.cpu_bound_cores_se);
  in.Number("cpu_residual", fit.cpu_residual);
  in.Number("throughput_residual", fit.throughput_residual);
  in.Whole("samples", fit.samples);
  in.Whole("sizes", fit.sizes);
  in.Whole("min_size_bytes", fit.min_size_bytes);
  in.Whole("max_size_bytes", fit.max_size_bytes);
  return in.error();
}

std::string ReadModel(const json& j, const std::string& where, CostModel& model) {
  Reader in(j, where);
  in.Flag("accepted", model.accepted);
  in.Text("rejection", model.rejection);
  if (in.Object("rejected_sizes")) {
    Reader run(j.at("rejected_sizes"), where + ".rejected_sizes");
    run.Whole("min_size_bytes", model.rejected_min_size_bytes);
    run.Whole("max_size_bytes", model.rejected_max_size_bytes);
    run.Flag("confirmed", model.rejection_confirmed);
    if (!run.error().empty()) return run.error();
  }
  in.Whole("min_size_bytes", model.min_size_bytes);
  in.Whole("max_size_bytes", model.max_size_bytes);
  in.Whole("bootstrap_replicates", model.bootstrap_replicates);
  if (in.Has("exceptions")) {
    if (!j.at("exceptions").is_array()) in.Bad("exceptions", "a list");
    for (const json& e : in.error().empty() ? j.at("exceptions") : json::array()) {
      if (!e.is_object()) return where + ": 'exceptions' must be a list of objects";
      Reader item(e, where + ".exceptions");
      ModelException value;
      item.Whole("min_size_bytes", value.min_size_bytes);
      item.Whole("max_size_bytes", value.max_size_bytes);
      item.Text("reason", value.reason);
      if (!item.error().empty()) return item.error();
      model.exceptions.push_back(std::move(value));
    }
  }
  if (!in.error().empty()) return in.error();
  for (auto [key, fit] : {std::pair{"zerocopy", &model.zerocopy},
                          std::pair{"baseline", &model.baseline}}) {
    if (!in.Object(key)) {
      if (!in.error().empty()) return in.error();
      continue;
    }
    if (std::string why = ReadFit(j.at(key), where + "." + key, *fit); !why.empty()) return why;
  }
  return {};
}

// "measured": "wins" or "loses".
void Measured(Reader& in, bool& zerocopy_wins) {
  if (!in.Has("measured")) return;
  const json& v = in.At("measured");
  if (v == "wins" || v == "loses") {
    zerocopy_wins = v == "wins";
  } else {
    in.Bad("measured", "\"wins\" or \"loses\"");
  }
}

void ReadItem(Reader& in, CurveDisagreement& d) {
  in.Whole("size", d.size_bytes);
  Measured(in, d.zerocopy_wins);
  in.Number("relative_cost", d.relative_cost);
  in.Number("fitted_relative_cost", d.fitted_relative_cost);
  in.Flag("bounds_threshold", d.bounds_threshold);
}

void ReadItem(Reader& in, OverruledSize& o) {
  in.Whole("size", o.size_bytes);
  Measured(in, o.zerocopy_wins);
  in.Flag("clear", o.clear);
  in.Number("relative_cost", o.relative_cost);
  in.Number("excess_cost", o.excess_cost);
}

// A list of objects under `key`, each read by ReadItem; absent or null
// leaves `out` empty.
template <typename T>
std::string ReadSizeList(const json& j, const std::string& where, const char* key,
                         std::vector<T>& out) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (!it->is_array()) return where + ": '" + key + "' must be a list of objects";
  for (const json& item : *it) {
    if (!item.is_object()) return where + ": '" + key + "' must be a list of objects";
    Reader in(item, where + "." + key);
    T value;
    ReadItem(in, value);
    if (!in.error().empty()) return in.error();
    out.push_back(value);
  }
  return {};
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
      {"exceptions", std::move(exceptions)},
      {"zerocopy", ToJson(model.zerocopy)},
      {"baseline", ToJson(model.baseline)},
  };
}

json ToJson(const MethodResult& result) {
  json sizes = json::array();
  for (const SizeComparison& c : result.sizes) {
    sizes.push_back(json{
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
  json disagreements = json::array();
  for (const CurveDisagreement& d : result.curve_disagreements) {
    disagreements.push_back(json{{"size", d.size_bytes},
                                 {"measured", d.zerocopy_wins ? "wins" : "loses"},
                                 {"relative_cost", d.relative_cost},
                                 {"fitted_relative_cost", d.fitted_relative_cost},
                                 {"bounds_threshold", d.bounds_threshold}});
  }
  json overruled = json::array();
  for (const OverruledSize& o : result.overruled) {
    overruled.push_back(json{{"size", o.size_bytes},
                             {"measured", o.zerocopy_wins ? "wins" : "loses"},
                             {"clear", o.clear},
                             {"relative_cost", o.relative_cost},
                             {"excess_cost", o.excess_cost}});
  }
  const std::string_view reason = ReasonName(result.reason);
  const std::string_view rule = RuleName(result.rule);
  json interval = nullptr;
  if (result.interval) {
    interval = json{{"low_bytes", result.interval->low_bytes},
                    {"high_bytes", OrNull(result.interval->high_bytes)},
                    {"level", result.interval->level}};
  }
  return json{
      {"verdict", VerdictName(result.verdict)},
      {"threshold_bytes", OrNull(result.threshold_bytes)},
      {"reason", reason.empty() ? json(nullptr) : json(reason)},
      {"detail", result.detail},
      {"baseline", MethodName(result.baseline)},
      {"baseline_substituted", result.baseline_substituted},
      {"confidence", OrNull(result.confidence)},
      {"rule", rule.empty() ? json(nullptr) : json(rule)},
      {"rule_detail", result.rule_detail},
      {"interval", std::move(interval)},
      {"regret", OrNull(result.regret)},
      {"regret_never", OrNull(result.regret_never)},
      {"regret_always", OrNull(result.regret_always)},
      {"regret_excess", OrNull(result.regret_excess)},
      {"tail_threshold_bytes", OrNull(result.tail_threshold_bytes)},
      {"wins_below", SizeList(result.wins_below)},
      {"losses_above", SizeList(result.losses_above)},
      {"measured_bracket", result.measured_bracket ? ToJson(*result.measured_bracket)
                                                   : json(nullptr)},
      {"curve_choice", result.curve_choice
                           ? json{{"threshold_bytes", OrNull(result.curve_choice->threshold_bytes)},
                                  {"regret", result.curve_choice->regret}}
                           : json(nullptr)},
      {"curve_disagreements", std::move(disagreements)},
      {"overruled", std::move(overruled)},
      {"overruled_cost", OrNull(result.overruled_cost)},
      {"model", result.model ? ToJson(*result.model) : json(nullptr)},
      {"sizes", std::move(sizes)},
  };
}

json ToJson(const Analysis& analysis) {
  json paths = json::object();
  for (const auto& [name, path] : analysis.paths) paths[name] = ToJson(path);
  return json{{"paths", std::move(paths)}};
}

namespace {

// The fields of the cost model and the threshold rule; absent ones keep
// their defaults (documents written before they existed).
Result<void> ReadModelFields(const json& j, MethodResult& result) {
  const std::string where(MethodName(result.method));
  Reader in(j, where);
  if (in.Has("rule")) {
    const json& rule = in.At("rule");
    bool known = false;
    for (Rule r : {Rule::kModel, Rule::kPerSize}) {
      if (rule.is_string() && rule.get<std::string>() == RuleName(r)) {
        result.rule = r;
        known = true;
      }
    }
    if (!known) in.Bad("rule", "\"model\", \"per_size\" or null");
  }
  in.Text("rule_detail", result.rule_detail);
  in.Number("regret", result.regret);
  in.Number("regret_never", result.regret_never);
  in.Number("regret_always", result.regret_always);
  in.Number("regret_excess", result.regret_excess);
  in.Whole("tail_threshold_bytes", result.tail_threshold_bytes);
  in.Sizes("wins_below", result.wins_below);
  in.Sizes("losses_above", result.losses_above);
  if (in.Object("interval")) {
    Reader interval(j.at("interval"), where + ".interval");
    ThresholdInterval value;
    interval.Whole("low_bytes", value.low_bytes);
    interval.Whole("high_bytes", value.high_bytes);
    interval.Number("level", value.level);
    if (!interval.error().empty()) return Fail(Errc::kParse, interval.error());
    result.interval = value;
  }
  if (in.Object("measured_bracket")) {
    Reader bracket(j.at("measured_bracket"), where + ".measured_bracket");
    MeasuredBracket value;
    bracket.Whole("above_bytes", value.above_bytes);
    bracket.Whole("at_most_bytes", value.at_most_bytes);
    if (!bracket.error().empty()) return Fail(Errc::kParse, bracket.error());
    result.measured_bracket = value;
  }
  if (in.Object("curve_choice")) {
    Reader choice(j.at("curve_choice"), where + ".curve_choice");
    CurveChoice value;
    choice.Whole("threshold_bytes", value.threshold_bytes);
    choice.Number("regret", value.regret);
    if (!choice.error().empty()) return Fail(Errc::kParse, choice.error());
    result.curve_choice = value;
  }
  if (std::string why = ReadSizeList(j, where, "curve_disagreements", result.curve_disagreements);
      !why.empty()) {
    return Fail(Errc::kParse, why);
  }
  if (std::string why = ReadSizeList(j, where, "overruled", result.overruled); !why.empty()) {
    return Fail(Errc::kParse, why);
  }
  in.Number("overruled_cost", result.overruled_cost);
  if (!in.error().empty()) return Fail(Errc::kParse, in.error());
  if (in.Object("model")) {
    CostModel model;
    if (std::string why = ReadModel(j.at("model"), where + ".model", model); !why.empty()) {
      return Fail(Errc::kParse, why);
    }
    result.model = std::move(model);
  }
  if (!in.error().empty()) return Fail(Errc::kParse, in.error());
  return {};
}

// Lenient where documents of older releases were: a missing number is 0.
double NumberOr(const json& object, const char* key, double fallback) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

SizeStats SizeStatsFromJson(const json& j, std::uint64_t size_bytes) {
  SizeStats stats;
  stats.size_bytes = size_bytes;
  stats.samples = static_cast<std::uint32_t>(NumberOr(j, "samples", 0));
  stats.throughput_bytes_per_second.median = NumberOr(j, "throughput_bytes_per_second", 0);
  stats.throughput_bytes_per_second.spread = NumberOr(j, "throughput_spread", 0);
  stats.cpu_ns_per_byte.median = NumberOr(j, "cpu_ns_per_byte", 0);
  stats.cpu_ns_per_byte.spread = NumberOr(j, "cpu_ns_per_byte_spread", 0);
  if (const auto it = j.find("copied_fraction"); it != j.end() && it->is_number()) {
    stats.copied_fraction = it->get<double>();
  }
  stats.enobufs = static_cast<std::uint64_t>(NumberOr(j, "enobufs", 0));
  return stats;
}

// The verdict fields and the per-size comparisons.
Result<void> ReadVerdictFields(const json& j, MethodResult& result) {
  const std::string where(MethodName(result.method));
  const auto verdict = j.find("verdict");
  const auto parsed_verdict = verdict != j.end() && verdict->is_string()
                                  ? ParseVerdict(verdict->get<std::string>())
                                  : std::nullopt;
  if (!parsed_verdict) return Fail(Errc::kParse, where + ": 'verdict' is missing or unknown");
  result.verdict = *parsed_verdict;
  const auto threshold = j.find("threshold_bytes");
  if (threshold != j.end() && !threshold->is_null()) {
    if (!threshold->is_number_unsigned()) {
      return Fail(Errc::kParse, where + ": 'threshold_bytes' is not a size");
    }
    result.threshold_bytes = threshold->get<std::uint64_t>();
  }
  if (result.verdict == Verdict::kThreshold && !result.threshold_bytes) {
    return Fail(Errc::kParse, where + ": verdict 'threshold' without 'threshold_bytes'");
  }
  if (const auto reason = j.find("reason"); reason != j.end() && !reason->is_null()) {
    const auto parsed = reason->is_string() ? ParseReason(reason->get<std::string>())
                                            : std::nullopt;
    if (!parsed) return Fail(Errc::kParse, where + ": 'reason' is unknown");
    result.reason = *parsed;
  }
  if (const auto detail = j.find("detail"); detail != j.end() && detail->is_string()) {
    result.detail = detail->get<std::string>();
  }
  result.baseline = NativeBaseline(result.method);
  if (const auto baseline = j.find("baseline"); baseline != j.end() && baseline->is_string()) {
    if (const auto parsed = ParseMethod(baseline->get<std::string>())) result.baseline = *parsed;
  }
  if (const auto substituted = j.find("baseline_substituted");
      substituted != j.end() && substituted->is_boolean()) {
    result.baseline_substituted = substituted->get<bool>();
  }
  if (const auto confidence = j.find("confidence"); confidence != j.end() && !confidence->is_null()) {
    const double value = confidence->is_number() ? confidence->get<double>() : -1;
    if (!(value >= 0 && value <= 1)) {
      return Fail(Errc::kParse, where + ": 'confidence' is not in [0, 1]");
    }
    result.confidence = value;
  }
  if (const auto sizes = j.find("sizes"); sizes != j.end() && sizes->is_array()) {
    for (const json& s : *sizes) {
      if (!s.is_object() || !s.contains("size") || !s["size"].is_number_unsigned()) {
        return Fail(Errc::kParse, where + ": a 'sizes' entry lacks 'size'");
      }
      SizeComparison c;
      c.size_bytes = s["size"].get<std::uint64_t>();
      c.zerocopy_wins = s.value("zerocopy_wins", false);
      c.decisive = s.value("decisive", true);
      c.throughput_ratio = NumberOr(s, "throughput_ratio", 0);
      c.cpu_ratio = NumberOr(s, "cpu_ratio", 0);
      c.relative_cost = NumberOr(s, "relative_cost", 0);
      c.throughput_acceptable = s.value("throughput_acceptable", true);
      c.zerocopy = SizeStatsFromJson(s.value("zerocopy", json::object()), c.size_bytes);
      c.baseline = SizeStatsFromJson(s.value("baseline", json::object()), c.size_bytes);
      result.sizes.push_back(c);
    }
  }
  return {};
}

}  // namespace

Result<MethodResult> ReadMethodResult(const json& j, Method method) {
  MethodResult result;
  result.method = method;
  if (!j.is_object()) {
    return Fail(Errc::kParse, std::string(MethodName(method)) + ": expected an object");
  }
  if (auto verdict = ReadVerdictFields(j, result); !verdict) {
    return tl::unexpected(verdict.error());
  }
  if (auto model = ReadModelFields(j, result); !model) return tl::unexpected(model.error());
  return result;
}

json ToJson(const PathResult& path) {
  json methods = json::object();
  for (const auto& [method, result] : path.methods) {
    methods[std::string(MethodName(method))] = ToJson(result);
  }
  return json{{"methods", std::move(methods)}};
}

Result<PathResult> ReadPathResult(const json& j, const std::string& path) {
  const auto methods = j.is_object() ? j.find("methods") : j.end();
  if (!j.is_object() || methods == j.end() || !methods->is_object()) {
    return Fail(Errc::kParse, path + ": 'methods' is missing or not an object");
  }
  PathResult out;
  out.path = path;
  for (const auto& [name, entry] : methods->items()) {
    const auto method = ParseMethod(name);
    if (!method || !IsZerocopy(*method)) {
      return Fail(Errc::kParse, path + ".methods." + name + ": not a zerocopy method");
    }
    auto result = ReadMethodResult(entry, *method);
    if (!result) return Fail(Errc::kParse, path + ".methods." + result.error().message);
    out.methods[*method] = std::move(*result);
  }
  return out;
}

}  // namespace zcal::calibrator
