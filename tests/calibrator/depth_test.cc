#include "zcal/calibrator/depth.h"

#include <gtest/gtest.h>

namespace zcal::calibrator::depth_test {
namespace {

using Classes = std::vector<std::uint32_t>;

TEST(Depth, ParsesStreamAndWholeNumbers) {
  EXPECT_EQ(ParseDepth("stream"), kStreamDepth);
  EXPECT_EQ(ParseDepth("1"), 1u);
  EXPECT_EQ(ParseDepth("128"), kMaxDepth);
  EXPECT_EQ(DepthName(kStreamDepth), "stream");
  EXPECT_EQ(DepthName(16), "16");
}

TEST(Depth, RefusesZeroNegativeGarbageAndTooDeepNamingTheText) {
  for (const char* bad : {"0", "-1", "4x", "", " 4", "1.5", "Stream", "129", "99999999999999999999"}) {
    const auto parsed = ParseDepth(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().code, Errc::kInvalidArgument);
    EXPECT_NE(parsed.error().message.find(std::string("'") + bad + "'"), std::string::npos)
        << parsed.error().message;
  }
}

TEST(Depth, ClassListsComeBackInCalibrationOrder) {
  EXPECT_EQ(ParseDepthClasses("stream,16,1,4"), (Classes{1, 4, 16, kStreamDepth}));
  EXPECT_EQ(ParseDepthClasses("4"), (Classes{4}));
  EXPECT_EQ(ParseDepthClasses("stream"), (Classes{kStreamDepth}));
  EXPECT_EQ(DefaultDepthClasses(), (Classes{1, 4, 16, kStreamDepth}));
}

TEST(Depth, ClassListsRefuseDuplicatesEmptiesAndMoreThanEight) {
  EXPECT_FALSE(ParseDepthClasses("1,1"));
  EXPECT_FALSE(ParseDepthClasses("stream,stream"));
  EXPECT_FALSE(ParseDepthClasses(""));
  EXPECT_FALSE(ParseDepthClasses("1,,4"));
  EXPECT_FALSE(ParseDepthClasses("1,4,"));
  EXPECT_TRUE(ParseDepthClasses("1,2,3,4,5,6,7,stream"));
  const auto nine = ParseDepthClasses("1,2,3,4,5,6,7,8,stream");
  ASSERT_FALSE(nine);
  EXPECT_NE(nine.error().message.find("at most 8"), std::string::npos) << nine.error().message;
  EXPECT_FALSE(NormalizeDepthClasses({}));
  EXPECT_FALSE(NormalizeDepthClasses({1, 129}));
}

// The rule libzcal's zcal_depth_class applies to the published classes:
// 1..3 -> 1, 4..15 -> 4, 16..31 -> 16, 32.. -> stream.
TEST(Depth, ADepthBetweenClassesTakesTheClassBelowItAndStreamFrom32) {
  const Classes classes{1, 4, 16, kStreamDepth};
  EXPECT_EQ(ClassOf(0, classes), 1u);
  EXPECT_EQ(ClassOf(1, classes), 1u);
  EXPECT_EQ(ClassOf(3, classes), 1u);
  EXPECT_EQ(ClassOf(4, classes), 4u);
  EXPECT_EQ(ClassOf(15, classes), 4u);
  EXPECT_EQ(ClassOf(16, classes), 16u);
  EXPECT_EQ(ClassOf(31, classes), 16u);
  EXPECT_EQ(ClassOf(kStreamDepthFrom, classes), kStreamDepth);
  EXPECT_EQ(ClassOf(3, Classes{kStreamDepth}), kStreamDepth);
  EXPECT_EQ(ClassOf(3, Classes{}), kStreamDepth);
  EXPECT_EQ(ClassOf(2, Classes{4, 16}), 4u) << "none below: the smallest";
  EXPECT_EQ(ClassOf(100, Classes{4, 16}), 16u) << "no stream class: the deepest";
}

}  // namespace
}  // namespace zcal::calibrator::depth_test
