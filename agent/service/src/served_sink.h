// The agent's peer sink (config section `sink:`, parsed when the file was
// read): started with the service, replaced on reload only when its options
// or its key file's keys changed, stopped with the service, and read by the
// metrics on scrapes.
//
// Thread safety: owned by the service's event loop; TryBeginLocalProbe and
// EndLocalProbe are the PeerSink's own, safe from any thread.
#pragma once

#include <memory>
#include <optional>

#include "zcal/agent/config/config.h"
#include "zcal/agent/metrics/metrics.h"
#include "zcal/common/result.h"
#include "zcal/probes/peer/peer_sink.h"

namespace zcal::agent {

class ServedSink {
 public:
  explicit ServedSink(std::shared_ptr<Metrics> metrics) : metrics_(std::move(metrics)) {}

  /// Starts the sink of `sink` (none without options); `probing` marks it
  /// busy at once. The error says why it cannot start.
  Result<void> Start(const SinkConfig& sink, bool probing);

  /// On reload from `current` to `next`: replaces the sink when its options
  /// or keys changed; true when it did. A new address is bound before the
  /// old sink closes; the same address only once the old one is closed, and
  /// the old one comes back from its own options when the new one cannot
  /// start. The error leaves the previous sink serving.
  Result<bool> Replace(const SinkConfig& current, const SinkConfig& next, bool probing);

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
  // Opens a sink with `options`, its error naming the address.
  static Result<std::shared_ptr<probes::PeerSink>> Open(const probes::PeerSinkOptions& options);
  void Serve(std::shared_ptr<probes::PeerSink> sink, const SinkConfig& config, bool probing);

  std::shared_ptr<Metrics> metrics_;
  // Null without sink.listen. Shared with metrics_, which reads its
  // counters on scrapes.
  std::shared_ptr<probes::PeerSink> sink_;
  std::optional<probes::PeerSinkOptions> options_;  // those sink_ runs with
};

}  // namespace zcal::agent
