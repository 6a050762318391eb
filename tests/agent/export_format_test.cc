// The text `zcal export` prints per format, from the values for one key:
// what sh, systemd, libfabric and SPDK read from it.
#include "zcal/agent/report/export_format.h"

#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace zcal::agent::export_format_test {
namespace {

ExportedMethod Method(calibrator::Method method, calibrator::Verdict verdict, std::uint64_t bytes,
                      std::string scope = "host_default") {
  ExportedMethod m;
  m.method = method;
  m.verdict = verdict;
  m.threshold_bytes = bytes;
  m.scope = std::move(scope);
  m.measured_at_ns = 1'700'000'000'000'000'000ull;
  return m;
}

ExportValues Values() {
  ExportValues v;
  v.segment = "/zcal";
  v.key = "198.18.0.2";
  v.methods = {Method(calibrator::Method::kMsgZerocopy, calibrator::Verdict::kThreshold, 16384, "peer:198.18.0.0/15"),
               Method(calibrator::Method::kUringSendZc, calibrator::Verdict::kNever, 0),
               Method(calibrator::Method::kUringSendZcFixed, calibrator::Verdict::kAlways, 0)};
  v.methods[2].estimated = true;
  return v;
}

// NAME=value lines, comments skipped.
std::map<std::string, std::string> Lines(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    EXPECT_NE(eq, std::string::npos) << line;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

TEST(ExportFormat, ParsesTheFiveFormatsAndNamesThemOnAnUnknownOne) {
  for (const char* name : {"env", "json", "libfabric", "spdk", "spdk-rpc"}) {
    auto f = ParseExportFormat(name);
    ASSERT_TRUE(f) << name;
    EXPECT_EQ(ExportFormatName(*f), name);
  }
  auto bad = ParseExportFormat("yaml");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("\"yaml\""), std::string::npos);
  EXPECT_NE(bad.error().message.find("spdk-rpc"), std::string::npos);
}

TEST(ExportFormat, FallbackIsNeverAlwaysOrASize) {
  EXPECT_EQ(ParseExportFallback("never")->verdict, calibrator::Verdict::kNever);
  EXPECT_EQ(ParseExportFallback("always")->verdict, calibrator::Verdict::kAlways);
  auto bytes = ParseExportFallback("16KiB");
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->verdict, calibrator::Verdict::kThreshold);
  EXPECT_EQ(bytes->threshold_bytes, 16384u);
  EXPECT_EQ(ParseExportFallback("4096")->threshold_bytes, 4096u);
  auto bad = ParseExportFallback("sometimes");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("\"sometimes\""), std::string::npos);
}

TEST(ExportFormat, EnvSpellsOutNeverAndAlwaysWithScopeEstimateAndTime) {
  auto text = FormatExport(ExportFormat::kEnv, Values());
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(text->rfind("# zcal export --format env", 0), 0u) << *text;
  auto vars = Lines(*text);
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_THRESHOLD"], "16384");
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_SCOPE"], "peer:198.18.0.0/15");
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_ESTIMATED"], "0");
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_MEASURED_AT"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_THRESHOLD"], "never");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_FIXED_THRESHOLD"], "always");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_FIXED_ESTIMATED"], "1");
  EXPECT_EQ(vars["ZCAL_SOURCE"], "segment");
  EXPECT_EQ(vars["ZCAL_STALE"], "0");
  EXPECT_EQ(vars["ZCAL_SEGMENT"], "/zcal");
}

TEST(ExportFormat, EnvMarksFallbackValues) {
  ExportValues v = Values();
  v.methods[1].scope = "fallback";
  v.methods[1].source = ExportSource::kFallback;
  v.methods[1].why = "no_entry";
  v.methods[1].measured_at_ns = 0;
  v.stale = true;
  auto vars = Lines(*FormatExport(ExportFormat::kEnv, v));
  EXPECT_EQ(vars["ZCAL_SOURCE"], "fallback");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_SCOPE"], "fallback");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_STATUS"], "fallback");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_REASON"], "no_entry");
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_STATUS"], "segment");
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_REASON"], "''");
  EXPECT_EQ(vars["ZCAL_MISSING"], "''");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_MEASURED_AT"], "none");
  EXPECT_EQ(vars["ZCAL_STALE"], "1");
}

