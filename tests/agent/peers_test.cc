// The agent's peers: the peers: section, the round that asks K
// peers with a fallback for busy ones, how an attempt is named, the kept M,
// the per-interface median and what it makes of the segment's table.
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include <gtest/gtest.h>

#include "method_results.h"

#include "zcal/agent/service/calibration_runner.h"
#include "zcal/agent/config/config.h"
#include "zcal/agent/metrics/metrics.h"
#include "zcal/agent/publish/peer_results.h"
#include "zcal/agent/publish/results.h"
#include "zcal/agent/state/state.h"
#include "zcal/testing/path_ids.h"

namespace zcal::agent::peers_test {
namespace {

using zcal::testing::ConfiguredPath;
using zcal::testing::PeerPath;

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Reason;
using calibrator::Verdict;

// The outcome label, as zcal_peer_probes_total and the log name it.
std::string OutcomeName(const Result<probes::CalibrationReport, probes::CalibrationError>& report) {
  return std::string(PeerOutcomeName(ClassifyPeerCalibration(report)));
}

constexpr std::uint64_t kSecond = 1'000'000'000;

Result<Config> Parse(const std::string& peers) {
  return ParseConfig("peers:\n" + peers, "t.yaml");
}

TEST(ConfigPeers, AbsentIsNoPeers) {
  const Config config;
  EXPECT_FALSE(config.peers.enabled());
  const Result<Config> empty = ParseConfig("peers:\n", "t.yaml");
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_FALSE(empty->peers.enabled());
  EXPECT_EQ(DefaultConfig().peers, PeersConfig{}) << "configs/default.yaml agrees";
}

// A key file of one key, mode 0600, removed at the end of the test.
class KeyFile {
 public:
  KeyFile() : path_(std::filesystem::temp_directory_path() /
                    ("zcal-peers-test-" + std::to_string(::getpid()) + ".keys")) {
    std::ofstream(path_) << "fleet-1 " << std::string(64, 'a') << "\n";
    std::filesystem::permissions(path_, std::filesystem::perms::owner_read |
                                            std::filesystem::perms::owner_write);
  }
  ~KeyFile() { std::filesystem::remove(path_); }
  KeyFile(const KeyFile&) = delete;
  KeyFile& operator=(const KeyFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST(ConfigPeers, ReadsEveryKey) {
  const KeyFile keys;
  const Result<Config> config = Parse(
      "  key_file: " + keys.path() + "\n"
      "  static: [198.18.0.2:7070, \"[2001:db8::2]:7070\"]\n"
      "  dns: zcal-peers.zcal.svc.cluster.local:7070\n"
      "  refresh: 30s\n"
      "  per_calibration: 2\n"
      "  keep: 5\n"
      "  stale_after: 12h\n");
  ASSERT_TRUE(config) << config.error().message;
  const PeersConfig& p = config->peers;
  EXPECT_TRUE(p.enabled());
  EXPECT_EQ(p.key_file, keys.path());
  ASSERT_EQ(p.static_peers.size(), 2u);
  EXPECT_EQ(common::ToString(p.static_peers[1]), "[2001:db8::2]:7070");
  EXPECT_EQ(p.dns.name, "zcal-peers.zcal.svc.cluster.local");
  EXPECT_EQ(p.dns.port, 7070);
  EXPECT_EQ(p.refresh, std::chrono::seconds(30));
  EXPECT_EQ(p.per_calibration, 2u);
  EXPECT_EQ(p.keep, 5u);
  EXPECT_EQ(p.stale_after, std::chrono::hours(12));
}

TEST(ConfigPeers, KeepFollowsALargerKWhenNotWritten) {
  const Result<Config> config = Parse("  dns: a.example:7070\n  per_calibration: 12\n");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->peers.keep, 12u);
}

TEST(ConfigPeers, EachMistakeIsNamedWithItsKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"  static: [peer.example:7070]\n", "peers.static[0]"},
      {"  static: [198.18.0.2]\n", "peers.static[0]"},
      {"  static: [198.18.0.2:7070, 198.18.0.2:7070]\n", "listed twice"},
      {"  static: 198.18.0.2:7070\n", "peers.static"},
      {"  dns: 198.18.0.2:7070\n", "peers.dns"},
      {"  dns: zcal.svc\n", "peers.dns"},
      {"  dns: a.example:7070\n  per_calibration: 0\n", "peers.per_calibration"},
      {"  dns: a.example:7070\n  per_calibration: 65\n", "peers.per_calibration"},
      {"  dns: a.example:7070\n  per_calibration: 2.5\n", "peers.per_calibration"},
      {"  dns: a.example:7070\n  per_calibration: 4\n  keep: 2\n", "peers.keep"},
      {"  key_file: peer.keys\n", "not an absolute file path"},
      {"  key_file: /nonexistent/zcal/peer.keys\n", "cannot open the key file"},
      {"  refresh: 0s\n", "peers.refresh"},
      {"  stale_after: 1s\n", "peers.stale_after"},
      {"  lifetime: 1h\n", "lifetime"},
  };
  for (const auto& [text, expected] : cases) {
    const Result<Config> config = Parse(text);
    ASSERT_FALSE(config) << text;
    EXPECT_EQ(config.error().code, Errc::kParse);
    EXPECT_NE(config.error().message.find(expected), std::string::npos)
        << text << " -> " << config.error().message;
    EXPECT_NE(config.error().message.find("t.yaml:"), std::string::npos)
        << "with its position: " << config.error().message;
  }
}

TEST(PeerOutcome, NamesEachWayASessionEnds) {
  using probes::PeerFailure;
  const std::pair<PeerFailure, const char*> kinds[] = {
      {PeerFailure::kBusy, "busy"},
      {PeerFailure::kAuthFailed, "auth_failed"},
      {PeerFailure::kOverLimit, "over_limit"},
      {PeerFailure::kUnsupportedVersion, "unsupported_version"},
      {PeerFailure::kProtocolError, "protocol_error"},
      {PeerFailure::kUnreachable, "unreachable"},
      {PeerFailure::kTimeout, "timeout"},
      {PeerFailure::kVanished, "vanished"},
      {PeerFailure::kInvalidRequest, "failed"},
      {PeerFailure::kLocalError, "failed"},
  };
  for (const auto& [kind, name] : kinds) {
    // The same code and words for every kind: only the kind may decide.
    EXPECT_EQ(OutcomeName(probes::FailCalibration(Errc::kFailed,
                                                  "sink 198.18.0.2:7070: timed out, said no", kind)),
              name);
  }
  EXPECT_EQ(OutcomeName(Fail(Errc::kInvalidArgument, "--max 4K is below --min 8K")), "failed")
      << "a local bad request is not the sink's over_limit";
  EXPECT_EQ(OutcomeName(Fail(Errc::kFailed, "connect 198.18.0.2:7070: timed out after 3000 ms,")),
            "failed")
      << "with no kind, the message is not read for one";

  probes::CalibrationReport report;
  calibrator::Sample failed;
  failed.status = calibrator::SampleStatus::kFailed;
  report.samples = {failed, failed};
  report.probe_failures = {{0, PeerFailure::kVanished}, {1, PeerFailure::kVanished}};
  EXPECT_EQ(OutcomeName(report), "vanished") << "every probe failed after the grant";
  calibrator::Sample ok;
  report.samples.insert(report.samples.begin(), ok);
  failed.method = Method::kMsgZerocopy;
  report.samples.push_back(failed);
  report.probe_failures = {{1, PeerFailure::kVanished}, {2, PeerFailure::kVanished},
                           {3, PeerFailure::kVanished}};
  EXPECT_EQ(OutcomeName(report), "vanished")
      << "measured, then every method failed: the session was lost";
  report.probe_failures.back().failure = PeerFailure::kTimeout;
  EXPECT_EQ(OutcomeName(report), "timeout") << "lost to a deadline (a link down)";
  report.samples = {ok, failed, ok, failed};
  report.probe_failures = {{1, PeerFailure::kTimeout}, {3, PeerFailure::kTimeout}};
  EXPECT_EQ(OutcomeName(report), "success")
      << "one method failing while the others measure is that method's result";
  report.session_lost = probes::SessionLoss{PeerFailure::kVanished,
                                            "connect 198.18.0.2:7070: failed with ECONNREFUSED"};
  EXPECT_EQ(OutcomeName(report), "vanished") << "the sink went away after the grant";
  report.session_lost->failure = PeerFailure::kTimeout;
  EXPECT_EQ(OutcomeName(report), "timeout") << "a data connection met its deadline";
}

// Runs one round synchronously.
RoundOutcome RunOnce(const CalibrateFn& calibrate, RoundPlan plan) {
  std::mutex mutex;
  std::condition_variable done;
  bool notified = false;
  CalibrationRunner runner(calibrate, [&] {
    const std::lock_guard lock(mutex);
    notified = true;
    done.notify_one();
  });
  EXPECT_TRUE(runner.Start(std::move(plan)));
  std::unique_lock lock(mutex);
  EXPECT_TRUE(done.wait_for(lock, std::chrono::seconds(30), [&] { return notified; }));
  lock.unlock();
  std::optional<RoundOutcome> outcome = runner.TakeOutcome();
  EXPECT_TRUE(outcome);
  return outcome ? std::move(*outcome) : RoundOutcome{};
}

Config FivePeers(std::uint32_t k) {
  Config config;
  config.paths = {PathConfig{}};
  for (int i = 1; i <= 5; ++i) {
    config.peers.static_peers.push_back(
        *common::ParseHostPort("198.18.9." + std::to_string(i) + ":7070"));
  }
  config.peers.per_calibration = k;
  config.peers.keep = 5;
  return config;
}

probes::CalibrationReport OkReport(const std::string& path) {
  probes::CalibrationReport report;
  calibrator::Sample ok;
  ok.path = path;
  report.samples = {ok};
  report.analysis.paths[path].path = path;
  return report;
}

TEST(PeerRound, AsksKPeersAfterThePathsAndSharesTheBudget) {
  Config config = FivePeers(2);
  config.budget.seconds_per_calibration = 6;
  const RoundPlan plan = PlanRound(config, "host-a", 0);
  ASSERT_EQ(plan.jobs.size(), 1u);
  ASSERT_TRUE(plan.peers);
  // One path and two peers share the 6 s.
  EXPECT_DOUBLE_EQ(plan.jobs[0].options.budget_seconds, 2.0);
  EXPECT_DOUBLE_EQ(plan.peers->base.budget_seconds, 2.0);
  std::mutex mutex;
  std::vector<std::string> asked;
  const RoundOutcome outcome = RunOnce(
      [&](const probes::CalibrationOptions& o, const auto&) {
        const std::lock_guard lock(mutex);
        asked.push_back(o.path_name);
        return Result<probes::CalibrationReport>(OkReport(o.path_name));
      },
      plan);
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_EQ(asked[0], "loopback");
  const Result<PathId> second = ParsePathId(asked[1]);
  ASSERT_TRUE(second) << asked[1];
  EXPECT_TRUE(second->IsPeer()) << asked[1];
  EXPECT_TRUE(common::ToString(second->endpoint().address).starts_with("198.18.9.")) << asked[1];
  EXPECT_NE(asked[1], asked[2]);
  ASSERT_EQ(outcome.peer_attempts.size(), 2u);
  EXPECT_EQ(outcome.peer_attempts[0].outcome, PeerOutcome::kSuccess);
  EXPECT_EQ(outcome.reports.size(), 3u) << "the path's and each peer's report";
  ASSERT_TRUE(outcome.discovery) << "the first round looks the peers up";
  EXPECT_EQ(outcome.discovery->peers.size(), 5u);
}

TEST(PeerRound, ABusyPeerIsFollowedByTheNextOfTheRankingAtMostThreeTimes) {
  const Config config = FivePeers(1);
  RoundPlan plan = PlanRound(config, "host-a", 0);
  plan.jobs.clear();
  std::vector<std::string> asked;
  const RoundOutcome outcome = RunOnce(
      [&](const probes::CalibrationOptions& o,
          const auto&) -> Result<probes::CalibrationReport, probes::CalibrationError> {
        asked.push_back(o.path_name);
        return probes::FailCalibration(Errc::kBusy, "sink " + o.path_name + ": busy",
                                       probes::PeerFailure::kBusy);
      },
      plan);
  ASSERT_EQ(asked.size(), 3u) << "one slot, three tries";
  EXPECT_EQ(std::set<std::string>(asked.begin(), asked.end()).size(), 3u)
      << "each peer asked once";
  ASSERT_EQ(outcome.peer_attempts.size(), 3u);
  for (const PeerAttempt& a : outcome.peer_attempts) {
    EXPECT_EQ(a.outcome, PeerOutcome::kBusy);
    EXPECT_NE(a.detail.find("busy"), std::string::npos);
  }
  EXPECT_TRUE(outcome.reports.empty());
  // The same host and round choose the same first peer; the next round
  // moves on.
  std::vector<std::string> again;
  RoundPlan next = PlanRound(config, "host-a", 1);
  next.jobs.clear();
  RunOnce(
      [&](const probes::CalibrationOptions& o, const auto&) {
        again.push_back(o.path_name);
        return Result<probes::CalibrationReport>(OkReport(o.path_name));
      },
      next);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0], asked[0]) << "round 1 takes the next rank";
}

