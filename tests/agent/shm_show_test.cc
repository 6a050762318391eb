// `zcal show`, run as a user would: the table, the JSON, and exit status 1
// with a clear message when there is no usable segment.
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "shm_test_util.h"
#include "test_util.h"
#include "zcal/agent/report/segment_table.h"
#include "zcal/agent/state/state.h"

// This file's names, apart from other test files' (unity builds).
namespace shm_show_test {
namespace {

using zcal::agent::HostDefaultSource;
using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
using zcal::test::Entry;
using zcal::test::MakeWriter;
using zcal::test::PeerEntry;
using zcal::test::Run;
using zcal::test::ScopedName;
using zcal::test::SegmentImage;

class ZcalShow : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("ZCAL_BINARY");
    if (path == nullptr) GTEST_SKIP() << "ZCAL_BINARY is not set (run through meson test)";
    binary_ = path;
  }
  zcal::test::ProcessResult Show(std::vector<std::string> args,
                                 std::vector<std::string> env = {}) {
    args.insert(args.begin(), {binary_, "show"});
    return zcal::test::Run(args, env);
  }
  std::string binary_;
};

std::vector<PublishedEntry> SampleTable() {
  PublishedEntry eth = Entry(ScopeKind::kInterface, 32768);
  eth.interface = "eth0";
  eth.confidence = 0.5;
  PublishedEntry never = Entry(ScopeKind::kLoopback, 0);
  never.verdict = zcal::calibrator::Verdict::kNever;
  never.threshold_bytes.reset();
  never.reason = zcal::calibrator::Reason::kKernelCopied;
  PublishedEntry peer = PeerEntry("10.1.0.0", 16, 16384);
  peer.fingerprint = 0xabcdef;
  PublishedEntry estimated =
      Entry(ScopeKind::kHostDefault, 12288, zcal::calibrator::Method::kUringSendZc);
  estimated.estimated = true;
  return {peer, PeerEntry("2001:db8::", 32, 65536), eth, never, estimated};
}

TEST_F(ZcalShow, MissingSegmentExitsOneWithAHint) {
  ScopedName name("show-missing");
  auto r = Show({"--segment", name.str()});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no segment " + name.str()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("zcal agent"), std::string::npos) << r.err;
}

TEST_F(ZcalShow, IncompatibleSegmentExitsOne) {
  ScopedName name("show-future");
  SegmentImage image(2);
  image.header().abi_major = 2;
  image.WriteTo(name);
  auto r = Show({"--segment", name.str()});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("ABI major version 2"), std::string::npos) << r.err;
}

TEST_F(ZcalShow, CorruptSegmentExitsOne) {
  ScopedName name("show-corrupt");
  std::vector<char> junk(4096, '\x5a');
  SegmentImage::WriteBytes(name, junk.data(), junk.size());
  auto r = Show({"--segment", name.str(), "--json"});
  EXPECT_EQ(r.exit_status, 1);
  EXPECT_NE(r.err.find("not a zcal segment"), std::string::npos) << r.err;
}

TEST_F(ZcalShow, InvalidNameIsAUsageError) {
  auto r = Show({"--segment", "no-slash"});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("is invalid"), std::string::npos) << r.err;
}