TEST(ExportFormat, EnvQuotesWhatShAndSystemdWouldReadDifferently) {
  const std::string text = EnvFileText({{"A", "plain:1/2"}, {"B", "two words"}, {"C", "it's"},
                                        {"D", ""}},
                                       "comment");
  EXPECT_EQ(text, "# comment\nA=plain:1/2\nB='two words'\nC='it?s'\nD=''\n");
}

TEST(ExportFormat, LibfabricUsesMinusOneForNeverAndZeroForAlways) {
  ExportValues v = Values();
  EXPECT_EQ(Lines(*FormatExport(ExportFormat::kLibfabric, v))["FI_TCP_ZEROCOPY_SIZE"], "16384");
  v.methods[0].verdict = calibrator::Verdict::kNever;
  auto vars = Lines(*FormatExport(ExportFormat::kLibfabric, v));
  EXPECT_EQ(vars["FI_TCP_ZEROCOPY_SIZE"], "-1");
  EXPECT_EQ(vars["FI_NET_ZEROCOPY_SIZE"], "-1");
  v.methods[0].verdict = calibrator::Verdict::kAlways;
  vars = Lines(*FormatExport(ExportFormat::kLibfabric, v));
  EXPECT_EQ(vars["FI_TCP_ZEROCOPY_SIZE"], "0");
  EXPECT_EQ(vars["FI_NET_ZEROCOPY_SIZE"], "0");
  EXPECT_EQ(vars["ZCAL_SOURCE"], "segment");
}

TEST(ExportFormat, SpdkConfigTurnsFlagsOffForNeverAndSetsTheThresholdOtherwise) {
  auto text = FormatExport(ExportFormat::kSpdk, Values());
  ASSERT_TRUE(text) << text.error().message;
  const auto doc = nlohmann::json::parse(*text);
  EXPECT_EQ(doc["subsystem"], "sock");
  ASSERT_EQ(doc["config"].size(), 2u);
  const auto& posix = doc["config"][0];
  EXPECT_EQ(posix["method"], "sock_impl_set_options");
  EXPECT_EQ(posix["params"]["impl_name"], "posix");
  EXPECT_EQ(posix["params"]["enable_zerocopy_send_server"], true);
  EXPECT_EQ(posix["params"]["enable_zerocopy_send_client"], true);
  EXPECT_EQ(posix["params"]["zerocopy_threshold"], 16384);
  // SPDK's uring module sends with MSG_ZEROCOPY too: msg_zerocopy's value,
  // whatever uring_send_zc's is.
  const auto& uring = doc["config"][1]["params"];
  EXPECT_EQ(uring["impl_name"], "uring");
  EXPECT_EQ(uring["enable_zerocopy_send_server"], true);
  EXPECT_EQ(uring["zerocopy_threshold"], 16384);
  ExportValues never = Values();
  never.methods[0].verdict = calibrator::Verdict::kNever;
  const auto off = nlohmann::json::parse(*FormatExport(ExportFormat::kSpdk, never));
  for (const auto& call : off["config"]) {
    EXPECT_EQ(call["params"]["enable_zerocopy_send_server"], false);
    EXPECT_EQ(call["params"]["enable_zerocopy_send_client"], false);
    EXPECT_FALSE(call["params"].contains("zerocopy_threshold"));
  }
}

TEST(ExportFormat, SpdkRpcIsOneRequestPerModule) {
  ExportValues v = Values();
  v.methods[0].verdict = calibrator::Verdict::kAlways;
  auto text = FormatExport(ExportFormat::kSpdkRpc, v);
  ASSERT_TRUE(text);
  std::istringstream in(*text);
  std::string line;
  int id = 0;
  for (const char* impl : {"posix", "uring"}) {
    ASSERT_TRUE(std::getline(in, line));
    const auto req = nlohmann::json::parse(line);
    EXPECT_EQ(req["jsonrpc"], "2.0");
    EXPECT_EQ(req["method"], "sock_impl_set_options");
    EXPECT_EQ(req["id"], ++id);
    EXPECT_EQ(req["params"]["impl_name"], impl);
  }
  EXPECT_FALSE(std::getline(in, line));
  EXPECT_EQ(nlohmann::json::parse(text->substr(text->find('\n') + 1))["params"]["zerocopy_threshold"],
            0);
}