TEST(PeerRound, AnUnreadableKeyFileLeavesTheRoundWithoutPeers) {
  Config config = FivePeers(2);
  config.peers.key_file = "/nonexistent/zcal/peer.keys";
  int asked = 0;
  const RoundPlan plan = PlanAgentRound(
      config, [&] { return static_cast<std::uint64_t>(++asked); }, std::nullopt, {});
  EXPECT_FALSE(plan.peers);
  EXPECT_EQ(plan.jobs.size(), 1u) << "the paths still run";
  EXPECT_EQ(asked, 0) << "no rendezvous round is used up";
  Config none;
  EXPECT_FALSE(PlanAgentRound(none, [&] { return static_cast<std::uint64_t>(++asked); },
                              std::nullopt, {})
                   .peers);
  EXPECT_EQ(asked, 0);
  const RoundPlan with = PlanAgentRound(
      FivePeers(2), [&] { return static_cast<std::uint64_t>(++asked); }, std::nullopt, {});
  ASSERT_TRUE(with.peers);
  EXPECT_EQ(with.peers->round, 1u);
  EXPECT_FALSE(with.peers->identity.empty());
}

TEST(PeerRound, AFreshDiscoveryIsReusedWithinRefresh) {
  Config config = FivePeers(1);
  Discovery previous;
  previous.peers = {*common::ParseHostPort("198.18.9.77:7070")};
  RoundPlan plan = PlanRound(config, "host-a", 0, std::nullopt, previous,
                             std::chrono::steady_clock::now());
  plan.jobs.clear();
  std::vector<std::string> asked;
  const RoundOutcome outcome = RunOnce(
      [&](const probes::CalibrationOptions& o, const auto&) {
        asked.push_back(o.path_name);
        return Result<probes::CalibrationReport>(OkReport(o.path_name));
      },
      plan);
  EXPECT_FALSE(outcome.discovery) << "no lookup within refresh";
  EXPECT_EQ(asked, std::vector<std::string>{"peer/198.18.9.77:7070"});
}

