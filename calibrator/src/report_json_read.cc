// Reading what report_json.cc writes: the JSON of a method's and a path's
// result, as the state file and `zcal calibrate --json` keep it. Documents
// of older releases lack fields; those keep their defaults.
#include <optional>
#include <string>

#include "zcal/calibrator/report_json.h"

namespace zcal::calibrator {

using nlohmann::json;

namespace {

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
  // The first field that was wrong, as this file's functions return it.
  Result<void> Done() const {
    if (error_.empty()) return {};
    return Fail(Errc::kParse, error_);
  }

 private:
  const json& object_;
  std::string where_;
  std::string error_;
};

Result<void> ReadFit(const json& j, const std::string& where, MethodFit& fit) {
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
  return in.Done();
}

Result<void> ReadModel(const json& j, const std::string& where, CostModel& model) {
  Reader in(j, where);
  in.Flag("accepted", model.accepted);
  in.Text("rejection", model.rejection);
  if (in.Object("rejected_sizes")) {
    Reader run(j.at("rejected_sizes"), where + ".rejected_sizes");
    run.Whole("min_size_bytes", model.rejected_min_size_bytes);
    run.Whole("max_size_bytes", model.rejected_max_size_bytes);
    run.Flag("confirmed", model.rejection_confirmed);
    if (auto done = run.Done(); !done) return done;
  }
  in.Whole("min_size_bytes", model.min_size_bytes);
  in.Whole("max_size_bytes", model.max_size_bytes);
  in.Whole("bootstrap_replicates", model.bootstrap_replicates);
  in.Flag("local_fit", model.local_fit);
  if (in.Has("exceptions")) {
    if (!j.at("exceptions").is_array()) in.Bad("exceptions", "a list");
    for (const json& e : in.error().empty() ? j.at("exceptions") : json::array()) {
      if (!e.is_object()) return Fail(Errc::kParse, where + ": 'exceptions' must be a list of objects");
      Reader item(e, where + ".exceptions");
      ModelException value;
      item.Whole("min_size_bytes", value.min_size_bytes);
      item.Whole("max_size_bytes", value.max_size_bytes);
      item.Text("reason", value.reason);
      if (auto done = item.Done(); !done) return done;
      model.exceptions.push_back(std::move(value));
    }
  }
  if (auto done = in.Done(); !done) return done;
  for (auto [key, fit] : {std::pair{"zerocopy", &model.zerocopy},
                          std::pair{"baseline", &model.baseline}}) {
    if (!in.Object(key)) {
      if (auto done = in.Done(); !done) return done;
      continue;
    }
    if (auto read = ReadFit(j.at(key), where + "." + key, *fit); !read) return read;
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
Result<void> ReadSizeList(const json& j, const std::string& where, const char* key,
                          std::vector<T>& out) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  const std::string not_a_list = where + ": '" + key + "' must be a list of objects";
  if (!it->is_array()) return Fail(Errc::kParse, not_a_list);
  for (const json& item : *it) {
    if (!item.is_object()) return Fail(Errc::kParse, not_a_list);
    Reader in(item, where + "." + key);
    T value;
    ReadItem(in, value);
    if (auto done = in.Done(); !done) return done;
    out.push_back(value);
  }
  return {};
}

// "rule": "model", "per_size" or null.
void ReadRule(Reader& in, Rule& out) {
  if (!in.Has("rule")) return;
  const json& rule = in.At("rule");
  bool known = false;
  for (Rule r : {Rule::kModel, Rule::kPerSize}) {
    if (rule.is_string() && rule.get<std::string>() == RuleName(r)) {
      out = r;
      known = true;
    }
  }
  if (!known) in.Bad("rule", "\"model\", \"per_size\" or null");
}

// An object under `key`, its fields read by `fill`: a wrong field in it is
// returned at once; `in` notes an object of the wrong type.
template <typename T, typename Fill>
Result<void> ReadObject(const json& j, Reader& in, const std::string& where, const char* key,
                        std::optional<T>& out, const Fill& fill) {
  if (!in.Object(key)) return {};
  Reader fields(j.at(key), where + "." + key);
  T value;
  fill(fields, value);
  if (auto done = fields.Done(); !done) return done;
  out = std::move(value);
  return {};
}

// Where the threshold may lie: the interval, what the probed sizes allow,
// and where the curves alone would put it.
Result<void> ReadPlacement(const json& j, Reader& in, const std::string& where,
                           MethodResult& result) {
  auto read = ReadObject(j, in, where, "interval", result.interval,
                         [](Reader& r, ThresholdInterval& v) {
                           r.Whole("low_bytes", v.low_bytes);
                           r.Whole("high_bytes", v.high_bytes);
                           r.Number("level", v.level);
                         });
  if (!read) return read;
  read = ReadObject(j, in, where, "measured_bracket", result.measured_bracket,
                    [](Reader& r, MeasuredBracket& v) {
                      r.Whole("above_bytes", v.above_bytes);
                      r.Whole("at_most_bytes", v.at_most_bytes);
                    });
  if (!read) return read;
  return ReadObject(j, in, where, "curve_choice", result.curve_choice,
                    [](Reader& r, CurveChoice& v) {
                      r.Whole("threshold_bytes", v.threshold_bytes);
                      r.Number("regret", v.regret);
                    });
}

// Why the planner stopped refining the method.
Result<void> ReadStop(const json& j, Reader& in, const std::string& where,
                      std::optional<PlannerStop>& out) {
  if (!in.Object("stop")) return {};
  Reader stop(j.at("stop"), where + ".stop");
  std::string reason;
  PlannerStop value;
  stop.Text("reason", reason);
  stop.Text("detail", value.detail);
  if (auto done = stop.Done(); !done) return done;
  const auto parsed = ParseStopReason(reason);
  if (!parsed) {
    return Fail(Errc::kParse, where + ".stop: 'reason' is not \"resolution\", \"noise\", "
                                      "\"probes\" or \"budget\"");
  }
  value.reason = *parsed;
  out = std::move(value);
  return {};
}

// The fields of the cost model and the threshold rule; absent ones keep
// their defaults (documents written before they existed). A wrong field
// inside an object is returned at once, one at the top level after the
// planner's stop is read.
Result<void> ReadModelFields(const json& j, MethodResult& result) {
  const std::string where(MethodName(result.method));
  Reader in(j, where);
  ReadRule(in, result.rule);
  in.Text("rule_detail", result.rule_detail);
  in.Number("regret", result.regret);
  in.Number("regret_never", result.regret_never);
  in.Number("regret_always", result.regret_always);
  in.Number("regret_excess", result.regret_excess);
  in.Whole("tail_threshold_bytes", result.tail_threshold_bytes);
  in.Sizes("wins_below", result.wins_below);
  in.Sizes("losses_above", result.losses_above);
  if (auto read = ReadPlacement(j, in, where, result); !read) return read;
  if (auto read = ReadSizeList(j, where, "curve_disagreements", result.curve_disagreements);
      !read) {
    return read;
  }
  if (auto read = ReadSizeList(j, where, "overruled", result.overruled); !read) return read;
  in.Number("overruled_cost", result.overruled_cost);
  if (auto read = ReadStop(j, in, where, result.stop); !read) return read;
  if (auto read = ReadObject(j, in, where, "class_offset", result.class_offset,
                             [](Reader& r, ClassOffset& v) {
                               r.Number("ns_per_send", v.ns_per_send);
                               r.Number("standard_error", v.standard_error);
                               r.Whole("samples", v.samples);
                               r.Whole("sizes", v.sizes);
                               r.Whole("translated", v.translated);
                               r.Text("rejected", v.rejected);
                               r.Whole("threshold_low_bytes", v.threshold_low_bytes);
                               r.Whole("threshold_high_bytes", v.threshold_high_bytes);
                               r.Text("set_aside", v.set_aside);
                             });
      !read) {
    return read;
  }
  if (auto done = in.Done(); !done) return done;
  if (in.Object("model")) {
    CostModel model;
    if (auto read = ReadModel(j.at("model"), where + ".model", model); !read) return read;
    result.model = std::move(model);
  }
  return in.Done();
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

// The verdict and, with one, its threshold; both required.
Result<void> ReadVerdict(const json& j, const std::string& where, MethodResult& result) {
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
  return {};
}

// Why, against what, and how sure: reason, detail, baseline, confidence.
Result<void> ReadGrounds(const json& j, const std::string& where, MethodResult& result) {
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
  return {};
}

// The per-size comparisons; each needs its size.
Result<void> ReadComparisons(const json& j, const std::string& where, MethodResult& result) {
  const auto sizes = j.find("sizes");
  if (sizes == j.end() || !sizes->is_array()) return {};
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
  return {};
}

// The verdict fields and the per-size comparisons.
Result<void> ReadVerdictFields(const json& j, MethodResult& result) {
  const std::string where(MethodName(result.method));
  if (auto read = ReadVerdict(j, where, result); !read) return read;
  if (auto read = ReadGrounds(j, where, result); !read) return read;
  return ReadComparisons(j, where, result);
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

Result<PathResult> ReadPathResult(const json& j, const std::string& path) {
  const auto methods = j.is_object() ? j.find("methods") : j.end();
  if (!j.is_object() || methods == j.end() || !methods->is_object()) {
    return Fail(Errc::kParse, path + ": 'methods' is missing or not an object");
  }
  PathResult out;
  out.path = path;
  auto drift = ReadHostDrift(j, path);
  if (!drift) return tl::unexpected(drift.error());
  out.drift = *drift;
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

Result<std::optional<HostDrift>> ReadHostDrift(const json& j, const std::string& path) {
  std::optional<HostDrift> out;
  if (!j.is_object()) return out;
  Reader in(j, path);
  auto read = ReadObject(j, in, path, "drift", out, [](Reader& r, HostDrift& v) {
    r.Whole("samples", v.samples);
    r.Whole("linked", v.linked);
    r.Number("cpu_low", v.cpu_low);
    r.Number("cpu_high", v.cpu_high);
    r.Number("wall_low", v.wall_low);
    r.Number("wall_high", v.wall_high);
    r.Number("noise", v.noise);
    r.Flag("applied", v.applied);
  });
  if (!read) return tl::unexpected(read.error());
  if (auto done = in.Done(); !done) return tl::unexpected(done.error());
  return out;
}

}  // namespace zcal::calibrator