TEST(ExportFormat, JsonIsTheShowDocumentWithTheKeysValues) {
  const nlohmann::json show = {{"segment", "/zcal"}, {"entries", nlohmann::json::array()}};
  const auto doc = nlohmann::json::parse(*FormatExport(ExportFormat::kJson, Values(), show));
  EXPECT_EQ(doc["segment"], "/zcal");
  EXPECT_TRUE(doc["entries"].is_array());
  const auto& e = doc["export"];
  EXPECT_EQ(e["key"], "198.18.0.2");
  EXPECT_EQ(e["source"], "segment");
  EXPECT_EQ(e["methods"]["msg_zerocopy"]["threshold_bytes"], 16384);
  EXPECT_EQ(e["methods"]["msg_zerocopy"]["scope"], "peer:198.18.0.0/15");
  EXPECT_EQ(e["methods"]["uring_send_zc"]["verdict"], "never");
  EXPECT_TRUE(e["methods"]["uring_send_zc"]["threshold_bytes"].is_null());
}

ExportValues WithMissing(std::size_t index, std::string why) {
  ExportValues v = Values();
  ExportedMethod& m = v.methods[index];
  m.source = ExportSource::kMissing;
  m.scope = "none";
  m.why = std::move(why);
  m.verdict = {};
  m.threshold_bytes = 0;
  m.estimated = false;
  m.measured_at_ns = 0;
  return v;
}

TEST(ExportFormat, EnvMarksAMissingMethodWithAnEmptyThresholdAndItsReason) {
  ExportValues v = WithMissing(2, "inconclusive:noisy");
  v.methods[1] = WithMissing(1, "no_entry").methods[1];
  auto text = FormatExport(ExportFormat::kEnv, v);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_NE(text->find(", missing uring_send_zc,uring_send_zc_fixed\n"), std::string::npos) << *text;
  auto vars = Lines(*text);
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_FIXED_THRESHOLD"], "''");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_FIXED_STATUS"], "missing");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_FIXED_REASON"], "inconclusive:noisy");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_FIXED_SCOPE"], "none");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_FIXED_MEASURED_AT"], "none");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_REASON"], "no_entry");
  EXPECT_EQ(vars["ZCAL_MISSING"], "uring_send_zc,uring_send_zc_fixed");
  EXPECT_EQ(vars["ZCAL_SOURCE"], "segment") << "the values given all come from the segment";
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_THRESHOLD"], "16384");
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_STATUS"], "segment");
}

TEST(ExportFormat, OnlyEnvWritesAMissingMethod) {
  const ExportValues v = WithMissing(0, "no_entry");
  for (ExportFormat f : {ExportFormat::kLibfabric, ExportFormat::kSpdk, ExportFormat::kSpdkRpc,
                         ExportFormat::kJson}) {
    auto text = FormatExport(f, v);
    ASSERT_FALSE(text) << ExportFormatName(f) << ": " << *text;
    EXPECT_EQ(text.error().code, Errc::kNotFound);
    EXPECT_NE(text.error().message.find("msg_zerocopy, which " + std::string(ExportFormatName(f))),
              std::string::npos)
        << text.error().message;
  }
  EXPECT_FALSE(FormatExport(ExportFormat::kJson, WithMissing(2, "no_entry")));
  EXPECT_TRUE(FormatExport(ExportFormat::kLibfabric, WithMissing(2, "no_entry")))
      << "libfabric does not read uring_send_zc_fixed";
  EXPECT_TRUE(FormatExport(ExportFormat::kEnv, v));
}

TEST(ExportFormat, AFormatWithoutItsMethodFails) {
  ExportValues v = Values();
  v.methods.erase(v.methods.begin());
  EXPECT_FALSE(FormatExport(ExportFormat::kSpdk, v));
  EXPECT_FALSE(FormatExport(ExportFormat::kLibfabric, v));
  EXPECT_FALSE(ExportVariables(ExportFormat::kSpdk, Values()));
}

using M = calibrator::Method;
using Methods = std::vector<M>;

ExportPlan Plan(std::vector<ExportFormat> formats, Methods named = {}) {
  auto plan = PlanExport(formats, named);
  EXPECT_TRUE(plan) << plan.error().message;
  return plan ? *plan : ExportPlan{};
}