using testing::Never;
using testing::Threshold;

void AddPeer(AgentState& state, const std::string& endpoint, const std::string& interface,
             std::uint64_t success_ns, const MethodResult& result) {
  const PathId path = PeerPath(endpoint);
  state.peers[path] = PeerRecord{interface, success_ns, success_ns, PeerOutcome::kSuccess};
  state.paths[path][result.method] = MethodState{result, success_ns, std::nullopt, std::nullopt};
}

Config PeersOn() {
  Config config;
  config.peers.dns = DnsPeerName{"peers.example", 7070};
  return config;
}

TEST(AggregatePeers, TheUpperMedianPerInterfaceWithItsSpread) {
  AgentState state;
  const std::uint64_t now = 1000 * kSecond;
  AddPeer(state, "198.18.0.2:7070", "eth0", now, Threshold(Method::kMsgZerocopy, 8192));
  AddPeer(state, "198.18.0.3:7070", "eth0", now, Threshold(Method::kMsgZerocopy, 16384));
  AddPeer(state, "198.18.0.4:7070", "eth0", now, Threshold(Method::kMsgZerocopy, 12288));
  AddPeer(state, "198.18.0.5:7070", "eth0", now,
          Never(Method::kMsgZerocopy, Reason::kSlower));
  AddPeer(state, "198.18.1.2:7070", "eth1", now, Threshold(Method::kMsgZerocopy, 4096));
  const InterfaceAggregates a = AggregatePeers(state, PeersOn(), now);
  ASSERT_EQ(a.size(), 2u);
  const InterfaceAggregate& eth0 = a.at("eth0").at(Method::kMsgZerocopy);
  EXPECT_EQ(eth0.peers, 4u);
  // 8, 12, 16 KiB, never: the upper of the middle two is 16 KiB.
  EXPECT_EQ(eth0.state.published.threshold_bytes, 16384u);
  EXPECT_EQ(eth0.spread_bytes, 8192u);
  const InterfaceAggregate& eth1 = a.at("eth1").at(Method::kMsgZerocopy);
  EXPECT_EQ(eth1.peers, 1u);
  EXPECT_FALSE(eth1.spread_bytes) << "one threshold has no spread";
}

