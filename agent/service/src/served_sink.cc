#include "served_sink.h"

#include <string>
#include <vector>

#include <spdlog/spdlog.h>

namespace zcal::agent {

Result<void> ServedSink::Start(const SinkConfig& sink, bool probing) {
  if (!sink.options) {
    Serve(nullptr, sink, probing);
    return {};
  }
  auto opened = Open(*sink.options);
  if (!opened) return tl::unexpected(opened.error());
  Serve(std::move(*opened), sink, probing);
  return {};
}

Result<std::shared_ptr<probes::PeerSink>> ServedSink::Open(const probes::PeerSinkOptions& options) {
  auto sink = probes::PeerSink::Start(options);
  if (!sink) {
    return Fail(sink.error().code, "cannot start the peer sink (sink.listen " +
                                       common::ToString(options.listen) + "): " +
                                       sink.error().message +
                                       "; choose a free address:port, or \"\" for no sink");
  }
  return std::shared_ptr<probes::PeerSink>(std::move(*sink));
}

void ServedSink::Serve(std::shared_ptr<probes::PeerSink> sink, const SinkConfig& config,
                       bool probing) {
  if (sink_) sink_->Stop();
  sink_ = std::move(sink);
  options_ = sink_ ? config.options : std::nullopt;
  // A sink that replaces another while the agent probes must not grant a
  // session either; it has none open yet, so the mark always takes.
  if (sink_ && probing) sink_->TryBeginLocalProbe();
  metrics_->SetSink(sink_);
  if (!sink_) {
    spdlog::info("no peer sink (sink.listen is empty)");
    return;
  }
  for (const std::string& w : config.warnings) spdlog::warn("peer sink: {}", w);
  const std::size_t keys = options_->keys ? options_->keys->keys.size() : 0;
  spdlog::info("serving the peer sink on {} ({}, {}, at most {} session(s) of {} s)",
               common::ToString(sink_->endpoint()),
               keys != 0 ? std::to_string(keys) + " key(s)" : std::string("no authentication"),
               options_->allow.empty()
                   ? std::string("any source")
                   : std::to_string(options_->allow.size()) + " allowed prefix(es)",
               options_->max_sessions, options_->max_session_seconds.count());
}

Result<bool> ServedSink::Replace(const SinkConfig& current, const SinkConfig& next,
                                 bool probing) {
  // The configuration was parsed, its key file read, when it was loaded:
  // equal options are the same sink, keys included.
  if (next.options == options_) return false;
  if (!next.options) {
    Serve(nullptr, next, probing);
    return true;
  }
  const bool same_address = sink_ && next.options->listen == options_->listen &&
                            options_->listen.port != 0;
  if (same_address) sink_->Stop();
  auto opened = Open(*next.options);
  if (!opened) {
    if (same_address) {
      // The old sink comes back from its own options.
      auto old = Open(*options_);
      SinkConfig kept = current;
      kept.options = options_;
      if (old) {
        Serve(std::move(*old), kept, probing);
      } else {
        spdlog::error("cannot restart the peer sink: {}; running without one",
                      old.error().message);
        Serve(nullptr, next, probing);
      }
    }
    return tl::unexpected(opened.error());
  }
  Serve(std::move(*opened), next, probing);
  return true;
}

}  // namespace zcal::agent
