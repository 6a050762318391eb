// What ships beside the binary stays true to it: the metrics reference
// documents every metric the agent serves (and nothing else), the alerting
// rules and dashboard use only served metrics, the rules pass promtool, and
// every configuration in configs/ and deploy/ passes --check-config.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "agent_harness.h"
#include "test_util.h"

namespace zcal::agent::testing {
namespace {

using std::chrono::milliseconds;

std::filesystem::path SourceRoot() {
  const char* root = std::getenv("ZCAL_SOURCE_ROOT");
  return root != nullptr ? root : ".";
}

std::set<std::string> Matches(const std::string& text, const std::regex& re) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

// Metric names used in a PromQL text, with histogram series suffixes
// mapped to their family.
std::set<std::string> FamiliesUsed(const std::string& text) {
  std::set<std::string> out;
  for (std::string name : Matches(text, std::regex(R"(\b(zcal_[a-z_]+))"))) {
    for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
      if (name.ends_with(suffix) && name.find("duration") != std::string::npos) {
        name.resize(name.size() - suffix.size());
      }
    }
    out.insert(name);
  }
  return out;
}

std::set<std::string> ServedFamilies() {
  TempDir dir;
  AgentSettings settings;
  settings.segment = UniqueSegment();
  settings.state = dir.path() / "state.json";
  SegmentCleanup cleanup(settings.segment);
  WriteFile(dir.path() / "agent.yaml", AgentConfig(settings));
  auto agent = AgentProcess::Start(dir.path() / "agent.yaml",
                                   dir.path() / "agent.log");
  if (!agent->WaitForLog("calibration finished", milliseconds(30'000))) {
    ADD_FAILURE() << agent->Log();
    return {};
  }
  const auto response = HttpGet(agent->MetricsPort(), "/metrics");
  agent->Signal(SIGTERM);
  agent->WaitExit(milliseconds(5000));
  if (!response) return {};
  return Matches(response->body, std::regex(R"(# TYPE (zcal_[a-z_]+) )"));
}

TEST(AgentDeploy, MetricsReferenceDocumentsExactlyTheServedMetrics) {
  const std::set<std::string> served = ServedFamilies();
  ASSERT_GE(served.size(), 20u);
  const std::string doc = ReadFile(SourceRoot() / "docs/metrics.md");
  // Table rows: "| `zcal_name` | type | ...".
  const std::set<std::string> documented =
      Matches(doc, std::regex(R"(\n\| `(zcal_[a-z_]+)` \|)"));
  for (const std::string& name : served) {
    EXPECT_TRUE(documented.contains(name)) << name << " is not in docs/metrics.md";
  }
  for (const std::string& name : documented) {
    EXPECT_TRUE(served.contains(name))
        << name << " is documented but the agent does not serve it";
  }
  for (const std::string file :
       {"deploy/prometheus/zcal-rules.yaml", "deploy/grafana/zcal-dashboard.json"}) {
    for (const std::string& name : FamiliesUsed(ReadFile(SourceRoot() / file))) {
      EXPECT_TRUE(served.contains(name)) << file << " uses unknown " << name;
    }
  }
}

TEST(AgentDeploy, AlertingRulesPassPromtool) {
  if (access("/usr/bin/promtool", X_OK) != 0) {
    GTEST_SKIP() << "promtool (Debian package prometheus) is not installed";
  }
  const std::filesystem::path dir = SourceRoot() / "deploy/prometheus";
  const CommandResult check = RunCommand(
      {"/usr/bin/promtool", "check", "rules", (dir / "zcal-rules.yaml").string()});
  EXPECT_EQ(check.status, 0) << check.out << check.err;
  const CommandResult test = RunCommand(
      {"/usr/bin/promtool", "test", "rules", (dir / "zcal-rules.test.yaml").string()});
  EXPECT_EQ(test.status, 0) << test.out << test.err;
}

TEST(AgentDeploy, ShippedConfigurationsAreValid) {
  TempDir dir;
  std::vector<std::filesystem::path> files;
  for (const std::string name : {"default", "systemd", "container"}) {
    files.push_back(SourceRoot() / ("configs/" + name + ".yaml"));
  }
  for (const std::string manifest :
       {"deploy/kubernetes/daemonset.yaml", "deploy/kubernetes/sidecar.yaml"}) {
    for (const YAML::Node& document :
         YAML::LoadAllFromFile((SourceRoot() / manifest).string())) {
      if (document["kind"].as<std::string>() != "ConfigMap") continue;
      const std::filesystem::path file =
          dir.path() / (document["metadata"]["name"].as<std::string>() + ".yaml");
      WriteFile(file, document["data"]["agent.yaml"].as<std::string>());
      files.push_back(file);
    }
  }
  ASSERT_EQ(files.size(), 5u);
  for (const std::filesystem::path& file : files) {
    const CommandResult result =
        RunCommand({ZcalBinary(), "agent", "--check-config", file.string()});
    EXPECT_EQ(result.status, 0) << file << ": " << result.err;
  }
}

TEST(AgentDeploy, SystemdUnitVerifies) {
  if (access("/usr/bin/systemd-analyze", X_OK) != 0) {
    GTEST_SKIP() << "systemd-analyze is not installed";
  }
  TempDir dir;
  std::string unit = ReadFile(SourceRoot() / "deploy/systemd/zcal-agent.service");
  // Verify against the binary under test instead of the installed path.
  unit = std::regex_replace(unit, std::regex("/usr/local/bin/zcal"), ZcalBinary());
  const std::filesystem::path file = dir.path() / "zcal-agent.service";
  WriteFile(file, unit);
  const CommandResult result =
      RunCommand({"/usr/bin/systemd-analyze", "verify", file.string()});
  EXPECT_EQ(result.status, 0) << result.out << result.err;
  EXPECT_EQ(result.out + result.err, "");
}

}  // namespace
}  // namespace zcal::agent::testing