TEST(ExportPlan, EachFormatReadsWhatItsConsumerReads) {
  const Methods all = {M::kMsgZerocopy, M::kUringSendZc, M::kUringSendZcFixed};
  const Methods msg = {M::kMsgZerocopy};
  EXPECT_EQ(Plan({ExportFormat::kEnv}).methods, all);
  EXPECT_EQ(Plan({ExportFormat::kEnv}).required, Methods{}) << "env marks, never refuses";
  EXPECT_EQ(Plan({ExportFormat::kJson}).required, all);
  for (ExportFormat f : {ExportFormat::kLibfabric, ExportFormat::kSpdk, ExportFormat::kSpdkRpc}) {
    EXPECT_EQ(Plan({f}).methods, msg) << ExportFormatName(f);
    EXPECT_EQ(Plan({f}).required, msg) << ExportFormatName(f);
  }
  // zcal exec's default: the variables of both, libfabric's method required.
  const ExportPlan exec = Plan({ExportFormat::kEnv, ExportFormat::kLibfabric});
  EXPECT_EQ(exec.methods, all);
  EXPECT_EQ(exec.required, msg);
}

TEST(ExportPlan, NamedMethodsAreTheOnesWrittenAndAllRequired) {
  const Methods uring = {M::kUringSendZc};
  EXPECT_EQ(Plan({ExportFormat::kEnv}, uring).methods, uring);
  EXPECT_EQ(Plan({ExportFormat::kEnv}, uring).required, uring);
  const Methods two = {M::kMsgZerocopy, M::kUringSendZcFixed};
  const ExportPlan both = Plan({ExportFormat::kEnv, ExportFormat::kLibfabric}, two);
  EXPECT_EQ(both.methods, two);
  EXPECT_EQ(both.required, two);
}

TEST(ExportPlan, RefusesMethodsTheFormatsDoNotWrite) {
  const ExportFormat fabric[] = {ExportFormat::kLibfabric};
  const Methods uring = {M::kUringSendZc};
  auto left_out = PlanExport(fabric, uring);
  ASSERT_FALSE(left_out);
  EXPECT_EQ(left_out.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(left_out.error().message,
            "--methods uring_send_zc leaves out what format libfabric writes (msg_zerocopy); "
            "name it");
  const Methods extra = {M::kMsgZerocopy, M::kUringSendZc};
  auto unwritten = PlanExport(fabric, extra, "methods");
  ASSERT_FALSE(unwritten);
  EXPECT_EQ(unwritten.error().message,
            "methods names uring_send_zc, which format libfabric does not write (only env and "
            "json write every method); leave it out");
  const ExportFormat exec[] = {ExportFormat::kEnv, ExportFormat::kLibfabric};
  auto nothing_for_fabric = PlanExport(exec, uring);
  ASSERT_FALSE(nothing_for_fabric) << "libfabric would set nothing";
  EXPECT_NE(nothing_for_fabric.error().message.find("name it, or leave that format out"),
            std::string::npos)
      << nothing_for_fabric.error().message;
}

TEST(ExportMethods, ParsesACommaSeparatedListInCanonicalOrder) {
  auto parsed = ParseExportMethods("uring_send_zc_fixed,msg_zerocopy");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, (Methods{M::kMsgZerocopy, M::kUringSendZcFixed}));
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"", "--methods names no method"},
           {"copy", "--methods: \"copy\" is not a zerocopy method"},
           {"msg_zerocopy,tcp", "--methods: \"tcp\" is not a zerocopy method"},
           {"msg_zerocopy,", "--methods: \"\" is not a zerocopy method"},
           {"msg_zerocopy,msg_zerocopy", "names msg_zerocopy twice"}}) {
    auto bad = ParseExportMethods(text);
    ASSERT_FALSE(bad) << text;
    EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
    EXPECT_NE(bad.error().message.find(says), std::string::npos) << bad.error().message;
    if (says.find("twice") == std::string::npos) {
      EXPECT_NE(bad.error().message.find("msg_zerocopy, uring_send_zc and uring_send_zc_fixed"),
                std::string::npos)
          << "names the methods: " << bad.error().message;
    }
  }
}

}  // namespace
}  // namespace zcal::agent::export_format_test
