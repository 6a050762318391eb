// A calibration of a peer path: one session of a real PeerSink on loopback,
// the grant respected by the client, and each refusal with its code.
#include <chrono>
#include <future>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>

#include "zcal/probes/calibration/calibration.h"
#include "zcal/probes/peer/peer_client.h"
#include "zcal/probes/peer/peer_sink.h"

namespace zcal::probes::peer_calibration_test {
namespace {

using namespace std::chrono_literals;
using calibrator::Method;

peer::PeerKey TheKey() { return {"fleet-1", std::vector<std::uint8_t>(32, 0x11)}; }

std::unique_ptr<PeerSink> StartKeyedSink(PeerSinkOptions options = {}) {
  peer::KeyRing ring;
  ring.keys.push_back(TheKey());
  options.keys = ring;
  auto sink = PeerSink::Start(options);
  EXPECT_TRUE(sink) << (sink ? "" : sink.error().message);
  return sink ? std::move(*sink) : nullptr;
}

CalibrationOptions PeerOptions(const PeerSink& sink) {
  CalibrationOptions o;
  o.target = Target::Peer(sink.endpoint());
  // The copying methods: on loopback the zerocopy ones end early as
  // kernel_copied, and these tests are about the session.
  o.methods = {Method::kCopy, Method::kUringSend};
  o.min_size = 4096;
  o.max_size = 65536;
  o.budget_seconds = 1.5;
  o.peer_key = TheKey();
  return o;
}

std::uint64_t BytesSent(const CalibrationReport& report) {
  return std::accumulate(report.samples.begin(), report.samples.end(), std::uint64_t{0},
                         [](std::uint64_t sum, const calibrator::Sample& s) { return sum + s.bytes; });
}

TEST(PeerCalibration, IsOneServedSessionWhoseBytesTheSinkReceives) {
  auto sink = StartKeyedSink();
  ASSERT_TRUE(sink);
  auto report = RunCalibration(PeerOptions(*sink));
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_GT(report->probes_run, 2U);
  ASSERT_TRUE(sink->WaitFor(
      [](const PeerSinkStats& s) { return s.Count(SinkOutcome::kServed) == 1; }, 3000ms));
  const PeerSinkStats s = sink->Stats();
  EXPECT_EQ(s.Count(SinkOutcome::kLimit), 0U);
  EXPECT_EQ(s.max_sessions_seen, 1U);
  const std::uint64_t sent = BytesSent(*report);
  EXPECT_GT(sent, 0U);
  // Every probe's connection is drained to its end before the next opens;
  // only the last one's tail may be cut when the session closes.
  EXPECT_LE(s.bytes_received, sent);
  EXPECT_GE(static_cast<double>(s.bytes_received), 0.5 * static_cast<double>(sent));
}

TEST(PeerCalibration, StaysWithinTheBytesTheSinkGrants) {
  PeerSinkOptions options;
  options.max_session_bytes = 16ULL << 20;
  auto sink = StartKeyedSink(options);
  ASSERT_TRUE(sink);
  CalibrationOptions o = PeerOptions(*sink);
  o.budget_seconds = 3;
  auto report = RunCalibration(o);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_LE(BytesSent(*report), options.max_session_bytes);
  // Shared out over the probes, not spent by the first.
  EXPECT_GT(report->probes_run, 4U);
  ASSERT_TRUE(sink->WaitFor(
      [](const PeerSinkStats& s) { return s.Count(SinkOutcome::kServed) == 1; }, 3000ms));
  EXPECT_EQ(sink->Stats().Count(SinkOutcome::kLimit), 0U);  // never cut by the sink
}

TEST(PeerCalibration, ABusySinkIsErrcBusy) {
  auto sink = StartKeyedSink();
  ASSERT_TRUE(sink);
  auto held = PeerSession::Open(sink->endpoint(), TheKey(), {}, 2000ms);
  ASSERT_TRUE(held);
  auto report = RunCalibration(PeerOptions(*sink));
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, Errc::kBusy);
  EXPECT_EQ(report.error().peer, PeerFailure::kBusy);
  EXPECT_NE(report.error().message.find("busy"), std::string::npos) << report.error().message;
}

TEST(PeerCalibration, AWrongKeyIsErrcPermission) {
  auto sink = StartKeyedSink();
  ASSERT_TRUE(sink);
  CalibrationOptions o = PeerOptions(*sink);
  o.peer_key = peer::PeerKey{"fleet-1", std::vector<std::uint8_t>(32, 0x22)};
  auto report = RunCalibration(o);
  ASSERT_FALSE(report);
  EXPECT_EQ(report.error().code, Errc::kPermission);
  EXPECT_EQ(report.error().peer, PeerFailure::kAuthFailed);
}

TEST(PeerCalibration, ARateCappedSinkWantsTheCallersRateAndGetsIt) {
  PeerSinkOptions options;
  options.max_bytes_per_second = 64ULL << 20;
  auto sink = StartKeyedSink(options);
  ASSERT_TRUE(sink);
  CalibrationOptions o = PeerOptions(*sink);
  auto refused = RunCalibration(o);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kInvalidArgument);
  EXPECT_EQ(refused.error().peer, PeerFailure::kOverLimit);
  EXPECT_NE(refused.error().message.find("over_limit"), std::string::npos);
  o.max_bytes_per_second = 32ULL << 20;
  auto report = RunCalibration(o);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_TRUE(sink->WaitFor(
      [](const PeerSinkStats& s) { return s.Count(SinkOutcome::kServed) == 1; }, 3000ms));
  // over_limit counted once (the refusal); the capped session never cut.
  EXPECT_EQ(sink->Stats().Count(SinkOutcome::kLimit), 1U);
}

