// The agent's peer sink (config section `sink:`): started with the service,
// replaced on reload only when its settings or its key file's keys changed,
// stopped with the service, and read by the metrics on scrapes.
//
// Thread safety: owned by the service's event loop; TryBeginLocalProbe and
// EndLocalProbe are the PeerSink's own, safe from any thread.
#pragma once

#include <memory>
#include <optional>

#include "zcal/agent/config/sink_settings.h"
#include "zcal/agent/config/config.h"
#include "zcal/agent/metrics/metrics.h"
#include "zcal/common/result.h"
#include "zcal/probes/peer_sink.h"

namespace zcal::agent {

class ServedSink {
 public:
  explicit ServedSink(std::shared_ptr<Metrics> metrics) : metrics_(std::move(metrics)) {}

  /// Starts the sink of `settings` (none when sink.listen is ""); `probing`
  /// marks it busy at once. The error says why it cannot start.
  Result<void> Start(const SinkSettings& settings, bool probing);

  /// On reload from `current` to `next`: replaces the sink when the settings
  /// or the keys of its key file changed; true when it did. A new address is
  /// bound before the old sink closes; the same address only once the old
  /// one is closed, and the old one is restarted when the new one cannot
  /// start. The error leaves the previous sink serving.
  Result<bool> Replace(const SinkSettings& current, const SinkSettings& next, bool probing);

  /// The agent's probing mark (PeerSink::TryBeginLocalProbe); true without
  /// a sink.
  bool TryBeginLocalProbe() { return !sink_ || sink_->TryBeginLocalProbe(); }
  void EndLocalProbe() {
    if (sink_) sink_->EndLocalProbe();
  }

  void Stop() {
    if (sink_) sink_->Stop();
  }

 private:
  struct Started {
    std::shared_ptr<probes::PeerSink> sink;
    std::optional<probes::PeerSinkOptions> options;
  };
  static Result<Started> Open(const SinkSettings& settings);
  void Serve(Started started, bool probing);

  std::shared_ptr<Metrics> metrics_;
  // Null without sink.listen. Shared with metrics_, which reads its
  // counters on scrapes.
  std::shared_ptr<probes::PeerSink> sink_;
  std::optional<probes::PeerSinkOptions> options_;
};

}  // namespace zcal::agent
