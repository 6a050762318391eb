// Exports at a depth (--depth, exports[].depth): which class a depth asks
// for, each format's default, the entries read from a segment with depth
// classes (the class's, else the scope's stream entry, said so), what each
// format writes of it, and the configuration's key.
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "shm_test_util.h"
#include "zcal/agent/config/config.h"
#include "zcal/agent/domain/export_formats.h"
#include "zcal/agent/report/export_format.h"
#include "zcal/agent/report/export_select.h"
#include "zcal/zcal.h"

namespace zcal::agent::export_depth_test {
namespace {

using calibrator::Method;
using test::AtDepth;
using test::Entry;
using test::MakeWriter;
using test::PeerEntry;
using test::ScopedName;

// msg_zerocopy of the host default at every class; uring_send_zc at stream
// only; uring_send_zc_fixed at stream and 16; a peer prefix at stream only
// (a class is never taken from a less specific scope).
std::vector<PublishedEntry> DepthTable() {
  return {Entry(ScopeKind::kHostDefault, 24576),
          AtDepth(Entry(ScopeKind::kHostDefault, 65536), DepthClass::k1),
          AtDepth(Entry(ScopeKind::kHostDefault, 49152), DepthClass::k4),
          AtDepth(Entry(ScopeKind::kHostDefault, 32768), DepthClass::k16),
          Entry(ScopeKind::kHostDefault, 32768, Method::kUringSendZc),
          Entry(ScopeKind::kHostDefault, 16384, Method::kUringSendZcFixed),
          AtDepth(Entry(ScopeKind::kHostDefault, 20480, Method::kUringSendZcFixed),
                  DepthClass::k16),
          PeerEntry("198.18.0.0", 15, 12288)};
}

const ExportedMethod& Of(const ExportValues& values, Method method) {
  for (const ExportedMethod& m : values.methods)
    if (m.method == method) return m;
  throw std::runtime_error("method not exported");
}

TEST(ExportDepth, ClassesAndNumbersTakeLibzcalsClass) {
  for (const char* name : {"1", "4", "16", "stream"}) {
    auto depth = ParseExportDepth(name);
    ASSERT_TRUE(depth) << name;
    EXPECT_EQ(DepthClassName(depth->depth_class), name);
    EXPECT_EQ(depth->asked, name);
  }
  // Every number a user may write falls in the class libzcal's guard would
  // answer a connection at that depth with.
  for (std::uint32_t n = 1; n <= 128; ++n) {
    auto depth = ParseExportDepth(std::to_string(n));
    ASSERT_TRUE(depth) << n;
    EXPECT_EQ(static_cast<std::uint16_t>(depth->depth_class), zcal_depth_class(n)) << n;
  }
  EXPECT_EQ(ParseExportDepth("8")->depth_class, DepthClass::k4);
  EXPECT_EQ(ParseExportDepth("31")->depth_class, DepthClass::k16);
  EXPECT_EQ(ParseExportDepth("32")->depth_class, DepthClass::kStream);
}

TEST(ExportDepth, RejectsWhatIsNoDepthNamingTheOption) {
  for (const char* bad : {"0", "-1", "x", "129", "", "4.5", " 4", "STREAM"}) {
    auto depth = ParseExportDepth(bad);
    ASSERT_FALSE(depth) << bad;
    EXPECT_EQ(depth.error().code, Errc::kInvalidArgument);
    EXPECT_TRUE(depth.error().message.starts_with("--depth: '" + std::string(bad) + "' "))
        << depth.error().message;
    EXPECT_EQ(depth.error().message.find('\n'), std::string::npos);
  }
  auto config = ParseExportDepth("0", "exports[2].depth");
  ASSERT_FALSE(config);
  EXPECT_TRUE(config.error().message.starts_with("exports[2].depth: '0' is out of range"))
      << config.error().message;
}

// Each consumer keeps many zerocopy sends of a connection in flight
// (docs/integrations.md): libfabric up to its tx size, SPDK its queue
// depth; env and json are generic.
TEST(ExportDepth, EveryFormatsConsumerSendsAsAStream) {
  for (ExportFormat f : kExportFormats) {
    EXPECT_EQ(ExportFormatDefaultDepth(f), DepthClass::kStream) << ExportFormatName(f);
    const ExportFormat one[] = {f};
    auto plan = PlanExport(one, {});
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->depth, DepthClass::kStream);
    EXPECT_EQ(plan->depth_asked, "");
  }
}

TEST(ExportDepth, PlanTakesTheDepthAsked) {
  const ExportFormat formats[] = {ExportFormat::kEnv, ExportFormat::kLibfabric};
  auto plan = PlanExport(formats, {}, "--methods", *ParseExportDepth("8"));
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->depth, DepthClass::k4);
  EXPECT_EQ(plan->depth_asked, "8");
}