TEST(PeerCalibration, NoSinkThereIsErrcFailedNamingTheAddress) {
  auto sink = StartKeyedSink();
  ASSERT_TRUE(sink);
  CalibrationOptions o = PeerOptions(*sink);
  sink.reset();  // the port is closed now
  auto report = RunCalibration(o);
  ASSERT_FALSE(report);
  // kFailed, as the session said: the agent counts it as unreachable.
  EXPECT_EQ(report.error().code, Errc::kFailed);
  EXPECT_EQ(report.error().peer, PeerFailure::kUnreachable);
  EXPECT_NE(report.error().message.find(common::ToString(o.target.peer)), std::string::npos);
}

TEST(PeerSession, SeesTheSinkEndingTheSessionWithoutSendingAByte) {
  auto sink = StartKeyedSink();
  ASSERT_TRUE(sink);
  auto session = PeerSession::Open(sink->endpoint(), TheKey(), {}, 2000ms);
  ASSERT_TRUE(session) << session.error().message;
  EXPECT_TRUE(session->StillOpen());
  // Once the sink holds the session, an idle one is still open.
  ASSERT_TRUE(sink->WaitFor([](const PeerSinkStats& s) { return s.sessions_open == 1; },
                            5000ms));
  EXPECT_TRUE(session->StillOpen()) << "an idle session the sink holds is open";
  sink->Stop();
  bool ended = false;
  for (int i = 0; i < 500 && !ended; ++i) {
    if (auto open = session->StillOpen(); !open) {
      ended = true;
      EXPECT_EQ(open.error().code, Errc::kFailed);
      EXPECT_NE(open.error().message.find("ended the session before its client did"),
                std::string::npos)
          << open.error().message;
    } else {
      std::this_thread::sleep_for(10ms);
    }
  }
  EXPECT_TRUE(ended);
  session->Close();
  EXPECT_FALSE(session->StillOpen());
}

TEST(PeerCalibration, ASinkGoneMidCalibrationMarksTheReportLost) {
  auto sink = StartKeyedSink();
  ASSERT_TRUE(sink);
  CalibrationOptions o = PeerOptions(*sink);
  o.budget_seconds = 3;
  auto running = std::async(std::launch::async, [&o] { return RunCalibration(o); });
  ASSERT_TRUE(sink->WaitFor([](const PeerSinkStats& s) { return s.bytes_received > 0; },
                            3000ms));
  sink.reset();  // as when its process ends: the listener closes too
  const Result<CalibrationReport, CalibrationError> report = running.get();
  // Lost with some probes measured: a report marked lost; before any: kFailed.
  if (report) {
    ASSERT_TRUE(report->session_lost);
    EXPECT_EQ(report->session_lost->failure, PeerFailure::kVanished)
        << report->session_lost->message;
    EXPECT_FALSE(report->session_lost->message.empty());
    // The probe that found the session gone failed the same way.
    ASSERT_FALSE(report->probe_failures.empty());
    const ProbeFailure& last = report->probe_failures.back();
    EXPECT_EQ(last.sample + 1, report->samples.size())
        << "the sweep stops at the loss, not at its budget: no probe after it";
    EXPECT_EQ(report->samples[last.sample].status, calibrator::SampleStatus::kFailed);
    EXPECT_EQ(last.failure, PeerFailure::kVanished);
  } else {
    EXPECT_EQ(report.error().code, Errc::kFailed) << report.error().message;
    EXPECT_EQ(report.error().peer, PeerFailure::kVanished) << report.error().message;
    EXPECT_NE(report.error().message.find("was lost"), std::string::npos)
        << report.error().message;
  }
}

}  // namespace
}  // namespace zcal::probes::peer_calibration_test
