// What ships beside the binary stays true to it: the metrics reference
// documents every metric the agent serves (and nothing else), the alerting
// rules and dashboard use only served metrics, the rules pass promtool, and
// every configuration in configs/ and deploy/ passes --check-config.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
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

bool IsNameChar(char c) { return (c >= 'a' && c <= 'z') || c == '_'; }

// Every "zcal_..." name that follows `prefix` (and, when given, is followed
// by `suffix`) in the text. std::regex is avoided: GCC 12 warns inside it
// under ASan.
std::set<std::string> Names(const std::string& text, const std::string& prefix,
                            const std::string& suffix = "") {
  std::set<std::string> out;
  const std::string start = prefix + "zcal_";
  for (std::size_t at = text.find(start); at != std::string::npos;
       at = text.find(start, at + 1)) {
    const std::size_t begin = at + prefix.size();
    if (prefix.empty() && begin > 0 && IsNameChar(text[begin - 1])) continue;
    std::size_t end = begin;
    while (end < text.size() && IsNameChar(text[end])) ++end;
    if (text.compare(end, suffix.size(), suffix) != 0) continue;
    out.insert(text.substr(begin, end - begin));
  }
  return out;
}

// Metric names used in a PromQL text, with histogram series suffixes
// mapped to their family.
std::set<std::string> FamiliesUsed(const std::string& text) {
  std::set<std::string> out;
  for (std::string name : Names(text, "")) {
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
  settings.sink_listen = "127.0.0.1:0";  // its zcal_sink_* series too
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
  return Names(response->body, "# TYPE ", " ");
}

TEST(AgentDeploy, MetricsReferenceDocumentsExactlyTheServedMetrics) {
  const std::set<std::string> served = ServedFamilies();
  ASSERT_GE(served.size(), 20u);
  const std::string doc = ReadFile(SourceRoot() / "docs/metrics.md");
  // Table rows: "| `zcal_name` | type | ...".
  const std::set<std::string> documented =
      Names(doc, "\n| `", "` |");
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
  for (const std::string name : {"default", "agent", "container"}) {
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

}  // namespace
}  // namespace zcal::agent::testing
