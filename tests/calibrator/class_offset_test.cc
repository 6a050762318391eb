// A numeric depth class decided as the stream class plus a cost per send
// (class_offset.h; docs/calibrator.md, "Depth", "A cost per send"), and
// where that model is refused.
#include "class_offset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "sample_builders.h"
#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/report_json.h"
#include "zcal/calibrator/samples_csv.h"
#include "zcal/testing/test_data.h"

namespace zcal::calibrator::class_offset_test {
namespace {

using ::testing::HasSubstr;
using detail::MeasureClassOffset;
using detail::MovedIntoClass;

constexpr Method kMzc = Method::kMsgZerocopy;
constexpr Method kCopy = Method::kCopy;

// The CPU-bound host of sample_builders.h: stream crossover 13182 bytes.
constexpr auto CopyNs = testing::CpuBoundCopyNs;
constexpr auto StreamZcNs = testing::CpuBoundStreamZcNs;
using testing::CpuBoundProbe;

const std::vector<std::uint64_t> kGrid = {1024, 2048, 4096, 8192, 16384, 32768, 65536};

// Copy and stream zerocopy at every grid size, three repeats within +-1 %.
std::vector<Sample> StreamTable() {
  std::vector<Sample> samples;
  for (int r = 0; r < 3; ++r) {
    const double jitter = 1 + 0.01 * (r - 1);
    for (std::uint64_t size : kGrid) {
      const auto s = static_cast<double>(size);
      samples.push_back(CpuBoundProbe(kCopy, size, kStreamDepth, CopyNs(s) * jitter));
      samples.push_back(CpuBoundProbe(kMzc, size, kStreamDepth, StreamZcNs(s) * jitter));
    }
  }
  return samples;
}

// Class `depth` at `sizes`, twice each: the stream's cost plus `extra(size)`.
template <typename Extra>
void AddClass(std::vector<Sample>& samples, std::uint32_t depth,
              const std::vector<std::uint64_t>& sizes, Extra extra, double cpu_share = 1.0) {
  for (int r = 0; r < 2; ++r) {
    for (std::uint64_t size : sizes) {
      const auto s = static_cast<double>(size);
      samples.push_back(
          CpuBoundProbe(kMzc, size, depth, StreamZcNs(s) + extra(s) + 10.0 * r, cpu_share));
    }
  }
}

// The discard path's grid: the stream at three sizes per octave, once
// each, and a class at every third of them. A class's difference taken
// against one stream sample carries that sample's noise whole; where the
// stream measured the sizes on either side, the line through the three
// pools it. Over 40 seeds at +-5 % noise a send, the cost per send comes
// out nearer the truth with the neighbours than from the shared sizes
// alone.
TEST(ClassOffset, PoolsAStreamSampleWithItsNeighboursOnADenseGrid) {
  std::vector<std::uint64_t> dense;
  for (int k = 0; k < 19; ++k) {
    dense.push_back(static_cast<std::uint64_t>(std::ceil(1024 * std::pow(2.0, k / 3.0))));
  }
  constexpr double kTruth = 500;
  double error_alone = 0, error_pooled = 0;
  for (int seed = 0; seed < 40; ++seed) {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> noise(0, 0.05);
    std::vector<Sample> alone, pooled;
    for (std::size_t i = 0; i < dense.size(); ++i) {
      const auto s = static_cast<double>(dense[i]);
      const Sample stream = CpuBoundProbe(kMzc, dense[i], kStreamDepth, StreamZcNs(s) * noise(rng));
      pooled.push_back(stream);
      if (i % 3 != 1) continue;  // the class's sizes, each inside the grid
      const Sample own = CpuBoundProbe(kMzc, dense[i], 4, (StreamZcNs(s) + kTruth) * noise(rng));
      alone.insert(alone.end(), {stream, own});
      pooled.push_back(own);
    }
    const auto a = MeasureClassOffset(alone, kMzc, 4, kCopy);
    const auto p = MeasureClassOffset(pooled, kMzc, 4, kCopy);
    ASSERT_TRUE(a && p);
    error_alone += std::abs(a->ns_per_send - kTruth);
    error_pooled += std::abs(p->ns_per_send - kTruth);
  }
  std::printf("cost per send, mean error over 40 seeds: %.0f ns from the shared sizes alone, "
              "%.0f ns with the stream's neighbours\n",
              error_alone / 40, error_pooled / 40);
  EXPECT_LT(error_pooled, 0.9 * error_alone);
}

// Why the model is refused for msg_zerocopy at `depth` ("": it is not).
std::string RefusalOf(const std::vector<Sample>& samples, std::uint32_t depth) {
  const auto offset = MeasureClassOffset(samples, kMzc, depth, kCopy);
  EXPECT_TRUE(offset.has_value()) << "nothing to compare at depth " << depth;
  return offset ? offset->rejected : std::string();
}

// With the sends reaped one at a time, each pays 600 ns more: the class
// needs samples at two sizes only, and its threshold is where the stream's
// curves say a send that costs 600 ns more pays off.
TEST(ClassOffset, DecidesAClassFromTheStreamCurvesAndItsCostPerSend) {
  std::vector<Sample> samples = StreamTable();
  AddClass(samples, 4, {16384, 32768}, [](double) { return 600.0; });
  const auto offset = MeasureClassOffset(samples, kMzc, 4, kCopy);
  ASSERT_TRUE(offset.has_value());
  EXPECT_TRUE(offset->rejected.empty()) << offset->rejected;
  EXPECT_NEAR(offset->ns_per_send, 605, 15);
  EXPECT_EQ(offset->samples, 4u);
  EXPECT_EQ(offset->sizes, 2u);

  const MethodResult stream = Analyze(samples, {}, kStreamDepth).paths.at("discard").methods.at(kMzc);
  const MethodResult four = Analyze(samples, {}, 4).paths.at("discard").methods.at(kMzc);
  EXPECT_FALSE(stream.class_offset.has_value()) << "the stream class is its own reference";
  ASSERT_TRUE(four.class_offset.has_value());
  EXPECT_EQ(four.class_offset->translated, 21u) << "every stream sample of the method";
  ASSERT_EQ(stream.verdict, Verdict::kThreshold);
  ASSERT_EQ(four.verdict, Verdict::kThreshold) << four.detail;
  // 600 ns more a send: 0.97 * copy = zerocopy + 600 at 20974 bytes.
  const double truth = (1500 + 605 - 0.97 * 500) / (0.97 * 0.10 - 0.02);
  EXPECT_NEAR(static_cast<double>(*four.threshold_bytes), truth, truth / 8);
  EXPECT_GT(*four.threshold_bytes, *stream.threshold_bytes);
  // The class's own samples: the same cost per size.
  const auto at16 = std::find_if(four.sizes.begin(), four.sizes.end(),
                                 [](const SizeComparison& c) { return c.size_bytes == 16384; });
  ASSERT_NE(at16, four.sizes.end());
  EXPECT_EQ(at16->zerocopy.samples, 5u) << "two of its own and three moved from stream";

  DecisionOptions own_only;
  own_only.class_offset = false;
  const MethodResult alone = Analyze(samples, own_only, 4).paths.at("discard").methods.at(kMzc);
  EXPECT_FALSE(alone.class_offset.has_value());
  for (const SizeComparison& c : alone.sizes) EXPECT_EQ(c.zerocopy.samples, 2u);
}

// The moved samples keep their bytes and add the cost to CPU and wall time
// alike; throughput follows.
TEST(ClassOffset, MovesEachStreamSampleByItsSends) {
  const std::vector<Sample> samples = StreamTable();
  const std::vector<Sample> moved = MovedIntoClass(samples, kMzc, 16, 250);
  ASSERT_EQ(moved.size(), 21u);
  for (const Sample& m : moved) {
    EXPECT_EQ(m.depth, 16u);
    const double sends = static_cast<double>(m.bytes) / static_cast<double>(m.size_bytes);
    const double ns = static_cast<double>(m.cpu_ns) / sends;
    EXPECT_NEAR(ns, StreamZcNs(static_cast<double>(m.size_bytes)) + 250,
                0.02 * ns);
    EXPECT_NEAR(static_cast<double>(m.wall_ns), static_cast<double>(m.cpu_ns), 1)
        << "bound by its CPU before, and after";
  }
  // A negative cost that would leave a sample without CPU drops it.
  EXPECT_TRUE(MovedIntoClass(samples, kMzc, 16, -1e6).empty());
  EXPECT_TRUE(MovedIntoClass(samples, kCopy, 16, 250).empty()) << "baselines have no class";
}

// A cost per send that grows with size is not the model: the class is
// decided on its own samples, and says why.
TEST(ClassOffset, RefusesACostThatGrowsWithSize) {
  std::vector<Sample> samples = StreamTable();
  AddClass(samples, 4, {4096, 16384, 65536}, [](double s) { return 0.05 * s; });
  EXPECT_THAT(RefusalOf(samples, 4), HasSubstr("not the same at every size"));
  const MethodResult r = Analyze(samples, {}, 4).paths.at("discard").methods.at(kMzc);
  ASSERT_TRUE(r.class_offset.has_value());
  EXPECT_EQ(r.class_offset->translated, 0u);
  DecisionOptions own_only;
  own_only.class_offset = false;
  const MethodResult alone = Analyze(samples, own_only, 4).paths.at("discard").methods.at(kMzc);
  EXPECT_EQ(r.verdict, alone.verdict);
  EXPECT_EQ(r.threshold_bytes, alone.threshold_bytes);
}

// A class whose sender runs for 40 % of the wall time where the stream's
// ran for all of it waits for something (a peer's acknowledgements): its
// throughput is its own, and it is not moved. Neither is one that ran for
// twice its wall time (two threads' worth).
TEST(ClassOffset, RefusesASenderThatWaitsWhereTheStreamDidNot) {
  std::vector<Sample> samples = StreamTable();
  AddClass(samples, 1, {16384, 32768}, [](double) { return 600.0; }, 0.4);
  EXPECT_THAT(RefusalOf(samples, 1),
              HasSubstr("ran for 40 % of the wall time, the stream class's for 100 %"));
  samples = StreamTable();
  AddClass(samples, 1, {16384, 32768}, [](double) { return 600.0; }, 2.0);
  EXPECT_THAT(RefusalOf(samples, 1), HasSubstr("ran for 200 %"));
}

// On a loaded host every sender runs for part of the time only (a load
// average of 10 here: 35-65 %). The cost per send is CPU all the same, and
// a moved sample keeps its sender's share of its longer wall time.
TEST(ClassOffset, ALoadedHostKeepsTheModelAndEachSamplesShare) {
  std::vector<Sample> samples;
  for (Sample s : StreamTable()) {
    s.wall_ns *= 2;  // the sender ran half of the time
    samples.push_back(s);
  }
  AddClass(samples, 4, {16384, 32768}, [](double) { return 600.0; }, 0.45);
  const auto offset = MeasureClassOffset(samples, kMzc, 4, kCopy);
  ASSERT_TRUE(offset.has_value());
  EXPECT_TRUE(offset->rejected.empty()) << offset->rejected;
  for (const Sample& m : MovedIntoClass(samples, kMzc, 4, offset->ns_per_send)) {
    EXPECT_NEAR(static_cast<double>(m.cpu_ns) / static_cast<double>(m.wall_ns), 0.5, 1e-6);
  }
}

// A class that costs clearly less per send than the stream differs from it
// in something other than waiting for completions: decided on its own. One
// within its noise of the stream's cost (depth 16 against a stream), or
// within the curves' own inexactness, keeps the model.
TEST(ClassOffset, RefusesAClassThatCostsLessPerSendThanTheStream) {
  std::vector<Sample> samples = StreamTable();
  AddClass(samples, 1, {16384, 32768, 65536}, [](double) { return -400.0; });
  EXPECT_THAT(RefusalOf(samples, 1), HasSubstr("its CPU per send is below the stream class's (-395 ns"));
  samples = StreamTable();
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> noise(-40, 40);
  for (std::uint64_t size : {8192u, 16384u, 32768u, 65536u}) {
    samples.push_back(
        CpuBoundProbe(kMzc, size, 16, StreamZcNs(static_cast<double>(size)) - 5 + noise(rng)));
  }
  EXPECT_EQ(RefusalOf(samples, 16), "");
  // Below it beyond its noise but within the curves' own inexactness (5 %
  // of the stream's 1.7-2.8 us a send here): the same cost, kept.
  samples = StreamTable();
  AddClass(samples, 16, {8192, 16384, 32768, 65536}, [](double) { return -80.0; });
  const auto offset = MeasureClassOffset(samples, kMzc, 16, kCopy);
  ASSERT_TRUE(offset.has_value());
  EXPECT_EQ(offset->rejected, "");
  EXPECT_LT(offset->ns_per_send + offset->Reach95(), 0) << "below the stream beyond its noise";
  // Below it by more than that, beyond its noise, though the noise reaches
  // within the tolerance: refused.
  samples = StreamTable();
  for (std::uint64_t size : {8192u, 16384u, 32768u, 65536u}) {
    for (double step : {-490.0, -110.0}) {
      samples.push_back(
          CpuBoundProbe(kMzc, size, 4, StreamZcNs(static_cast<double>(size)) + step));
    }
  }
  const auto noisy = MeasureClassOffset(samples, kMzc, 4, kCopy);
  ASSERT_TRUE(noisy.has_value());
  EXPECT_GT(noisy->ns_per_send + noisy->Reach95(), -0.05 * StreamZcNs(24576));
  EXPECT_THAT(noisy->rejected, HasSubstr("its CPU per send is below the stream class's (-300 ns"));
}

// A size whose cost per send lies off the class's number, where zerocopy
// loses to copy by far whichever of the two holds there (1024 bytes: copy
// 0.6 us a send, zerocopy 2.1 us moved or 2.6 us its own), is set aside
// and named: the threshold lies where the comparison is close, and it is
// where the number puts it. The same kind of step at a size where it turns
// the comparison (32 KiB: copy 3.8 us, zerocopy 2.8 us moved, 4.0 us its
// own) refuses the model.
TEST(ClassOffset, SetsAsideASizeOffTheCostOnlyWhereTheComparisonReadsTheSame) {
  const auto step_at = [](double at, double step) {
    return [at, step](double s) { return 600.0 + (s == at ? step : 0.0); };
  };
  std::vector<Sample> samples = StreamTable();
  AddClass(samples, 4, {1024, 8192, 16384, 32768}, step_at(1024, 500));
  auto offset = MeasureClassOffset(samples, kMzc, 4, kCopy);
  ASSERT_TRUE(offset.has_value());
  EXPECT_EQ(offset->rejected, "");
  EXPECT_THAT(offset->set_aside, HasSubstr("at 1024 bytes against +6"));
  EXPECT_THAT(offset->set_aside, HasSubstr("where its baseline costs 602 ns a send"));
  const MethodResult four = Analyze(samples, {}, 4).paths.at("discard").methods.at(kMzc);
  ASSERT_EQ(four.verdict, Verdict::kThreshold) << four.detail;
  const double truth = (1500 + 605 - 0.97 * 500) / (0.97 * 0.10 - 0.02);
  EXPECT_NEAR(static_cast<double>(*four.threshold_bytes), truth, truth / 8);
  EXPECT_GT(four.class_offset->translated, 0u);

  samples = StreamTable();
  AddClass(samples, 4, {1024, 8192, 16384, 32768}, step_at(32768, 1200));
  offset = MeasureClassOffset(samples, kMzc, 4, kCopy);
  ASSERT_TRUE(offset.has_value());
  EXPECT_THAT(offset->rejected, HasSubstr("not the same at every size: +1805 ns at 32768 bytes"));
  EXPECT_EQ(offset->set_aside, "");

  // Sizes set aside need kMinSizes that agree beside them: here one size,
  // probed three times as often, holds the median.
  samples = StreamTable();
  for (int k = 0; k < 3; ++k) AddClass(samples, 4, {16384}, [](double) { return 600.0; });
  AddClass(samples, 4, {1024, 2048}, [](double) { return 1600.0; });
  EXPECT_THAT(RefusalOf(samples, 4), HasSubstr("is the same at 1 sizes only (at least 2)"));
}

// Real calibrations of this VM's discard path at 2 s
// (tests/data/depth_offsets/README.md), each with one class off its cost
// per send at one size: the model holds for every numeric class, the size
// is set aside and named, and the verdict at that size reads the same from
// the class's own samples.
TEST(ClassOffset, RecordedCalibrationsSetAsideTheSizeOffTheirCost) {
  struct Case {
    const char* file;
    Method method;
    std::uint32_t depth;
    const char* size;
  };
  for (const Case& c : {Case{"dense_1.csv", Method::kMsgZerocopy, 1, "at 1024 bytes"},
                        Case{"dense_2.csv", Method::kUringSendZc, 4, "at 32808 bytes"}}) {
    std::ifstream in(zcal::testing::TestData() / "depth_offsets" / c.file);
    std::stringstream text;
    text << in.rdbuf();
    const auto samples = ParseSamplesCsv(text.str(), c.file);
    ASSERT_TRUE(samples) << samples.error().message;
    for (Method m : {Method::kMsgZerocopy, Method::kUringSendZc, Method::kUringSendZcFixed}) {
      for (std::uint32_t depth : {1u, 4u, 16u}) {
        const MethodResult r = Analyze(*samples, {}, depth).paths.at("discard").methods.at(m);
        const std::string where =
            std::string(c.file) + " " + std::string(MethodName(m)) + " at " + DepthName(depth);
        ASSERT_TRUE(r.class_offset.has_value()) << where;
        EXPECT_EQ(r.class_offset->rejected, "") << where;
        EXPECT_EQ(r.rule, Rule::kModel) << where << ": " << r.rule_detail;
        if (m != c.method || depth != c.depth) continue;
        EXPECT_THAT(r.class_offset->set_aside, HasSubstr(c.size)) << where;
        const auto at = std::find_if(r.sizes.begin(), r.sizes.end(), [&](const SizeComparison& s) {
          return r.class_offset->set_aside.find("at " + std::to_string(s.size_bytes) + " ") !=
                 std::string::npos;
        });
        ASSERT_NE(at, r.sizes.end()) << where;
        EXPECT_FALSE(at->zerocopy_wins) << where << ": it loses there either way";
      }
    }
  }
}

TEST(ClassOffset, NeedsSamplesAtTwoSizesTheStreamClassMeasured) {
  std::vector<Sample> samples = StreamTable();
  AddClass(samples, 4, {16384}, [](double) { return 600.0; });
  EXPECT_THAT(RefusalOf(samples, 4), HasSubstr("too few of its samples"));
  // A size the stream class did not measure does not count.
  AddClass(samples, 4, {20000}, [](double) { return 600.0; });
  EXPECT_THAT(RefusalOf(samples, 4), HasSubstr("(2 at 1 sizes"));
  // Nothing to compare: no class samples, no stream samples, the stream.
  EXPECT_FALSE(MeasureClassOffset(samples, kMzc, 16, kCopy).has_value());
  EXPECT_FALSE(MeasureClassOffset(samples, kMzc, kStreamDepth, kCopy).has_value());
  EXPECT_FALSE(MeasureClassOffset(samples, kCopy, 4, kCopy).has_value());
}

// Where the cost per send scatters, the thresholds at its 95 % bounds are
// in the published interval, and the deeper bound's is the larger.
TEST(ClassOffset, TheIntervalSpansTheCostsUncertainty) {
  std::vector<Sample> samples = StreamTable();
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(-150, 150);
  for (int r = 0; r < 3; ++r) {
    for (std::uint64_t size : {8192u, 16384u, 32768u}) {
      samples.push_back(
          CpuBoundProbe(kMzc, size, 4, StreamZcNs(static_cast<double>(size)) + 600 + noise(rng)));
    }
  }
  const MethodResult r = Analyze(samples, {}, 4).paths.at("discard").methods.at(kMzc);
  ASSERT_TRUE(r.class_offset.has_value());
  const ClassOffset& o = *r.class_offset;
  ASSERT_TRUE(o.rejected.empty()) << o.rejected;
  EXPECT_GT(o.standard_error, 0);
  ASSERT_EQ(r.verdict, Verdict::kThreshold) << r.detail;
  ASSERT_TRUE(o.threshold_low_bytes && o.threshold_high_bytes);
  EXPECT_LE(*o.threshold_low_bytes, *r.threshold_bytes);
  EXPECT_GE(*o.threshold_high_bytes, *r.threshold_bytes);
  EXPECT_LT(*o.threshold_low_bytes, *o.threshold_high_bytes);
  ASSERT_TRUE(r.interval.has_value());
  EXPECT_LE(r.interval->low_bytes, *o.threshold_low_bytes);
  ASSERT_TRUE(r.interval->high_bytes.has_value());
  EXPECT_GE(*r.interval->high_bytes, *o.threshold_high_bytes);
}

// The JSON carries it, and reads back the same.
TEST(ClassOffset, RoundTripsThroughJson) {
  std::vector<Sample> samples = StreamTable();
  AddClass(samples, 4, {16384, 32768}, [](double) { return 600.0; });
  const MethodResult r = Analyze(samples, {}, 4).paths.at("discard").methods.at(kMzc);
  const nlohmann::json j = ToJson(r);
  ASSERT_TRUE(j.at("class_offset").is_object());
  EXPECT_TRUE(j.at("class_offset").at("rejected").is_null());
  const auto back = ReadMethodResult(j, kMzc);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->class_offset, r.class_offset);
  EXPECT_TRUE(j.at("class_offset").at("set_aside").is_null()) << "none set aside";
  MethodResult aside = r;
  aside.class_offset->set_aside = "+2097 ns at 1024 bytes";
  const auto read_aside = ReadMethodResult(ToJson(aside), kMzc);
  ASSERT_TRUE(read_aside) << read_aside.error().message;
  EXPECT_EQ(read_aside->class_offset, aside.class_offset);