class SelectAtDepth : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(writer_->Publish(DepthTable(), false)); }
  Result<ExportSelection> Select(const std::string& depth, ExportFormat format = ExportFormat::kEnv,
                                 ExportKeyArgs args = {}) {
    args.segment = name_.str();
    const ExportFormat formats[] = {format};
    std::optional<ExportDepth> d;
    if (!depth.empty()) d = *ParseExportDepth(depth);
    auto plan = PlanExport(formats, {}, "--methods", d);
    if (!plan) return tl::unexpected(plan.error());
    warnings_.str("");
    return SelectExport(args, *plan, "zcal export", warnings_, test::NowNs());
  }
  ScopedName name_{"export-depth"};
  std::unique_ptr<ShmWriter> writer_ = MakeWriter(name_);
  std::ostringstream warnings_;
};

TEST_F(SelectAtDepth, AClassPresentAnswersWithItsEntry) {
  auto s = Select("4");
  ASSERT_TRUE(s) << s.error().message;
  const ExportedMethod& zc = Of(s->values, Method::kMsgZerocopy);
  EXPECT_EQ(zc.threshold_bytes, 49152u);
  EXPECT_EQ(zc.depth, DepthClass::k4);
  EXPECT_FALSE(zc.depth_fallback);
  EXPECT_EQ(zc.scope, "host_default");
  EXPECT_EQ(s->values.depth, DepthClass::k4);
}

TEST_F(SelectAtDepth, AClassAbsentTakesTheStreamEntryAndSaysSo) {
  auto s = Select("4");
  ASSERT_TRUE(s) << s.error().message;
  const ExportedMethod& uring = Of(s->values, Method::kUringSendZc);
  EXPECT_EQ(uring.threshold_bytes, 32768u);
  EXPECT_EQ(uring.depth, DepthClass::kStream);
  EXPECT_TRUE(uring.depth_fallback);
  EXPECT_EQ(uring.source, ExportSource::kSegment);
  EXPECT_EQ(s->values.DepthFallbackNames(), "uring_send_zc,uring_send_zc_fixed");
  EXPECT_NE(warnings_.str().find("zcal export: warning: segment " + name_.str() +
                                 " has no depth 4 entry for host_default and "
                                 "uring_send_zc,uring_send_zc_fixed: the stream entry answers"),
            std::string::npos)
      << warnings_.str();
}

TEST_F(SelectAtDepth, ANumberReadsItsClass) {
  auto s = Select("20");  // 16..31: class 16
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(Of(s->values, Method::kMsgZerocopy).threshold_bytes, 32768u);
  EXPECT_EQ(Of(s->values, Method::kUringSendZcFixed).threshold_bytes, 20480u);
  EXPECT_FALSE(Of(s->values, Method::kUringSendZcFixed).depth_fallback);
  EXPECT_EQ(s->values.depth_asked, "20");
  auto one = Select("3");  // 1..3: class 1
  ASSERT_TRUE(one);
  EXPECT_EQ(Of(one->values, Method::kMsgZerocopy).threshold_bytes, 65536u);
  auto stream = Select("64");
  ASSERT_TRUE(stream);
  EXPECT_EQ(Of(stream->values, Method::kMsgZerocopy).threshold_bytes, 24576u);
  EXPECT_EQ(stream->values.DepthFallbackNames(), "");
  EXPECT_EQ(warnings_.str(), "");
}

