// configs/agent.yaml, installed as /etc/zcal/agent.yaml and passed by the
// unit with --config, is the operator's full view of the configuration: it
// sets every key of the embedded default (configs/default.yaml) to the same
// effect, so that the packaged service behaves as `zcal agent` does, and
// zcal-agent(1) documents every one of those keys. A key added to the
// default fails here until agent.yaml and the page have it too.
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "test_util.h"
#include "zcal/agent/config.h"

namespace zcal::agent::testing {
namespace {

namespace fs = std::filesystem;

fs::path SourceRoot() {
  const char* root = std::getenv("ZCAL_SOURCE_ROOT");
  return root != nullptr ? root : ".";
}

// Key paths of a configuration text: "schedule.interval" for mappings,
// "paths" and "paths[].name" for a list and the keys of its elements.
void CollectKeys(const YAML::Node& node, const std::string& prefix,
                 std::set<std::string>& keys) {
  if (node.IsMap()) {
    for (const auto& item : node) {
      const std::string key =
          (prefix.empty() ? "" : prefix + ".") + item.first.as<std::string>();
      if (!item.second.IsMap()) keys.insert(key);
      CollectKeys(item.second, key, keys);
    }
  } else if (node.IsSequence()) {
    for (const YAML::Node& element : node) CollectKeys(element, prefix + "[]", keys);
  }
}

std::set<std::string> Keys(const std::string& yaml_text) {
  std::set<std::string> keys;
  CollectKeys(YAML::Load(yaml_text), "", keys);
  return keys;
}

std::string InstalledText() { return ReadFile(SourceRoot() / "configs/agent.yaml"); }

// Field by field until Config has a defaulted operator== (then: a == b with
// `source` equalized). Every member of Config is compared.
void ExpectSameEffect(const Config& a, const Config& b) {
  ASSERT_EQ(a.paths.size(), b.paths.size());
  for (std::size_t i = 0; i < a.paths.size(); ++i) {
    EXPECT_EQ(a.paths[i].name, b.paths[i].name) << "paths[" << i << "]";
    EXPECT_EQ(a.paths[i].type, b.paths[i].type) << "paths[" << i << "]";
  }
  EXPECT_EQ(a.host_default, b.host_default);
  EXPECT_EQ(a.methods, b.methods);
  EXPECT_EQ(a.min_size_bytes, b.min_size_bytes);
  EXPECT_EQ(a.max_size_bytes, b.max_size_bytes);
  EXPECT_EQ(a.decision.objective, b.decision.objective);
  EXPECT_EQ(a.decision.tolerance, b.decision.tolerance);
  EXPECT_EQ(a.decision.margin, b.decision.margin);
  EXPECT_EQ(a.decision.kernel_copied_fraction, b.decision.kernel_copied_fraction);
  EXPECT_EQ(a.hysteresis.threshold_tolerance, b.hysteresis.threshold_tolerance);
  EXPECT_EQ(a.hysteresis.high_confidence, b.hysteresis.high_confidence);
  EXPECT_EQ(a.schedule.at_startup, b.schedule.at_startup);
  EXPECT_EQ(a.schedule.interval, b.schedule.interval);
  EXPECT_EQ(a.schedule.jitter, b.schedule.jitter);
  EXPECT_EQ(a.schedule.retry_after_failure, b.schedule.retry_after_failure);
  EXPECT_EQ(a.schedule.fingerprint_poll, b.schedule.fingerprint_poll);
  EXPECT_EQ(a.budget.seconds_per_calibration, b.budget.seconds_per_calibration);
  EXPECT_EQ(a.budget.seconds_per_hour, b.budget.seconds_per_hour);
  EXPECT_EQ(a.budget.bytes_per_second, b.budget.bytes_per_second);
  EXPECT_EQ(a.segment.name, b.segment.name);
  EXPECT_EQ(a.segment.mode, b.segment.mode);
  EXPECT_EQ(a.segment.group, b.segment.group);
  EXPECT_EQ(a.segment.heartbeat, b.segment.heartbeat);
  EXPECT_EQ(a.metrics.listen, b.metrics.listen);
  EXPECT_EQ(a.state_path, b.state_path);
  EXPECT_EQ(a.log_level, b.log_level);
  EXPECT_EQ(a.host_root, b.host_root);
}

TEST(InstalledConfig, HasTheEffectOfTheEmbeddedDefault) {
  const Result<Config> installed = ParseConfig(InstalledText(), "configs/agent.yaml");
  ASSERT_TRUE(installed) << installed.error().message;
  SCOPED_TRACE("configs/agent.yaml must have the effect of configs/default.yaml");
  ExpectSameEffect(*installed, DefaultConfig());
}

TEST(InstalledConfig, SetsEveryKeyOfTheEmbeddedDefault) {
  const std::set<std::string> defaults = Keys(std::string(DefaultConfigYaml()));
  ASSERT_GE(defaults.size(), 25u);
  const std::set<std::string> installed = Keys(InstalledText());
  for (const std::string& key : defaults) {
    EXPECT_TRUE(installed.contains(key))
        << key << " is in configs/default.yaml but not in configs/agent.yaml "
        << "(/etc/zcal/agent.yaml): add it there with the same value and a comment";
  }
  for (const std::string& key : installed) {
    EXPECT_TRUE(defaults.contains(key))
        << key << " is in configs/agent.yaml but not in configs/default.yaml";
  }
}

TEST(InstalledConfig, AgentManualPageDocumentsEveryKey) {
  const std::string page = ReadFile(SourceRoot() / "docs/man/zcal-agent.1.scd");
  const std::size_t begin = page.find("\n# CONFIGURATION\n");
  ASSERT_NE(begin, std::string::npos) << "zcal-agent.1.scd has no CONFIGURATION section";
  const std::string section = page.substr(begin, page.find("\n# ", begin + 1) - begin);
  for (const std::string& key : Keys(std::string(DefaultConfigYaml()))) {
    EXPECT_NE(section.find("*" + key + "*"), std::string::npos)
        << "docs/man/zcal-agent.1.scd, # CONFIGURATION, does not document " << key;
  }
}

}  // namespace
}  // namespace zcal::agent::testing
