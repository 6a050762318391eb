#include "served_sink.h"

#include <algorithm>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

namespace zcal::agent {

namespace {

bool SameKeys(const std::optional<probes::peer::KeyRing>& a,
              const std::optional<probes::peer::KeyRing>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return std::equal(a->keys.begin(), a->keys.end(), b->keys.begin(), b->keys.end(),
                    [](const probes::peer::PeerKey& x, const probes::peer::PeerKey& y) {
                      return x.id == y.id && x.secret == y.secret;
                    });
}

}  // namespace

Result<void> ServedSink::Start(const SinkSettings& settings, bool probing) {
  auto started = Open(settings);
  if (!started) return tl::unexpected(started.error());
  Serve(std::move(*started), probing);
  return {};
}

Result<ServedSink::Started> ServedSink::Open(const SinkSettings& settings) {
  if (settings.listen.empty()) return Started{};
  std::vector<std::string> warnings;
  auto options = ToPeerSinkOptions(settings, SettingSpelling::kConfig, warnings);
  if (!options) {
    return Fail(options.error().code,
                "cannot start the peer sink: " + options.error().message);
  }
  for (const std::string& w : warnings) spdlog::warn("peer sink: {}", w);
  auto sink = probes::PeerSink::Start(*options);
  if (!sink) {
    return Fail(sink.error().code,
                "cannot start the peer sink (sink.listen " + settings.listen +
                    "): " + sink.error().message +
                    "; choose a free address:port, or \"\" for no sink");
  }
  return Started{std::move(*sink), std::move(*options)};
}

void ServedSink::Serve(Started started, bool probing) {
  if (sink_) sink_->Stop();
  sink_ = std::move(started.sink);
  options_ = std::move(started.options);
  // A sink that replaces another while the agent probes must not grant a
  // session either; it has none open yet, so the mark always takes.
  if (sink_ && probing) sink_->TryBeginLocalProbe();
  metrics_->SetSink(sink_);
  if (!sink_) {
    spdlog::info("no peer sink (sink.listen is empty)");
    return;
  }
  const std::size_t keys = options_->keys ? options_->keys->keys.size() : 0;
  spdlog::info("serving the peer sink on {} ({}, {}, at most {} session(s) of {} s)",
               common::ToString(sink_->endpoint()),
               keys != 0 ? std::to_string(keys) + " key(s)" : std::string("no authentication"),
               options_->allow.empty()
                   ? std::string("any source")
                   : std::to_string(options_->allow.size()) + " allowed prefix(es)",
               options_->max_sessions, options_->max_session_seconds.count());
}

Result<bool> ServedSink::Replace(const SinkSettings& current, const SinkSettings& next,
                                 bool probing) {
  if (next.listen.empty()) {
    if (!sink_) return false;
    Serve(Started{}, probing);
    return true;
  }
  // Everything of the new sink that can be checked is checked (settings,
  // key file) before the running one is touched.
  std::vector<std::string> warnings;
  auto options = ToPeerSinkOptions(next, SettingSpelling::kConfig, warnings);
  if (!options) {
    return Fail(options.error().code, "cannot start the peer sink: " + options.error().message);
  }
  // Same settings: the sink stays unless its key file was rotated.
  if (sink_ && next == current && SameKeys(options->keys, options_->keys)) return false;
  for (const std::string& w : warnings) spdlog::warn("peer sink: {}", w);
  const bool same_address = sink_ && next.listen == current.listen && options_->listen.port != 0;
  if (same_address) sink_->Stop();
  auto sink = probes::PeerSink::Start(*options);
  if (!sink) {
    const Error error{sink.error().code, "cannot start the peer sink (sink.listen " +
                                             next.listen + "): " + sink.error().message};
    if (same_address) {
      // The old sink comes back from its own options, keys included, so a
      // key file changed meanwhile cannot keep it away.
      auto old = probes::PeerSink::Start(*options_);
      if (old) {
        Serve(Started{std::move(*old), options_}, probing);
      } else {
        spdlog::error("cannot restart the peer sink on {}: {}; running without one",
                      current.listen, old.error().message);
        Serve(Started{}, probing);
      }
    }
    return tl::unexpected(error);
  }
  Serve(Started{std::move(*sink), std::move(*options)}, probing);
  return true;
}

}  // namespace zcal::agent