  nlohmann::json bad = j;
  bad["class_offset"]["samples"] = "four";
  const auto refused = ReadMethodResult(bad, kMzc);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("class_offset"), std::string::npos)
      << refused.error().message;
  bad = j;
  bad["class_offset"]["set_aside"] = 1024;
  const auto not_text = ReadMethodResult(bad, kMzc);
  ASSERT_FALSE(not_text);
  EXPECT_NE(not_text.error().message.find("set_aside"), std::string::npos)
      << not_text.error().message;
  nlohmann::json old = j;
  old.erase("class_offset");
  const auto older = ReadMethodResult(old, kMzc);
  ASSERT_TRUE(older) << older.error().message;
  EXPECT_FALSE(older->class_offset.has_value()) << "documents written before it";
}

// Real calibrations of this machine's discard path, quiet
// (tests/data/depth_quiet/README.md): every numeric class is the stream
// plus a cost per send, the shallower class pays more of it, and the
// thresholds follow (a deeper class's is at most a shallower one's).
TEST(ClassOffset, RecordedCalibrationsAreOrderedAsTheirCostsPerSend) {
  for (const char* name : {"zcal_1.csv", "zcal_2.csv"}) {
    const auto path = zcal::testing::TestData() / "depth_quiet" / name;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const auto samples = ParseSamplesCsv(text.str(), name);
    ASSERT_TRUE(samples) << samples.error().message;
    for (Method m : {Method::kMsgZerocopy, Method::kUringSendZc, Method::kUringSendZcFixed}) {
      double shallower_cost = std::numeric_limits<double>::infinity();
      double shallower_threshold = std::numeric_limits<double>::infinity();
      for (std::uint32_t depth : {1u, 4u, 16u, kStreamDepth}) {
        const MethodResult r = Analyze(*samples, {}, depth).paths.at("discard").methods.at(m);
        const std::string where = std::string(name) + " " + std::string(MethodName(m)) +
                                  " at " + DepthName(depth);
        if (depth != kStreamDepth) {
          ASSERT_TRUE(r.class_offset.has_value()) << where;
          ASSERT_TRUE(r.class_offset->rejected.empty()) << where << ": " << r.class_offset->rejected;
          EXPECT_GT(r.class_offset->translated, 0u) << where;
          EXPECT_LT(r.class_offset->ns_per_send, shallower_cost) << where;
          shallower_cost = r.class_offset->ns_per_send;
        }
        if (r.verdict == Verdict::kInconclusive) continue;
        const double threshold = r.verdict == Verdict::kNever
                                     ? std::numeric_limits<double>::infinity()
                                     : static_cast<double>(r.threshold_bytes.value_or(0));
        EXPECT_LE(threshold, shallower_threshold) << where;
        shallower_threshold = threshold;
      }
      EXPECT_GT(shallower_cost, 0) << name << ": waiting for each completion at 16 costs too";
    }
  }
}

}  // namespace
}  // namespace zcal::calibrator::class_offset_test
