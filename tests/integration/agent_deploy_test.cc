// What ships beside the binary stays true to it: the metrics reference
// documents every metric the agent serves (and nothing else), the alerting
// rules and dashboard use only served metrics, the rules pass promtool, and
// every configuration in configs/ and deploy/ passes --check-config, and the
// DaemonSet is set up for peer probes between nodes.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "agent_harness.h"
#include "test_util.h"

namespace zcal::agent::testing::agent_deploy_test {
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
// mapped to their family: the agent's histograms are in seconds
// (zcal_calibration_duration_seconds) and bytes (zcal_app_message_size_bytes).
std::set<std::string> FamiliesUsed(const std::string& text) {
  std::set<std::string> out;
  for (std::string name : Names(text, "")) {
    for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
      if (!name.ends_with(suffix)) continue;
      const std::string family = name.substr(0, name.size() - suffix.size());
      if (family.ends_with("_seconds") || family.ends_with("_bytes")) name = family;
    }
    out.insert(name);
  }
  return out;
}

// The /metrics text of a real agent with a sink and a peer, so that the
// zcal_sink_* and zcal_peer* families are served too. The peer, on a
// loopback address of this host's own that is not one of its interface
// addresses (so not excluded as "this host"), has no sink: its probe ends
// unreachable, which serves every peer family.
std::string ServedText() {
  TempDir dir;
  AgentSettings settings;
  settings.segment = UniqueSegment();
  settings.state = dir.path() / "state.json";
  settings.sink_listen = "127.0.0.1:0";
  settings.peers_static = {"127.0.0.2:" + std::to_string(FreePort())};
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
  return response->body;
}

// Label name -> the values served, per family, from the sample lines
// `name{a="x",b="y"} value` (served label values hold no quote or brace).
using ServedLabels = std::map<std::string, std::map<std::string, std::set<std::string>>>;

ServedLabels LabelsOf(const std::string& text) {
  ServedLabels out;
  std::size_t line = 0;
  while (line < text.size()) {
    std::size_t end = text.find('\n', line);
    if (end == std::string::npos) end = text.size();
    const std::string sample = text.substr(line, end - line);
    line = end + 1;
    const std::size_t brace = sample.find('{');
    if (sample.starts_with("#") || brace == std::string::npos) continue;
    auto& labels = out[sample.substr(0, brace)];
    for (std::size_t at = brace + 1; at < sample.size() && sample[at] != '}';) {
      const std::size_t eq = sample.find("=\"", at);
      const std::size_t close = sample.find('"', eq + 2);
      if (eq == std::string::npos || close == std::string::npos) break;
      labels[sample.substr(at, eq - at)].insert(sample.substr(eq + 2, close - eq - 2));
      at = close + 1;
      if (at < sample.size() && sample[at] == ',') ++at;
    }
  }
  return out;
}

// Each matcher `label="value"`, `label!="value"`, `label=~"..."` or
// `label!~"..."` in a PromQL text after a zcal_ name, as (name, label,
// op, value).
struct Matcher {
  std::string metric, label, op, value;
};

std::vector<Matcher> MatchersUsed(const std::string& text) {
  std::vector<Matcher> out;
  for (std::size_t at = text.find("zcal_"); at != std::string::npos;
       at = text.find("zcal_", at + 1)) {
    if (at > 0 && IsNameChar(text[at - 1])) continue;
    std::size_t end = at;
    while (end < text.size() && IsNameChar(text[end])) ++end;
    if (end >= text.size() || text[end] != '{') continue;
    const std::string metric = text.substr(at, end - at);
    const std::size_t close = text.find('}', end);
    const std::string body = text.substr(end + 1, close - end - 1);
    for (std::size_t i = 0; i < body.size();) {
      const std::size_t quote = body.find('"', i);
      if (quote == std::string::npos) break;
      const std::size_t value_end = body.find('"', quote + 1);
      std::size_t op_begin = quote;
      while (op_begin > i && (body[op_begin - 1] == '=' || body[op_begin - 1] == '!' ||
                              body[op_begin - 1] == '~')) {
        --op_begin;
      }
      std::size_t label_begin = op_begin;
      while (label_begin > i && IsNameChar(body[label_begin - 1])) --label_begin;
      out.push_back({metric, body.substr(label_begin, op_begin - label_begin),
                     body.substr(op_begin, quote - op_begin),
                     body.substr(quote + 1, value_end - quote - 1)});
      i = value_end + 1;
    }
  }
  return out;
}

