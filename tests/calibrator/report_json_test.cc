// The one JSON codec of a method result and a path result: what `zcal
// analyze --json` prints and the agent's state file keeps, both directions.
#include "zcal/calibrator/report_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sample_builders.h"
#include "simulated_host.h"
#include "zcal/calibrator/decision.h"
#include "zcal/testing/test_data.h"

namespace zcal::calibrator::report_json_test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr Method kMzc = Method::kMsgZerocopy;

// Every field set to something other than its default.
MethodResult EveryField() {
  MethodResult r;
  r.method = Method::kUringSendZc;
  r.baseline = Method::kCopy;
  r.baseline_substituted = true;
  r.verdict = Verdict::kThreshold;
  r.threshold_bytes = 12032;
  r.detail = "a sentence";
  r.confidence = 0.875;
  SizeComparison c;
  c.size_bytes = 8192;
  c.zerocopy = {8192, 3, {5e9, 1e8}, {0.25, 0.01}, 0.125, 2};
  c.baseline = {8192, 2, {6e9, 2e8}, {0.5, 0.02}, std::nullopt, 0};
  c.throughput_ratio = 0.83;
  c.cpu_ratio = 0.5;
  c.relative_cost = 1.1;
  c.throughput_acceptable = false;
  c.zerocopy_wins = false;
  c.decisive = false;
  r.sizes = {c};
  r.rule = Rule::kModel;
  r.rule_detail = "decided by its own comparison: x";
  CostModel model;
  model.zerocopy.method = Method::kUringSendZc;
  model.zerocopy.per_byte_ns = 0.125;
  model.zerocopy.per_send_ns = 900;
  model.zerocopy.line_rate_bytes_per_second = 1.25e10;
  model.zerocopy.cpu_bound_cores = 1.0;
  model.zerocopy.per_byte_ns_se = 0.001;
  model.zerocopy.per_send_ns_se = 10;
  model.zerocopy.per_byte_per_send_cov = -0.5;
  model.zerocopy.line_rate_se = 1e8;
  model.zerocopy.cpu_bound_cores_se = 0.01;
  model.zerocopy.cpu_residual = 0.05;
  model.zerocopy.throughput_residual = 0.03;
  model.zerocopy.samples = 20;
  model.zerocopy.sizes = 10;
  model.zerocopy.min_size_bytes = 1024;
  model.zerocopy.max_size_bytes = 262144;
  model.baseline = model.zerocopy;
  model.baseline.method = Method::kCopy;
  model.min_size_bytes = 1024;
  model.max_size_bytes = 262144;
  model.accepted = false;
  model.rejection = "copy CPU per byte at 16384 bytes is 14 % below the fitted curve";
  model.rejected_min_size_bytes = 16384;
  model.rejected_max_size_bytes = 16384;
  model.rejection_confirmed = true;
  model.exceptions = {{8192, 8192, "a reason"}};
  model.bootstrap_replicates = 200;
  model.local_fit = true;
  r.model = model;
  r.interval = ThresholdInterval{11008, 13056, 0.95};
  r.regret = 0.0125;
  r.regret_never = 0.25;
  r.regret_always = 0.5;
  r.regret_excess = 0.0005;
  r.tail_threshold_bytes = 16384;
  r.wins_below = {4096};
  r.losses_above = {16384};
  r.measured_bracket = MeasuredBracket{2048, 32768};
  r.curve_choice = CurveChoice{std::nullopt, 0.03125};
  r.curve_disagreements = {{32768, true, 0.9, 1.05, true}};
  r.overruled = {{4096, true, false, 0.99, 0.0101}, {16384, false, true, 1.1, 0.1}};
  r.overruled_cost = 0.02;
  r.stop = PlannerStop{StopReason::kNoise, "resolution limited by noise (9 % scatter)"};
  return r;
}