TEST(AggregatePeers, LeavesOutStaleCopiedAndUnroutedResults) {
  AgentState state;
  Config config = PeersOn();
  config.peers.stale_after = std::chrono::hours(1);
  const std::uint64_t now = 100'000 * kSecond;
  AddPeer(state, "198.18.0.2:7070", "eth0", now - 2 * 3600 * kSecond,
          Threshold(Method::kMsgZerocopy, 8192));  // stale
  AddPeer(state, "198.18.0.3:7070", "veth0", now,
          Never(Method::kMsgZerocopy, Reason::kKernelCopied));
  AddPeer(state, "198.18.0.4:7070", "", now, Threshold(Method::kMsgZerocopy, 8192));
  EXPECT_TRUE(PeerStale(state.peers.at(PeerPath("198.18.0.2:7070")), config, now));
  EXPECT_FALSE(PeerStale(state.peers.at(PeerPath("198.18.0.3:7070")), config, now));
  EXPECT_TRUE(AggregatePeers(state, config, now).empty());
}

TEST(PrunePeers, KeepsTheMPeersThatSucceededLast) {
  AgentState state;
  Config config = PeersOn();
  config.peers.keep = 2;
  AddPeer(state, "198.18.0.2:7070", "eth0", 10, Threshold(Method::kMsgZerocopy, 8192));
  AddPeer(state, "198.18.0.3:7070", "eth0", 30, Threshold(Method::kMsgZerocopy, 8192));
  AddPeer(state, "198.18.0.4:7070", "eth0", 20, Threshold(Method::kMsgZerocopy, 8192));
  state.peers[PeerPath("198.18.0.9:7070")] = PeerRecord{"", 40, 0, PeerOutcome::kBusy};
  PruneState(state, config);
  EXPECT_EQ(state.peers.size(), 2u);
  EXPECT_TRUE(state.peers.contains(PeerPath("198.18.0.3:7070")));
  EXPECT_TRUE(state.peers.contains(PeerPath("198.18.0.4:7070")));
  EXPECT_FALSE(state.paths.contains(PeerPath("198.18.0.2:7070"))) << "its results go with it";
  const Config without_peers;
  PruneState(state, without_peers);
  EXPECT_TRUE(state.peers.empty()) << "no peers configured, none kept";
  EXPECT_TRUE(state.paths.empty());
}