TEST_F(SelectAtDepth, WithoutADepthTheStreamEntriesAnswerAsBefore) {
  auto s = Select("");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(Of(s->values, Method::kMsgZerocopy).threshold_bytes, 24576u);
  EXPECT_EQ(s->values.depth, DepthClass::kStream);
  EXPECT_EQ(s->values.DepthFallbackNames(), "");
  EXPECT_EQ(warnings_.str(), "");
}

TEST_F(SelectAtDepth, AMoreSpecificScopeWithoutTheClassAnswersWithItsStreamEntry) {
  ExportKeyArgs args;
  args.for_address = "198.18.3.4";
  auto s = Select("1", ExportFormat::kLibfabric, args);
  ASSERT_TRUE(s) << s.error().message;
  const ExportedMethod& zc = Of(s->values, Method::kMsgZerocopy);
  EXPECT_EQ(zc.threshold_bytes, 12288u);
  EXPECT_EQ(zc.scope, "peer:198.18.0.0/15");
  EXPECT_TRUE(zc.depth_fallback);
}

TEST_F(SelectAtDepth, StrictDepthRefusesARequiredMethodWithoutTheClass) {
  ExportKeyArgs args;
  args.for_address = "198.18.3.4";
  args.strict_depth = true;
  auto s = Select("1", ExportFormat::kLibfabric, args);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, Errc::kNotFound);
  EXPECT_NE(s.error().message.find("--strict-depth: segment " + name_.str() +
                                   " has no depth 1 entry for 198.18.3.4 and msg_zerocopy"),
            std::string::npos)
      << s.error().message;
  // The class present: strict changes nothing.
  args.for_address.clear();
  auto ok = Select("1", ExportFormat::kLibfabric, args);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(Of(ok->values, Method::kMsgZerocopy).threshold_bytes, 65536u);
}

TEST_F(SelectAtDepth, StrictDepthMarksEnvsOtherMethodsOrTakesTheFallback) {
  ExportKeyArgs args;
  args.strict_depth = true;
  auto s = Select("4", ExportFormat::kEnv, args);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(Of(s->values, Method::kMsgZerocopy).threshold_bytes, 49152u);
  EXPECT_TRUE(Of(s->values, Method::kUringSendZc).missing());
  EXPECT_EQ(Of(s->values, Method::kUringSendZc).why, "no_depth_entry");
  EXPECT_EQ(s->values.MissingNames(), "uring_send_zc,uring_send_zc_fixed");
  EXPECT_EQ(s->values.DepthFallbackNames(), "");
  args.fallback = "never";
  auto fb = Select("4", ExportFormat::kEnv, args);
  ASSERT_TRUE(fb) << fb.error().message;
  EXPECT_TRUE(Of(fb->values, Method::kUringSendZc).fallback());
  EXPECT_EQ(Of(fb->values, Method::kUringSendZc).why, "no_depth_entry");
}

TEST_F(SelectAtDepth, EnvSaysTheDepthAndWhichMethodsFellBack) {
  auto s = Select("8");
  ASSERT_TRUE(s) << s.error().message;
  auto text = FormatExport(ExportFormat::kEnv, s->values, s->show);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_NE(text->find(", depth 8 (class 4), stream entry for uring_send_zc,uring_send_zc_fixed"),
            std::string::npos)
      << *text;
  auto vars = test::EnvLines(*text);
  EXPECT_EQ(vars["ZCAL_DEPTH"], "4");
  EXPECT_EQ(vars["ZCAL_DEPTH_FALLBACK"], "uring_send_zc,uring_send_zc_fixed");
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_THRESHOLD"], "49152");
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_DEPTH"], "4");
  EXPECT_EQ(vars["ZCAL_MSG_ZEROCOPY_DEPTH_FALLBACK"], "0");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_DEPTH"], "stream");
  EXPECT_EQ(vars["ZCAL_URING_SEND_ZC_DEPTH_FALLBACK"], "1");
  auto fabric = test::EnvLines(*FormatExport(ExportFormat::kLibfabric, s->values));
  EXPECT_EQ(fabric["FI_TCP_ZEROCOPY_SIZE"], "49152");
  EXPECT_EQ(fabric["ZCAL_DEPTH"], "4");
  EXPECT_EQ(fabric["ZCAL_DEPTH_FALLBACK"], "uring_send_zc,uring_send_zc_fixed");
}

