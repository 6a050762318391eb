#include "metrics_contradictions.h"

#include <string>

#include "metrics_family.h"

namespace zcal::agent {

namespace {

// The scope kinds the rule can raise a contradiction on (loopback and
// none never trip it).
constexpr AppScope kContradictable[] = {AppScope::kHostDefault, AppScope::kPeer,
                                        AppScope::kInterface};

}  // namespace

Metrics::ContradictionView::ContradictionView() {
  for (const AppScope scope : kContradictable) {
    for (const calibrator::Method method : calibrator::kZerocopyMethods) {
      counts[{scope, method}] = 0;
    }
  }
}

void Metrics::ContradictionView::AppendTo(std::vector<prometheus::MetricFamily>& out) const {
  const std::lock_guard lock(mutex);
  FamilyWriter writer(out);
  writer.Counter("zcal_app_contradictions_total",
                 "Field contradictions raised: the applications' reports showed the kernel "
                 "copying zerocopy sends of a scope where zcal published that zerocopy pays; "
                 "by scope kind (host_default, peer, interface) and method.");
  for (const auto& [key, count] : counts) {
    writer.Add(static_cast<double>(count),
               {{"method", std::string(calibrator::MethodName(key.second))},
                {"scope", std::string(AppScopeName(key.first))}});
  }
}

void Metrics::RecordContradiction(AppScope scope, calibrator::Method method) {
  const std::lock_guard lock(contradictions_->mutex);
  ++contradictions_->counts[{scope, method}];
}

}  // namespace zcal::agent
