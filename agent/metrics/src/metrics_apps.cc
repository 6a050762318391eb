#include "metrics_apps.h"

#include <array>
#include <string>
#include <utility>

#include "metrics_family.h"

namespace zcal::agent {
namespace {

double CountValue(std::uint64_t count) { return static_cast<double>(count); }

std::string AppMethod(calibrator::Method method) {
  return std::string(calibrator::MethodName(method));
}

// A name's cells summed over scopes, by method: the metrics' labels carry
// no scope (it would multiply the series by five; docs/metrics.md).
std::map<calibrator::Method, AppCounters> ByMethod(const AppCells& cells) {
  std::map<calibrator::Method, AppCounters> out;
  for (const auto& [key, counters] : cells) out[key.method] += counters;
  return out;
}

// The histogram's bounds: le = 2^k - 1 for k = kFirstBound..kLastBound,
// so that each is exactly the top of a report bucket (bucket b holds
// 2^b..2^(b+1)-1 bytes); below them every smaller bucket, above them +Inf.
constexpr std::size_t kFirstBound = 10;  // le="1023"
constexpr std::size_t kLastBound = 24;   // le="16777215"
constexpr std::size_t kBounds = kLastBound - kFirstBound + 1;

constexpr std::array<double, kBounds> SizeBounds() {
  std::array<double, kBounds> bounds{};
  for (std::size_t i = 0; i < kBounds; ++i)
    bounds[i] = static_cast<double>((std::uint64_t{1} << (kFirstBound + i)) - 1);
  return bounds;
}
constexpr std::array<double, kBounds> kSizeBounds = SizeBounds();

// Report bucket b counts toward the first bound >= 2^(b+1) - 1.
std::array<std::uint64_t, kBounds + 1> SizeCounts(const AppCounters& c) {
  std::array<std::uint64_t, kBounds + 1> counts{};
  for (std::size_t b = 0; b < kAppSizeBuckets; ++b) {
    const std::size_t top = b + 1;  // bucket b ends at 2^top - 1
    const std::size_t i = top <= kFirstBound ? 0 : top - kFirstBound;
    counts[i < kBounds ? i : kBounds] += c.sizes[b];
  }
  return counts;
}

}  // namespace

void Metrics::SetApps(AppsSnapshot snapshot, const AppsReadStats& totals) {
  std::lock_guard lock(apps_->mutex);
  apps_->snapshot = std::move(snapshot);
  apps_->totals = totals;
}

namespace {

// The families of what the applications sent: sends, bytes, completions,
// sizes, each by app and method.
void AppendSent(const AppsSnapshot& snapshot, FamilyWriter& writer) {
  writer.Counter("zcal_app_sends_total",
                 "Sends the applications' libzcal reports counted, by app, method, decision "
                 "(zerocopy, copy: libzcal's answer) and depth class (1, 4, 16, stream); "
                 "exited processes' counts stay in their app's totals.");
  for (const auto& [app, totals] : snapshot.apps) {
    for (const auto& [method, c] : ByMethod(totals.cells)) {
      for (std::size_t d = 0; d < kAppDepthClasses; ++d) {
        for (const bool zerocopy : {true, false}) {
          std::uint64_t n = 0;
          for (const std::uint64_t v : c.answers[d][zerocopy ? 1 : 0]) n += v;
          writer.Add(CountValue(n), {{"app", app},
                                  {"decision", zerocopy ? "zerocopy" : "copy"},
                                  {"depth", std::string(DepthClassName(AppDepthClass(d)))},
                                  {"method", AppMethod(method)}});
        }
      }
    }
  }
  writer.Counter("zcal_app_bytes_total",
                 "Bytes of the applications' reported sends, by app, method and decision.");
  for (const auto& [app, totals] : snapshot.apps) {
    for (const auto& [method, c] : ByMethod(totals.cells)) {
      writer.Add(CountValue(c.bytes[1]),
                 {{"app", app}, {"decision", "zerocopy"}, {"method", AppMethod(method)}});
      writer.Add(CountValue(c.bytes[0]),
                 {{"app", app}, {"decision", "copy"}, {"method", AppMethod(method)}});
    }
  }
  writer.Counter("zcal_app_completions_total",
                 "Zerocopy completions the applications reported, by app, method and whether "
                 "the kernel copied the data anyway (copied=true).");
  for (const auto& [app, totals] : snapshot.apps) {
    for (const auto& [method, c] : ByMethod(totals.cells)) {
      const std::uint64_t copied = c.copied <= c.completions ? c.copied : c.completions;
      writer.Add(CountValue(copied), {{"app", app}, {"copied", "true"}, {"method", AppMethod(method)}});
      writer.Add(CountValue(c.completions - copied),
                 {{"app", app}, {"copied", "false"}, {"method", AppMethod(method)}});
    }
  }
  writer.HistogramFamily("zcal_app_message_size_bytes",
                         "Sizes of the applications' reported sends, by app and method; bounds "
                         "2^k - 1 bytes for k = 10..24 (the report's power-of-two buckets); the "
                         "sum is the bytes sent.");
  for (const auto& [app, totals] : snapshot.apps) {
    for (const auto& [method, c] : ByMethod(totals.cells)) {
      writer.AddHistogram(kSizeBounds, SizeCounts(c),
                          static_cast<double>(c.bytes[0] + c.bytes[1]),
                          {{"app", app}, {"method", AppMethod(method)}});
    }
  }
}

// The families of the reader itself: objects read, refused, removed.
void AppendReader(const AppsSnapshot& snapshot, const AppsReadStats& totals,
                  FamilyWriter& writer) {
  writer.Gauge("zcal_app_reports",
               "Report objects of live processes read at the last heartbeat, by app.");
  for (const auto& [app, app_totals] : snapshot.apps) {
    writer.Add(static_cast<double>(app_totals.live_processes), {{"app", app}});
  }
  writer.Counter("zcal_app_report_refusals_total",
                 "Report objects not read, by kind (too_many, not_regular, size, magic, version, "
                 "layout, name, torn, backwards, uid, open); one object counts at every "
                 "heartbeat it is refused.");
  for (const AppRefusal kind : kAllAppRefusals) {
    writer.Add(CountValue(totals.Refused(kind)), {{"kind", std::string(AppRefusalName(kind))}});
  }
  writer.Counter("zcal_app_reports_removed_total",
                 "Report objects the agent removed: those of exited processes (closed, or whose "
                 "process is gone) after folding their counts into their app's totals, and "
                 "closed ones it does not count (apps.uids, apps.enabled false).")
      .Add(CountValue(totals.removed));
  writer.Counter("zcal_app_report_remove_failures_total",
                 "Removals of exited processes' report objects that failed (in a sticky "
                 "/dev/shm only their owner or CAP_FOWNER may remove them); counted at every "
                 "attempt, the counts are folded once.")
      .Add(CountValue(totals.remove_failed));
}

}  // namespace

void Metrics::AppsView::AppendTo(std::vector<prometheus::MetricFamily>& out) const {
  FamilyWriter writer(out);
  std::lock_guard lock(mutex);
  AppendSent(snapshot, writer);
  AppendReader(snapshot, totals, writer);
}

}  // namespace zcal::agent