TEST(ReportJson, RoundTripsEveryField) {
  const json j = ToJson(EveryField());
  const auto back = ReadMethodResult(j, Method::kUringSendZc);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(ToJson(*back), j);
  // And the values themselves, not only their JSON.
  EXPECT_EQ(back->baseline, Method::kCopy);
  EXPECT_TRUE(back->baseline_substituted);
  EXPECT_EQ(back->sizes.at(0).zerocopy.copied_fraction, 0.125);
  EXPECT_FALSE(back->sizes.at(0).baseline.copied_fraction.has_value());
  EXPECT_FALSE(back->sizes.at(0).throughput_acceptable);
  EXPECT_EQ(back->model->exceptions, EveryField().model->exceptions);
  EXPECT_TRUE(back->model->local_fit);
  EXPECT_EQ(back->measured_bracket, EveryField().measured_bracket);
  EXPECT_EQ(back->curve_choice, EveryField().curve_choice);
  EXPECT_EQ(back->overruled, EveryField().overruled);
  EXPECT_EQ(back->stop, EveryField().stop);
  EXPECT_EQ(j.at("stop").at("reason"), "noise");
}

TEST(ReportJson, RoundTripsEveryStopReason) {
  for (StopReason why : {StopReason::kResolution, StopReason::kNoise, StopReason::kProbes,
                         StopReason::kBudget}) {
    MethodResult r;
    r.method = kMzc;
    r.stop = PlannerStop{why, "why"};
    const auto back = ReadMethodResult(ToJson(r), kMzc);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->stop, r.stop) << StopReasonName(why);
    EXPECT_EQ(ParseStopReason(StopReasonName(why)), why);
  }
  EXPECT_FALSE(ParseStopReason("tired").has_value());
}

TEST(ReportJson, RoundTripsEveryVerdictAndReason) {
  for (Verdict v : {Verdict::kThreshold, Verdict::kAlways, Verdict::kNever, Verdict::kInconclusive}) {
    for (Reason why : {Reason::kNone, Reason::kSlower, Reason::kKernelCopied, Reason::kUnsupported,
                       Reason::kFailed, Reason::kNoisy, Reason::kNoBaseline}) {
      MethodResult r;
      r.method = kMzc;
      r.verdict = v;
      r.reason = why;
      if (v == Verdict::kThreshold || v == Verdict::kAlways) r.threshold_bytes = 4096;
      const json j = ToJson(r);
      const auto back = ReadMethodResult(j, kMzc);
      ASSERT_TRUE(back) << VerdictName(v) << "/" << ReasonName(why) << ": " << back.error().message;
      EXPECT_EQ(back->verdict, v);
      EXPECT_EQ(back->reason, why);
      EXPECT_EQ(ToJson(*back), j);
    }
  }
}

// Every optional field absent: nulls and empty lists read back as absent.
TEST(ReportJson, RoundTripsAbsentOptionalFields) {
  MethodResult r;
  r.method = kMzc;
  r.verdict = Verdict::kInconclusive;
  r.reason = Reason::kNoBaseline;
  const json j = ToJson(r);
  EXPECT_TRUE(j.at("confidence").is_null());
  EXPECT_TRUE(j.at("measured_bracket").is_null());
  const auto back = ReadMethodResult(j, kMzc);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(ToJson(*back), j);
  EXPECT_FALSE(back->confidence || back->model || back->interval || back->regret ||
               back->regret_excess || back->tail_threshold_bytes || back->measured_bracket ||
               back->curve_choice || back->overruled_cost);
}

TEST(ReportJson, RoundTripsADecidedPath) {
  testing::SimulatedHost host;
  std::mt19937_64 rng(3);
  const auto samples =
      host.Table({Method::kCopy, kMzc}, testing::GeometricSizes(1024, 262144, 2), 2, rng);
  const Analysis analysis = Analyze(samples, {});
  ASSERT_EQ(analysis.paths.size(), 1u);
  const PathResult& path = analysis.paths.begin()->second;
  const json j = ToJson(path);
  const auto back = ReadPathResult(j, path.path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->path, path.path);
  EXPECT_EQ(ToJson(*back), j);
}

TEST(ReportJson, RoundTripsTheHostsDriftAndNamesAWrongField) {
  PathResult path;
  path.path = "discard";
  path.drift = HostDrift{180, 120, 0.8, 1.14, 0.81, 1.13, 0.012, true};
  const json j = ToJson(path);
  const auto back = ReadPathResult(j, "discard");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->drift, path.drift);
  // A document written before the field reads as "not measured".
  json old = j;
  old.erase("drift");
  const auto older = ReadPathResult(old, "discard");
  ASSERT_TRUE(older) << older.error().message;
  EXPECT_FALSE(older->drift.has_value());
  json bad = j;
  bad["drift"]["applied"] = "yes";
  const auto refused = ReadPathResult(bad, "discard");
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("discard.drift: 'applied' must be true or false"));
}