TEST(RecordPeerAttempts, AFailureKeepsTheLastGoodResult) {
  AgentState state;
  AddPeer(state, "198.18.0.2:7070", "eth0", 10, Threshold(Method::kMsgZerocopy, 8192));
  RecordPeerAttempts(state,
                     {PeerAttempt{*common::ParseHostPort("198.18.0.2:7070"), PeerOutcome::kTimeout,
                                  "no answer in time", ""}},
                     50);
  const PeerRecord& p = state.peers.at(PeerPath("198.18.0.2:7070"));
  EXPECT_EQ(p.last_attempt_ns, 50u);
  EXPECT_EQ(p.last_success_ns, 10u);
  EXPECT_EQ(p.last_outcome, PeerOutcome::kTimeout);
  EXPECT_EQ(p.interface, "eth0");
  PruneState(state, PeersOn());
  EXPECT_TRUE(state.paths.contains(PeerPath("198.18.0.2:7070")));
}

HostDefaultNic Nic(const std::string& name) {
  HostDefaultNic nic;
  nic.facts = probes::InterfaceFacts{};
  nic.facts->name = name;
  return nic;
}

TEST(BuildEntries, PeersGetHostPrefixesAndTheDefaultRouteNicsMedianIsTheHostDefault) {
  AgentState state;
  const std::uint64_t now = 1000 * kSecond;
  AddPeer(state, "198.18.0.2:7070", "eth0", now, Threshold(Method::kMsgZerocopy, 8192));
  AddPeer(state, "[2001:db8::3]:7070", "eth0", now, Threshold(Method::kMsgZerocopy, 16384));
  AddPeer(state, "198.18.1.2:7070", "eth1", now, Threshold(Method::kMsgZerocopy, 65536));
  const PublishedTable table = BuildEntries(state, PeersOn(), Nic("eth0"), now);
  std::map<std::string, const PublishedEntry*> peers;
  std::map<std::string, const PublishedEntry*> interfaces;
  const PublishedEntry* host_default = nullptr;
  for (const PublishedEntry& e : table.entries) {
    if (e.scope == ScopeKind::kPeer) peers[e.address] = &e;
    if (e.scope == ScopeKind::kInterface) interfaces[e.interface] = &e;
    if (e.scope == ScopeKind::kHostDefault) host_default = &e;
  }
  ASSERT_EQ(peers.size(), 3u);
  EXPECT_EQ(peers.at("198.18.0.2")->prefix_len, 32);
  EXPECT_EQ(peers.at("2001:db8::3")->prefix_len, 128);
  EXPECT_EQ(peers.at("198.18.1.2")->threshold_bytes, 65536u);
  ASSERT_EQ(interfaces.size(), 2u);
  EXPECT_EQ(interfaces.at("eth0")->threshold_bytes, 16384u);
  ASSERT_NE(host_default, nullptr);
  EXPECT_EQ(table.host_default.source, HostDefaultSource::kPeers);
  EXPECT_EQ(host_default->threshold_bytes, 16384u) << "eth0 holds the default route";
  EXPECT_FALSE(host_default->estimated);
}

