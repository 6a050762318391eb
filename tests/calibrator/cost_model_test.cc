// The cost model: its fit, its uncertainty, when it is rejected, and its
// JSON form.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "sample_builders.h"
#include "simulated_host.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/report_json.h"

namespace zcal::calibrator::cost_model_test {
namespace {

using testing::GeometricSizes;
using testing::SimulatedHost;

constexpr Method kMzc = Method::kMsgZerocopy;
constexpr Method kCopy = Method::kCopy;

std::vector<Sample> TableOf(const SimulatedHost& host, int repeats, std::uint64_t seed,
                            int steps_per_octave = 1) {
  std::mt19937_64 rng(seed);
  return host.Table({kCopy, kMzc}, GeometricSizes(1024, 262144, steps_per_octave), repeats,
                    rng);
}

TEST(CostModel, RecoversTheCurvesOfNoiselessSamples) {
  SimulatedHost host;
  host.noise = 0;
  host.cpu_bound = true;
  host.line_rate_bytes_per_ns = 4.0;
  const auto r = Decide(TableOf(host, 1, 1), kMzc, {});
  ASSERT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  ASSERT_TRUE(r.model.has_value());
  const MethodFit& z = r.model->zerocopy;
  const MethodFit& b = r.model->baseline;
  EXPECT_EQ(z.method, kMzc);
  EXPECT_EQ(b.method, kCopy);
  EXPECT_NEAR(z.per_byte_ns, 0.12, 1e-4);
  EXPECT_NEAR(z.per_send_ns, 3500, 1);
  EXPECT_NEAR(b.per_byte_ns, 0.30, 1e-4);
  EXPECT_NEAR(b.per_send_ns, 1500, 1);
  // CPU-bound at one core below the line rate of 4 GB/s.
  EXPECT_NEAR(z.line_rate_bytes_per_second.value_or(0), 4e9, 4e6);
  EXPECT_NEAR(z.cpu_bound_cores.value_or(0), 1.0, 1e-3);
  EXPECT_NEAR(b.cpu_bound_cores.value_or(0), 1.0, 1e-3);
  for (std::uint64_t size : {1024u, 8192u, 65536u}) {
    const double s = static_cast<double>(size);
    EXPECT_NEAR(z.CpuNsPerByte(s), host.CpuPerByte(kMzc, size), 1e-6);
    EXPECT_NEAR(z.ThroughputBytesPerSecond(s), 1e9 * host.ThroughputBytesPerNs(kMzc, size),
                1e-3 * z.ThroughputBytesPerSecond(s));
  }
  EXPECT_EQ(z.samples, 9u);
  EXPECT_EQ(z.sizes, 9u);
  EXPECT_EQ(r.model->min_size_bytes, 1024u);
  EXPECT_EQ(r.model->max_size_bytes, 262144u);
  const double truth = host.TrueThreshold(kMzc, kCopy);
  EXPECT_NEAR(static_cast<double>(r.threshold_bytes.value_or(0)), truth, 0.035 * truth);
}

TEST(CostModel, AbsentCapsMeanTheyWereNotReached) {
  SimulatedHost host;  // every method at the line rate at every size
  host.noise = 0.01;
  const auto r = Decide(TableOf(host, 2, 2), kMzc, {});
  ASSERT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  EXPECT_NEAR(r.model->zerocopy.line_rate_bytes_per_second.value_or(0), 5e9, 0.02 * 5e9);
  EXPECT_FALSE(r.model->zerocopy.cpu_bound_cores.has_value());
  EXPECT_FALSE(r.model->baseline.cpu_bound_cores.has_value());
}

TEST(CostModel, UncertaintyShrinksWithMoreSamples) {
  SimulatedHost host;
  const auto few = Decide(TableOf(host, 2, 3), kMzc, {});
  const auto many = Decide(TableOf(host, 8, 3), kMzc, {});
  ASSERT_EQ(few.rule, Rule::kModel);
  ASSERT_EQ(many.rule, Rule::kModel);
  EXPECT_LT(many.model->zerocopy.per_byte_ns_se, few.model->zerocopy.per_byte_ns_se);
  EXPECT_LT(many.model->baseline.per_send_ns_se, few.model->baseline.per_send_ns_se);
  const auto width = [](const MethodResult& r) {
    return static_cast<double>(r.interval->high_bytes.value()) /
           static_cast<double>(r.interval->low_bytes);
  };
  EXPECT_LT(width(many), width(few));
  EXPECT_EQ(many.model->bootstrap_replicates, 200u);
}

TEST(CostModel, SameSamplesGiveTheSameResult) {
  const auto samples = TableOf(SimulatedHost{}, 3, 4);
  const auto a = ToJson(Decide(samples, kMzc, {}));
  const auto b = ToJson(Decide(samples, kMzc, {}));
  EXPECT_EQ(a, b) << "the bootstrap is seeded from the samples";
  auto other = samples;
  other[5].cpu_ns += 1;
  EXPECT_NE(ToJson(Decide(other, kMzc, {})).at("model"), a.at("model"));
}

TEST(CostModel, ShrugsOffAnOutlierAmongRepeats) {
  SimulatedHost host;
  host.noise = 0.05;
  auto samples = TableOf(host, 3, 5);
  const auto clean = Decide(samples, kMzc, {});
  // One probe of the baseline at 16 KiB ran on a busy core: 3x the CPU.
  for (Sample& s : samples) {
    if (s.method == kCopy && s.size_bytes == 16384) {
      s.cpu_ns *= 3;
      break;
    }
  }
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  const double t0 = static_cast<double>(clean.threshold_bytes.value());
  EXPECT_NEAR(static_cast<double>(r.threshold_bytes.value_or(0)), t0, 0.05 * t0);
}

TEST(CostModel, RejectsAStepInTheCopyPath) {
  SimulatedHost host;
  host.noise = 0.05;
  host.step[kCopy] = {32768, 1.3};  // another code path from 32 KiB on
  const auto r = Decide(TableOf(host, 3, 6, 2), kMzc, {});
  EXPECT_EQ(r.rule, Rule::kPerSize);
  ASSERT_TRUE(r.model.has_value());
  EXPECT_FALSE(r.model->accepted);
  EXPECT_EQ(r.rule_detail, "model rejected: " + r.model->rejection);
  EXPECT_EQ(r.rule_detail.rfind("model rejected: copy CPU per byte ", 0), 0u) << r.rule_detail;
  EXPECT_NE(r.rule_detail.find("standard errors"), std::string::npos);
  EXPECT_EQ(r.model->bootstrap_replicates, 0u) << "no bootstrap for a rejected model";
  EXPECT_TRUE(r.threshold_bytes.has_value());
}

// A knee in copy's cost (bytes beyond 32 KiB cost 60 % more: a cache size)
// is no a + b/size. On a grid of four sizes per octave the curves are
// rejected, and a local fit of the probed sizes' own costs decides, with a
// bootstrap interval and regret_excess as the curves' (docs/calibrator.md,
// "When the model is rejected"); the threshold is interpolated, not the
// first probed size of the cheaper side.
TEST(CostModel, ALocalFitDecidesWhereAKneeRejectsTheCurvesOnAFineGrid) {
  SimulatedHost host;
  host.noise = 0.05;
  host.cpu_bound = true;
  host.line_rate_bytes_per_ns = 12.0;
  host.costs[kCopy] = {0.15, 800};
  host.knee[kCopy] = {32768, 0.09};
  host.costs[kMzc] = {0.05, 2800};  // crossover near 24 KiB
  const auto r = Decide(TableOf(host, 3, 8, 4), kMzc, {});
  ASSERT_TRUE(r.model.has_value());
  EXPECT_FALSE(r.model->accepted);
  EXPECT_TRUE(r.model->local_fit);
  EXPECT_EQ(r.rule, Rule::kModel);
  EXPECT_EQ(r.rule_detail.rfind("model rejected: copy CPU per byte", 0), 0u) << r.rule_detail;
  EXPECT_NE(r.rule_detail.find("decided on a local fit of the probed sizes' costs"),
            std::string::npos)
      << r.rule_detail;
  EXPECT_EQ(r.model->bootstrap_replicates, 200u);
  ASSERT_EQ(r.verdict, Verdict::kThreshold) << r.detail;
  ASSERT_TRUE(r.interval && r.interval->high_bytes);
  EXPECT_DOUBLE_EQ(r.interval->level, 0.95);
  EXPECT_TRUE(r.regret_excess.has_value());
  // The truth: zerocopy's CPU per byte at 0.97 of copy's.
  double truth = 1024;
  while (host.CpuPerByte(kMzc, static_cast<std::uint64_t>(truth)) >
         0.97 * host.CpuPerByte(kCopy, static_cast<std::uint64_t>(truth))) {
    truth *= 1.001;
  }
  const double found = static_cast<double>(*r.threshold_bytes);
  std::printf("knee at 32 KiB: truth %.0f, found %.0f in [%llu, %llu]\n", truth, found,
              static_cast<unsigned long long>(r.interval->low_bytes),
              static_cast<unsigned long long>(*r.interval->high_bytes));
  EXPECT_LE(std::fabs(std::log2(found / truth)), 0.25);
  // Decided without it, the same table takes a probed size.
  DecisionOptions per_size;
  per_size.local_fit = false;
  const auto old = Decide(TableOf(host, 3, 8, 4), kMzc, per_size);
  EXPECT_EQ(old.rule, Rule::kPerSize);
}

// A dip at one size that three repeats confirm is a feature of that size:
// its own comparison decides there, the curves everywhere else (fitted
// without it).
TEST(CostModel, KeepsTheModelAroundALocalDipThatRepeatsConfirm) {
  SimulatedHost host;
  host.noise = 0.05;
  host.costs[kMzc] = {0.12, 2000};  // crossover near 3 KiB
  host.local_factor[{kCopy, 16384}] = 0.6;
  const auto r = Decide(TableOf(host, 3, 7, 2), kMzc, {});
  EXPECT_EQ(r.rule, Rule::kModel);
  EXPECT_EQ(r.rule_detail.rfind("decided by its own comparison: copy CPU per byte at 16384 "
                                "bytes is", 0), 0u)
      << r.rule_detail;
  ASSERT_TRUE(r.model.has_value());
  ASSERT_EQ(r.model->exceptions.size(), 1u);
  EXPECT_EQ(r.model->exceptions[0].min_size_bytes, 16384u);
  EXPECT_EQ(r.model->exceptions[0].max_size_bytes, 16384u);
  EXPECT_NEAR(r.model->baseline.per_byte_ns, 0.30, 0.01) << "fitted without the dip";
  // The dip costs less than giving up zerocopy from 3 to 16 KiB: the
  // threshold stays low and 16 KiB is listed as its price.
  EXPECT_LT(r.threshold_bytes.value_or(0), 8192u);
  EXPECT_EQ(r.losses_above, (std::vector<std::uint64_t>{16384}));
  const auto back = ReadMethodResult(ToJson(r), kMzc);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->model->exceptions, r.model->exceptions);
}

// An exception was measured at its own size only. On a coarse grid (a
// factor of 2) the gaps to its neighbours are half an octave wide; were it
// to stand for everything halfway to them, a threshold it pinned would sit
// at that edge (about 6 KiB here, where nothing was measured) with an
// interval of zero width. It reaches 1/8 octave, and the bootstrap draws how
// far it may reach into the unmeasured gaps, so the interval spans them.
TEST(CostModel, AnExceptionDoesNotPinTheThresholdWhereNothingWasMeasured) {
  SimulatedHost host;
  host.noise = 0.05;
  host.costs[kMzc] = {0.12, 3336};  // crossover near 11 KiB
  host.local_factor[{kCopy, 8192}] = 1.3;
  const auto r = Decide(TableOf(host, 3, 11), kMzc, {});
  ASSERT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  ASSERT_TRUE(r.model.has_value());
  ASSERT_EQ(r.model->exceptions.size(), 1u) << r.rule_detail;
  EXPECT_EQ(r.model->exceptions[0].min_size_bytes, 8192u);
  ASSERT_TRUE(r.threshold_bytes.has_value());
  ASSERT_TRUE(r.interval && r.interval->high_bytes);
  std::printf("threshold %llu, interval [%llu, %llu], regret_excess %.3f pp\n",
              static_cast<unsigned long long>(*r.threshold_bytes),
              static_cast<unsigned long long>(r.interval->low_bytes),
              static_cast<unsigned long long>(*r.interval->high_bytes),
              100 * r.regret_excess.value_or(-1));
  // Not at the edge of the cell halfway to the neighbours (sqrt(4096 *
  // 8192) = 5793 and up to 6 KiB).
  EXPECT_GT(*r.threshold_bytes, 6900u);
  EXPECT_LT(*r.threshold_bytes, 12000u);
  // The interval reaches into the gap below 8 KiB that nobody probed.
  EXPECT_LT(r.interval->low_bytes, 7000u);
  EXPECT_GE(*r.interval->high_bytes, *r.threshold_bytes);
  EXPECT_GT(r.regret_excess.value_or(0), 0.0005) << "not at the resolution: the planner probes on";
}

TEST(CostModel, RejectsALocalDipThatOneSampleCannotConfirm) {
  SimulatedHost host;
  host.noise = 0.01;
  host.costs[kMzc] = {0.12, 2000};
  host.local_factor[{kCopy, 16384}] = 0.6;
  const auto r = Decide(TableOf(host, 1, 7, 2), kMzc, {});
  EXPECT_EQ(r.rule, Rule::kPerSize);
  EXPECT_EQ(r.rule_detail.rfind("model rejected: copy CPU per byte at 16384 bytes is", 0), 0u)
      << r.rule_detail;
  EXPECT_NE(r.rule_detail.find("below the fitted curve"), std::string::npos);
}

// With +-20 % noise and the model right, a fine table is not rejected.
TEST(CostModel, AcceptsNoisyTablesOfAModelHost) {
  int rejected = 0;
  for (int seed = 0; seed < 40; ++seed) {
    const auto r = Decide(TableOf(SimulatedHost{}, 3, 100 + seed, 4), kMzc, {});
    if (r.rule != Rule::kModel) {
      ++rejected;
      std::printf("seed %d: %s\n", seed, r.rule_detail.c_str());
    }
  }
  EXPECT_LE(rejected, 1);
}

TEST(CostModel, ThroughputShortfallBeyondTheNoiseMakesZerocopyLose) {
  // Zerocopy saves half the CPU per byte but its line rate is 10 % lower,
  // clearly: efficiency says never, cpu says always.
  SimulatedHost host;
  host.noise = 0.02;
  host.costs[kMzc] = {0.15, 700};
  auto samples = TableOf(host, 3, 8);
  for (Sample& s : samples) {
    if (s.method == kMzc) s.bytes = s.bytes * 9 / 10, s.cpu_ns = s.cpu_ns * 9 / 10;
  }
  const auto r = Decide(samples, kMzc, {});
  EXPECT_EQ(r.rule, Rule::kModel) << r.rule_detail;
  EXPECT_EQ(r.verdict, Verdict::kNever);
  DecisionOptions cpu;
  cpu.objective = Objective::kCpu;
  EXPECT_EQ(Decide(samples, kMzc, cpu).verdict, Verdict::kAlways);
}

TEST(CostModelJson, RoundTripsEveryModelField) {
  const auto r = Decide(TableOf(SimulatedHost{}, 2, 9), kMzc, {});
  ASSERT_EQ(r.rule, Rule::kModel);
  const nlohmann::json j = ToJson(r);
  EXPECT_EQ(j.at("rule"), "model");
  EXPECT_EQ(j.at("interval").at("level"), 0.95);
  EXPECT_TRUE(j.at("model").at("zerocopy").at("cpu_bound_cores").is_null());
  const auto back = ReadMethodResult(j, kMzc);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(ToJson(*back), j);
}

TEST(CostModelJson, OldDocumentsWithoutModelFieldsStillRead) {
  const nlohmann::json old = {{"verdict", "threshold"}, {"threshold_bytes", 16384u}};
  const auto r = ReadMethodResult(old, kMzc);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rule, Rule::kNone);
  EXPECT_FALSE(r->model.has_value());
  EXPECT_FALSE(r->interval.has_value());
  EXPECT_FALSE(r->measured_bracket.has_value());
}