TEST(ReportJson, ErrorsNameTheMethodAndTheField) {
  const auto error = [](const json& j) {
    const auto read = ReadMethodResult(j, kMzc);
    return read ? std::string() : read.error().message;
  };
  EXPECT_EQ(error(json::array()), "msg_zerocopy: expected an object");
  EXPECT_EQ(error({{"verdict", "maybe"}}), "msg_zerocopy: 'verdict' is missing or unknown");
  EXPECT_EQ(error({{"verdict", "threshold"}}),
            "msg_zerocopy: verdict 'threshold' without 'threshold_bytes'");
  EXPECT_EQ(error({{"verdict", "never"}, {"reason", "tired"}}), "msg_zerocopy: 'reason' is unknown");
  EXPECT_EQ(error({{"verdict", "never"}, {"confidence", 2}}),
            "msg_zerocopy: 'confidence' is not in [0, 1]");
  EXPECT_EQ(error({{"verdict", "never"}, {"sizes", {{{"zerocopy_wins", true}}}}}),
            "msg_zerocopy: a 'sizes' entry lacks 'size'");
  EXPECT_EQ(error({{"verdict", "never"}, {"measured_bracket", {{"above_bytes", -1}}}}),
            "msg_zerocopy.measured_bracket: 'above_bytes' must be a whole number");
  EXPECT_EQ(error({{"verdict", "never"}, {"overruled", {{{"measured", "ties"}}}}}),
            "msg_zerocopy.overruled: 'measured' must be \"wins\" or \"loses\"");
  EXPECT_EQ(error({{"verdict", "never"}, {"stop", {{"reason", "tired"}, {"detail", ""}}}}),
            "msg_zerocopy.stop: 'reason' is not \"resolution\", \"noise\", \"probes\" or "
            "\"budget\"");
  EXPECT_EQ(error({{"verdict", "never"}, {"stop", {{"reason", 3}}}}),
            "msg_zerocopy.stop: 'reason' must be a string");
  const auto path = ReadPathResult({{"methods", {{"copy", json::object()}}}}, "discard");
  ASSERT_FALSE(path);
  EXPECT_EQ(path.error().message, "discard.methods.copy: not a zerocopy method");
}

// Every member of `old`, recursively, is in `now` with the same value
// (fields added since may be there too).
bool Within(const json& old, const json& now) {
  if (old.is_object()) {
    if (!now.is_object()) return false;
    for (const auto& [key, value] : old.items()) {
      if (!now.contains(key) || !Within(value, now.at(key))) {
        ADD_FAILURE() << "'" << key << "' differs: " << value.dump() << " against "
                      << (now.contains(key) ? now.at(key).dump() : std::string("nothing"));
        return false;
      }
    }
    return true;
  }
  if (old.is_array()) {
    if (!now.is_array() || now.size() != old.size()) return false;
    for (std::size_t i = 0; i < old.size(); ++i) {
      if (!Within(old[i], now[i])) return false;
    }
    return true;
  }
  return old == now;
}

// A state file as agents of version 0.1.0 write it (tests/data/state
// README): every method result in it reads, and writes back every field it
// had with the same value.
TEST(ReportJson, ReadsTheResultsOfAStateFileWrittenBefore) {
  const auto file = zcal::testing::TestData() / "state" / "written_by_main.json";
  std::ifstream in(file);
  ASSERT_TRUE(in) << file;
  std::stringstream text;
  text << in.rdbuf();
  const json state = json::parse(text.str());
  int results = 0;
  for (const auto& [path, methods] : state.at("paths").items()) {
    for (const auto& [name, entry] : methods.items()) {
      for (const char* which : {"published", "pending"}) {
        if (!entry.contains(which) || entry.at(which).is_null()) continue;
        const json& old = entry.at(which);
        const auto read = ReadMethodResult(old, *ParseMethod(name));
        ASSERT_TRUE(read) << path << "." << name << ": " << read.error().message;
        EXPECT_TRUE(Within(old, ToJson(*read))) << path << "." << name << "." << which;
        ++results;
      }
    }
  }
  EXPECT_GE(results, 5);
}

}  // namespace
}  // namespace zcal::calibrator::report_json_test
