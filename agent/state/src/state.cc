#include "zcal/agent/state/state.h"

#include <optional>
#include <string>
#include <utility>

#include "zcal/agent/state/decided_for_json.h"
#include "zcal/agent/state/host_json.h"
#include "zcal/agent/state/load_json.h"
#include "zcal/calibrator/report_json.h"
#include "zcal/common/address.h"
#include "zcal/common/atomic_file.h"
#include "zcal/common/bounded_read.h"
#include "zcal/common/text.h"

namespace zcal::agent {
namespace {

using calibrator::Method;
using calibrator::MethodResult;
using nlohmann::json;

std::optional<std::uint64_t> FromHex(const json& value) {
  if (!value.is_string()) return std::nullopt;
  return common::ParseHex64(value.get_ref<const std::string&>());
}

Result<std::uint64_t> RequiredUint(const json& object, const char* key,
                                   std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_unsigned()) {
    const std::string field = "'" + std::string(key) + "' is missing or not a whole number";
    return Fail(Errc::kParse, where.empty() ? field : std::string(where) + ": " + field);
  }
  return it->get<std::uint64_t>();
}

}  // namespace

json MethodResultToJson(const MethodResult& result) {
  return calibrator::ToJson(result);
}

Result<MethodResult> MethodResultFromJson(const json& j, Method method) {
  return calibrator::ReadMethodResult(j, method);
}

namespace {

json StateEntryToJson(const MethodState& s) {
  return json{
      {"published", MethodResultToJson(s.published)},
      {"measured_at_ns", s.measured_at_ns},
      {"load", HostLoadToJson(s.load)},
      {"pending", s.pending ? MethodResultToJson(*s.pending) : json(nullptr)},
  };
}

Result<MethodState> StateEntryFromJson(const json& entry, Method method,
                                       const std::string& at) {
  if (!entry.is_object() || !entry.contains("published")) {
    return Fail(Errc::kParse, at + ": 'published' is missing");
  }
  MethodState s;
  auto published = MethodResultFromJson(entry["published"], method);
  if (!published) return Fail(Errc::kParse, at + ": " + published.error().message);
  s.published = std::move(*published);
  const auto measured = RequiredUint(entry, "measured_at_ns", at);
  if (!measured) return tl::unexpected(measured.error());
  s.measured_at_ns = *measured;
  // Written since the load was measured; a file without it has results
  // whose load is not known.
  if (const auto load = entry.find("load"); load != entry.end()) {
    auto parsed = HostLoadFromJson(*load);
    if (!parsed) return Fail(Errc::kParse, at + ".load: " + parsed.error().message);
    s.load = *parsed;
  }
  if (entry.contains("pending") && !entry["pending"].is_null()) {
    auto pending = MethodResultFromJson(entry["pending"], method);
    if (!pending) return Fail(Errc::kParse, at + ".pending: " + pending.error().message);
    s.pending = std::move(*pending);
  }
  return s;
}

}  // namespace

std::string SerializeState(const AgentState& state) {
  json paths = json::object();
  for (const auto& [path, methods] : state.paths) {
    json by_method = json::object();
    for (const auto& [key, s] : methods) {
      const std::string method(calibrator::MethodName(key.method));
      if (key.depth == DepthClass::kStream) {
        // The stream class's entry is the method's object itself, as
        // before classes: a reader that knows no classes reads it alone.
        by_method[method] = StateEntryToJson(s);
      } else if (methods.contains({key.method})) {
        // The map's order puts stream first, so its object exists.
        by_method[method]["classes"][std::string(DepthClassName(key.depth))] =
            StateEntryToJson(s);
      }
      // A class without its stream result is never published (results.h,
      // BuildEntries); it is not kept either.
    }
    paths[ToString(path)] = std::move(by_method);
  }
  json peers = json::object();
  for (const auto& [path, p] : state.peers) {
    // The endpoint is the key's; written beside it as before.
    peers[ToString(path)] = json{{"endpoint", common::ToString(path.endpoint())},
                       {"interface", p.interface},
                       {"last_attempt_ns", p.last_attempt_ns},
                       {"last_success_ns", p.last_success_ns},
                       {"last_outcome", PeerOutcomeName(p.last_outcome)}};
  }
  json decided_for = json::object();
  for (const auto& [path, d] : state.decided_for) decided_for[ToString(path)] = DecidedForToJson(d);
  json contradictions = json::array();
  for (const ContradictionRecord& c : state.contradictions) {
    contradictions.push_back({{"scope", AppScopeName(c.scope)},
                              {"method", calibrator::MethodName(c.method)},
                              {"raised_at_ns", c.raised_at_ns},
                              {"last_seen_ns", c.last_seen_ns}});
  }
  const json document{
      {"format", "zcal-state"},
      {"version", kStateVersion},
      {"saved_at_ns", state.saved_at_ns},
      {"fingerprint", common::Hex64(state.fingerprint)},
      {"last_success_ns", state.last_success_ns},
      {"host", HostToStateJson(state.host)},
      {"paths", std::move(paths)},
      {"peers", std::move(peers)},
      {"peer_round", state.peer_round},
      {"decided_for", std::move(decided_for)},
      {"contradictions", std::move(contradictions)},
  };
  return document.dump(2) + "\n";
}