TEST(CostModelJson, WrongTypesNameTheField) {
  const auto error = [](nlohmann::json j) {
    if (j.is_object()) j["verdict"] = "never";
    const auto read = ReadMethodResult(j, kMzc);
    return read ? std::string() : read.error().message;
  };
  EXPECT_EQ(error({{"rule", "guess"}}),
            "msg_zerocopy: 'rule' must be \"model\", \"per_size\" or null");
  EXPECT_EQ(error({{"regret", "low"}}), "msg_zerocopy: 'regret' must be a number");
  EXPECT_EQ(error({{"wins_below", {1, -2}}}), "msg_zerocopy: 'wins_below' must be a list of sizes");
  EXPECT_EQ(error({{"interval", {{"low_bytes", "x"}}}}),
            "msg_zerocopy.interval: 'low_bytes' must be a whole number");
  EXPECT_EQ(error({{"model", {{"zerocopy", {{"per_byte_ns", true}}}}}}),
            "msg_zerocopy.model.zerocopy: 'per_byte_ns' must be a number");
  EXPECT_EQ(error({{"model", {{"baseline", {{"method", "splice"}}}}}}),
            "msg_zerocopy.model.baseline: 'method' must be a method name");
  EXPECT_EQ(error({{"model", 3}}), "msg_zerocopy: 'model' must be an object");
  EXPECT_EQ(error({{"model", {{"exceptions", 1}}}}),
            "msg_zerocopy.model: 'exceptions' must be a list");
  EXPECT_EQ(error({{"model", {{"exceptions", {{{"reason", 2}}}}}}}),
            "msg_zerocopy.model.exceptions: 'reason' must be a string");
  EXPECT_EQ(error(nlohmann::json::array()), "msg_zerocopy: expected an object");
}

