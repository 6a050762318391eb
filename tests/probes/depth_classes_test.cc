// Which depth classes a calibration probes and where (depth_classes.h):
// the order, the classes whose neighbours already answer, and the sizes
// where they disagree.
#include "zcal/probes/calibration/depth_classes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "zcal/calibrator/depth.h"

// This file's names, apart from other test files' (unity builds).
namespace depth_classes_test {
namespace {

using zcal::calibrator::kStreamDepth;
using zcal::calibrator::Method;
using zcal::calibrator::Reason;
using zcal::calibrator::Verdict;
namespace dc = zcal::probes::depth_classes;

const std::vector<std::uint64_t> kGrid = {1024, 2048, 4096, 8192, 16384, 32768, 65507};

dc::Known Said(Verdict verdict, std::uint32_t depth, std::uint64_t threshold = 0,
               Reason reason = Reason::kNone) {
  dc::Known k;
  k.verdict = verdict;
  k.reason = reason;
  if (verdict == Verdict::kThreshold) k.threshold_bytes = threshold;
  if (verdict == Verdict::kAlways) k.threshold_bytes = kGrid.front();
  k.decided_at = depth;
  return k;
}

TEST(DepthClasses, StreamFirstThenTheShallowestThenFromTheDeepest) {
  EXPECT_EQ(dc::CalibrationOrder({1, 4, 16, kStreamDepth}),
            (std::vector<std::uint32_t>{kStreamDepth, 1, 16, 4}));
  EXPECT_EQ(dc::CalibrationOrder({}), (std::vector<std::uint32_t>{kStreamDepth}));
  EXPECT_EQ(dc::CalibrationOrder({8, 2}), (std::vector<std::uint32_t>{2, 8}));
  EXPECT_EQ(dc::CalibrationOrder({kStreamDepth, 3}), (std::vector<std::uint32_t>{kStreamDepth, 3}));
}

TEST(DepthClasses, TheFirstClassIsProbedEverywhere) {
  const dc::Placement place = dc::Place(Method::kMsgZerocopy, kStreamDepth, {}, kGrid);
  EXPECT_FALSE(place.skip);
  EXPECT_TRUE(place.sizes.empty()) << "the whole grid";
}

TEST(DepthClasses, BetweenTwoThresholdsOnlyTheSizesWhereTheyDisagreeAndTheEnds) {
  dc::KnownClasses known;
  known[kStreamDepth][Method::kMsgZerocopy] = Said(Verdict::kThreshold, kStreamDepth, 12000);
  known[1][Method::kMsgZerocopy] = Said(Verdict::kThreshold, 1, 40000);
  const dc::Placement place = dc::Place(Method::kMsgZerocopy, 16, known, kGrid);
  ASSERT_FALSE(place.skip);
  // From the grid size below stream's threshold (8 KiB) to the one at or
  // above depth 1's (65507), and 1 KiB, the range's lower end.
  EXPECT_EQ(place.sizes, (std::vector<std::uint64_t>{1024, 8192, 16384, 32768, 65507}));
}

TEST(DepthClasses, AClassShallowerThanANeverIsNotProbed) {
  dc::KnownClasses known;
  known[kStreamDepth][Method::kUringSendZc] =
      Said(Verdict::kNever, kStreamDepth, 0, Reason::kSlower);
  const dc::Placement place = dc::Place(Method::kUringSendZc, 1, known, kGrid);
  ASSERT_TRUE(place.skip);
  EXPECT_EQ(*place.skip, "depth stream is never (slower), and a shallower class pays more per send");
  ASSERT_TRUE(place.inferred);
  EXPECT_EQ(place.inferred->verdict, Verdict::kNever);
  EXPECT_EQ(place.inferred->decided_at, kStreamDepth);
}

TEST(DepthClasses, AClassDeeperThanAnAlwaysIsNotProbed) {
  dc::KnownClasses known;
  known[kStreamDepth][Method::kUringSendZcFixed] = Said(Verdict::kAlways, kStreamDepth);
  known[1][Method::kUringSendZcFixed] = Said(Verdict::kAlways, 1);
  const dc::Placement place = dc::Place(Method::kUringSendZcFixed, 4, known, kGrid);
  ASSERT_TRUE(place.skip);
  EXPECT_EQ(*place.skip, "depth 1 is always, and a deeper class pays less per send");
}

// A class not probed has no entry of its own, and its readers get the
// stream entry: its neighbours' answer stands only where that gives it too.
TEST(DepthClasses, ANeighboursAnswerStandsOnlyWhereTheStreamEntryGivesIt) {
  dc::KnownClasses known;
  known[kStreamDepth][Method::kMsgZerocopy] = Said(Verdict::kThreshold, kStreamDepth, 25600);
  known[1][Method::kMsgZerocopy] = Said(Verdict::kNever, 1, 0, Reason::kSlower);
  known[16][Method::kMsgZerocopy] = Said(Verdict::kNever, 16, 0, Reason::kSlower);
  dc::Placement place = dc::Place(Method::kMsgZerocopy, 4, known, kGrid);
  EXPECT_FALSE(place.skip) << "unprobed, its readers would get stream's 25 KiB, not never";
  EXPECT_TRUE(place.sizes.empty()) << "nothing bounds it: the whole grid";

  known.clear();
  known[kStreamDepth][Method::kUringSendZc] = Said(Verdict::kThreshold, kStreamDepth, 8000);
  known[1][Method::kUringSendZc] = Said(Verdict::kAlways, 1);
  place = dc::Place(Method::kUringSendZc, 4, known, kGrid);
  EXPECT_FALSE(place.skip) << "unprobed, its readers would get stream's 8000 B, not always";

  // Without a stream class in the calibration (zcal calibrate --depth 1,4)
  // there is no entry to fall back on: the neighbour answers.
  known.erase(kStreamDepth);
  place = dc::Place(Method::kUringSendZc, 4, known, kGrid);
  ASSERT_TRUE(place.skip);
  EXPECT_EQ(*place.skip, "depth 1 is always, and a deeper class pays less per send");
}

TEST(DepthClasses, AStreamAlwaysLeavesTheShallowestClassToBeMeasured) {
  dc::KnownClasses known;
  known[kStreamDepth][Method::kMsgZerocopy] = Said(Verdict::kAlways, kStreamDepth);
  const dc::Placement place = dc::Place(Method::kMsgZerocopy, 1, known, kGrid);
  EXPECT_FALSE(place.skip) << "a shallower class may lose where the stream wins";
  EXPECT_TRUE(place.sizes.empty()) << "the whole grid: nothing bounds it from above";
}

TEST(DepthClasses, WhatHoldsAtEveryDepthIsNotProbedAgain) {
  for (const Reason reason : {Reason::kUnsupported, Reason::kKernelCopied, Reason::kFailed}) {
    dc::KnownClasses known;
    known[kStreamDepth][Method::kUringSendZc] = Said(Verdict::kNever, kStreamDepth, 0, reason);
    const dc::Placement place = dc::Place(Method::kUringSendZc, 4, known, kGrid);
    ASSERT_TRUE(place.skip);
    EXPECT_NE(place.skip->find("at depth stream"), std::string::npos) << *place.skip;
  }
  dc::KnownClasses other;
  other[kStreamDepth][Method::kMsgZerocopy] = Said(Verdict::kThreshold, kStreamDepth, 9000);
  const dc::Placement absent = dc::Place(Method::kUringSendZc, 1, other, kGrid);
  EXPECT_TRUE(absent.skip) << "a method the first class did not measure is not probed";
}

TEST(DepthClasses, AnInconclusiveNeighbourBoundsNothing) {
  dc::KnownClasses known;
  known[kStreamDepth][Method::kMsgZerocopy] = Said(Verdict::kInconclusive, kStreamDepth);
  known[1][Method::kMsgZerocopy] = Said(Verdict::kNever, 1, 0, Reason::kSlower);
  const dc::Placement place = dc::Place(Method::kMsgZerocopy, 4, known, kGrid);
  ASSERT_FALSE(place.skip) << "a shallower never says nothing of a deeper class";
  EXPECT_TRUE(place.sizes.empty());
}

// The budget's split across classes, in calibration order. With fixed
// probes (the discard path) a class takes all but what the later classes'
// coarse grids need, or, when not even the grids fit, a share of the time
// in proportion to them; with probes sized to the time (both grids 0), a
// share by the methods probed.
TEST(DepthClasses, AClassTakesTheTimeLeftButTheLaterClassesCoarseGrids) {
  // 2 s left, its grid 0.8 s, the later classes' 0.6 s: it keeps 1.4 s.
  EXPECT_DOUBLE_EQ(dc::ShareOf(5, 9, 2.0, 0.8, 0.6), 1.4);
  // The last class: no grid after it, all of what is left.
  EXPECT_DOUBLE_EQ(dc::ShareOf(3, 0, 0.7, 0.4, 0.0), 0.7);
}

TEST(DepthClasses, WhereTheCoarseGridsDoNotFitTheTimeIsSharedByThem) {
  // 1 s left for 0.8 s + 1.2 s of grids: 0.4 s, its grid's part.
  EXPECT_DOUBLE_EQ(dc::ShareOf(5, 9, 1.0, 0.8, 1.2), 0.4);
  // Exactly the grids: each its own.
  EXPECT_DOUBLE_EQ(dc::ShareOf(5, 9, 2.0, 0.8, 1.2), 0.8);
}

TEST(DepthClasses, ProbesSizedToTheTimeShareItByTheMethodsProbed) {
  // A TCP path: 3 methods here, 6 after them, 3 s left.
  EXPECT_DOUBLE_EQ(dc::ShareOf(3, 6, 3.0, 0.0, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(dc::ShareOf(1, 0, 3.0, 0.0, 0.0), 3.0);
}

TEST(DepthClasses, AClassThatProbesNothingTakesNoTime) {
  EXPECT_DOUBLE_EQ(dc::ShareOf(0, 6, 3.0, 0.0, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(dc::ShareOf(0, 6, 3.0, 0.8, 0.6), 0.0);
}

}  // namespace

}  // namespace depth_classes_test
