// The `sink:` section: read as the operator wrote it (SinkSettings), then
// parsed and checked through ToPeerSinkOptions, the conversion `zcal sink`
// uses too, so that a setting valid for one is valid for the other; the
// configuration keeps the result.
#include <array>
#include <charconv>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config_sections.h"
#include "zcal/agent/config/sink_settings.h"

namespace zcal::agent {
namespace {

// The address the other settings are checked against while sink.listen is
// empty (no sink): loopback, where every setting is allowed.
constexpr std::string_view kListenForChecks = "127.0.0.1:0";

bool WholeNumber(ConfigReader& reader, const YAML::Node& node,
                 const std::string& key, std::uint64_t& out) {
  const std::string text = node.IsScalar() ? node.Scalar() : std::string();
  std::uint64_t value = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (!node.IsScalar() || text.empty() || ec != std::errc() ||
      end != text.data() + text.size()) {
    reader.Error(node, key,
                 "expected a whole number, got " + Describe(node));
    return false;
  }
  out = value;
  return true;
}

// The settings written as text: durations, rates, addresses, file names.
bool ReadStrings(ConfigReader& reader, const Fields& fields, SinkSettings& s) {
  const std::pair<std::string_view, std::string*> strings[] = {
      {"listen", &s.listen},
      {"key_file", &s.key_file},
      {"auth", &s.auth},
      {"max_session_seconds", &s.max_session_seconds},
      {"max_bytes_per_second", &s.max_bytes_per_second},
      {"idle_timeout", &s.idle_timeout},
      {"handshake_deadline", &s.handshake_deadline}};
  bool read_all = true;
  for (const auto& [key, out] : strings) {
    const YAML::Node* value = FieldOf(fields, key);
    if (value == nullptr) continue;
    read_all = reader.String(*value, "sink." + std::string(key), *out) && read_all;
  }
  if (const YAML::Node* value = FieldOf(fields, "key_file");
      value != nullptr && !s.key_file.empty() && s.key_file.front() != '/') {
    // The agent's working directory is no place to look for a secret.
    reader.Error(*value, "sink.key_file",
                 "'" + s.key_file +
                     "' is not an absolute file path; write one such as "
                     "/etc/zcal/peer.keys");
    read_all = false;
  }
  return read_all;
}

bool ReadNumbers(ConfigReader& reader, const Fields& fields, SinkSettings& s) {
  const std::pair<std::string_view, std::uint64_t*> numbers[] = {
      {"max_sessions", &s.max_sessions},
      {"max_connections", &s.max_connections},
      {"max_connections_per_source", &s.max_connections_per_source}};
  bool read_all = true;
  for (const auto& [key, out] : numbers) {
    const YAML::Node* value = FieldOf(fields, key);
    if (value == nullptr) continue;
    read_all = WholeNumber(reader, *value, "sink." + std::string(key), *out) && read_all;
  }
  return read_all;
}

bool ReadAllow(ConfigReader& reader, const Fields& fields, SinkSettings& s) {
  const YAML::Node* value = FieldOf(fields, "allow");
  if (value == nullptr) return true;
  if (!value->IsNull() && !reader.ExpectSequence(*value, "sink.allow")) return false;
  bool read_all = true;
  s.allow.clear();
  for (std::size_t i = 0; value->IsSequence() && i < value->size(); ++i) {
    std::string prefix;
    if (reader.String((*value)[i], "sink.allow[" + std::to_string(i) + "]", prefix)) {
      s.allow.push_back(prefix);
    } else {
      read_all = false;
    }
  }
  return read_all;
}

// A setting the conversion refused: at the node of its key when it is
// written (at its own element of a list: in a long allow-list the list's
// line alone leaves the reader searching), else at the section.
void ReportRefused(ConfigReader& reader, const YAML::Node& section, const Fields& fields,
                   const FieldError& error) {
  const std::string name = "sink." + error.field;
  const YAML::Node* at = FieldOf(fields, error.field);
  if (at == nullptr) {
    reader.Error(section, name, error.detail);
  } else if (error.index && at->IsSequence() && *error.index < at->size()) {
    reader.Error((*at)[*error.index], name + "[" + std::to_string(*error.index) + "]",
                 error.detail);
  } else {
    reader.Error(*at, name, error.detail);
  }
}

}  // namespace

void ReadSink(ConfigReader& reader, const YAML::Node& node, Config& config) {
  static constexpr std::array<std::string_view, 11> kKeys = {
      "listen",          "allow",
      "key_file",        "auth",
      "max_sessions",    "max_connections",
      "max_connections_per_source",
      "max_session_seconds", "max_bytes_per_second",
      "idle_timeout",    "handshake_deadline"};
  if (node.IsNull()) return;  // `sink:` alone: no sink
  const auto fields = reader.Map(node, "sink", kKeys);
  if (!fields) return;
  SinkSettings s;
  const bool strings = ReadStrings(reader, *fields, s);
  const bool numbers = ReadNumbers(reader, *fields, s);
  const bool allow = ReadAllow(reader, *fields, s);
  if (!strings || !numbers || !allow) return;

  // Without a listen address the other settings are checked as they would
  // apply on loopback, so that a mistake shows before the sink is enabled.
  SinkSettings check = s;
  if (check.listen.empty()) check.listen = kListenForChecks;
  std::vector<std::string> warnings;  // logged when the service starts it
  auto options = ToPeerSinkOptions(check, SettingSpelling::kConfig, warnings);
  if (!options) {
    ReportRefused(reader, node, *fields, options.error());
    return;
  }
  config.sink.key_file = s.key_file;
  if (!s.listen.empty()) {
    config.sink.options = std::move(*options);
    config.sink.warnings = std::move(warnings);
  }
}

}  // namespace zcal::agent