// The problem the validation names ("" when valid), always as an invalid
// argument.
std::string Problem(const DecisionOptions& o) {
  const Result<void> valid = ValidateDecisionOptions(o);
  if (valid) return "";
  EXPECT_EQ(valid.error().code, Errc::kInvalidArgument);
  return valid.error().message;
}

TEST(ValidateDecisionOptions, NamesTheBadField) {
  DecisionOptions o;
  EXPECT_EQ(Problem(o), "");
  o.traffic = {{0, 1}};
  EXPECT_EQ(Problem(o), "traffic: a bin's size must be at least 1 byte");
  o.traffic = {{4096, std::nan("")}};
  EXPECT_EQ(Problem(o),
            "traffic: the weight of the bin at 4096 bytes must be a finite number >= 0");
  o.traffic = {{4096, 0}, {8192, 0}};
  EXPECT_EQ(Problem(o), "traffic: the weights must not all be zero");
  o = {};
  o.bootstrap_replicates = 5;
  EXPECT_EQ(Problem(o), "bootstrap_replicates: at least 20 (200 by default)");
  o = {};
  o.margin = 1;
  EXPECT_EQ(Problem(o), "margin: must be in [0, 1) as a fraction");
}

}  // namespace
}  // namespace zcal::calibrator::cost_model_test
