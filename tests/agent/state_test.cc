#include "zcal/agent/state/state.h"

#include "zcal/calibrator/report_json.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "zcal/testing/test_data.h"
#include "zcal/testing/path_ids.h"

namespace zcal::agent::state_test {
namespace {

using zcal::testing::ConfiguredPath;
using zcal::testing::PeerPath;

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Reason;
using calibrator::Verdict;

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "zcal-state-XXXXXX")
            .string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void WriteFile(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

AgentState SampleState() {
  AgentState state;
  state.saved_at_ns = 1'700'000'000'000'000'000;
  state.fingerprint = 0xfedcba9876543210;
  state.last_success_ns = 1'700'000'000'000'000'001;
  state.host.facts.kernel_release = "6.18.0";
  probes::InterfaceFacts lo;
  lo.name = "lo";
  lo.mtu = 65536;
  state.host.interfaces.push_back(PathEgress("loopback", lo));
  MethodResult threshold;
  threshold.method = Method::kUringSendZc;
  threshold.baseline = Method::kUringSend;
  threshold.verdict = Verdict::kThreshold;
  threshold.threshold_bytes = 16384;
  threshold.confidence = 0.75;
  threshold.detail = "wins from 16 KiB";
  calibrator::SizeComparison size;
  size.size_bytes = 16384;
  size.zerocopy_wins = true;
  size.throughput_ratio = 1.1;
  size.cpu_ratio = 0.8;
  size.zerocopy.throughput_bytes_per_second.median = 5e9;
  size.zerocopy.cpu_ns_per_byte.median = 0.2;
  size.zerocopy.copied_fraction = 0.0;
  size.baseline.throughput_bytes_per_second.median = 4.5e9;
  threshold.sizes.push_back(size);
  MethodResult never;
  never.method = Method::kMsgZerocopy;
  never.verdict = Verdict::kNever;
  never.reason = Reason::kKernelCopied;
  state.paths[ConfiguredPath("loopback")][Method::kUringSendZc] =
      MethodState{threshold, 111, never, std::nullopt};
  state.paths[ConfiguredPath("loopback")][Method::kMsgZerocopy] =
      MethodState{never, 222, std::nullopt, std::nullopt};
  probes::HostLoad load;
  load.busy_share = 0.34;
  load.steal_share = 0.01;
  load.own_share = 0.18;
  load.runnable_mean = 2.1;
  load.runnable_max = 4;
  load.window_seconds = 2.3;
  load.runnable_reads = 12;
  state.paths[ConfiguredPath("loopback")][Method::kUringSendZc].load = load;
  return state;
}

TEST(State, RoundTripsThroughTheFile) {
  TempDir dir;
  const std::string path = (dir.path() / "state.json").string();
  ASSERT_TRUE(SaveState(SampleState(), path));
  const Result<AgentState> loaded = LoadState(path);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->saved_at_ns, 1'700'000'000'000'000'000u);
  EXPECT_EQ(loaded->fingerprint, 0xfedcba9876543210u);
  EXPECT_EQ(loaded->last_success_ns, 1'700'000'000'000'000'001u);
  EXPECT_EQ(loaded->host.facts.kernel_release, "6.18.0");
  ASSERT_EQ(loaded->host.interfaces.size(), 1u);
  EXPECT_EQ(loaded->host.interfaces[0].path, "loopback");
  EXPECT_EQ(loaded->host.interfaces[0].facts.name, "lo");
  EXPECT_EQ(loaded->host.interfaces[0].facts.mtu, 65536u);
  const MethodState& zc = loaded->paths.at(ConfiguredPath("loopback")).at(Method::kUringSendZc);
  EXPECT_EQ(zc.published.verdict, Verdict::kThreshold);
  EXPECT_EQ(zc.published.threshold_bytes, 16384u);
  EXPECT_EQ(zc.published.baseline, Method::kUringSend);
  EXPECT_EQ(zc.published.confidence, 0.75);
  EXPECT_EQ(zc.published.detail, "wins from 16 KiB");
  ASSERT_EQ(zc.published.sizes.size(), 1u);
  EXPECT_EQ(zc.published.sizes[0].size_bytes, 16384u);
  EXPECT_DOUBLE_EQ(zc.published.sizes[0].cpu_ratio, 0.8);
  EXPECT_DOUBLE_EQ(
      zc.published.sizes[0].zerocopy.throughput_bytes_per_second.median, 5e9);
  EXPECT_EQ(zc.published.sizes[0].zerocopy.copied_fraction, 0.0);
  EXPECT_EQ(zc.measured_at_ns, 111u);
  ASSERT_TRUE(zc.pending);
  EXPECT_EQ(zc.pending->verdict, Verdict::kNever);
  EXPECT_EQ(zc.pending->reason, Reason::kKernelCopied);
  const MethodState& msg = loaded->paths.at(ConfiguredPath("loopback")).at(Method::kMsgZerocopy);
  EXPECT_EQ(msg.published.reason, Reason::kKernelCopied);
  EXPECT_FALSE(msg.published.confidence);
  EXPECT_FALSE(msg.pending);
  ASSERT_TRUE(zc.load);
  EXPECT_DOUBLE_EQ(zc.load->busy_share, 0.34);
  EXPECT_DOUBLE_EQ(zc.load->steal_share, 0.01);
  EXPECT_DOUBLE_EQ(zc.load->own_share, 0.18);
  EXPECT_DOUBLE_EQ(zc.load->runnable_mean, 2.1);
  EXPECT_EQ(zc.load->runnable_max, 4u);
  EXPECT_DOUBLE_EQ(zc.load->window_seconds, 2.3);
  EXPECT_EQ(zc.load->runnable_reads, 12u);
  EXPECT_FALSE(msg.load);
}

TEST(State, FilesWrittenBeforeTheLoadStillRead) {
  nlohmann::json document = nlohmann::json::parse(SerializeState(SampleState()));
  for (auto& [method, entry] : document["paths"]["loopback"].items()) {
    ASSERT_TRUE(entry.contains("load")) << method;
    entry.erase("load");
  }
  const Result<AgentState> parsed = ParseState(document.dump(), "state.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const MethodState& zc = parsed->paths.at(ConfiguredPath("loopback")).at(Method::kUringSendZc);
  EXPECT_EQ(zc.published.threshold_bytes, 16384u);
  EXPECT_EQ(zc.measured_at_ns, 111u);
  EXPECT_FALSE(zc.load);
}

TEST(State, RoundTripsEachDepthClassOfAMethod) {
  AgentState state = SampleState();
  MethodState one = state.paths.at(ConfiguredPath("loopback")).at(Method::kUringSendZc);
  one.published.threshold_bytes = 65536;
  one.measured_at_ns = 333;
  one.pending.reset();
  state.paths[ConfiguredPath("loopback")][{Method::kUringSendZc, DepthClass::k1}] = one;
  MethodState four = one;
  four.published.threshold_bytes = 32768;
  four.measured_at_ns = 444;
  four.load.reset();
  state.paths[ConfiguredPath("loopback")][{Method::kUringSendZc, DepthClass::k4}] = four;
  const std::string text = SerializeState(state);
  const nlohmann::json document = nlohmann::json::parse(text);
  // The method's object is its stream result, its other classes inside it.
  const nlohmann::json& zc = document["paths"]["loopback"]["uring_send_zc"];
  EXPECT_EQ(zc["measured_at_ns"], 111u);
  EXPECT_EQ(zc["classes"]["1"]["measured_at_ns"], 333u);
  EXPECT_EQ(zc["classes"]["4"]["measured_at_ns"], 444u);
  EXPECT_FALSE(document["paths"]["loopback"]["msg_zerocopy"].contains("classes"));

  const Result<AgentState> parsed = ParseState(text, "state.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const MethodStates& loopback = parsed->paths.at(ConfiguredPath("loopback"));
  ASSERT_EQ(loopback.size(), 4u);
  EXPECT_EQ(loopback.at(Method::kUringSendZc).published.threshold_bytes, 16384u);
  EXPECT_TRUE(loopback.at(Method::kUringSendZc).pending);
  const MethodState& parsed_one = loopback.at({Method::kUringSendZc, DepthClass::k1});
  EXPECT_EQ(parsed_one.published.threshold_bytes, 65536u);
  EXPECT_EQ(parsed_one.measured_at_ns, 333u);
  EXPECT_FALSE(parsed_one.pending);
  ASSERT_TRUE(parsed_one.load);
  EXPECT_DOUBLE_EQ(parsed_one.load->busy_share, 0.34);
  const MethodState& parsed_four = loopback.at({Method::kUringSendZc, DepthClass::k4});
  EXPECT_EQ(parsed_four.published.threshold_bytes, 32768u);
  EXPECT_FALSE(parsed_four.load);
  EXPECT_EQ(SerializeState(*parsed), text);
}

TEST(State, FilesWrittenBeforeDepthClassesLoadAsStreamResults) {
  // One entry per method, as agents before depth classes wrote it: one
  // without "depth", one with the "depth" field of the release between.
  nlohmann::json document = nlohmann::json::parse(SerializeState(SampleState()));
  document["paths"]["loopback"]["uring_send_zc"]["depth"] = "stream";
  ASSERT_FALSE(document["paths"]["loopback"]["msg_zerocopy"].contains("depth"));
  const Result<AgentState> parsed = ParseState(document.dump(), "state.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const MethodStates& loopback = parsed->paths.at(ConfiguredPath("loopback"));
  ASSERT_EQ(loopback.size(), 2u);
  for (const auto& [key, s] : loopback) {
    EXPECT_EQ(key.depth, DepthClass::kStream) << calibrator::MethodName(key.method);
  }
  EXPECT_EQ(loopback.at(Method::kUringSendZc).published.threshold_bytes, 16384u);
  EXPECT_EQ(loopback.at(Method::kMsgZerocopy).measured_at_ns, 222u);
}

TEST(State, AFileOfAnEarlierAgentLoadsWithEveryResultAtStream) {
  // tests/data/state/README.md: written by main before depth classes.
  const std::string file = (zcal::testing::TestData() / "state" / "written_by_main.json").string();
  const Result<AgentState> loaded = LoadState(file);
  ASSERT_TRUE(loaded) << loaded.error().message;
  ASSERT_TRUE(loaded->paths.contains(ConfiguredPath("discard")));
  std::size_t results = 0;
  for (const auto& [path, methods] : loaded->paths) {
    for (const auto& [key, s] : methods) {
      EXPECT_EQ(key.depth, DepthClass::kStream) << ToString(path);
      ++results;
    }
  }
  EXPECT_GE(results, 3u);
}

TEST(State, AClassNotPublishedIsRefusedNamingTheKey) {
  AgentState state = SampleState();
  state.paths[ConfiguredPath("loopback")][{Method::kUringSendZc, DepthClass::k4}] =
      state.paths.at(ConfiguredPath("loopback")).at(Method::kUringSendZc);
  nlohmann::json document = nlohmann::json::parse(SerializeState(state));
  nlohmann::json& classes = document["paths"]["loopback"]["uring_send_zc"]["classes"];
  classes["8"] = classes["4"];
  const Result<AgentState> refused = ParseState(document.dump(), "state.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(
                "state.json: paths.loopback.uring_send_zc.classes.8: not a depth class"),
            std::string::npos)
      << refused.error().message;
}

TEST(State, AClassWithoutItsStreamResultIsNotKept) {
  AgentState state = SampleState();
  state.paths[ConfiguredPath("discard")][{Method::kMsgZerocopy, DepthClass::k1}] =
      state.paths.at(ConfiguredPath("loopback")).at(Method::kMsgZerocopy);
  const Result<AgentState> parsed = ParseState(SerializeState(state), "state.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const auto discard = parsed->paths.find(ConfiguredPath("discard"));
  EXPECT_TRUE(discard == parsed->paths.end() || discard->second.empty());
}

TEST(State, InvalidLoadsAreRejectedNamingTheKey) {
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& l) { l = "busy"; }, "uring_send_zc.load: not an object or null"},
      {[](nlohmann::json& l) { l["busy_share"] = 1.5; },
       "uring_send_zc.load: busy_share: 1.5 is not a share in [0, 1]"},
      {[](nlohmann::json& l) { l["steal_share"] = -0.1; }, "steal_share: -0.1 is not a share"},
      {[](nlohmann::json& l) { l.erase("own_share"); }, "own_share: missing or not a number"},
      {[](nlohmann::json& l) { l["runnable_mean"] = "2"; }, "runnable_mean: missing or not a number"},
      {[](nlohmann::json& l) { l["window_seconds"] = -1; }, "window_seconds: -1 is not a number >= 0"},
      {[](nlohmann::json& l) { l["runnable_max"] = 2.5; }, "runnable_max: missing or not a whole"},
      {[](nlohmann::json& l) { l["runnable_max"] = -1; }, "runnable_max: missing or not a whole"},
      {[](nlohmann::json& l) { l["runnable_reads"] = 1ULL << 33; }, "runnable_reads: missing or not"},
  };
  for (const auto& [change, fragment] : cases) {
    nlohmann::json document = nlohmann::json::parse(SerializeState(SampleState()));
    change(document["paths"]["loopback"]["uring_send_zc"]["load"]);
    const Result<AgentState> parsed = ParseState(document.dump(), "state.json");
    ASSERT_FALSE(parsed) << fragment;
    EXPECT_EQ(parsed.error().code, Errc::kParse);
    EXPECT_NE(parsed.error().message.find("state.json: paths.loopback.uring_send_zc.load"),
              std::string::npos)
        << parsed.error().message;
    EXPECT_NE(parsed.error().message.find(fragment), std::string::npos)
        << "expected '" << fragment << "' in: " << parsed.error().message;
  }
}

TEST(State, RoundTripsWhichMixEachPathWasDecidedFor) {
  AgentState state = SampleState();
  DecidedFor apps;
  apps.source = MixSource::kApplications;
  apps.mix.window_seconds = 3600;
  apps.mix.sends = 12345;
  apps.mix.bins = {{6144, 6144.0 * 300}, {98304, 98304.0 * 20}};
  apps.mix.depth_shares = {{DepthClass::k1, 0.25}, {DepthClass::kStream, 0.75}};
  state.decided_for[ConfiguredPath("loopback")] = DecidedFor{};
  state.decided_for[ConfiguredPath("discard")] = apps;
  DecidedFor configured;
  configured.source = MixSource::kConfigured;
  configured.mix.bins = {{65536, 1.0}};
  state.decided_for[PeerPath("10.0.0.2:7070")] = configured;
  const std::string text = SerializeState(state);
  EXPECT_NE(text.find("\"source\": \"applications\""), std::string::npos) << text;
  const Result<AgentState> parsed = ParseState(text, "state.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->decided_for, state.decided_for);
  EXPECT_EQ(SerializeState(*parsed), text);
}

TEST(State, FilesWrittenBeforeTheMixLoadWithNoneDecidedFor) {
  nlohmann::json document = nlohmann::json::parse(SerializeState(SampleState()));
  ASSERT_TRUE(document.contains("decided_for"));
  document.erase("decided_for");
  const Result<AgentState> parsed = ParseState(document.dump(), "state.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_TRUE(parsed->decided_for.empty());
  EXPECT_EQ(parsed->paths.size(), 1u);
}

TEST(State, AnInvalidDecidedForIsRejectedNamingTheKey) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {"applications", "decided_for.discard: not an object"},
      {{{"source", "apps"}}, "decided_for.discard: source: '\"apps\"' is not uniform"},
      {{{"source", "applications"}, {"sends", -1}}, "decided_for.discard: sends: not a whole"},
      {{{"source", "applications"}, {"bins", {{{"size_bytes", 0}, {"weight", 1}}}}},
       "decided_for.discard: bins: each must be"},
      {{{"source", "applications"}, {"depths", {{"2", 0.5}}}},
       "decided_for.discard: depths: '2' must be a depth class"},
  };
  for (const auto& [value, fragment] : cases) {
    nlohmann::json document = nlohmann::json::parse(SerializeState(SampleState()));
    document["decided_for"]["discard"] = value;
    const Result<AgentState> parsed = ParseState(document.dump(), "state.json");
    ASSERT_FALSE(parsed) << fragment;
    EXPECT_EQ(parsed.error().code, Errc::kParse);
    EXPECT_NE(parsed.error().message.find(fragment), std::string::npos)
        << "expected '" << fragment << "' in: " << parsed.error().message;
  }
}

TEST(State, RoundTripsTheFieldContradictionsInForce) {
  AgentState state = SampleState();
  state.contradictions = {{AppScope::kPeer, Method::kMsgZerocopy, 100, 200},
                          {AppScope::kHostDefault, Method::kUringSendZc, 300, 400}};
  const Result<AgentState> parsed = ParseState(SerializeState(state), "state.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->contradictions, state.contradictions);
  nlohmann::json old = nlohmann::json::parse(SerializeState(state));
  old.erase("contradictions");
  const Result<AgentState> before = ParseState(old.dump(), "state.json");
  ASSERT_TRUE(before) << before.error().message;
  EXPECT_TRUE(before->contradictions.empty()) << "a file written before them has none";
  nlohmann::json bad = nlohmann::json::parse(SerializeState(state));
  bad["contradictions"][1]["scope"] = "discard";
  const Result<AgentState> refused = ParseState(bad.dump(), "state.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("contradictions[1].scope: not a scope kind"),
            std::string::npos)
      << refused.error().message;
  bad["contradictions"][1]["scope"] = "peer";
  bad["contradictions"][1].erase("last_seen_ns");
  EXPECT_FALSE(ParseState(bad.dump(), "state.json"));
}

TEST(State, SaveCreatesTheDirectoryAndLeavesNoTemporaryFile) {
  TempDir dir;
  const std::filesystem::path path = dir.path() / "a" / "b" / "state.json";
  ASSERT_TRUE(SaveState(SampleState(), path.string()));
  ASSERT_TRUE(SaveState(SampleState(), path.string()));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator(path.parent_path())) {
    ++files;
  }
  EXPECT_EQ(files, 1u);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(State, SaveReportsAnUnwritableDirectory) {
  TempDir dir;
  const std::filesystem::path blocker = dir.path() / "file";
  WriteFile(blocker, "x");
  const Result<void> saved =
      SaveState(SampleState(), (blocker / "state.json").string());
  ASSERT_FALSE(saved);
  EXPECT_EQ(saved.error().code, Errc::kIo);
  EXPECT_NE(saved.error().message.find(blocker.string()), std::string::npos);
}

TEST(State, MissingFileIsNotFound) {
  TempDir dir;
  const Result<AgentState> loaded =
      LoadState((dir.path() / "none.json").string());
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code, Errc::kNotFound);
}

TEST(State, CorruptFilesAreRejectedWithTheirName) {
  TempDir dir;
  const std::string good = SerializeState(SampleState());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not JSON"},
      {good.substr(0, good.size() / 2), "not JSON"},
      {"[1, 2]", "not a zcal state file"},
      {R"({"format": "other"})", "not a zcal state file"},
      {R"({"format": "zcal-state"})", "'version' is missing"},
      {R"({"format": "zcal-state", "version": 2})", "version 2"},
      {R"({"format": "zcal-state", "version": 1, "saved_at_ns": 1,
           "fingerprint": "xyz", "paths": {}})",
       "'fingerprint'"},
      {R"({"format": "zcal-state", "version": 1, "saved_at_ns": 1,
           "fingerprint": "00000000000000ff"})",
       "'paths' is missing"},
      {R"({"format": "zcal-state", "version": 1, "saved_at_ns": 1,
           "fingerprint": "00000000000000ff",
           "paths": {"loopback": {"copy": {}}}})",
       "not a zerocopy method"},
      {R"({"format": "zcal-state", "version": 1, "saved_at_ns": 1,
           "fingerprint": "00000000000000ff",
           "paths": {"loopback": {"msg_zerocopy": {"measured_at_ns": 1,
             "published": {"verdict": "maybe"}}}}})",
       "'verdict' is missing or unknown"},
      {R"({"format": "zcal-state", "version": 1, "saved_at_ns": 1,
           "fingerprint": "00000000000000ff",
           "paths": {"loopback": {"msg_zerocopy": {"measured_at_ns": 1,
             "published": {"verdict": "threshold"}}}}})",
       "without 'threshold_bytes'"},
      {R"({"format": "zcal-state", "version": 1, "saved_at_ns": 1,
           "fingerprint": "00000000000000ff",
           "paths": {"loopback": {"msg_zerocopy": {"measured_at_ns": 1,
             "published": {"verdict": "never", "model": {
               "zerocopy": {"per_send_ns": "lots"}}}}}}})",
       "msg_zerocopy.model.zerocopy: 'per_send_ns' must be a number"},
  };
  for (const auto& [text, fragment] : cases) {
    const std::filesystem::path path = dir.path() / "state.json";
    WriteFile(path, text);
    const Result<AgentState> loaded = LoadState(path.string());
    ASSERT_FALSE(loaded) << text;
    EXPECT_EQ(loaded.error().code, Errc::kParse);
    EXPECT_NE(loaded.error().message.find(path.string()), std::string::npos)
        << loaded.error().message;
    EXPECT_NE(loaded.error().message.find(fragment), std::string::npos)
        << "expected '" << fragment << "' in: " << loaded.error().message;
  }
}