TEST(AggregatePeers, EachDepthClassHasItsOwnMedian) {
  AgentState state;
  const std::uint64_t now = 1000 * kSecond;
  AddPeer(state, "198.18.0.2:7070", "eth0", now, Threshold(Method::kMsgZerocopy, 8192));
  AddPeer(state, "198.18.0.3:7070", "eth0", now, Threshold(Method::kMsgZerocopy, 16384));
  state.paths[PeerPath("198.18.0.2:7070")][{Method::kMsgZerocopy, DepthClass::k1}] =
      MethodState{Threshold(Method::kMsgZerocopy, 65536), now, std::nullopt, std::nullopt};
  state.paths[PeerPath("198.18.0.3:7070")][{Method::kMsgZerocopy, DepthClass::k1}] =
      MethodState{Threshold(Method::kMsgZerocopy, 131072), now, std::nullopt, std::nullopt};
  const InterfaceAggregates a = AggregatePeers(state, PeersOn(), now);
  const auto& eth0 = a.at("eth0");
  ASSERT_EQ(eth0.size(), 2u);
  EXPECT_EQ(eth0.at(Method::kMsgZerocopy).state.published.threshold_bytes, 16384u);
  const InterfaceAggregate& one = eth0.at({Method::kMsgZerocopy, DepthClass::k1});
  EXPECT_EQ(one.peers, 2u);
  EXPECT_EQ(one.state.published.threshold_bytes, 131072u) << "the upper of two";
  EXPECT_EQ(one.spread_bytes, 65536u);
  // The interface entries and the host default carry each class.
  const PublishedTable table = BuildEntries(state, PeersOn(), Nic("eth0"), now);
  std::map<std::pair<ScopeKind, DepthClass>, std::uint64_t> thresholds;
  for (const PublishedEntry& e : table.entries) {
    if (e.scope != ScopeKind::kPeer) thresholds[{e.scope, e.depth}] = *e.threshold_bytes;
  }
  EXPECT_EQ(thresholds.at({ScopeKind::kInterface, DepthClass::k1}), 131072u);
  EXPECT_EQ(thresholds.at({ScopeKind::kHostDefault, DepthClass::k1}), 131072u);
  EXPECT_EQ(thresholds.at({ScopeKind::kHostDefault, DepthClass::kStream}), 16384u);
}