namespace {

// The steps of ParseState: their messages name where in the document,
// without the source, which ParseState puts first once.

Result<void> ParseHeader(const json& document, AgentState& state) {
  if (!document.is_object() || document.value("format", "") != "zcal-state") {
    return Fail(Errc::kParse, "not a zcal state file ('format' is not \"zcal-state\")");
  }
  const auto version = document.find("version");
  if (version == document.end() || !version->is_number_integer()) {
    return Fail(Errc::kParse, "'version' is missing");
  }
  if (version->get<int>() != kStateVersion) {
    return Fail(Errc::kParse, "version " + std::to_string(version->get<int>()) +
                                  " is not the version this zcal reads (" +
                                  std::to_string(kStateVersion) +
                                  "); it was written by another zcal release");
  }
  const auto saved_at = RequiredUint(document, "saved_at_ns", "");
  if (!saved_at) return tl::unexpected(saved_at.error());
  state.saved_at_ns = *saved_at;
  const auto fingerprint = FromHex(document.value("fingerprint", json()));
  if (!fingerprint) return Fail(Errc::kParse, "'fingerprint' is not 16 hex digits");
  state.fingerprint = *fingerprint;
  if (const auto last = document.find("last_success_ns");
      last != document.end() && last->is_number_unsigned()) {
    state.last_success_ns = last->get<std::uint64_t>();
  }
  if (const auto host = document.find("host"); host != document.end()) {
    if (std::optional<HostInfo> parsed = HostFromStateJson(*host)) {
      state.host = std::move(*parsed);
    }
  }
  return {};
}

// One method of a path: its object is its stream class, also in a file
// written before classes, whatever "depth" it named (only stream was ever
// written); its other classes under "classes".
Result<void> ParseMethod(const json& entry, Method method, const std::string& at,
                         MethodStates& results) {
  auto stream = StateEntryFromJson(entry, method, at);
  if (!stream) return tl::unexpected(stream.error());
  results[method] = std::move(*stream);
  const auto classes = entry.find("classes");
  if (classes == entry.end() || classes->is_null()) return {};
  if (!classes->is_object()) return Fail(Errc::kParse, at + ".classes: no object");
  for (const auto& [class_name, class_entry] : classes->items()) {
    const std::optional<DepthClass> depth = ParseDepthClass(class_name);
    if (!depth || *depth == DepthClass::kStream) {
      return Fail(Errc::kParse,
                  at + ".classes." + class_name + ": not a depth class (1, 4 or 16)");
    }
    auto s = StateEntryFromJson(class_entry, method, at + ".classes." + class_name);
    if (!s) return tl::unexpected(s.error());
    results[{method, *depth}] = std::move(*s);
  }
  return {};
}

Result<void> ParsePaths(const json& document, AgentState& state) {
  const auto paths = document.find("paths");
  if (paths == document.end() || !paths->is_object()) {
    return Fail(Errc::kParse, "'paths' is missing");
  }
  for (const auto& [path, methods] : paths->items()) {
    if (!methods.is_object()) return Fail(Errc::kParse, "paths." + path + " is no object");
    const Result<PathId> id = ParsePathId(path);
    if (!id) return Fail(Errc::kParse, "paths." + path + ": " + id.error().message);
    for (const auto& [name, entry] : methods.items()) {
      const auto method = calibrator::ParseMethod(name);
      const std::string at = "paths." + path + "." + name;
      if (!method || !calibrator::IsZerocopy(*method)) {
        return Fail(Errc::kParse, at + ": not a zerocopy method");
      }
      if (auto parsed = ParseMethod(entry, *method, at, state.paths[*id]); !parsed) {
        return parsed;
      }
    }
  }
  return {};
}

// A peer's record and the path it is kept under, which its key names.
Result<std::pair<PathId, PeerRecord>> ParsePeer(const std::string& path, const json& entry) {
  const std::string at = "peers." + path;
  const Result<PathId> id = ParsePathId(path);
  if (!id || !id->IsPeer() || !entry.is_object() ||
      !entry.value("endpoint", json()).is_string()) {
    return Fail(Errc::kParse,
                at + ": not a peer record (a \"peer/ADDR:PORT\" key with an 'endpoint')");
  }
  PeerRecord p;
  Result<common::HostPort> endpoint = common::ParseHostPort(entry["endpoint"].get<std::string>());
  if (!endpoint) return Fail(Errc::kParse, at + ".endpoint: " + endpoint.error().message);
  if (*endpoint != id->endpoint()) {
    return Fail(Errc::kParse, at + ".endpoint: " + common::ToString(*endpoint) +
                                  " is not the endpoint its key names");
  }
  if (const auto i = entry.find("interface"); i != entry.end() && i->is_string()) {
    p.interface = i->get<std::string>();
  }
  if (const auto o = entry.find("last_outcome"); o != entry.end() && o->is_string()) {
    // A label this version does not know (a newer one's) reads as failed.
    p.last_outcome = ParsePeerOutcome(o->get<std::string>()).value_or(PeerOutcome::kFailed);
  }
  for (const auto& [key, out] : {std::pair{"last_attempt_ns", &p.last_attempt_ns},
                                 std::pair{"last_success_ns", &p.last_success_ns}}) {
    const auto value = RequiredUint(entry, key, at);
    if (!value) return tl::unexpected(value.error());
    *out = *value;
  }
  return std::pair{*id, std::move(p)};
}

// Written since the peers: section; a version-1 file without them is a
// state without peers, not an error.
Result<void> ParsePeers(const json& document, AgentState& state) {
  if (const auto round = document.find("peer_round");
      round != document.end() && round->is_number_unsigned()) {
    state.peer_round = round->get<std::uint64_t>();
  }
  const auto peers = document.find("peers");
  if (peers == document.end() || peers->is_null()) return {};
  if (!peers->is_object()) return Fail(Errc::kParse, "'peers' is no object");
  for (const auto& [path, entry] : peers->items()) {
    auto p = ParsePeer(path, entry);
    if (!p) return tl::unexpected(p.error());
    state.peers[p->first] = std::move(p->second);
  }
  return {};
}

// Written since the applications' mix; a file without it has results
// whose mix is not known (they were decided uniform, or as configured).
Result<void> ParseDecidedFor(const json& document, AgentState& state) {
  const auto decided = document.find("decided_for");
  if (decided == document.end() || decided->is_null()) return {};
  if (!decided->is_object()) return Fail(Errc::kParse, "'decided_for' is no object");
  for (const auto& [path, entry] : decided->items()) {
    Result<PathId> id = ParsePathId(path);
    if (!id) return Fail(Errc::kParse, "decided_for." + path + ": " + id.error().message);
    Result<DecidedFor> d = DecidedForFromJson(entry);
    if (!d) return Fail(Errc::kParse, "decided_for." + path + ": " + d.error().message);
    state.decided_for[*id] = std::move(*d);
  }
  return {};
}

std::optional<AppScope> ScopeNamed(std::string_view name) {
  for (const AppScope scope : {AppScope::kHostDefault, AppScope::kLoopback, AppScope::kPeer,
                               AppScope::kInterface, AppScope::kNone}) {
    if (AppScopeName(scope) == name) return scope;
  }
  return std::nullopt;
}

// Written since field contradictions; a file without them has none.
Result<void> ParseContradictions(const json& document, AgentState& state) {
  const auto list = document.find("contradictions");
  if (list == document.end() || list->is_null()) return {};
  if (!list->is_array()) return Fail(Errc::kParse, "'contradictions' is no array");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& c = (*list)[i];
    const std::string at = "contradictions[" + std::to_string(i) + "]";
    const std::optional<AppScope> scope =
        c.is_object() && c.value("scope", json()).is_string()
            ? ScopeNamed(c["scope"].get<std::string>())
            : std::nullopt;
    if (!scope) return Fail(Errc::kParse, at + ".scope: not a scope kind (host_default, peer, interface)");
    const std::optional<Method> method = c.value("method", json()).is_string()
                                             ? calibrator::ParseMethod(c["method"].get<std::string>())
                                             : std::nullopt;
    if (!method) return Fail(Errc::kParse, at + ".method: not a method");
    const auto raised = RequiredUint(c, "raised_at_ns", at);
    if (!raised) return tl::unexpected(raised.error());
    const auto seen = RequiredUint(c, "last_seen_ns", at);
    if (!seen) return tl::unexpected(seen.error());
    state.contradictions.push_back({*scope, *method, *raised, *seen});
  }
  return {};
}

}  // namespace

