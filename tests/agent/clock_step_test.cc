// The publisher and the peer staleness under a stepped wall clock
// (common::FakeClock): stamps follow the wall clock, ages of what this
// process measured follow the steady clock, and a step is counted once.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include <gtest/gtest.h>

#include "zcal/agent/publish/peer_results.h"
#include "zcal/agent/service/publisher.h"
#include "zcal/common/fake_clock.h"
#include "zcal/testing/path_ids.h"
#include "test_util.h"
#include "zcal/zcal.hpp"

namespace zcal::agent::clock_step_test {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr std::uint64_t kSecond = 1'000'000'000ULL;

std::string UniqueSegment() {
  static std::atomic<int> counter{0};
  return "/zcal-clock-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

std::uint64_t SegmentHeartbeat(const std::string& segment) {
  auto opened = client::Segment::Open(segment.c_str());
  if (!opened) return 0;
  auto info = opened->Info();
  return info ? info->heartbeat_ns : 0;
}

class ClockStepTest : public ::testing::Test {
 protected:
  ClockStepTest() {
    config_.paths = {PathConfig{}};
    config_.segment.name = segment_;
    config_.state_path = (dir_.path() / "state.json").string();
  }
  ~ClockStepTest() override { shm_unlink(segment_.c_str()); }

  testing::TempDir dir_;
  const std::string segment_ = UniqueSegment();
  Config config_;
  std::shared_ptr<Metrics> metrics_ = std::make_shared<Metrics>("test");
  std::shared_ptr<common::FakeClock> clock_ = std::make_shared<common::FakeClock>();
};

TEST_F(ClockStepTest, HeartbeatsAreStampedWithTheClocksWallTimeAcrossSteps) {
  auto publisher = Publisher::Open(config_, dir_.path().string(), metrics_, clock_);
  ASSERT_TRUE(publisher) << publisher.error().message;
  (*publisher)->Publish();
  EXPECT_EQ(SegmentHeartbeat(segment_), clock_->Wall());
  clock_->Advance(seconds(1));
  clock_->StepWall(hours(1));
  (*publisher)->Heartbeat();
  EXPECT_EQ(SegmentHeartbeat(segment_), clock_->Wall());
  clock_->Advance(seconds(1));
  clock_->StepWall(-hours(2));
  (*publisher)->Heartbeat();
  EXPECT_EQ(SegmentHeartbeat(segment_), clock_->Wall())
      << "a heartbeat behind the last one is written as it is: readers' clocks stepped too";
}

TEST_F(ClockStepTest, EachStepIsCountedOnceByDirection) {
  auto publisher = Publisher::Open(config_, dir_.path().string(), metrics_, clock_);
  ASSERT_TRUE(publisher) << publisher.error().message;
  (*publisher)->Heartbeat();
  clock_->Advance(minutes(10));  // time passing is no step
  (*publisher)->Heartbeat();
  EXPECT_TRUE(Contains(metrics_->Text(), "zcal_wall_clock_steps_total{direction=\"forward\"} 0"))
      << metrics_->Text();
  clock_->StepWall(hours(1));
  (*publisher)->Heartbeat();
  (*publisher)->Heartbeat();
  clock_->StepWall(-hours(1));
  (*publisher)->Heartbeat();
  clock_->StepWall(-hours(1));
  (*publisher)->Heartbeat();
  const std::string text = metrics_->Text();
  EXPECT_TRUE(Contains(text, "zcal_wall_clock_steps_total{direction=\"forward\"} 1")) << text;
  EXPECT_TRUE(Contains(text, "zcal_wall_clock_steps_total{direction=\"back\"} 2")) << text;
}

TEST_F(ClockStepTest, OpenRefusesAMissingClock) {
  const auto publisher = Publisher::Open(config_, dir_.path().string(), metrics_, nullptr);
  ASSERT_FALSE(publisher);
  EXPECT_EQ(publisher.error().code, Errc::kInvalidArgument);
}

Config PeersFor(std::chrono::milliseconds stale_after) {
  Config config;
  config.peers.stale_after = stale_after;
  return config;
}

TEST(PeerStaleOnTheSteadyClock, AResultMeasuredHereAgesOnTheSteadyClockOnly) {
  const Config config = PeersFor(hours(1));
  common::FakeClock clock;
  PeerRecord peer;
  peer.last_success_ns = clock.Wall();
  peer.last_success_steady_ns = common::SteadyNs(clock);
  clock.StepWall(hours(3));  // forward: not older
  EXPECT_FALSE(PeerStale(peer, config, clock.Wall(), common::SteadyNs(clock)));
  clock.StepWall(-hours(6));  // back: not younger either
  clock.Advance(hours(1) + seconds(1));
  EXPECT_TRUE(PeerStale(peer, config, clock.Wall(), common::SteadyNs(clock)));
}

TEST(PeerStaleOnTheSteadyClock, ALoadedResultAgesOnTheWallClockAndAFutureStampIsFresh) {
  const Config config = PeersFor(hours(1));
  const std::uint64_t now = 100'000 * kSecond;
  PeerRecord loaded;  // from the state file: no steady stamp
  loaded.last_success_ns = now + 3600 * kSecond;
  EXPECT_FALSE(PeerStale(loaded, config, now, 5 * static_cast<std::int64_t>(kSecond)));
  loaded.last_success_ns = now - 2 * 3600 * kSecond;
  EXPECT_TRUE(PeerStale(loaded, config, now, 5 * static_cast<std::int64_t>(kSecond)));
}

TEST(PeerStaleOnTheSteadyClock, RecordPeerAttemptsKeepsTheSteadyStampOfASuccess) {
  AgentState state;
  const PathId path = zcal::testing::PeerPath("198.18.0.2:7070");
  state.paths[path];  // its results were merged
  RecordPeerAttempts(state,
                     {PeerAttempt{path.endpoint(), PeerOutcome::kSuccess, "", "eth0"}},
                     42 * kSecond, 7 * static_cast<std::int64_t>(kSecond));
  EXPECT_EQ(state.peers.at(path).last_success_ns, 42 * kSecond);
  EXPECT_EQ(state.peers.at(path).last_success_steady_ns, 7 * static_cast<std::int64_t>(kSecond));
}

}  // namespace
}  // namespace zcal::agent::clock_step_test
