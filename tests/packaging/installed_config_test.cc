// configs/agent.yaml, installed as /etc/zcal/agent.yaml and passed by the
// unit with --config, is the operator's full view of the configuration: it
// sets every key of the embedded default (configs/default.yaml) to the same
// effect, so that the packaged service behaves as `zcal agent` does, and
// zcal-agent(1) documents every one of those keys. A key added to the
// default fails here until agent.yaml and the page have it too.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "test_util.h"
#include "zcal/agent/config/config.h"

namespace zcal::agent::testing::installed_config_test {
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

// The scalar text of every key, for a message that names what differs.
void CollectValues(const YAML::Node& node, const std::string& prefix,
                   std::map<std::string, std::string>& values) {
  if (node.IsMap()) {
    for (const auto& item : node) {
      CollectValues(item.second,
                    (prefix.empty() ? "" : prefix + ".") + item.first.as<std::string>(),
                    values);
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      CollectValues(node[i], prefix + "[" + std::to_string(i) + "]", values);
    }
  } else if (node.IsScalar()) {
    values[prefix] = node.Scalar();
  }
}

std::string DifferingValues(const std::string& a_text, const std::string& b_text) {
  std::map<std::string, std::string> a, b;
  CollectValues(YAML::Load(a_text), "", a);
  CollectValues(YAML::Load(b_text), "", b);
  std::string out;
  for (const auto& [key, value] : a) {
    const auto it = b.find(key);
    const std::string other = it != b.end() ? it->second : "(absent)";
    if (other != value) out += "\n  " + key + ": default " + value + ", agent.yaml " + other;
  }
  return out;
}

TEST(InstalledConfig, HasTheEffectOfTheEmbeddedDefault) {
  const Result<Config> installed = ParseConfig(InstalledText(), "configs/agent.yaml");
  ASSERT_TRUE(installed) << installed.error().message;
  EXPECT_TRUE(EqualInEffect(*installed, DefaultConfig()))
      << "configs/agent.yaml (/etc/zcal/agent.yaml) must have the effect of "
         "configs/default.yaml; values written differently:"
      << DifferingValues(std::string(DefaultConfigYaml()), InstalledText());
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
}  // namespace zcal::agent::testing::installed_config_test
