#include "zcal/common/units.h"

#include <gtest/gtest.h>

namespace zcal::common::units_test {
namespace {

using std::chrono::milliseconds;

TEST(Units, SizesUseBinaryLettersAndDecimalBytes) {
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("64K"), 65536u);
  EXPECT_EQ(*ParseSize("64k"), 65536u);
  EXPECT_EQ(*ParseSize("64KiB"), 65536u);
  EXPECT_EQ(*ParseSize("64 KiB"), 65536u);
  EXPECT_EQ(*ParseSize("64kib"), 65536u);
  EXPECT_EQ(*ParseSize("1M"), 1u << 20);
  EXPECT_EQ(*ParseSize("1MiB"), 1u << 20);
  EXPECT_EQ(*ParseSize("1.5MiB"), 3u << 19);
  EXPECT_EQ(*ParseSize("1G"), 1u << 30);
  EXPECT_EQ(*ParseSize("2T"), 2ULL << 40);
  EXPECT_EQ(*ParseSize("10kB"), 10000u);
  EXPECT_EQ(*ParseSize("10KB"), 10000u);
  EXPECT_EQ(*ParseSize("100MB"), 100'000'000u);
  EXPECT_EQ(*ParseSize("2GB"), 2'000'000'000u);
  EXPECT_EQ(*ParseSize(" 7B "), 7u);
}

TEST(Units, RejectsMalformedSizesNamingTheTextAndTheGrammar) {
  for (const char* bad : {"", "-1", "K", "1.5", "0.1K", "1..2", "1e3", "64 K B",
                          "64  K", "64Kb/s", "1X", "99999999999999999999",
                          "18446744073709551615GiB"}) {
    const Result<std::uint64_t> value = ParseSize(bad);
    ASSERT_FALSE(value) << bad;
    EXPECT_EQ(value.error().code, Errc::kInvalidArgument);
    EXPECT_NE(value.error().message.find(std::string("'") + bad + "'"),
              std::string::npos)
        << value.error().message;
  }
  EXPECT_NE(ParseSize("1X").error().message.find("KiB"), std::string::npos);
}

TEST(Units, RatesMeanTheSameBytesAsSizes) {
  // The CLI, the YAML and the CSV must agree on these.
  EXPECT_EQ(*ParseRate("100M"), 104'857'600u);
  EXPECT_EQ(*ParseRate("100M/s"), 104'857'600u);
  EXPECT_EQ(*ParseRate("100MiB/s"), 104'857'600u);
  EXPECT_EQ(*ParseRate("100MB/s"), 100'000'000u);
  EXPECT_EQ(*ParseRate("100MB"), 100'000'000u);
  EXPECT_EQ(*ParseRate("0"), 0u);
  EXPECT_EQ(*ParseRate("10Gbit/s"), 1'250'000'000u);
  EXPECT_EQ(*ParseRate("800Mbps"), 100'000'000u);
  EXPECT_EQ(*ParseRate("8bit/s"), 1u);
  EXPECT_EQ(*ParseRate("1kbit/s"), 125u);
  EXPECT_FALSE(ParseRate("1bit/s"));  // an eighth of a byte
  EXPECT_FALSE(ParseRate("10Gbit"));
  EXPECT_FALSE(ParseRate("fast"));
  EXPECT_NE(ParseRate("1Q/s").error().message.find("Gbit/s"), std::string::npos);
}

TEST(Units, ParsesDurationsWithUnits) {
  EXPECT_EQ(*ParseDuration("30"), milliseconds(30'000));
  EXPECT_EQ(*ParseDuration("0.5"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("5m"), milliseconds(300'000));
  EXPECT_EQ(*ParseDuration("5min"), milliseconds(300'000));
  EXPECT_EQ(*ParseDuration("1.5h"), milliseconds(5'400'000));
  EXPECT_EQ(*ParseDuration("6h"), std::chrono::hours(6));
  EXPECT_EQ(*ParseDuration("1d"), std::chrono::hours(24));
  EXPECT_FALSE(ParseDuration("1w"));
  EXPECT_FALSE(ParseDuration("-5s"));
  EXPECT_FALSE(ParseDuration("s"));
  EXPECT_FALSE(ParseDuration("100000d"));
  EXPECT_NE(ParseDuration("1w").error().message.find("'1w'"), std::string::npos);
}

TEST(Units, FormatsReadBackExactly) {
  EXPECT_EQ(FormatDuration(std::chrono::hours(6)), "6h");
  EXPECT_EQ(FormatDuration(milliseconds(90'000)), "90s");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0s");
  EXPECT_EQ(FormatSize(256 * 1024), "256KiB");
  EXPECT_EQ(FormatSize(1000), "1000B");
  EXPECT_EQ(FormatSize(0), "0B");
  EXPECT_EQ(FormatRate(104'857'600), "100MiB/s");
  for (const std::uint64_t bytes : {0ULL, 1ULL, 1000ULL, 4096ULL, 65535ULL,
                                    3ULL << 30, 5ULL << 40}) {
    EXPECT_EQ(*ParseSize(FormatSize(bytes)), bytes);
    EXPECT_EQ(*ParseRate(FormatRate(bytes)), bytes);
  }
  for (const std::int64_t ms : {0, 1, 999, 1000, 90'000, 3'600'000, 86'400'000}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(milliseconds(ms))), milliseconds(ms));
  }
  EXPECT_EQ(FormatSizeApprox(16384), "16 KiB");
  EXPECT_EQ(FormatSizeApprox(1.5 * 1024 * 1024), "1.5 MiB");
  EXPECT_EQ(FormatSizeApprox(300), "300 B");
}

}  // namespace
}  // namespace zcal::common::units_test
