#include "metrics_endpoint.h"

#include <vector>

#include <spdlog/spdlog.h>

namespace zcal::agent {
namespace {

// Servers handed to the process exit: reachable, never destroyed (see the
// header for why, and for when this goes).
std::vector<std::unique_ptr<MetricsServer>>& LeftToExit() {
  static auto* servers = new std::vector<std::unique_ptr<MetricsServer>>();
  return *servers;
}

}  // namespace

MetricsEndpoint::MetricsEndpoint(std::shared_ptr<Metrics> metrics)
    : metrics_(std::move(metrics)) {}

MetricsEndpoint::~MetricsEndpoint() = default;

Result<std::unique_ptr<MetricsServer>> MetricsEndpoint::Bind(
    const std::string& listen) const {
  if (listen.empty()) return std::unique_ptr<MetricsServer>();
  return MetricsServer::Start(listen, metrics_);
}

void MetricsEndpoint::Replace(std::unique_ptr<MetricsServer> next) {
  std::unique_ptr<MetricsServer> old = std::exchange(server_, std::move(next));
  if (old) {
    // Joins a previous retirement first: two listener changes within a
    // couple of seconds wait for the first server's stop, rarely.
    retiring_ = std::jthread([old = std::move(old)]() mutable { old.reset(); });
  }
  spdlog::info("{}", Describe());
}

void MetricsEndpoint::LeaveToExit() {
  if (server_) LeftToExit().push_back(std::move(server_));
}

std::string MetricsEndpoint::Describe() const {
  return server_ ? "serving metrics at " + server_->Url()
                 : "metrics disabled (metrics.listen is empty)";
}

int MetricsEndpoint::port() const { return server_ ? server_->port() : 0; }

}  // namespace zcal::agent