// Two sinks on one host: the table keeps both peers' entries, each under its
// own path; the segment's host prefix holds the one measured last.
TEST(SegmentEntries, TwoPeersOfOneAddressShareItsPrefixTheOneMeasuredLastStays) {
  AgentState state;
  const std::uint64_t now = 1000 * kSecond;
  AddPeer(state, "198.18.0.2:7070", "eth0", now - 20, Threshold(Method::kMsgZerocopy, 8192));
  AddPeer(state, "198.18.0.2:7071", "eth0", now - 10, Threshold(Method::kMsgZerocopy, 16384));
  AddPeer(state, "198.18.0.3:7070", "eth0", now - 30, Threshold(Method::kMsgZerocopy, 32768));
  const PublishedTable table = BuildEntries(state, PeersOn(), Nic("eth9"), now);
  std::map<PathId, std::uint64_t> in_table;
  for (const PublishedEntry& e : table.entries) {
    if (e.scope != ScopeKind::kPeer) continue;
    ASSERT_TRUE(e.path);
    in_table[*e.path] = *e.threshold_bytes;
  }
  EXPECT_EQ(in_table, (std::map<PathId, std::uint64_t>{{PeerPath("198.18.0.2:7070"), 8192},
                                                       {PeerPath("198.18.0.2:7071"), 16384},
                                                       {PeerPath("198.18.0.3:7070"), 32768}}));
  std::map<std::string, std::uint64_t> in_segment;
  std::size_t peers = 0;
  for (const PublishedEntry& e : SegmentEntries(table.entries)) {
    if (e.scope != ScopeKind::kPeer) continue;
    in_segment[e.address] = *e.threshold_bytes;
    ++peers;
  }
  EXPECT_EQ(peers, 2u);
  EXPECT_EQ(in_segment,
            (std::map<std::string, std::uint64_t>{{"198.18.0.2", 16384}, {"198.18.0.3", 32768}}));
  // Measured in one round: the first of their text stays, as when the
  // state was keyed by it ("peer/198.18.0.2:10000" before ":9000").
  AgentState tie;
  AddPeer(tie, "198.18.0.2:9000", "eth0", now, Threshold(Method::kMsgZerocopy, 8192));
  AddPeer(tie, "198.18.0.2:10000", "eth0", now, Threshold(Method::kMsgZerocopy, 16384));
  const std::vector<PublishedEntry> segment =
      SegmentEntries(BuildEntries(tie, PeersOn(), Nic("eth9"), now).entries);
  const auto peer = std::find_if(segment.begin(), segment.end(), [](const PublishedEntry& e) {
    return e.scope == ScopeKind::kPeer;
  });
  ASSERT_NE(peer, segment.end());
  EXPECT_EQ(peer->path, PeerPath("198.18.0.2:10000"));
  EXPECT_EQ(std::count_if(segment.begin(), segment.end(),
                          [](const PublishedEntry& e) { return e.scope == ScopeKind::kPeer; }),
            1);
}

