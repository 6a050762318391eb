// `zcal export --depth` and `zcal exec --depth`, run as a user would
// against a segment with depth classes written with the agent's own
// writer: the class's values where the scope has them, the stream entry
// and a marker where it has not, --strict-depth's refusal, and every bad
// depth refused with one line, exit 2 and nothing written or run.
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "shm_test_util.h"

// This file's names, apart from other test files' (unity builds).
namespace shm_export_depth_test {
namespace {

namespace fs = std::filesystem;
using zcal::agent::DepthClass;
using zcal::agent::PublishedEntry;
using zcal::agent::ScopeKind;
using zcal::calibrator::Method;
using zcal::test::AtDepth;
using zcal::test::Entry;
using zcal::test::LineCount;
using zcal::test::MakeWriter;
using zcal::test::PeerEntry;
using zcal::test::ProcessResult;
using zcal::test::ScopedName;

// The host default's msg_zerocopy at 1, 4 and stream (no 16);
// uring_send_zc at stream only; a peer prefix at stream, 1 and 16 (so
// that class 16 is in the segment, not in the host default's scope).
std::vector<PublishedEntry> Table() {
  return {Entry(ScopeKind::kHostDefault, 24576),
          AtDepth(Entry(ScopeKind::kHostDefault, 65536), DepthClass::k1),
          AtDepth(Entry(ScopeKind::kHostDefault, 49152), DepthClass::k4),
          Entry(ScopeKind::kHostDefault, 32768, Method::kUringSendZc),
          Entry(ScopeKind::kHostDefault, 16384, Method::kUringSendZcFixed),
          PeerEntry("198.18.0.0", 15, 12288),
          AtDepth(PeerEntry("198.18.0.0", 15, 40960), DepthClass::k1),
          AtDepth(PeerEntry("198.18.0.0", 15, 20480), DepthClass::k16)};
}

class ZcalExportDepth : public zcal::test::ZcalCommandTest {
 protected:
  void SetUp() override {
    zcal::test::ZcalCommandTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    writer_ = MakeWriter(name_);
    ASSERT_TRUE(writer_->Publish(Table(), false));
  }
  ProcessResult Zcal(const std::string& command, std::vector<std::string> args) {
    args.insert(args.begin(), {binary_, command, "--segment", name_.str()});
    return zcal::test::Run(args);
  }
  ScopedName name_{"export-depth"};
  std::unique_ptr<zcal::agent::ShmWriter> writer_;
};

TEST_F(ZcalExportDepth, EnvReadsTheClassAndMarksTheMethodsThatFellBack) {
  const std::string file = (dir_ / "rpc.env").string();
  auto r = Zcal("export", {"--format", "env", "--depth", "4", "-o", file});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("zcal export: warning: segment " + name_.str() +
                       " has no depth 4 entry for host_default and "
                       "uring_send_zc,uring_send_zc_fixed: the stream entry answers"),
            std::string::npos)
      << r.err;
  // What a start script tests, read by the shell.
  auto sh = zcal::test::Run(
      {"/bin/sh", "-c",
       ". \"$1\" && echo $ZCAL_DEPTH $ZCAL_MSG_ZEROCOPY_THRESHOLD $ZCAL_MSG_ZEROCOPY_DEPTH "
       "$ZCAL_MSG_ZEROCOPY_DEPTH_FALLBACK $ZCAL_URING_SEND_ZC_THRESHOLD "
       "$ZCAL_URING_SEND_ZC_DEPTH $ZCAL_URING_SEND_ZC_DEPTH_FALLBACK \"[$ZCAL_DEPTH_FALLBACK]\"",
       "sh", file});
  EXPECT_EQ(sh.out, "4 49152 4 0 32768 stream 1 [uring_send_zc,uring_send_zc_fixed]\n") << sh.err;
}

TEST_F(ZcalExportDepth, ANumberTakesItsClassAndTheDefaultIsTheStream) {
  auto eight = zcal::test::EnvLines(Zcal("export", {"--format", "libfabric", "--depth", "8"}).out);
  EXPECT_EQ(eight["FI_TCP_ZEROCOPY_SIZE"], "49152");
  EXPECT_EQ(eight["ZCAL_DEPTH"], "4");
  EXPECT_EQ(eight["ZCAL_DEPTH_FALLBACK"], "''");
  auto two = zcal::test::EnvLines(Zcal("export", {"--format", "libfabric", "--depth", "2"}).out);
  EXPECT_EQ(two["FI_TCP_ZEROCOPY_SIZE"], "65536");
  auto deep = zcal::test::EnvLines(Zcal("export", {"--format", "libfabric", "--depth", "100"}).out);
  EXPECT_EQ(deep["FI_TCP_ZEROCOPY_SIZE"], "24576");
  EXPECT_EQ(deep["ZCAL_DEPTH"], "stream");
  // Without --depth: the format's consumer's class, a stream for libfabric.
  auto plain = Zcal("export", {"--format", "libfabric"});
  EXPECT_EQ(plain.err, "");
  EXPECT_EQ(zcal::test::EnvLines(plain.out)["FI_TCP_ZEROCOPY_SIZE"], "24576");
  EXPECT_EQ(zcal::test::EnvLines(plain.out)["ZCAL_DEPTH"], "stream");
}

TEST_F(ZcalExportDepth, JsonSaysWhichClassAnsweredPerMethod) {
  auto r = Zcal("export", {"--format", "json", "--depth", "16"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& e = doc["export"];
  EXPECT_EQ(e["depth"], "16");
  EXPECT_EQ(e["depth_fallback"], true);
  EXPECT_EQ(e["methods"]["msg_zerocopy"]["threshold_bytes"], 24576);
  EXPECT_EQ(e["methods"]["msg_zerocopy"]["depth"], "stream");
  EXPECT_EQ(e["methods"]["msg_zerocopy"]["depth_fallback"], true);
  auto one = nlohmann::json::parse(Zcal("export", {"--format", "json", "--depth", "1", "--for",
                                                   "198.19.0.1"}).out);
  EXPECT_EQ(one["export"]["methods"]["msg_zerocopy"]["threshold_bytes"], 40960);
  EXPECT_EQ(one["export"]["methods"]["msg_zerocopy"]["scope"], "peer:198.18.0.0/15");
  EXPECT_EQ(one["export"]["methods"]["msg_zerocopy"]["depth_fallback"], false);
}

TEST_F(ZcalExportDepth, StrictDepthRefusesTheStreamEntryInPlaceOfTheClass) {
  const std::string file = (dir_ / "fabric.env").string();
  ExpectRefused(Zcal("export", {"--format", "spdk", "--depth", "16", "--strict-depth", "-o",
                                file}),
                1, "--strict-depth: segment " + name_.str() +
                       " has no depth 16 entry for host_default and msg_zerocopy");
  EXPECT_FALSE(fs::exists(file));
  // With the class present it is no refusal, and a fallback stands in.
  auto ok = Zcal("export", {"--format", "libfabric", "--depth", "4", "--strict-depth"});
  EXPECT_EQ(ok.exit_status, 0) << ok.err;
  EXPECT_EQ(zcal::test::EnvLines(ok.out)["FI_TCP_ZEROCOPY_SIZE"], "49152");
  auto fallback = Zcal("export", {"--format", "libfabric", "--depth", "16", "--strict-depth",
                                  "--fallback", "never"});
  EXPECT_EQ(fallback.exit_status, 0) << fallback.err;
  EXPECT_EQ(zcal::test::EnvLines(fallback.out)["FI_TCP_ZEROCOPY_SIZE"], "-1");
  EXPECT_EQ(zcal::test::EnvLines(fallback.out)["ZCAL_SOURCE"], "fallback");
}

TEST_F(ZcalExportDepth, ExecSetsTheClassesValuesAndRefusesLikeExport) {
  auto r = Zcal("exec", {"--depth", "4", "--", "/bin/sh", "-c",
                         "echo $FI_TCP_ZEROCOPY_SIZE $ZCAL_MSG_ZEROCOPY_THRESHOLD $ZCAL_DEPTH "
                         "$ZCAL_DEPTH_FALLBACK; exit 3"});
  EXPECT_EQ(r.exit_status, 3) << r.err;
  EXPECT_EQ(r.out, "49152 49152 4 uring_send_zc,uring_send_zc_fixed\n");
  EXPECT_NE(r.err.find("zcal exec: warning:"), std::string::npos) << r.err;
  auto strict = Zcal("exec", {"--depth", "1", "--strict-depth", "--format", "libfabric",
                              "--for", "198.18.7.7", "--", "/bin/sh", "-c", "echo ran"});
  EXPECT_EQ(strict.exit_status, 0) << strict.err;
  EXPECT_EQ(strict.out, "ran\n");
  ExpectRefused(Zcal("exec", {"--depth", "16", "--strict-depth", "--format", "libfabric", "--",
                              "/bin/sh", "-c", "echo ran"}),
                1, "has no depth 16 entry");
}

// A class the segment holds for no scope at all, asked on the command
// line, is refused: the agent does not publish it here.
TEST_F(ZcalExportDepth, AClassTheSegmentHoldsNowhereIsRefused) {
  const std::vector<PublishedEntry> two = {
      Entry(ScopeKind::kHostDefault, 24576),
      AtDepth(Entry(ScopeKind::kHostDefault, 65536), DepthClass::k1)};
  ASSERT_TRUE(writer_->Publish(two, false));
  const std::string file = (dir_ / "never.env").string();
  ExpectRefused(Zcal("export", {"--format", "env", "--depth", "4", "-o", file}), 1,
                "--depth 4: segment " + name_.str() +
                    " has no entry of depth 4 for any scope (its classes: 1, stream)");
  EXPECT_FALSE(fs::exists(file)) << "nothing written";
  ExpectRefused(Zcal("exec", {"--depth", "16", "--format", "libfabric", "--", "/bin/sh", "-c",
                              "echo ran"}),
                1, "has no entry of depth 16 for any scope");
  // A number within a class it holds is read; without --depth, stream.
  EXPECT_EQ(Zcal("export", {"--format", "libfabric", "--depth", "2"}).exit_status, 0);
  EXPECT_EQ(Zcal("export", {"--format", "libfabric"}).exit_status, 0);
}

TEST_F(ZcalExportDepth, ABadDepthIsOneLineExitTwoAndNothingWrittenOrRun) {
  const std::string file = (dir_ / "out.env").string();
  for (const std::string bad : {"0", "-1", "x", "129"}) {
    ExpectRefused(Zcal("export", {"--format", "env", "--depth", bad, "-o", file}), 2,
                  "zcal export: --depth: '" + bad + "' ");
    ExpectRefused(Zcal("exec", {"--depth", bad, "--", "/bin/sh", "-c", "echo ran"}), 2,
                  "zcal exec: --depth: '" + bad + "' ");
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

}  // namespace

}  // namespace shm_export_depth_test
