// The `sink:` section: read as written, checked through the conversion that
// `zcal sink` uses, every error naming its key (the bad corpus in
// tests/data/configs/bad/sink_*.yaml has one file per error an operator
// can make; config_test.cc checks them all).
#include <sys/stat.h>

#include <gtest/gtest.h>

#include "zcal/agent/config/sink_settings.h"
#include "test_util.h"
#include "zcal/agent/config/config.h"

namespace zcal::agent::config_sink_test {
namespace {

using testing::TempDir;
using testing::WriteFile;

std::string KeyFile(const TempDir& dir, const std::string& id) {
  const std::string path = (dir.path() / (id + ".keys")).string();
  WriteFile(path, id + " " + std::string(64, 'a') + "\n");
  chmod(path.c_str(), 0600);
  return path;
}

TEST(ConfigSink, AbsentOrEmptyIsNoSink) {
  const Config none;
  EXPECT_FALSE(none.sink.options);
  for (const char* text : {"log: {level: info}\n", "sink:\n", "sink: {listen: \"\"}\n"}) {
    const Result<Config> config = ParseConfig(text, "t.yaml");
    ASSERT_TRUE(config) << text << config.error().message;
    EXPECT_EQ(config->sink, SinkConfig{}) << text;
  }
}

TEST(ConfigSink, ReadsEveryKeyAsWritten) {
  TempDir dir;
  const std::string keys = KeyFile(dir, "k1");
  const Result<Config> config = ParseConfig(
      "sink:\n"
      "  listen: 0.0.0.0:7070\n"
      "  allow: [198.18.0.0/15, 10.1.0.0/16]\n"
      "  key_file: " + keys + "\n"
      "  auth: key\n"
      "  max_sessions: 2\n"
      "  max_connections: 16\n"
      "  max_connections_per_source: 4\n"
      "  max_session_seconds: 30s\n"
      "  max_bytes_per_second: 1GB/s\n"
      "  idle_timeout: 5s\n"
      "  handshake_deadline: 500ms\n",
      "t.yaml");
  ASSERT_TRUE(config) << config.error().message;
  // Parsed once, when the file is read, into what the sink runs with.
  ASSERT_TRUE(config->sink.options);
  const probes::PeerSinkOptions& o = *config->sink.options;
  EXPECT_EQ(common::ToString(o.listen), "0.0.0.0:7070");
  ASSERT_EQ(o.allow.size(), 2u);
  EXPECT_EQ(common::ToString(o.allow[0]), "198.18.0.0/15");
  EXPECT_EQ(common::ToString(o.allow[1]), "10.1.0.0/16");
  EXPECT_EQ(config->sink.key_file, keys);
  ASSERT_TRUE(o.keys);
  EXPECT_EQ(o.keys->keys.size(), 1u);
  EXPECT_FALSE(o.auth_none);
  EXPECT_EQ(o.max_sessions, 2u);
  EXPECT_EQ(o.max_connections, 16u);
  EXPECT_EQ(o.max_connections_per_source, 4u);
  EXPECT_EQ(o.max_session_seconds, std::chrono::seconds(30));
  EXPECT_EQ(o.max_bytes_per_second, 1'000'000'000u);
  EXPECT_EQ(o.idle_timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(o.handshake_deadline, std::chrono::milliseconds(500));

  // `zcal sink` converts the same settings, written the same way, into the
  // same options.
  SinkSettings cli;
  cli.listen = "0.0.0.0:7070";
  cli.allow = {"198.18.0.0/15", "10.1.0.0/16"};
  cli.key_file = keys;
  cli.max_sessions = 2;
  cli.max_connections = 16;
  cli.max_connections_per_source = 4;
  cli.max_session_seconds = "30s";
  cli.max_bytes_per_second = "1GB/s";
  cli.idle_timeout = "5s";
  cli.handshake_deadline = "500ms";
  std::vector<std::string> warnings;
  const auto options = ToPeerSinkOptions(cli, SettingSpelling::kCommandLine, warnings);
  ASSERT_TRUE(options) << options.error().message;
  EXPECT_EQ(*options, o);
}

TEST(ConfigSink, SettingsAreCheckedEvenWithoutAListenAddress) {
  // A mistake shows before the sink is switched on.
  const Result<Config> config = ParseConfig("sink:\n  max_sessions: 0\n", "t.yaml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().message, "t.yaml:2:17: sink.max_sessions: 1 to 64");
}

TEST(ConfigSink, AuthNoneOffLoopbackIsAllowedWithoutKeys) {
  const Result<Config> config =
      ParseConfig("sink: {listen: \"0.0.0.0:7070\", auth: none}\n", "t.yaml");
  ASSERT_TRUE(config) << config.error().message;
  ASSERT_TRUE(config->sink.options);
  EXPECT_TRUE(config->sink.options->auth_none);
  ASSERT_EQ(config->sink.warnings.size(), 1u) << "auth: none off loopback is logged";
}

TEST(ConfigSink, AnUnreadableKeyFileIsNamedWithItsKey) {
  TempDir dir;
  const std::string path = (dir.path() / "short.keys").string();
  WriteFile(path, "k1 abcd\n");
  const Result<Config> config =
      ParseConfig("sink:\n  listen: 0.0.0.0:7070\n  key_file: " + path + "\n", "t.yaml");
  ASSERT_FALSE(config);
  EXPECT_TRUE(config.error().message.starts_with("t.yaml:3:13: sink.key_file: "))
      << config.error().message;
}

TEST(ConfigSink, EveryProblemOfTheSectionIsReportedAtOnce) {
  const Result<Config> config = ParseConfig(
      "sink:\n  max_sessions: many\n  auth: [key]\n  allow: 10.0.0.0/8\n", "t.yaml");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().message,
            "t.yaml:2:17: sink.max_sessions: expected a whole number, got 'many'\n"
            "t.yaml:3:9: sink.auth: expected a string, got a list\n"
            "t.yaml:4:10: sink.allow: expected a list, got '10.0.0.0/8'");
}

}  // namespace
}  // namespace zcal::agent::config_sink_test