TEST(AgentDeploy, MetricsReferenceDocumentsExactlyTheServedMetrics) {
  const std::string text = ServedText();
  const std::set<std::string> served = Names(text, "# TYPE ", " ");
  ASSERT_GE(served.size(), 20u);
  for (const std::string peer_family :
       {"zcal_peer_probes_total", "zcal_peer_discovery_failures_total", "zcal_peers_discovered",
        "zcal_peer_stale", "zcal_interface_threshold_bytes",
        "zcal_interface_threshold_spread_bytes", "zcal_interface_peers"}) {
    EXPECT_TRUE(served.contains(peer_family))
        << "an agent with peers does not serve " << peer_family << ":\n" << text;
  }
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

// A matcher on a label the agent does not serve, or on a value it never
// serves, selects nothing, and a rule built on it is silently empty.
TEST(AgentDeploy, AlertingRulesMatchOnlyServedLabelsAndValues) {
  const ServedLabels served = LabelsOf(ServedText());
  ASSERT_TRUE(served.contains("zcal_peer_probes_total"));
  const std::string rules = ReadFile(SourceRoot() / "deploy/prometheus/zcal-rules.yaml");
  const std::vector<Matcher> matchers = MatchersUsed(rules);
  ASSERT_GE(matchers.size(), 5u);
  for (const Matcher& m : matchers) {
    const auto family = served.find(m.metric);
    if (family == served.end()) {
      ADD_FAILURE() << m.metric << " has no labelled sample in the agent's /metrics";
      continue;
    }
    const auto label = family->second.find(m.label);
    if (label == family->second.end()) {
      ADD_FAILURE() << m.metric << "{" << m.label << m.op << "\"" << m.value
                    << "\"}: the agent serves no label " << m.label;
      continue;
    }
    // Regular expressions, and "" (any non-empty value), are not looked up.
    if ((m.op == "=" || m.op == "!=") && !m.value.empty()) {
      EXPECT_TRUE(label->second.contains(m.value))
          << m.metric << "{" << m.label << m.op << "\"" << m.value
          << "\"}: the agent never serves that value";
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
  // A manifest's sink.key_file names where the pod mounts the Secret; the
  // check reads the keys, so it gets a key file of its own there.
  const CommandResult keygen = RunCommand({ZcalBinary(), "keygen", "--id", "deploy-test"});
  ASSERT_EQ(keygen.status, 0) << keygen.err;
  const std::filesystem::path keys = dir.path() / "peer.keys";
  WriteFile(keys, keygen.out);
  std::filesystem::permissions(keys, std::filesystem::perms::owner_read);
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
      YAML::Node config = YAML::Load(document["data"]["agent.yaml"].as<std::string>());
      if (config["sink"] && config["sink"]["key_file"]) {
        config["sink"]["key_file"] = keys.string();
      }
      // An export's directory is the pod's mount; here, a directory of the
      // test's.
      if (config["exports"]) {
        for (YAML::Node e : config["exports"]) {
          e["path"] =
              (dir.path() / std::filesystem::path(e["path"].as<std::string>()).filename())
                  .string();
        }
      }
      YAML::Emitter out;
      out << config;
      WriteFile(file, out.c_str());
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

// The documents of a manifest by kind (each kind at most once).
std::map<std::string, YAML::Node> ByKind(const std::string& manifest) {
  std::map<std::string, YAML::Node> out;
  for (const YAML::Node& document :
       YAML::LoadAllFromFile((SourceRoot() / manifest).string())) {
    out[document["kind"].as<std::string>()] = document;
  }
  return out;
}

YAML::Node Named(const YAML::Node& list, const std::string& name) {
  for (const YAML::Node& item : list) {
    if (item["name"].as<std::string>() == name) return item;
  }
  return YAML::Node();
}

// The DaemonSet measures the node's NIC and serves the node's sink: host
// network, the sink port declared, the keys from a Secret that no
// container can write, found by peers through a headless Service, with no
// capability beyond what the init container's copy needs.
TEST(AgentDeploy, DaemonSetServesTheNodesSinkToItsPeers) {
  auto docs = ByKind("deploy/kubernetes/daemonset.yaml");
  ASSERT_TRUE(docs.contains("DaemonSet") && docs.contains("Service") &&
              docs.contains("ConfigMap"));
  const YAML::Node pod = docs["DaemonSet"]["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["hostNetwork"].as<bool>(false));
  EXPECT_EQ(pod["dnsPolicy"].as<std::string>(""), "ClusterFirstWithHostNet");

  const YAML::Node config =
      YAML::Load(docs["ConfigMap"]["data"]["agent.yaml"].as<std::string>());
  const std::string listen = config["sink"]["listen"].as<std::string>("");
  ASSERT_TRUE(listen.ends_with(":7070")) << listen;

  const YAML::Node agent = Named(pod["containers"], "agent");
  ASSERT_TRUE(agent.IsMap());
  const YAML::Node sink_port = Named(agent["ports"], "sink");
  ASSERT_TRUE(sink_port.IsMap()) << "the sink port is not declared";
  EXPECT_EQ(sink_port["containerPort"].as<int>(0), 7070);
  EXPECT_EQ(sink_port["hostPort"].as<int>(0), 7070);

  // Security posture: non-root, read-only root, no capability.
  const YAML::Node security = agent["securityContext"];
  EXPECT_TRUE(security["runAsNonRoot"].as<bool>(false));
  EXPECT_TRUE(security["readOnlyRootFilesystem"].as<bool>(false));
  EXPECT_FALSE(security["allowPrivilegeEscalation"].as<bool>(true));
  EXPECT_EQ(security["capabilities"]["drop"][0].as<std::string>(""), "ALL");
  EXPECT_FALSE(security["capabilities"]["add"].IsDefined());

  // The Secret: mode 0400, mounted read-only wherever it is mounted; the
  // agent's key_file lies below a read-only mount of its copy.
  std::string secret_volume;
  for (const YAML::Node& volume : pod["volumes"]) {
    if (!volume["secret"]) continue;
    secret_volume = volume["name"].as<std::string>();
    EXPECT_EQ(volume["secret"]["defaultMode"].as<std::string>(""), "0400");
  }
  ASSERT_FALSE(secret_volume.empty()) << "no Secret volume";
  for (const YAML::Node& list : {pod["containers"], pod["initContainers"]}) {
    for (const YAML::Node& container : list) {
      const YAML::Node mount = Named(container["volumeMounts"], secret_volume);
      if (mount.IsMap()) {
        EXPECT_TRUE(mount["readOnly"].as<bool>(false)) << secret_volume;
      }
    }
  }
  const std::string key_file = config["sink"]["key_file"].as<std::string>("");
  bool key_mounted = false;
  for (const YAML::Node& mount : agent["volumeMounts"]) {
    if (key_file.starts_with(mount["mountPath"].as<std::string>() + "/")) {
      key_mounted = true;
      EXPECT_TRUE(mount["readOnly"].as<bool>(false)) << key_file;
    }
  }
  EXPECT_TRUE(key_mounted) << key_file << " is not below a mount of the agent";
  for (const YAML::Node& init : pod["initContainers"]) {
    EXPECT_EQ(init["securityContext"]["capabilities"]["add"].size(), 1u);
    EXPECT_EQ(init["securityContext"]["capabilities"]["add"][0].as<std::string>(""), "CHOWN");
  }

  // The headless Service selects exactly the agents and names the sink.
  const YAML::Node service = docs["Service"];
  EXPECT_EQ(service["spec"]["clusterIP"].as<std::string>(""), "None");
  const YAML::Node labels = docs["DaemonSet"]["spec"]["template"]["metadata"]["labels"];
  for (const auto& selector : service["spec"]["selector"]) {
    EXPECT_EQ(labels[selector.first.as<std::string>()].as<std::string>(""),
              selector.second.as<std::string>())
        << "the Service selects pods the DaemonSet does not make";
  }
  EXPECT_EQ(service["spec"]["ports"][0]["port"].as<int>(0), 7070);
  EXPECT_EQ(service["spec"]["ports"][0]["targetPort"].as<std::string>(""), "sink");
  {
    const std::string dns = config["peers"]["dns"].as<std::string>("");
    EXPECT_EQ(dns, service["metadata"]["name"].as<std::string>() + "." +
                       service["metadata"]["namespace"].as<std::string>() + ".svc:7070");
  }
}

}  // namespace
}  // namespace zcal::agent::testing::agent_deploy_test
