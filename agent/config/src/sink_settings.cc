#include "zcal/agent/config/sink_settings.h"

#include "zcal/common/units.h"

namespace zcal::agent {

namespace {

// "--max-sessions" on the command line, "sink.max_sessions" in a config.
std::string Name(SettingSpelling spelling, std::string key) {
  if (spelling == SettingSpelling::kConfig) return "sink." + key;
  for (char& c : key) c = c == '_' ? '-' : c;
  return "--" + key;
}

Error Bad(SettingSpelling spelling, const std::string& key, const std::string& what) {
  return {Errc::kInvalidArgument, Name(spelling, key) + ": " + what};
}

}  // namespace

Result<probes::PeerSinkOptions> ToPeerSinkOptions(const SinkSettings& s,
                                                   SettingSpelling spelling,
                                                   std::vector<std::string>& warnings) {
  probes::PeerSinkOptions o;
  auto listen = common::ParseHostPort(s.listen, common::PortRule::kZeroAllowed);
  if (!listen) return tl::unexpected(Bad(spelling, "listen", listen.error().message));
  o.listen = *listen;
  for (const std::string& text : s.allow) {
    auto prefix_value = common::ParsePrefix(text);
    if (!prefix_value) return tl::unexpected(Bad(spelling, "allow", prefix_value.error().message));
    o.allow.push_back(*prefix_value);
  }
  if (s.auth != "key" && s.auth != "none") {
    return tl::unexpected(Bad(spelling, "auth", "\"" + s.auth + "\"; expected key or none"));
  }
  o.auth_none = s.auth == "none";
  if (o.auth_none && !s.key_file.empty()) {
    return tl::unexpected(Bad(spelling, "auth", "none excludes a key_file; remove one of them"));
  }
  if (!s.key_file.empty()) {
    auto keys = probes::peer::LoadKeyFile(s.key_file);
    if (!keys) {
      return tl::unexpected(Error{keys.error().code, Name(spelling, "key_file") + ": " + keys.error().message});
    }
    for (const std::string& w : keys->warnings) warnings.push_back(w);
    o.keys = std::move(*keys);
  }
  o.max_sessions = static_cast<std::size_t>(s.max_sessions);
  o.max_connections = static_cast<std::size_t>(s.max_connections);
  o.max_connections_per_source = static_cast<std::size_t>(s.max_connections_per_source);
  auto duration = [&](const std::string& name, const std::string& text)
      -> Result<std::chrono::milliseconds> {
    auto value = common::ParseDuration(text);
    if (!value) return tl::unexpected(Bad(spelling, name, value.error().message));
    return value;
  };
  auto session = duration("max_session_seconds", s.max_session_seconds);
  if (!session) return tl::unexpected(session.error());
  if (session->count() % 1000 != 0) {
    return tl::unexpected(Bad(spelling, "max_session_seconds", "whole seconds, e.g. 60s"));
  }
  o.max_session_seconds = std::chrono::duration_cast<std::chrono::seconds>(*session);
  auto idle = duration("idle_timeout", s.idle_timeout);
  if (!idle) return tl::unexpected(idle.error());
  o.idle_timeout = *idle;
  auto handshake = duration("handshake_deadline", s.handshake_deadline);
  if (!handshake) return tl::unexpected(handshake.error());
  o.handshake_deadline = *handshake;
  auto rate = common::ParseRate(s.max_bytes_per_second);
  if (!rate) return tl::unexpected(Bad(spelling, "max_bytes_per_second", rate.error().message));
  o.max_bytes_per_second = *rate;
  if (Result<void> valid = probes::ValidatePeerSinkOptions(o); !valid) {
    // The sentence starts with the field's name, "key_file: ...".
    const std::string& why = valid.error().message;
    const std::size_t colon = why.find(':');
    return tl::unexpected(Error{Errc::kInvalidArgument,
                                Name(spelling, why.substr(0, colon)) + why.substr(colon)});
  }
  if (o.auth_none && !o.listen.address.IsLoopback()) {
    warnings.push_back(Name(spelling, "auth") + ": none on " + common::ToString(o.listen) +
                       ": any host that can reach this port may open sessions");
  }
  return o;
}

}  // namespace zcal::agent
