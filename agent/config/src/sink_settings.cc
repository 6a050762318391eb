#include "zcal/agent/config/sink_settings.h"

#include <optional>
#include <utility>

#include "zcal/common/units.h"

namespace zcal::agent {

namespace {

// "--max-sessions" on the command line, "sink.max_sessions" in a config.
std::string Name(SettingSpelling spelling, std::string key) {
  if (spelling == SettingSpelling::kConfig) return "sink." + key;
  for (char& c : key) c = c == '_' ? '-' : c;
  return "--" + key;
}

// "sink.KEY: what" (or "--key: what"), with the key and the sentence apart.
tl::unexpected<FieldError> Bad(SettingSpelling spelling, const std::string& key,
                               const std::string& what,
                               std::optional<std::size_t> index = std::nullopt,
                               Errc code = Errc::kInvalidArgument) {
  return Fail(FieldError(code, Name(spelling, key) + ": " + what, key, what, index));
}

}  // namespace

Result<probes::PeerSinkOptions, FieldError> ToPeerSinkOptions(
    const SinkSettings& s, SettingSpelling spelling, std::vector<std::string>& warnings) {
  probes::PeerSinkOptions o;
  auto listen = common::ParseHostPort(s.listen, common::PortRule::kZeroAllowed);
  if (!listen) return Bad(spelling, "listen", listen.error().message);
  o.listen = *listen;
  for (std::size_t i = 0; i < s.allow.size(); ++i) {
    auto prefix_value = common::ParsePrefix(s.allow[i]);
    if (!prefix_value) return Bad(spelling, "allow", prefix_value.error().message, i);
    o.allow.push_back(*prefix_value);
  }
  if (s.auth != "key" && s.auth != "none") {
    return Bad(spelling, "auth", "\"" + s.auth + "\"; expected key or none");
  }
  o.auth_none = s.auth == "none";
  if (o.auth_none && !s.key_file.empty()) {
    return Bad(spelling, "auth", "none excludes a key_file; remove one of them");
  }
  if (!s.key_file.empty()) {
    auto keys = probes::peer::LoadKeyFile(s.key_file);
    if (!keys) {
      return Bad(spelling, "key_file", keys.error().message, std::nullopt, keys.error().code);
    }
    for (const std::string& w : keys->warnings) warnings.push_back(w);
    o.keys = std::move(*keys);
  }
  o.max_sessions = static_cast<std::size_t>(s.max_sessions);
  o.max_connections = static_cast<std::size_t>(s.max_connections);
  o.max_connections_per_source = static_cast<std::size_t>(s.max_connections_per_source);
  auto duration = [&](const std::string& name, const std::string& text)
      -> Result<std::chrono::milliseconds, FieldError> {
    auto value = common::ParseDuration(text);
    if (!value) return Bad(spelling, name, value.error().message);
    return *value;
  };
  auto session = duration("max_session_seconds", s.max_session_seconds);
  if (!session) return tl::unexpected(session.error());
  if (session->count() % 1000 != 0) {
    return Bad(spelling, "max_session_seconds", "whole seconds, e.g. 60s");
  }
  o.max_session_seconds = std::chrono::duration_cast<std::chrono::seconds>(*session);
  auto idle = duration("idle_timeout", s.idle_timeout);
  if (!idle) return tl::unexpected(idle.error());
  o.idle_timeout = *idle;
  auto handshake = duration("handshake_deadline", s.handshake_deadline);
  if (!handshake) return tl::unexpected(handshake.error());
  o.handshake_deadline = *handshake;
  auto rate = common::ParseRate(s.max_bytes_per_second);
  if (!rate) return Bad(spelling, "max_bytes_per_second", rate.error().message);
  o.max_bytes_per_second = *rate;
  if (auto valid = probes::ValidatePeerSinkOptions(o); !valid) {
    const FieldError& why = valid.error();
    return Bad(spelling, why.field, why.detail, why.index, why.code);
  }
  if (o.auth_none && !o.listen.address.IsLoopback()) {
    warnings.push_back(Name(spelling, "auth") + ": none on " + common::ToString(o.listen) +
                       ": any host that can reach this port may open sessions");
  }
  return o;
}

}  // namespace zcal::agent