TEST_F(SelectAtDepth, JsonHasTheDepthAndTheFallBackPerMethod) {
  auto s = Select("16", ExportFormat::kJson);
  ASSERT_TRUE(s) << s.error().message;
  auto text = FormatExport(ExportFormat::kJson, s->values, s->show);
  ASSERT_TRUE(text) << text.error().message;
  const auto doc = nlohmann::json::parse(*text);
  const auto& e = doc["export"];
  EXPECT_EQ(e["depth"], "16");
  EXPECT_EQ(e["depth_fallback"], true);
  EXPECT_EQ(e["methods"]["msg_zerocopy"]["depth"], "16");
  EXPECT_EQ(e["methods"]["msg_zerocopy"]["depth_fallback"], false);
  EXPECT_EQ(e["methods"]["msg_zerocopy"]["threshold_bytes"], 32768);
  EXPECT_EQ(e["methods"]["uring_send_zc"]["depth"], "stream");
  EXPECT_EQ(e["methods"]["uring_send_zc"]["depth_fallback"], true);
  auto stream = Select("stream", ExportFormat::kJson);
  ASSERT_TRUE(stream);
  const auto sdoc = nlohmann::json::parse(*FormatExport(ExportFormat::kJson, stream->values,
                                                        stream->show));
  EXPECT_EQ(sdoc["export"]["depth"], "stream");
  EXPECT_EQ(sdoc["export"]["depth_fallback"], false);
}

TEST(ExportDepthConfig, DepthAndStrictDepthAreRead) {
  const Result<Config> config = ParseConfig(
      "exports:\n"
      "  - {format: libfabric, path: /tmp/zcal-a.env, for: 198.18.0.2, depth: 8}\n"
      "  - {format: json, path: /tmp/zcal-b.json, scope: host_default, depth: stream,\n"
      "     strict_depth: true}\n"
      "  - {format: env, path: /tmp/zcal-c.env, scope: host_default}\n",
      "depth.yaml");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->exports.size(), 3u);
  ASSERT_TRUE(config->exports[0].depth);
  EXPECT_EQ(config->exports[0].depth->depth_class, DepthClass::k4);
  EXPECT_EQ(config->exports[0].depth->asked, "8");
  EXPECT_FALSE(config->exports[0].strict_depth);
  ASSERT_TRUE(config->exports[1].depth);
  EXPECT_EQ(config->exports[1].depth->depth_class, DepthClass::kStream);
  EXPECT_TRUE(config->exports[1].strict_depth);
  EXPECT_FALSE(config->exports[2].depth) << "no depth: the format's default";
}

TEST(ExportDepthConfig, ABadDepthIsOneLineAtItsPosition) {
  for (const char* bad : {"0", "-1", "x", "129"}) {
    const Result<Config> config = ParseConfig(
        std::string("exports:\n  - {format: env, path: /tmp/zcal.env, scope: loopback, depth: ") +
            bad + "}\n",
        "bad.yaml");
    ASSERT_FALSE(config) << bad;
    EXPECT_EQ(config.error().code, Errc::kParse);
    EXPECT_NE(config.error().message.find("bad.yaml:2:"), std::string::npos)
        << config.error().message;
    EXPECT_NE(config.error().message.find("exports[0].depth: '" + std::string(bad) + "'"),
              std::string::npos)
        << config.error().message;
    EXPECT_EQ(config.error().message.find('\n'), std::string::npos) << config.error().message;
  }
}

}  // namespace
}  // namespace zcal::agent::export_depth_test