// The cost model's verdicts keep what a report needs to redraw the curves:
// the fits, the interval, the rule and the regrets.
TEST(State, KeepsTheCostModelOfAResult) {
  AgentState state = SampleState();
  MethodResult& r = state.paths[ConfiguredPath("loopback")][Method::kUringSendZc].published;
  r.rule = calibrator::Rule::kModel;
  r.rule_detail = "decided by its own comparison: uring_send CPU per byte ...";
  r.interval = calibrator::ThresholdInterval{15872, 17152, 0.95};
  r.regret = 0.004;
  r.regret_never = 0.2;
  r.regret_always = 0.3;
  r.regret_excess = 0.0012;
  r.tail_threshold_bytes = 24576;
  r.wins_below = {8192};
  r.losses_above = {16384};
  r.sizes[0].relative_cost = 0.93;
  calibrator::CostModel model;
  model.accepted = true;
  model.min_size_bytes = 1024;
  model.max_size_bytes = 262144;
  model.bootstrap_replicates = 200;
  model.exceptions = {{16384, 16384, "uring_send CPU per byte at 16384 bytes ..."}};
  model.zerocopy.method = Method::kUringSendZc;
  model.zerocopy.per_byte_ns = 0.03;
  model.zerocopy.per_send_ns = 1400;
  model.zerocopy.line_rate_bytes_per_second = 1.2e10;
  model.zerocopy.cpu_bound_cores = 1.0;
  model.zerocopy.per_byte_per_send_cov = -1e-3;
  model.baseline.method = Method::kUringSend;
  model.baseline.per_byte_ns = 0.08;
  model.baseline.per_send_ns = 700;
  r.model = model;
  const Result<AgentState> parsed = ParseState(SerializeState(state), "state.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const MethodResult& back =
      parsed->paths.at(ConfiguredPath("loopback")).at(Method::kUringSendZc).published;
  EXPECT_EQ(calibrator::ToJson(back), calibrator::ToJson(r));
  EXPECT_EQ(back.model->zerocopy.cpu_bound_cores, 1.0);
  EXPECT_FALSE(back.model->baseline.line_rate_bytes_per_second.has_value());
  EXPECT_EQ(back.interval->high_bytes, 17152u);
  EXPECT_EQ(back.rule, calibrator::Rule::kModel);
}

TEST(State, FilesWrittenBeforeTheCostModelStillRead) {
  nlohmann::json document = nlohmann::json::parse(SerializeState(SampleState()));
  for (auto& [method, entry] : document["paths"]["loopback"].items()) {
    for (const char* key : {"rule", "rule_detail", "interval", "regret", "regret_never",
                            "regret_always", "regret_excess", "tail_threshold_bytes", "wins_below",
                            "losses_above", "model"}) {
      entry["published"].erase(key);
    }
  }
  const Result<AgentState> parsed = ParseState(document.dump(), "state.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const MethodResult& r =
      parsed->paths.at(ConfiguredPath("loopback")).at(Method::kUringSendZc).published;
  EXPECT_EQ(r.threshold_bytes, 16384u);
  EXPECT_EQ(r.rule, calibrator::Rule::kNone);
  EXPECT_FALSE(r.model.has_value());
}

// The host facts of a state file are read back typed, also from a file
// that carries more than the agent writes now (every device, per path).
TEST(State, ReadsTheHostFactsOfEveryPath) {
  const std::string text = R"({"format": "zcal-state", "version": 1,
    "saved_at_ns": 5, "fingerprint": "00000000000000ab", "paths": {},
    "host": {"fingerprint": "00000000000000ab", "paths": {
      "loopback": {"kernel_release": "6.1.0", "cpu_model": "Test CPU",
                   "iommu_cmdline": ["iommu=pt"], "devices": [{"name": "lo"}],
                   "interface": {"name": "lo", "mtu": 65536}, "notes": ["a"]},
      "discard": {"kernel_release": "6.1.0", "cpu_model": "Test CPU",
                  "interface": {"name": "lo", "speed_mbps": null},
                  "notes": ["a", "b"]}}}})";
  const Result<AgentState> state = ParseState(text, "old.json");
  ASSERT_TRUE(state) << state.error().message;
  const HostInfo& host = state->host;
  EXPECT_EQ(host.facts.kernel_release, "6.1.0");
  EXPECT_EQ(host.facts.cpu_model, "Test CPU");
  EXPECT_EQ(host.facts.iommu_cmdline, std::vector<std::string>{"iommu=pt"});
  EXPECT_EQ(host.facts.fingerprint, 0xabu);
  ASSERT_EQ(host.interfaces.size(), 2u);
  EXPECT_EQ(host.interfaces[0].path, "discard");
  EXPECT_EQ(host.interfaces[1].path, "loopback");
  EXPECT_EQ(host.interfaces[1].facts.mtu, 65536u);
  EXPECT_EQ(host.facts.notes, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(host.facts.devices.size(), 1u);
  EXPECT_EQ(host.facts.devices[0].name, "lo");
  // Written back, it reads the same.
  const Result<AgentState> again = ParseState(SerializeState(*state), "again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->host.facts.cpu_model, "Test CPU");
  EXPECT_EQ(again->host.interfaces.size(), 2u);
  EXPECT_EQ(again->host.facts.notes, host.facts.notes);
  EXPECT_EQ(again->host.facts.devices.size(), 1u);
}

// The state file keeps each interface under its label; read back, each is
// again the host default NIC's, the peers' NIC's or a path's, which is what
// the code asks (never the label's text).
TEST(State, InterfacesComeBackWithWhoseTheyAre) {
  TempDir dir;
  const std::string path = (dir.path() / "state.json").string();
  AgentState state = SampleState();
  probes::InterfaceFacts eth0;
  eth0.name = "eth0";
  probes::InterfaceFacts eth1;
  eth1.name = "eth1";
  state.host.interfaces.push_back(HostDefaultInterface(eth0));
  state.host.interfaces.push_back(PeersInterface(eth1));
  ASSERT_TRUE(SaveState(state, path));
  const auto loaded = LoadState(path);
  ASSERT_TRUE(loaded) << loaded.error().message;
  std::map<std::string, InterfaceRole> roles;
  for (const PathInterface& i : loaded->host.interfaces) roles[i.path] = i.role;
  EXPECT_EQ(roles, (std::map<std::string, InterfaceRole>{
                       {"loopback", InterfaceRole::kPath},
                       {"host_default", InterfaceRole::kHostDefault},
                       {"interface/eth1", InterfaceRole::kPeers}}));
  // A label of the peers' form names its NIC even where the facts do not.
  EXPECT_EQ(InterfaceOfLabel("interface/eth7", {}).facts.name, "eth7");
  EXPECT_EQ(InterfaceOfLabel("peer/198.18.0.2:7070", {}).role, InterfaceRole::kPath);
}

TEST(State, UnknownKeysAreIgnored) {
  nlohmann::json document = nlohmann::json::parse(SerializeState(SampleState()));
  document["written_by"] = "a later minor release";
  document["paths"]["loopback"]["msg_zerocopy"]["extra"] = 1;
  const Result<AgentState> parsed = ParseState(document.dump(), "state.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->paths.at(ConfiguredPath("loopback")).size(), 2u);
}

// The state file's keys and the paths' text: one printer, one parser.
TEST(PathId, PrintsAndParsesConfiguredPathsAndPeers) {
  for (const auto& [text, peer] :
       {std::pair{"loopback", false}, std::pair{"discard", false}, std::pair{"lo-1.a", false},
        std::pair{"peer/198.18.0.2:7070", true}, std::pair{"peer/[2001:db8::3]:7070", true}}) {
    const Result<PathId> parsed = ParsePathId(text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.error().message;
    EXPECT_EQ(ToString(*parsed), text);
    EXPECT_EQ(parsed->IsPeer(), peer) << text;
  }
  EXPECT_EQ(*ParsePathId("peer/198.18.0.2:7070"), PeerPath("198.18.0.2:7070"));
  EXPECT_EQ(*ParsePathId("discard"), ConfiguredPath("discard"));
  EXPECT_EQ(ParsePathId("discard")->name(), "discard");
  EXPECT_EQ(ToString(PeerPath("198.18.0.2:7070").endpoint()), "198.18.0.2:7070");
  const Result<PathId> refused = ParsePathId("peer/198.18.0.2");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("peer/198.18.0.2"), std::string::npos)
      << refused.error().message;
}

TEST(PathId, OrdersConfiguredPathsByNameThenPeersByAddressAndPort) {
  const std::vector<PathId> ordered = {
      ConfiguredPath("discard"),      ConfiguredPath("loopback"),   ConfiguredPath("zz"),
      PeerPath("198.18.0.9:7070"),    PeerPath("198.18.0.10:7070"), PeerPath("198.18.0.10:7071"),
      PeerPath("[2001:db8::3]:7070"),
  };
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    for (std::size_t j = 0; j < ordered.size(); ++j) {
      EXPECT_EQ(ordered[i] < ordered[j], i < j)
          << ToString(ordered[i]) << " " << ToString(ordered[j]);
      EXPECT_EQ(ordered[i] == ordered[j], i == j)
          << ToString(ordered[i]) << " " << ToString(ordered[j]);
    }
  }
}

// The format is unchanged: a file of an earlier agent loads with its paths
// and peers under their PathIds, and is written back under the same keys.
TEST(State, AFileOfAnEarlierAgentKeepsItsKeysThroughALoadAndASave) {
  const std::string file = (zcal::testing::TestData() / "state" / "written_by_main.json").string();
  const Result<AgentState> loaded = LoadState(file);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_TRUE(loaded->paths.contains(ConfiguredPath("loopback")));
  EXPECT_TRUE(loaded->paths.contains(ConfiguredPath("discard")));
  ASSERT_EQ(loaded->peers.size(), 1u);
  EXPECT_EQ(loaded->peers.begin()->first, PeerPath("198.18.0.2:7000"));
  EXPECT_EQ(loaded->peers.begin()->second.interface, "eth0");
  std::ifstream in(file);
  const nlohmann::json original = nlohmann::json::parse(in);
  const nlohmann::json written = nlohmann::json::parse(SerializeState(*loaded));
  for (const char* section : {"paths", "peers"}) {
    std::vector<std::string> before;
    std::vector<std::string> after;
    for (const auto& [key, value] : original[section].items()) before.push_back(key);
    for (const auto& [key, value] : written[section].items()) after.push_back(key);
    EXPECT_EQ(before, after) << section;
  }
  EXPECT_EQ(written["peers"]["peer/198.18.0.2:7000"]["endpoint"], "198.18.0.2:7000");
}

TEST(State, APeerRecordWhoseEndpointIsNotItsKeysIsRefused) {
  const std::string bad = R"({"format":"zcal-state","version":1,"saved_at_ns":1,
    "fingerprint":"0000000000000000","paths":{},"peers":{"peer/198.18.0.2:7070":{
    "endpoint":"198.18.0.3:7070","last_attempt_ns":1,"last_success_ns":1}}})";
  const Result<AgentState> refused = ParseState(bad, "s.json");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kParse);
  EXPECT_NE(refused.error().message.find("peers.peer/198.18.0.2:7070.endpoint"), std::string::npos)
      << refused.error().message;
}

TEST(State, APathKeyOfAPeerWhoseEndpointDoesNotParseIsRefused) {
  const std::string bad = R"({"format":"zcal-state","version":1,"saved_at_ns":1,
    "fingerprint":"0000000000000000","paths":{"peer/nowhere":{}}})";
  const Result<AgentState> refused = ParseState(bad, "s.json");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::kParse);
  EXPECT_NE(refused.error().message.find("s.json: paths.peer/nowhere"), std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace zcal::agent::state_test
