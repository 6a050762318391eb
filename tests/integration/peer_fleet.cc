#include "peer_fleet.h"

#include <sys/stat.h>

#include <cstdlib>
#include <set>
#include <sstream>

#include "test_util.h"

namespace zcal::agent::testing {

std::string PeerAgentConfig(const PeerAgentSettings& s) {
  std::ostringstream out;
  out << "paths:\n"
      << "  - {name: loopback, type: loopback}\n"
      << "methods: " << s.methods << "\n"
      << "sizes: " << s.sizes << "\n"
      << "schedule:\n"
      << "  at_startup: " << (s.at_startup ? "true" : "false") << "\n"
      << "  interval: " << s.interval << "\n"
      << "  jitter: " << s.jitter << "\n"
      << "  retry_after_failure: 1s\n"
      << "  fingerprint_poll: 0\n"
      << "budget:\n"
      << "  seconds_per_calibration: " << s.budget_seconds << "\n"
      << "  seconds_per_hour: 3600\n"
      << "segment:\n"
      << "  name: " << s.segment << "\n"
      << "  heartbeat: 200ms\n"
      << "metrics:\n"
      << "  listen: \"127.0.0.1:0\"\n"
      << "state:\n"
      << "  path: " << s.state.string() << "\n";
  if (!s.sink_listen.empty()) {
    out << "sink:\n"
        << "  listen: \"" << s.sink_listen << "\"\n"
        << "  key_file: \"" << s.key_file << "\"\n";
  }
  if (!s.peers_dns.empty() || !s.peers_static.empty()) {
    out << "peers:\n"
        << "  key_file: \"" << s.key_file << "\"\n"
        << "  static: [";
    for (std::size_t i = 0; i < s.peers_static.size(); ++i) {
      out << (i ? ", " : "") << "\"" << s.peers_static[i] << "\"";
    }
    out << "]\n"
        << "  dns: \"" << s.peers_dns << "\"\n"
        << "  refresh: " << s.refresh << "\n"
        << "  per_calibration: " << s.per_calibration << "\n"
        << "  keep: " << s.keep << "\n";
  }
  out << "log:\n"
      << "  level: debug\n";
  return out.str();
}

namespace {

// Reads `"..."` at text[at] (at on the opening quote), unescaping; moves at
// past the closing quote.
std::string QuotedValue(const std::string& text, std::size_t& at) {
  std::string value;
  for (++at; at < text.size() && text[at] != '"'; ++at) {
    if (text[at] == '\\' && at + 1 < text.size()) {
      ++at;
      value += text[at] == 'n' ? '\n' : text[at];
    } else {
      value += text[at];
    }
  }
  ++at;
  return value;
}

}  // namespace

std::vector<Sample> ParseMetrics(const std::string& text) {
  std::vector<Sample> samples;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    Sample sample;
    std::size_t at = line.find_first_of("{ ");
    if (at == std::string::npos) continue;
    sample.name = line.substr(0, at);
    if (line[at] == '{') {
      ++at;
      while (at < line.size() && line[at] != '}') {
        const std::size_t equals = line.find('=', at);
        if (equals == std::string::npos || equals + 1 >= line.size()) break;
        std::string key = line.substr(at, equals - at);
        at = equals + 1;
        sample.labels[std::move(key)] = QuotedValue(line, at);
        if (at < line.size() && line[at] == ',') ++at;
      }
      ++at;
    }
    sample.value = std::strtod(line.c_str() + at, nullptr);
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::optional<double> SumOf(const std::vector<Sample>& samples, const std::string& name,
                            const std::map<std::string, std::string>& labels) {
  std::optional<double> sum;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [key, value] : labels) {
      const auto it = s.labels.find(key);
      match = match && it != s.labels.end() && it->second == value;
    }
    if (match) sum = sum.value_or(0) + s.value;
  }
  return sum;
}

std::optional<nlohmann::json> ShowSegment(const std::string& segment, std::string* error) {
  const CommandResult r = RunCommand({ZcalBinary(), "show", "--json", "--segment", segment});
  if (r.status != 0) {
    *error = "zcal show --json --segment " + segment + " exited " + std::to_string(r.status) +
             ": " + r.err;
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(r.out);
  } catch (const nlohmann::json::exception& e) {
    *error = std::string("zcal show --json printed no JSON: ") + e.what() + "\n" + r.out;
    return std::nullopt;
  }
}

std::vector<nlohmann::json> PeerEntries(const nlohmann::json& show) {
  std::vector<nlohmann::json> entries;
  for (const nlohmann::json& e : show.at("entries")) {
    if (e.at("scope") == "peer") entries.push_back(e);
  }
  return entries;
}

std::vector<std::string> PeerAddresses(const nlohmann::json& show) {
  std::set<std::string> addresses;
  for (const nlohmann::json& e : PeerEntries(show)) {
    addresses.insert(e.at("address").get<std::string>());
  }
  return {addresses.begin(), addresses.end()};
}

std::filesystem::path MakeKeyFile(const std::filesystem::path& dir) {
  const CommandResult keygen = RunCommand({ZcalBinary(), "keygen"});
  const std::filesystem::path path = dir / "peer.keys";
  WriteFile(path, keygen.out);
  chmod(path.c_str(), 0600);
  return path;
}

NsAgent::NsAgent(const Netns& ns, const PeerAgentSettings& settings,
                 const std::filesystem::path& dir, const std::string& name)
    : ns_(ns), settings_(settings), segment_cleanup_(settings.segment) {
  const std::filesystem::path config = dir / (name + ".yaml");
  WriteFile(config, PeerAgentConfig(settings_));
  process_ = Child::Start(ns_.Exec({ZcalBinary(), "agent", "--config", config.string()}),
                          dir / (name + ".log"));
}

bool NsAgent::Started(std::chrono::milliseconds timeout, std::string* error) {
  bool ok = process_->WaitForLog("serving metrics at", timeout);
  if (ok && !settings_.sink_listen.empty()) {
    ok = process_->WaitForLog("serving the peer sink on " + settings_.sink_listen, timeout);
  }
  if (!ok) {
    *error = "the agent in " + ns_.name() + " did not start:\n" + Log();
    return false;
  }
  metrics_port_ = process_->MetricsPort();
  return true;
}

std::optional<std::vector<Sample>> NsAgent::Scrape() const {
  if (metrics_port_ == 0) return std::nullopt;
  const auto response = ns_.HttpGet(metrics_port_, "/metrics");
  if (!response || response->status != 200) return std::nullopt;
  return ParseMetrics(response->body);
}

std::optional<nlohmann::json> NsAgent::Show(std::string* error) const {
  return ShowSegment(settings_.segment, error);
}

}  // namespace zcal::agent::testing
