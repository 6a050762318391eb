// The rule "measured sizes bound the threshold" on tables that nobody
// fitted: real runs of this machine's discard path (tests/data/tables,
// README there names each table's source). The threshold never lies above a
// probed size at which zerocopy wins clearly and wins at every larger size,
// nor at or below one at which it loses clearly and loses at every smaller
// size; a curve that contradicts a clear size is reported. Figures are
// printed per table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "zcal/calibrator/decision.h"
#include "zcal/calibrator/samples_csv.h"
#include "zcal/testing/test_data.h"

namespace zcal::calibrator::real_tables_test {
namespace {

std::vector<std::filesystem::path> Tables() {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(zcal::testing::TestData() / "tables")) {
    if (entry.path().extension() == ".csv") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Sample> Read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto samples = ParseSamplesCsv(text.str(), path.filename().string());
  EXPECT_TRUE(samples) << (samples ? "" : samples.error().message);
  return samples ? *samples : std::vector<Sample>{};
}

bool SingleSamples(const MethodResult& r) {
  return std::all_of(r.sizes.begin(), r.sizes.end(), [](const SizeComparison& c) {
    return c.zerocopy.samples < 2 || c.baseline.samples < 2;
  });
}

// The bracket of a table with one sample per size, by the issue's
// definition, computed here on its own: a win is clear; a loss when
// zerocopy's CPU per byte is at least 1 + margin of the baseline's or its
// throughput short of the tolerance.
MeasuredBracket MarginBracket(const MethodResult& r, const DecisionOptions& o) {
  MeasuredBracket b;
  for (const SizeComparison& c : r.sizes) {
    if (c.zerocopy_wins) break;
    if (c.cpu_ratio >= 1 + o.margin || c.throughput_ratio < 1 - o.tolerance) b.above_bytes = c.size_bytes;
  }
  for (auto c = r.sizes.rbegin(); c != r.sizes.rend() && c->zerocopy_wins; ++c) {
    b.at_most_bytes = c->size_bytes;
  }
  return b;
}

std::string Text(std::optional<std::uint64_t> bytes) {
  return bytes ? std::to_string(*bytes) : std::string("-");
}

TEST(RealTables, TheThresholdStaysWithinTheBracketTheProbedSizesSet) {
  const auto tables = Tables();
  ASSERT_GE(tables.size(), 8u) << "tests/data/tables lost its tables";
  const DecisionOptions options;
  int results = 0, moved = 0, with_disagreement = 0;
  for (const auto& path : tables) {
    const Analysis analysis = Analyze(Read(path), options);
    for (const auto& [name, p] : analysis.paths) {
      for (const auto& [method, r] : p.methods) {
        SCOPED_TRACE(path.filename().string() + " " + std::string(MethodName(method)));
        if (r.sizes.empty()) continue;
        ASSERT_TRUE(r.measured_bracket.has_value());
        const MeasuredBracket& b = *r.measured_bracket;
        if (SingleSamples(r)) {
          EXPECT_EQ(b, MarginBracket(r, options));
        }
        // Whatever decided clarity, the bracket's sizes are what it says:
        // a loss with only losses below, a win with only wins above.
        for (const SizeComparison& c : r.sizes) {
          if (b.above_bytes && c.size_bytes <= *b.above_bytes) {
            EXPECT_FALSE(c.zerocopy_wins) << c.size_bytes;
          }
          if (b.at_most_bytes && c.size_bytes >= *b.at_most_bytes) {
            EXPECT_TRUE(c.zerocopy_wins) << c.size_bytes;
          }
        }
        ++results;
        if (r.verdict == Verdict::kInconclusive) continue;
        const std::uint64_t t = r.threshold_bytes.value_or(UINT64_MAX);
        if (b.at_most_bytes) {
          EXPECT_LE(t, *b.at_most_bytes);
        }
        if (b.above_bytes) {
          EXPECT_GT(t, *b.above_bytes);
        }
        // The model's interval too (the per-size one is the two probed
        // sizes around the threshold, the bracket's lower size among them).
        if (r.rule == Rule::kModel && b.at_most_bytes) {
          EXPECT_LE(r.interval->high_bytes.value_or(UINT64_MAX), *b.at_most_bytes);
        }
        if (r.rule == Rule::kModel && b.above_bytes) {
          EXPECT_GT(r.interval->low_bytes, *b.above_bytes);
        }
        // A disagreement is a clear size on the other side of 1 on the curves.
        for (const CurveDisagreement& d : r.curve_disagreements) {
          EXPECT_EQ(r.rule, Rule::kModel);
          EXPECT_EQ(d.zerocopy_wins, d.fitted_relative_cost > 1) << d.size_bytes;
        }
        moved += r.curve_choice ? 1 : 0;
        with_disagreement += r.curve_disagreements.empty() ? 0 : 1;
        std::printf("%-24s %-20s %-12s %8s  bracket (%s, %s]  rule %-8s curves alone %s; "
                    "%zu disagreements, %zu overruled (%.1f %%)\n",
                    path.filename().string().c_str(), std::string(MethodName(method)).c_str(),
                    std::string(VerdictName(r.verdict)).c_str(), Text(r.threshold_bytes).c_str(),
                    Text(b.above_bytes).c_str(), Text(b.at_most_bytes).c_str(),
                    std::string(RuleName(r.rule)).c_str(),
                    r.curve_choice ? Text(r.curve_choice->threshold_bytes).c_str() : "=",
                    r.curve_disagreements.size(), r.overruled.size(),
                    100 * r.overruled_cost.value_or(0));
      }
    }
  }
  std::printf("%d results; the bracket moved the curves' threshold in %d; curves contradict a "
              "clear size in %d\n", results, moved, with_disagreement);
  EXPECT_GT(results, 20);
}

// A traffic bin at a probed size is costed at that size. This liburing run
// has uring_send_zc winning clearly at 8192 B and losing at 6 KiB, and its
// fitted curves cross at about 8 KiB; decided without a margin under a mix
// with a bin at 8 KiB, that bin once sat on the model's grid point 8185 B,
// just below the bracket's bound, where the bootstrap's curves decide it
// by coin flip: inconclusive (147 of 200 replicates), although the
// measured size settles it.
TEST(RealTables, ATrafficBinAtAProbedSizeIsCostedAtThatSize) {
  DecisionOptions options;
  options.margin = 0;
  options.traffic = {{2048, 10}, {8192, 20}, {16384, 30}, {65536, 40}};
  const Analysis analysis =
      Analyze(Read(zcal::testing::TestData() / "tables" / "discard_liburing_6.csv"), options);
  ASSERT_EQ(analysis.paths.size(), 1u);
  const MethodResult& r = analysis.paths.begin()->second.methods.at(Method::kUringSendZc);
  ASSERT_EQ(r.rule, Rule::kModel);
  ASSERT_EQ(r.verdict, Verdict::kThreshold) << r.detail;
  EXPECT_GT(*r.threshold_bytes, 6144u);
  EXPECT_LE(*r.threshold_bytes, 8192u);
  EXPECT_GE(*r.confidence, 0.95);
}

// A one-sample table from a noisy run (residuals of 25-30 % of CPU): the
// bootstrap leaves uring_send_zc's least-cost threshold in doubt (82 of 200
// replicates), while zerocopy wins clearly from 24 KiB at every larger
// size. That size is published, where an inconclusive verdict made a
// transport fall back to its default (never: 19-68 pp dearer on the other
// runs of bench/regret.py).
TEST(RealTables, ANoisyTableSettlesOnItsClearWinningTail) {
  const Analysis analysis =
      Analyze(Read(zcal::testing::TestData() / "tables" / "discard_liburing_9.csv"), {});
  ASSERT_EQ(analysis.paths.size(), 1u);
  const MethodResult& r = analysis.paths.begin()->second.methods.at(Method::kUringSendZc);
  EXPECT_EQ(r.rule, Rule::kModel);
  ASSERT_EQ(r.verdict, Verdict::kThreshold) << r.detail;
  EXPECT_EQ(r.threshold_bytes.value_or(0), 24576u);
  ASSERT_TRUE(r.measured_bracket && r.measured_bracket->at_most_bytes);
  EXPECT_EQ(*r.measured_bracket->at_most_bytes, 24576u);
  ASSERT_TRUE(r.confidence.has_value());
  EXPECT_LT(*r.confidence, 0.8);
  ASSERT_TRUE(r.interval && r.interval->high_bytes);
  EXPECT_EQ(*r.interval->high_bytes, 24576u);
}

// Where the local fit decides (docs/calibrator.md, "When the model is
// rejected"), what its threshold costs on another run of the same VM and
// hour, against the per-size rule's on the same run: each threshold
// decided on run a, judged on run b's per-size costs (ExcessCost, sizes
// weighted uniformly in log size), over the ordered pairs of zcal's runs
// within each recording (README.md). A rejected model must not mean a
// worse answer than the per-size rule alone would give. Measured with the
// local fit deciding wherever the sizes were at most 0.4 octave apart by
// the median (34 pairs): 0.71 pp over the best on the other run against
// the per-size rule's 0.51 pp, worse in 16 pairs, better in 6, because
// this kernel's cost ratio steps at exactly 8 KiB and the fit smoothed
// that step. Since the fit decides only where every gap is that narrow,
// which a planner's calibration (an octave apart, refined near the
// threshold) never is, the per-size rule decides those as before; the fit
// decides the two tables merged from calibrations on four interleaved
// grids (discard_zcal_19, _20: four sizes per octave), where a size off
// the fit beyond its noise (the steps at 8 and 16 KiB) keeps its own cost.
TEST(RealTables, TheLocalFitCostsNoMoreOnAnotherRunThanThePerSizeRule) {
  const std::vector<std::vector<int>> recordings = {{1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11},
                                                    {12, 13, 14, 15}, {16, 17, 18}, {19, 20}};
  DecisionOptions per_size;
  per_size.local_fit = false;
  int pairs = 0, better = 0, worse = 0;
  double local_total = 0, per_size_total = 0;
  for (const auto& runs : recordings) {
    std::vector<Analysis> local, alone;
    for (int n : runs) {
      const auto samples = Read(zcal::testing::TestData() / "tables" /
                                ("discard_zcal_" + std::to_string(n) + ".csv"));
      local.push_back(Analyze(samples, {}));
      alone.push_back(Analyze(samples, per_size));
    }
    for (std::size_t a = 0; a < runs.size(); ++a) {
      for (const auto& [path, p] : local[a].paths) {
        for (const auto& [method, r] : p.methods) {
          if (!r.model || !r.model->local_fit) continue;
          const MethodResult& old = alone[a].paths.at(path).methods.at(method);
          const auto published = [](const MethodResult& m) {
            return m.verdict == Verdict::kInconclusive ? std::nullopt : m.threshold_bytes;
          };
          for (std::size_t b = 0; b < runs.size(); ++b) {
            if (b == a) continue;
            const auto& judge = local[b].paths.at(path).methods.at(method).sizes;
            const double l = 100 * ExcessCost(judge, published(r), {});
            const double o = 100 * ExcessCost(judge, published(old), {});
            std::printf("discard_zcal_%d > %d %-20s local fit %6s: %5.2f pp, per-size %6s: "
                        "%5.2f pp\n",
                        runs[a], runs[b], std::string(MethodName(method)).c_str(),
                        Text(published(r)).c_str(), l, Text(published(old)).c_str(), o);
            ++pairs;
            local_total += l;
            per_size_total += o;
            better += l < o - 0.005 ? 1 : 0;
            worse += l > o + 0.005 ? 1 : 0;
          }
        }
      }
    }
  }
  std::printf("%d pairs where the local fit decided: on the other run it costs less than the "
              "per-size rule in %d, more in %d; mean %.3f pp against %.3f pp\n",
              pairs, better, worse, local_total / std::max(pairs, 1),
              per_size_total / std::max(pairs, 1));
  ASSERT_GT(pairs, 0) << "the local fit decided nowhere in the real tables";
  EXPECT_LE(local_total, per_size_total);
}

}  // namespace
}  // namespace zcal::calibrator::real_tables_test