TEST_F(ZcalShow, PrintsHeaderAndEveryEntry) {
  ScopedName name("show-table");
  auto writer = MakeWriter(name, 8);
  ASSERT_TRUE(writer->Publish(SampleTable(), true, HostDefaultSource::kEstimated));
  auto r = Show({}, {"ZCAL_SEGMENT=" + name.str()});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const std::string abi = "ABI 1." + std::to_string(ZCAL_ABI_MINOR);
  for (const char* expected :
       {"stale       yes", "entries     5 of 8", abi.c_str(), "SCOPE", "DEPTH", "peer 10.1.0.0/16",
        "peer 2001:db8::/32", "interface eth0", "loopback", "host_default (estimated)",
        "host default estimated from the discard path",
        "kernel_copied", "uring_send_zc", "16384", "0.50", "unknown", "0000000000abcdef",
        "s ago"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  }
}

TEST_F(ZcalShow, PrintsJson) {
  ScopedName name("show-json");
  auto writer = MakeWriter(name, 8);
  ASSERT_TRUE(writer->Publish(SampleTable(), false));
  auto r = Show({"--segment", name.str(), "--json"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["segment"], name.str());
  EXPECT_EQ(doc["abi"]["major"], 1);
  EXPECT_EQ(doc["capacity"], 8);
  EXPECT_EQ(doc["count"], 5);
  EXPECT_EQ(doc["stale"], false);
  EXPECT_EQ(doc["generation"], writer->generation());
  EXPECT_GE(doc["heartbeat_age_seconds"].get<double>(), 0.0);
  const auto& entries = doc["entries"];
  ASSERT_EQ(entries.size(), 5u);
  EXPECT_EQ(entries[0]["scope"], "peer");
  EXPECT_EQ(entries[0]["address"], "10.1.0.0");
  EXPECT_EQ(entries[0]["prefix_len"], 16);
  EXPECT_EQ(entries[0]["threshold_bytes"], 16384);
  EXPECT_TRUE(entries[0]["confidence"].is_null());
  EXPECT_TRUE(entries[0]["reason"].is_null());
  EXPECT_EQ(entries[0]["fingerprint"], "0000000000abcdef");
  EXPECT_EQ(entries[2]["interface"], "eth0");
  EXPECT_DOUBLE_EQ(entries[2]["confidence"].get<double>(), 0.5);
  EXPECT_EQ(entries[3]["verdict"], "never");
  EXPECT_TRUE(entries[3]["threshold_bytes"].is_null());
  EXPECT_EQ(entries[3]["reason"], "kernel_copied");
  EXPECT_EQ(entries[4]["method"], "uring_send_zc");
  EXPECT_GE(entries[4]["age_seconds"].get<double>(), 0.0);
  EXPECT_EQ(entries[4]["estimated"], true);
  EXPECT_EQ(entries[3]["estimated"], false);
  EXPECT_EQ(doc["host_default"]["source"], "unknown") << "published without saying";
  EXPECT_EQ(entries[0]["depth"], "stream");
}

TEST_F(ZcalShow, MarksAnEntryTheApplicationsContradict) {
  ScopedName name("show-contradicted");
  auto writer = MakeWriter(name, 8);
  PublishedEntry flagged = Entry(ScopeKind::kHostDefault, 16384);
  flagged.contradicted = true;
  PublishedEntry nic = Entry(ScopeKind::kInterface, 32768);
  nic.interface = "eth0";
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{flagged, nic}, false));
  auto table = Show({"--segment", name.str()});
  ASSERT_EQ(table.exit_status, 0) << table.err;
  EXPECT_NE(table.out.find("threshold (contradicted)"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("(contradicted)"), table.out.rfind("(contradicted)"))
      << "one entry is flagged\n" << table.out;
  auto json = Show({"--segment", name.str(), "--json"});
  ASSERT_EQ(json.exit_status, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["entries"][0]["contradicted"], true);
  EXPECT_EQ(doc["entries"][1]["contradicted"], false);
}

TEST_F(ZcalShow, WithTheStateSaysWhichMixEachPathWasDecidedFor) {
  ScopedName name("show-decided");
  auto writer = MakeWriter(name, 8);
  ASSERT_TRUE(writer->Publish(SampleTable(), false));
  zcal::agent::AgentState state;
  const zcal::agent::PathId discard = zcal::agent::PathId::Configured("discard");
  state.paths[discard][zcal::calibrator::Method::kMsgZerocopy].published.verdict =
      zcal::calibrator::Verdict::kNever;
  zcal::agent::DecidedFor apps;
  apps.source = zcal::agent::MixSource::kApplications;
  apps.mix = zcal::agent::TrafficMix{3600, 12000, {{6144, 1.0}}, {}};
  state.decided_for[discard] = apps;
  zcal::agent::testing::TempDir dir;
  const std::string file = (dir.path() / "state.json").string();
  ASSERT_TRUE(zcal::agent::SaveState(state, file));
  auto table = Show({"--segment", name.str(), "--state", file});
  ASSERT_EQ(table.exit_status, 0) << table.err;
  EXPECT_NE(table.out.find("decided for"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("discard  applications (3600 s, 12000 sends, 1 size)"),
            std::string::npos)
      << table.out;
  auto json = Show({"--segment", name.str(), "--state", file, "--json"});
  ASSERT_EQ(json.exit_status, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  const auto& d = doc["measured_under"]["decided_for"]["discard"];
  EXPECT_EQ(d["source"], "applications");
  EXPECT_EQ(d["window_seconds"], 3600);
  EXPECT_EQ(d["sends"], 12000);
  EXPECT_EQ(d["bins"][0]["size_bytes"], 6144);
}

TEST_F(ZcalShow, ShowsTheDepthClassOfEachEntry) {
  ScopedName name("show-depth");
  auto writer = MakeWriter(name, 8);
  PublishedEntry one = Entry(ScopeKind::kHostDefault, 65536);
  one.depth = zcal::agent::DepthClass::k1;
  PublishedEntry four = Entry(ScopeKind::kHostDefault, 49152);
  four.depth = zcal::agent::DepthClass::k4;
  ASSERT_TRUE(writer->Publish(
      std::vector<PublishedEntry>{one, four, Entry(ScopeKind::kHostDefault, 24576)}, false));
  auto json = Show({"--segment", name.str(), "--json"});
  ASSERT_EQ(json.exit_status, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  const auto& entries = doc["entries"];
  ASSERT_EQ(entries.size(), 3u);
  // As stored: the stream entry first, then the others in the given order.
  EXPECT_EQ(entries[0]["depth"], "stream");
  EXPECT_EQ(entries[0]["threshold_bytes"], 24576);
  EXPECT_EQ(entries[1]["depth"], "1");
  EXPECT_EQ(entries[1]["threshold_bytes"], 65536);
  EXPECT_EQ(entries[2]["depth"], "4");
  auto text = Show({"--segment", name.str()});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("DEPTH"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("host_default  msg_zerocopy  1       threshold"), std::string::npos)
      << text.out;
}

TEST_F(ZcalShow, SaysWhyThereIsNoHostDefault) {
  ScopedName name("show-no-default");
  auto writer = MakeWriter(name, 8);
  ASSERT_TRUE(writer->Publish(std::vector<PublishedEntry>{}, false,
                              HostDefaultSource::kIommuTranslates));
  auto text = Show({"--segment", name.str()});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("host default none: the NIC's IOMMU translates"), std::string::npos)
      << text.out;
  auto json = Show({"--segment", name.str(), "--json"});
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["host_default"]["source"], "none");
  EXPECT_EQ(doc["host_default"]["reason"], "iommu_translates");
}

// Readers of the segment name its host-default code as the agent names the
// source it wrote (the codes are the enum's: publish/src/shm_encode.cc).
TEST(HostDefaultSourceOf, DecodesEveryCodeTheAgentWritesAndNoOther) {
  std::set<std::string_view> sentences;
  for (const HostDefaultSource source :
       {HostDefaultSource::kUnknown, HostDefaultSource::kPeers, HostDefaultSource::kEstimated,
        HostDefaultSource::kNoPath, HostDefaultSource::kIommuTranslates,
        HostDefaultSource::kIommuUnknown, HostDefaultSource::kDisabled}) {
    EXPECT_EQ(zcal::agent::HostDefaultSourceOf(static_cast<std::uint32_t>(source)), source)
        << static_cast<int>(source);
    EXPECT_TRUE(sentences.insert(zcal::agent::HostDefaultSentence(source)).second)
        << zcal::agent::HostDefaultSentence(source);
  }
  EXPECT_EQ(zcal::agent::HostDefaultSourceOf(7), HostDefaultSource::kUnknown);
  EXPECT_EQ(zcal::agent::HostDefaultSourceOf(0xffffffffu), HostDefaultSource::kUnknown);
}

}  // namespace

}  // namespace shm_show_test
