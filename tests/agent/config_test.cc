#include "zcal/agent/config/config.h"
#include "zcal/agent/config/reload.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "zcal/testing/test_data.h"

namespace zcal::agent::config_test {
namespace {

using calibrator::Method;
using std::chrono::milliseconds;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Config, EmbeddedDefaultEqualsBuiltInDefaults) {
  const Result<Config> parsed =
      ParseConfig(DefaultConfigYaml(), "<embedded default>");
  ASSERT_TRUE(parsed) << parsed.error().message;
  // Every field, including ones added later (operator== is defaulted). A
  // named object, not Config{}: GCC 12 at -O3 warns falsely that the
  // temporary's strings may be used uninitialized (-Werror in release).
  const Config defaults;
  EXPECT_EQ(*parsed, defaults);
  EXPECT_TRUE(EqualInEffect(*parsed, defaults));
}

TEST(Config, EqualInEffectIgnoresOnlyWhereItCameFrom) {
  Config a;
  Config b;
  b.source = "/etc/zcal/agent.yaml";
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(EqualInEffect(a, b));
  b.segment.heartbeat = std::chrono::seconds(3);
  EXPECT_FALSE(EqualInEffect(a, b));
}

TEST(Config, OmittedKeysKeepDefaults) {
  const Result<Config> config =
      ParseConfig("schedule:\n  interval: 90s\n  jitter: 5s\n", "test.yaml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->schedule.interval, milliseconds(90'000));
  EXPECT_EQ(config->schedule.jitter, milliseconds(5'000));
  EXPECT_EQ(config->segment.name, "/zcal");
  EXPECT_EQ(config->source, "test.yaml");
}

TEST(Config, ReadsEveryKey) {
  const char* text = R"(
paths:
  - name: lo
    type: loopback
  - name: sender
    type: discard
host_default: {enabled: true, interface: eth1, estimate: false}
methods: [copy, msg_zerocopy]
sizes: {min: 4KiB, max: 1MiB}
decision: {objective: cpu, tolerance: 0.1, margin: 0.2, kernel_copied_fraction: 0.9}
hysteresis: {threshold_tolerance: 0.5, high_confidence: 0.8}
schedule: {at_startup: false, interval: 1d, jitter: 1h, retry_after_failure: 30s, fingerprint_poll: 0}
budget: {seconds_per_calibration: 2.5, seconds_per_hour: 30, bytes_per_second: 100MB}
segment: {name: /zcal-x, mode: "0640", group: "", heartbeat: 500ms}
metrics: {listen: "127.0.0.1:0"}
state: {path: /tmp/zcal-state.json}
log: {level: debug}
host: {root: /tmp}
)";
  const Result<Config> config = ParseConfig(text, "all.yaml");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->paths.size(), 2u);
  EXPECT_EQ(config->paths[0].name, "lo");
  EXPECT_EQ(config->paths[1].type, probes::TargetKind::kDiscard);
  EXPECT_EQ(config->host_default.interface, "eth1");
  EXPECT_FALSE(config->host_default.estimate);
  EXPECT_TRUE(config->host_default.enabled);
  EXPECT_EQ(config->methods,
            (std::vector<Method>{Method::kCopy, Method::kMsgZerocopy}));
  EXPECT_EQ(config->min_size_bytes, 4096u);
  EXPECT_EQ(config->max_size_bytes, 1u << 20);
  EXPECT_EQ(config->decision.objective, calibrator::Objective::kCpu);
  EXPECT_DOUBLE_EQ(config->decision.tolerance, 0.1);
  EXPECT_DOUBLE_EQ(config->decision.margin, 0.2);
  EXPECT_DOUBLE_EQ(config->decision.kernel_copied_fraction, 0.9);
  EXPECT_DOUBLE_EQ(config->hysteresis.threshold_tolerance, 0.5);
  EXPECT_DOUBLE_EQ(config->hysteresis.high_confidence, 0.8);
  EXPECT_FALSE(config->schedule.at_startup);
  EXPECT_EQ(config->schedule.interval, std::chrono::hours(24));
  EXPECT_EQ(config->schedule.jitter, std::chrono::hours(1));
  EXPECT_EQ(config->schedule.retry_after_failure, std::chrono::seconds(30));
  EXPECT_EQ(config->schedule.fingerprint_poll, milliseconds(0));
  EXPECT_DOUBLE_EQ(config->budget.seconds_per_calibration, 2.5);
  EXPECT_DOUBLE_EQ(config->budget.seconds_per_hour, 30);
  EXPECT_EQ(config->budget.bytes_per_second, 100'000'000u);
  EXPECT_EQ(config->segment.name, "/zcal-x");
  EXPECT_EQ(config->segment.mode, 0640u);
  EXPECT_EQ(config->segment.heartbeat, milliseconds(500));
  EXPECT_EQ(config->metrics.listen, "127.0.0.1:0");
  EXPECT_EQ(config->state_path, "/tmp/zcal-state.json");
  EXPECT_EQ(config->log_level, "debug");
  EXPECT_EQ(config->host_root, "/tmp");
}

TEST(Config, DecisionTrafficIsReadInTheGrammarOfTraffic) {
  const Result<Config> config =
      ParseConfig("decision: {traffic: \"4KiB:30, 64KiB:70\"}\n", "t.yaml");
  ASSERT_TRUE(config) << config.error().message;
  const std::vector<calibrator::TrafficBin> bins = {{4096, 30}, {65536, 70}};
  EXPECT_EQ(config->decision.traffic, bins);
  EXPECT_TRUE(ParseConfig("decision: {traffic: \"\"}\n", "t.yaml")->decision.traffic.empty())
      << "empty: none, the applications' mix or uniform";
  const Result<Config> bad = ParseConfig("decision:\n  traffic: \"4KiB\"\n", "bad.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("decision.traffic"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("'4KiB' is not SIZE:WEIGHT"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("bad.yaml:2"), std::string::npos) << bad.error().message;
}

TEST(Config, EmptyListenDisablesMetrics) {
  const Result<Config> config = ParseConfig("metrics: {listen: \"\"}\n", "t");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_TRUE(config->metrics.listen.empty());
}

TEST(Config, SegmentCapacityIsAWholeNumberOfEntriesUpTo65536) {
  const Result<Config> config = ParseConfig("segment: {capacity: 1024}\n", "t");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->segment.capacity, 1024u);
  EXPECT_EQ(ParseConfig("{}\n", "t")->segment.capacity, 256u);
  for (const char* bad : {"0", "65537", "2.5", "lots"}) {
    const Result<Config> refused =
        ParseConfig(std::string("segment: {capacity: ") + bad + "}\n", "cap.yaml");
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message.find("cap.yaml:1:21: segment.capacity"), std::string::npos)
        << refused.error().message;
  }
}

TEST(Config, ReportsEveryProblemInOneMessage) {
  const Result<Config> config = ParseConfig(
      "schedule:\n  interval: never\nsegment:\n  name: bad\n", "many.yaml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, Errc::kParse);
  EXPECT_NE(config.error().message.find("many.yaml:2:13: schedule.interval"),
            std::string::npos)
      << config.error().message;
  EXPECT_NE(config.error().message.find("many.yaml:4:9: segment.name"),
            std::string::npos)
      << config.error().message;
}

TEST(Config, ExportsAreReadWithTheirKeyAndFallback) {
  const Result<Config> config = ParseConfig(
      "exports:\n"
      "  - {format: libfabric, path: /tmp/zcal-fabric.env, for: 198.18.0.2}\n"
      "  - {format: spdk-rpc, path: /tmp/zcal.rpc, interface: eth0, fallback: 16KiB}\n"
      "  - {format: env, path: /tmp/zcal.env, scope: loopback}\n"
      "  - {format: env, path: /tmp/zcal-uring.env, scope: loopback,\n"
      "     methods: [uring_send_zc_fixed, uring_send_zc]}\n",
      "exports.yaml");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_EQ(config->exports.size(), 4u);
  EXPECT_EQ(config->exports[0],
            (ExportConfig{ExportFormat::kLibfabric, "/tmp/zcal-fabric.env", "198.18.0.2", "", "", "", {}, std::nullopt, false}));
  EXPECT_EQ(config->exports[1],
            (ExportConfig{ExportFormat::kSpdkRpc, "/tmp/zcal.rpc", "", "eth0", "", "16KiB", {}, std::nullopt, false}));
  EXPECT_EQ(config->exports[2],
            (ExportConfig{ExportFormat::kEnv, "/tmp/zcal.env", "", "", "loopback", "", {}, std::nullopt, false}));
  EXPECT_EQ(config->exports[3],
            (ExportConfig{ExportFormat::kEnv, "/tmp/zcal-uring.env", "", "", "loopback", "",
                          {calibrator::Method::kUringSendZc, calibrator::Method::kUringSendZcFixed}, std::nullopt, false}));
  // exports: with nothing, or an empty list, is none (the default).
  const Result<Config> none = ParseConfig("exports: []\n", "none.yaml");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->exports.empty());
}

TEST(Config, ExportMethodsAreCheckedAgainstTheFormat) {
  const Result<Config> config = ParseConfig(
      "exports:\n"
      "  - {format: libfabric, path: /tmp/a.env, scope: loopback, methods: [uring_send_zc]}\n"
      "  - {format: env, path: /tmp/b.env, scope: loopback, methods: [copy]}\n"
      "  - {format: env, path: /tmp/c.env, scope: loopback, methods: []}\n"
      "  - {format: json, path: /tmp/d.json, scope: loopback, methods: msg_zerocopy}\n",
      "methods.yaml");
  ASSERT_FALSE(config);
  const std::string& m = config.error().message;
  EXPECT_NE(m.find("exports[0].methods uring_send_zc leaves out what format libfabric writes "
                   "(msg_zerocopy); name it"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.rfind("methods.yaml:2:", 0), 0u) << "where: " << m;
  EXPECT_NE(m.find("exports[1].methods: \"copy\" is not a zerocopy method"), std::string::npos)
      << m;
  EXPECT_NE(m.find("exports[2].methods names no method"), std::string::npos) << m;
  EXPECT_NE(m.find("exports[3].methods"), std::string::npos) << m;
}

// `levels` mappings inside each other in block style: level L is the key
// "k" at line L, column L.
std::string NestedMaps(int levels) {
  std::string text;
  for (int i = 0; i < levels; ++i) text += std::string(i, ' ') + "k:\n";
  return text;
}

TEST(Config, NestingPastTheLimitNamesTheLimitAndTheLine) {
  const Result<Config> deep = ParseConfig(NestedMaps(500), "deep.yaml");
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().message,
            "deep.yaml:65:65: YAML nesting deeper than 64 levels (mappings and "
            "lists inside each other); a configuration nests a few levels, "
            "see docs/config.md");
  // Flow style: the 65th level is the 64th '[' after "paths: ".
  const Result<Config> flow = ParseConfig(
      "schedule: {}\npaths: " + std::string(100, '[') + std::string(100, ']') + "\n",
      "flow.yaml");
  ASSERT_FALSE(flow);
  EXPECT_NE(flow.error().message.find(
                "flow.yaml:2:71: YAML nesting deeper than 64 levels"),
            std::string::npos)
      << flow.error().message;
}

TEST(Config, NestingUpToTheLimitIsReadAsUsual) {
  const Result<Config> config = ParseConfig(NestedMaps(64), "deep.yaml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().message.find("nesting"), std::string::npos)
      << config.error().message;
  EXPECT_NE(config.error().message.find("deep.yaml:1:1: k: unknown key"),
            std::string::npos)
      << config.error().message;
}

TEST(Config, ListsTheFirstProblemsAndCountsTheRest) {
  std::string text;
  for (int i = 0; i < 500; ++i) text += "unknown_" + std::to_string(i) + ": 1\n";
  const Result<Config> config = ParseConfig(text, "many.yaml");
  ASSERT_FALSE(config);
  std::vector<std::string> lines;
  std::istringstream message(config.error().message);
  for (std::string line; std::getline(message, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 21u) << config.error().message;
  EXPECT_EQ(lines.front().rfind("many.yaml:1:1: unknown_0: unknown key", 0), 0u)
      << lines.front();
  EXPECT_EQ(lines[19].rfind("many.yaml:20:1: unknown_19: unknown key", 0), 0u)
      << lines[19];
  EXPECT_EQ(lines.back(),
            "many.yaml: ... and 480 more errors (the first 20 are listed)");
}

TEST(Config, ListsTwentyProblemsWithoutACount) {
  std::string text;
  for (int i = 0; i < 20; ++i) text += "unknown_" + std::to_string(i) + ": 1\n";
  const Result<Config> config = ParseConfig(text, "some.yaml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().message.find("more error"), std::string::npos);
  EXPECT_NE(config.error().message.find("some.yaml:20:1: unknown_19"),
            std::string::npos);
}

TEST(Config, DepthsDefaultToTheFourClassesTheSegmentPublishes) {
  const Config config;
  EXPECT_EQ(config.depths, (std::vector<std::uint32_t>{1, 4, 16, calibrator::kStreamDepth}));
}

TEST(Config, DepthsAreReadAsAListOrACommaStringInCalibrationOrder) {
  for (const char* text : {"depths: [stream, 16, 1]\n", "depths: \"stream,16, 1\"\n",
                           "depths:\n  - 1\n  - stream\n  - 16\n"}) {
    const Result<Config> config = ParseConfig(text, "test.yaml");
    ASSERT_TRUE(config) << text << config.error().message;
    EXPECT_EQ(config->depths, (std::vector<std::uint32_t>{1, 16, calibrator::kStreamDepth}))
        << text;
  }
  const Result<Config> stream = ParseConfig("depths: [stream]\n", "test.yaml");
  ASSERT_TRUE(stream) << stream.error().message;
  EXPECT_EQ(stream->depths, std::vector<std::uint32_t>{calibrator::kStreamDepth});
}

TEST(Config, BadDepthsAreOneLineWithTheirPosition) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"depths: [0, stream]\n",
       "test.yaml:1:10: depths[0]: '0' is not a class the segment publishes: 1, 4, 16, "
       "stream; `zcal calibrate --depth` measures any depth"},
      {"depths: [-1, stream]\n", "test.yaml:1:10: depths[0]: '-1' is not a class"},
      {"depths: [two, stream]\n", "test.yaml:1:10: depths[0]: 'two' is not a class"},
      {"depths: [1, 5, stream]\n", "test.yaml:1:13: depths[1]: '5' is not a class"},
      {"depths: [1, 1, stream]\n", "test.yaml:1:13: depths[1]: class 1 is listed twice"},
      {"depths: [stream, stream]\n", "test.yaml:1:18: depths[1]: class stream is listed twice"},
      {"depths: [1, 4, 16]\n", "test.yaml:1:9: depths: stream is missing"},
      {"depths: []\n", "test.yaml:1:9: depths: stream is missing"},
      {"depths: [1, 1, 1, 1, 1, 1, 1, 1, 1]\n", "test.yaml:1:9: depths: 9 classes; at most 8"},
      {"depths: \"1,5\"\n", "test.yaml:1:9: depths: '5' is not a class"},
      {"depths: {a: 1}\n", "test.yaml:1:9: depths: expected a list"},
      {"depths: [[1], stream]\n", "test.yaml:1:10: depths[0]: expected a string"},
  };
  for (const auto& [text, expected] : cases) {
    const Result<Config> config = ParseConfig(text, "test.yaml");
    ASSERT_FALSE(config) << text;
    EXPECT_EQ(config.error().code, Errc::kParse);
    EXPECT_NE(config.error().message.find(expected), std::string::npos)
        << "expected: " << expected << "\ngot:      " << config.error().message;
    EXPECT_EQ(config.error().message.find('\n'), std::string::npos)
        << "one line: " << config.error().message;
  }
}

TEST(Config, LoopbackIsCalibratedAtStreamOnlyWhateverDepthsSay) {
  Config config;
  config.depths = {1, 4, calibrator::kStreamDepth};
  EXPECT_EQ(CalibratedDepths(config, probes::TargetKind::kLoopback),
            std::vector<std::uint32_t>{calibrator::kStreamDepth});
  EXPECT_EQ(CalibratedDepths(config, probes::TargetKind::kDiscard), config.depths);
  EXPECT_EQ(CalibratedDepths(config, probes::TargetKind::kPeer), config.depths);
}

TEST(Config, MissingFileIsAnIoError) {
  const Result<Config> config = LoadConfigFile("/nonexistent/zcal.yaml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, Errc::kIo);
  EXPECT_NE(config.error().message.find("/nonexistent/zcal.yaml"),
            std::string::npos);
  EXPECT_NE(config.error().message.find("No such file"), std::string::npos);
}

TEST(Config, BinaryFileIsRejected) {
  const Result<Config> config =
      ParseConfig(std::string_view("a: \0\x01\x02", 6), "bin.yaml");
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("bin.yaml:1:1: the file contains NUL"),
            std::string::npos);
}

TEST(Config, ReadsTheAppsSection) {
  const Result<Config> config = ParseConfig(
      "apps:\n  enabled: false\n  directory: /run/zcal-apps/\n  max_objects: 16\n"
      "  max_names: 4\n  uids: [0, 1000]\n  window: 10m\n  contradiction_share: 0.25\n"
      "  contradiction_min_completions: 50\n  mix: false\n  mix_min_sends: 200\n"
      "  owner_check: off\n",
      "apps.yaml");
  ASSERT_TRUE(config) << config.error().message;
  const AppsSettings& apps = config->apps;
  EXPECT_FALSE(apps.enabled);
  EXPECT_EQ(apps.directory, "/run/zcal-apps");
  EXPECT_EQ(apps.max_objects, 16u);
  EXPECT_EQ(apps.max_names, 4u);
  EXPECT_EQ(apps.uids, (std::vector<std::uint32_t>{0, 1000}));
  EXPECT_EQ(apps.window, std::chrono::minutes(10));
  EXPECT_DOUBLE_EQ(apps.contradiction_share, 0.25);
  EXPECT_EQ(apps.contradiction_min_completions, 50u);
  EXPECT_FALSE(apps.mix);
  EXPECT_EQ(apps.mix_min_sends, 200u);
  EXPECT_EQ(apps.owner_check, AppsOwnerCheck::kOff);
  // `apps:` alone keeps the defaults, and they are AppsSettings'.
  const Result<Config> bare = ParseConfig("apps:\n", "bare.yaml");
  ASSERT_TRUE(bare) << bare.error().message;
  EXPECT_EQ(bare->apps, AppsSettings{});
  EXPECT_EQ(DefaultConfig().apps, AppsSettings{});
}

TEST(Config, ListsEveryBadAppsValueWithItsPosition) {
  const Result<Config> config = ParseConfig(
      "apps:\n  max_objects: -1\n  max_names: 0\n  contradiction_share: 2\n"
      "  window: 1x\n  uids: [root]\n",
      "bad.yaml");
  ASSERT_FALSE(config);
  const std::string& m = config.error().message;
  EXPECT_NE(m.find("bad.yaml:2:16: apps.max_objects:"), std::string::npos) << m;
  EXPECT_NE(m.find("bad.yaml:3:14: apps.max_names:"), std::string::npos) << m;
  EXPECT_NE(m.find("bad.yaml:4:24: apps.contradiction_share:"), std::string::npos) << m;
  EXPECT_NE(m.find("bad.yaml:5:11: apps.window:"), std::string::npos) << m;
  EXPECT_NE(m.find("bad.yaml:6:10: apps.uids[0]:"), std::string::npos) << m;
}

TEST(Config, AReloadThatChangesAppsSaysSo) {
  const Config running;
  Config next = running;
  next.apps.max_names = 8;
  const ConfigChange change = DiffConfig(running, next);
  EXPECT_TRUE(change.apps);
  EXPECT_FALSE(change.calibration);
  EXPECT_EQ(change.Summary(), "apps");
}

// Each file in tests/data/configs/bad starts with
// "# expect: LINE:COLUMN: fragment": the file must be rejected with a
// message that contains "FILE:LINE:COLUMN: fragment".
TEST(ConfigCorpus, RejectsEveryMalformedFileAtItsPosition) {
  const std::filesystem::path dir =
      zcal::testing::TestData() / "configs" / "bad";
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string text = ReadFile(entry.path());
    const std::string prefix = "# expect: ";
    ASSERT_TRUE(text.starts_with(prefix)) << entry.path();
    const std::string expected =
        entry.path().string() + ":" +
        text.substr(prefix.size(), text.find('\n') - prefix.size());
    const Result<Config> config = LoadConfigFile(entry.path().string());
    ASSERT_FALSE(config) << entry.path() << " was accepted";
    EXPECT_EQ(config.error().code, Errc::kParse);
    EXPECT_NE(config.error().message.find(expected), std::string::npos)
        << "expected: " << expected << "\ngot:      "
        << config.error().message;
    ++checked;
  }
  EXPECT_GE(checked, 20u);
}

TEST(ConfigCorpus, AcceptsEveryGoodFile) {
  const std::filesystem::path dir =
      zcal::testing::TestData() / "configs" / "good";
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    const Result<Config> config = LoadConfigFile(entry.path().string());
    EXPECT_TRUE(config) << config.error().message;
    ++checked;
  }
  EXPECT_GE(checked, 1u);
}

}  // namespace
}  // namespace zcal::agent::config_test