Result<AgentState> ParseState(std::string_view text) {
  const json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return Fail(Errc::kParse, "not JSON (truncated or corrupt)");
  AgentState state;
  for (const auto step :
       {ParseHeader, ParsePaths, ParsePeers, ParseDecidedFor, ParseContradictions}) {
    if (auto parsed = step(document, state); !parsed) return tl::unexpected(parsed.error());
  }
  return state;
}

Result<AgentState> ParseState(std::string_view text, std::string_view source) {
  auto state = ParseState(text);
  if (!state) return Fail(state.error().code, std::string(source) + ": " + state.error().message);
  return state;
}

Result<AgentState> LoadState(const std::string& path) {
  Result<std::string> text = common::ReadBounded(
      path, common::kMaxStateBytes, common::InputKind::kRegular, "state file");
  if (!text) {
    if (text.error().code == Errc::kNotFound) {
      return Fail(Errc::kNotFound, path + ": no saved state yet");
    }
    return Fail(text.error().code == Errc::kInvalidArgument ? Errc::kParse
                                                            : Errc::kIo,
                text.error().message);
  }
  return ParseState(*text, path);
}

Result<void> SaveState(const AgentState& state, const std::string& path) {
  common::AtomicFileOptions options;
  options.mode = 0644;
  options.create_directories = true;
  Result<void> saved = common::WriteFileAtomically(path, SerializeState(state), options);
  if (!saved) {
    return Fail(saved.error().code, saved.error().message + " (the state file: check state.path)");
  }
  return {};
}

}  // namespace zcal::agent