// The metrics' per-path families come from the table, not from the
// segment: each peer of a shared address keeps its series, with the load
// and the pending result its entry carries.
TEST(SegmentEntries, TheMetricsShowEveryPeerOfASharedAddressFromTheTable) {
  AgentState state;
  const std::uint64_t now = 1000 * kSecond;
  AddPeer(state, "198.18.0.2:7070", "eth0", now - 20, Threshold(Method::kMsgZerocopy, 8192));
  AddPeer(state, "198.18.0.2:7071", "eth0", now - 10, Threshold(Method::kMsgZerocopy, 16384));
  MethodState& older = state.paths.at(PeerPath("198.18.0.2:7070")).at(Method::kMsgZerocopy);
  older.pending = Threshold(Method::kMsgZerocopy, 65536);
  older.load = probes::HostLoad{};
  older.load->busy_share = 0.5;
  const PublishedTable table = BuildEntries(state, PeersOn(), Nic("eth9"), now);
  Metrics metrics("9.9.9");
  metrics.SetPublished(table.entries, false);
  const std::string text = metrics.Text();
  const std::string first =
      "path=\"peer/198.18.0.2:7070\",method=\"msg_zerocopy\",depth=\"stream\"";
  const std::string second =
      "path=\"peer/198.18.0.2:7071\",method=\"msg_zerocopy\",depth=\"stream\"";
  for (const std::string& series :
       {"zcal_threshold_bytes{" + first + "} 8192", "zcal_threshold_bytes{" + second + "} 16384",
        "zcal_hysteresis_pending{" + first + "} 1", "zcal_hysteresis_pending{" + second + "} 0",
        "zcal_calibration_host_busy_ratio{" + first + "} 0.5"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << "\n" << text;
  }
  EXPECT_EQ(text.find("zcal_calibration_host_busy_ratio{" + second), std::string::npos) << text;
}

TEST(BuildEntries, KernelCopiedPeersAreNeverTheHostDefault) {
  AgentState state;
  const std::uint64_t now = 1000 * kSecond;
  AddPeer(state, "198.18.0.2:7070", "veth0", now,
          Never(Method::kMsgZerocopy, Reason::kKernelCopied));
  Config config = PeersOn();
  config.paths = {PathConfig{}};
  const PublishedTable table = BuildEntries(state, config, Nic("veth0"), now);
  std::size_t peers = 0;
  for (const PublishedEntry& e : table.entries) {
    EXPECT_NE(e.scope, ScopeKind::kHostDefault);
    EXPECT_NE(e.scope, ScopeKind::kInterface);
    peers += e.scope == ScopeKind::kPeer ? 1 : 0;
  }
  EXPECT_EQ(peers, 1u) << "published for what it measured: its own /32";
  EXPECT_EQ(table.host_default.source, HostDefaultSource::kNoPath);
}

TEST(PeerState, RoundTripsTheRecordsAndTheRound) {
  AgentState state;
  AddPeer(state, "198.18.0.2:7070", "eth0", 77, Threshold(Method::kMsgZerocopy, 8192));
  state.peer_round = 41;
  const Result<AgentState> back = ParseState(SerializeState(state), "s.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->peer_round, 41u);
  const PeerRecord& p = back->peers.at(PeerPath("198.18.0.2:7070"));
  EXPECT_EQ(common::ToString(back->peers.begin()->first.endpoint()), "198.18.0.2:7070");
  EXPECT_EQ(p.interface, "eth0");
  EXPECT_EQ(p.last_success_ns, 77u);
  EXPECT_EQ(p.last_outcome, PeerOutcome::kSuccess);
  const std::string bad = R"({"format":"zcal-state","version":1,"saved_at_ns":1,
    "fingerprint":"0000000000000000","paths":{},"peers":{"loopback":{"endpoint":"x"}}})";
  const Result<AgentState> refused = ParseState(bad, "s.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("peers.loopback"), std::string::npos)
      << refused.error().message;
}

TEST(PeerState, RefusesARecordWhoseEndpointDoesNotParse) {
  // Parsed once at load: a bad endpoint is an invalid state file (counted
  // and logged by the publisher), not a peer left out of every publish.
  const std::string bad = R"({"format":"zcal-state","version":1,"saved_at_ns":1,
    "fingerprint":"0000000000000000","paths":{},"peers":{"peer/198.18.0.2:7070":{
    "endpoint":"198.18.0.2","last_attempt_ns":1,"last_success_ns":1}}})";
  const Result<AgentState> refused = ParseState(bad, "s.json");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kParse);
  EXPECT_NE(refused.error().message.find("peers.peer/198.18.0.2:7070.endpoint"), std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace zcal::agent::peers_test
