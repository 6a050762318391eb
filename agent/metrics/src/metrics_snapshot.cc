#include "metrics_snapshot.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <tuple>

#include "zcal/calibrator/stats.h"
#include "zcal/common/clock.h"
#include "zcal/common/text.h"

namespace zcal::agent {
namespace {

using calibrator::Method;
using calibrator::MethodResult;
using calibrator::Verdict;
using prometheus::MetricFamily;

std::string MethodLabel(Method method) {
  return std::string(calibrator::MethodName(method));
}

// Bounded: DepthClass has at most 8 values (depth_class.h).
std::string DepthLabel(DepthClass depth) { return std::string(DepthClassName(depth)); }

// Calls fn(path, method, depth, entry) for every published (path, method,
// depth class); the three labels every family of a result has.
template <typename Fn>
void EachPublished(const std::map<std::pair<PathId, MethodKey>, PublishedEntry>& published,
                   const Fn& fn) {
  for (const auto& [key, entry] : published) {
    fn(ToString(key.first), MethodLabel(key.second.method), DepthLabel(key.second.depth), entry);
  }
}

// +Inf for never: no size is large enough. Inconclusive has no value.
std::optional<double> ThresholdValue(Verdict verdict, std::optional<std::uint64_t> threshold) {
  switch (verdict) {
    case Verdict::kThreshold:
    case Verdict::kAlways:
      if (threshold) return static_cast<double>(*threshold);
      return verdict == Verdict::kAlways ? std::optional<double>(0) : std::nullopt;
    case Verdict::kNever:
      return std::numeric_limits<double>::infinity();
    case Verdict::kInconclusive:
      break;
  }
  return std::nullopt;
}

std::optional<double> ThresholdValue(const MethodResult& result) {
  return ThresholdValue(result.verdict, result.threshold_bytes);
}

}  // namespace

void Metrics::SetPublished(std::span<const PublishedEntry> table, bool stale) {
  std::map<std::pair<PathId, MethodKey>, PublishedEntry> published;
  for (const PublishedEntry& e : table) {
    if (e.path) published.emplace(std::pair{*e.path, MethodKey{e.method, e.depth}}, e);
  }
  std::lock_guard lock(snapshot_->mutex);
  snapshot_->published = std::move(published);
  snapshot_->stale = stale;
}

void Metrics::SetLastCalibration(const PathId& id,
                                 std::span<const calibrator::Sample> samples,
                                 const std::map<DepthClass, calibrator::PathResult>& fresh) {
  using SizeKey = Snapshot::SizeKey;
  const std::string path = ToString(id);
  std::map<SizeKey, std::vector<calibrator::Sample>> groups;
  std::map<MethodKey, std::pair<std::uint64_t, std::uint64_t>> copied;
  for (const calibrator::Sample& s : samples) {
    const bool zerocopy = calibrator::IsZerocopy(s.method);
    const std::optional<DepthClass> depth =
        zerocopy ? DepthClassOf(s.depth) : std::optional(DepthClass::kStream);
    if (!s.ok() || !depth) continue;
    const MethodKey key{s.method, *depth};
    groups[SizeKey{path, key, s.size_bytes}].push_back(s);
    if (zerocopy) {
      copied[key].first += s.zc_copied;
      copied[key].second += s.zc_completions;
    }
  }
  Snapshot& snap = *snapshot_;
  std::lock_guard lock(snap.mutex);
  std::erase_if(snap.sizes, [&](const auto& item) { return item.first.path == path; });
  std::erase_if(snap.copied, [&](const auto& item) { return item.first.first == path; });
  std::erase_if(snap.fresh, [&](const auto& item) { return item.first.first == path; });
  for (const auto& [key, group] : groups) {
    const calibrator::SizeStats stats = calibrator::Aggregate(group);
    snap.sizes[key] = Snapshot::SizeFigures{stats.throughput_bytes_per_second.median,
                                            stats.cpu_ns_per_byte.median * 1e-9};
  }
  for (const auto& [key, counts] : copied) {
    if (counts.second == 0) continue;
    snap.copied[{path, key}] =
        static_cast<double>(counts.first) / static_cast<double>(counts.second);
  }
  for (const auto& [depth, result] : fresh) {
    for (const auto& [method, r] : result.methods) snap.fresh[{path, {method, depth}}] = r;
  }
}

void Metrics::SetHost(const HostInfo& host) {
  std::lock_guard lock(snapshot_->mutex);
  snapshot_->host = host;
}

void Metrics::SetPaths(const std::map<PathId, probes::TargetKind>& kinds) {
  std::map<std::string, probes::TargetKind> labels;
  for (const auto& [path, kind] : kinds) labels.emplace(ToString(path), kind);
  std::lock_guard lock(snapshot_->mutex);
  snapshot_->path_kinds = std::move(labels);
}

void Metrics::SetHostDefault(const HostDefaultChoice& host_default,
                             std::span<const PublishedEntry> table) {
  std::vector<PublishedEntry> entries;
  std::copy_if(table.begin(), table.end(), std::back_inserter(entries),
               [](const PublishedEntry& e) { return e.scope == ScopeKind::kHostDefault; });
  std::lock_guard lock(snapshot_->mutex);
  snapshot_->host_default = host_default;
  snapshot_->host_default_entries = std::move(entries);
}

void Metrics::Snapshot::Retain(const std::set<std::string>& paths) {
  std::lock_guard lock(mutex);
  const auto gone = [&](const std::string& path) { return !paths.contains(path); };
  std::erase_if(published, [&](const auto& item) { return gone(ToString(item.first.first)); });
  std::erase_if(sizes, [&](const auto& item) { return gone(item.first.path); });
  std::erase_if(copied, [&](const auto& item) { return gone(item.first.first); });
  std::erase_if(fresh, [&](const auto& item) { return gone(item.first.first); });
  std::erase_if(path_kinds, [&](const auto& item) { return gone(item.first); });
  if (host) {
    // The host default NIC's and the peers' NICs' facts belong to no path.
    std::erase_if(host->interfaces, [&](const PathInterface& i) {
      return i.role == InterfaceRole::kPath && gone(i.path);
    });
  }
}

void Metrics::Snapshot::AppendTo(std::vector<MetricFamily>& out) const {
  FamilyWriter writer(out);
  std::lock_guard lock(mutex);
  AppendPublishedResults(writer);
  AppendPublishedLoad(writer);
  writer.Gauge("zcal_hysteresis_pending",
               "1 while a differing result waits for a second calibration to agree before it "
               "is published.");
  EachPublished(published, [&](const std::string& path, const std::string& method,
                               const std::string& depth, const PublishedEntry& s) {
    writer.Add(s.pending ? 1 : 0, {{"path", path}, {"method", method}, {"depth", depth}});
  });
  writer.Gauge("zcal_published_stale",
               "1 while the published results come from the state file and no calibration has "
               "confirmed them yet.")
      .Add(stale ? 1 : 0);
  AppendLastCalibration(writer);
  AppendHost(writer);
  AppendHostDefault(writer);
}

void Metrics::Snapshot::AppendPublishedResults(FamilyWriter& out) const {
  out.Gauge("zcal_threshold_bytes",
            "Published message size from which zerocopy send pays off; +Inf when it never "
            "does; absent when inconclusive.");
  EachPublished(published, [&](const std::string& path, const std::string& method,
                               const std::string& depth, const PublishedEntry& s) {
    if (const auto value = ThresholdValue(s.verdict, s.threshold_bytes)) {
      out.Add(*value, {{"path", path}, {"method", method}, {"depth", depth}});
    }
  });
  out.Gauge("zcal_verdict",
            "Published verdict: 1 for the current one of threshold, always, never, "
            "inconclusive; 0 for the others.");
  EachPublished(published, [&](const std::string& path, const std::string& method,
                               const std::string& depth, const PublishedEntry& s) {
    for (const Verdict v :
         {Verdict::kThreshold, Verdict::kAlways, Verdict::kNever, Verdict::kInconclusive}) {
      out.Add(s.verdict == v ? 1 : 0,
              {{"path", path},
               {"method", method},
               {"depth", depth},
               {"verdict", std::string(calibrator::VerdictName(v))}});
    }
  });
  out.Gauge("zcal_verdict_reason_info",
            "Why the published verdict is what it is (reason none for a threshold or always).");
  EachPublished(published, [&](const std::string& path, const std::string& method,
                               const std::string& depth, const PublishedEntry& s) {
    const std::string_view reason = calibrator::ReasonName(s.reason);
    out.Add(1, {{"path", path},
                {"method", method},
                {"depth", depth},
                {"reason", reason.empty() ? "none" : std::string(reason)}});
  });
  out.Gauge("zcal_threshold_confidence_ratio",
            "Share (0 to 1) of the compared sizes whose comparison was decisive; absent when "
            "unknown.");
  EachPublished(published, [&](const std::string& path, const std::string& method,
                               const std::string& depth, const PublishedEntry& s) {
    if (s.confidence) {
      out.Add(*s.confidence, {{"path", path}, {"method", method}, {"depth", depth}});
    }
  });
  out.Gauge("zcal_result_measured_timestamp_seconds",
            "Unix time of the calibration behind the published result (or the last one that "
            "agreed with it).");
  EachPublished(published, [&](const std::string& path, const std::string& method,
                               const std::string& depth, const PublishedEntry& s) {
    out.Add(common::NsToSeconds(s.measured_at_ns),
            {{"path", path}, {"method", method}, {"depth", depth}});
  });
}

// The load each published result was measured under; no series for a
// result whose load was not measured.
void Metrics::Snapshot::AppendPublishedLoad(FamilyWriter& out) const {
  struct LoadFamily {
    const char* name;
    const char* help;
    double probes::HostLoad::*field;
  };
  static constexpr LoadFamily kLoadFamilies[] = {
      {"zcal_calibration_host_busy_ratio",
       "Share (0 to 1) of all CPUs' time the host was busy over the probes of the calibration "
       "behind the published result, this calibration included.",
       &probes::HostLoad::busy_share},
      {"zcal_calibration_host_steal_ratio",
       "Share (0 to 1) of all CPUs' time a hypervisor gave to other guests over the probes of "
       "the calibration behind the published result.",
       &probes::HostLoad::steal_share},
      {"zcal_calibration_own_cpu_ratio",
       "Share (0 to 1) of all CPUs' time the calibration behind the published result used "
       "itself (its senders, a loopback sink).",
       &probes::HostLoad::own_share},
      {"zcal_calibration_runnable_tasks",
       "Mean of the host's runnable tasks read before each probe of the calibration behind "
       "the published result (its own thread included).",
       &probes::HostLoad::runnable_mean},
  };
  for (const LoadFamily& family : kLoadFamilies) {
    out.Gauge(family.name, family.help);
    EachPublished(published, [&](const std::string& path, const std::string& method,
                                 const std::string& depth, const PublishedEntry& s) {
      if (s.load) {
        out.Add((*s.load).*family.field, {{"path", path}, {"method", method}, {"depth", depth}});
      }
    });
  }
}

void Metrics::Snapshot::AppendLastCalibration(FamilyWriter& out) const {
  out.Gauge("zcal_measured_threshold_bytes",
            "Threshold found by the last calibration, before hysteresis; +Inf for never; "
            "absent when inconclusive.");
  for (const auto& [key, result] : fresh) {
    if (const auto value = ThresholdValue(result)) {
      out.Add(*value, {{"path", key.first},
                       {"method", MethodLabel(key.second.method)},
                       {"depth", DepthLabel(key.second.depth)}});
    }
  }
  for (const auto& [name, help, field] :
       {std::tuple{"zcal_throughput_bytes_per_second",
                   "Median throughput of the last calibration's probes, by method and message "
                   "size.",
                   &SizeFigures::throughput_bytes_per_second},
        std::tuple{"zcal_cpu_seconds_per_byte",
                   "Median sender CPU time per byte sent in the last calibration, by method and "
                   "message size.",
                   &SizeFigures::cpu_seconds_per_byte}}) {
    out.Gauge(name, help);
    for (const auto& [key, figures] : sizes) {
      out.Add(figures.*field, {{"path", key.path},
                               {"method", MethodLabel(key.key.method)},
                               {"depth", DepthLabel(key.key.depth)},
                               {"size_bytes", std::to_string(key.size_bytes)}});
    }
  }
  out.Gauge("zcal_copied_ratio",
            "Share (0 to 1) of zerocopy completions the kernel reported as copied in the last "
            "calibration.");
  for (const auto& [key, ratio] : copied) {
    out.Add(ratio, {{"path", key.first},
                    {"method", MethodLabel(key.second.method)},
                    {"depth", DepthLabel(key.second.depth)}});
  }
}

void Metrics::Snapshot::AppendHost(FamilyWriter& out) const {
  if (!host) return;
  out.Gauge("zcal_host_info",
            "Host facts the calibration depends on; the fingerprint changes when any of them "
            "changes.")
      .Add(1, {{"kernel_release", host->facts.kernel_release},
               {"cpu_model", host->facts.cpu_model},
               {"iommu_cmdline", common::Join(host->facts.iommu_cmdline, " ")},
               {"fingerprint", common::Hex64(host->facts.fingerprint)}});
  out.Gauge("zcal_interface_info",
            "Egress interface of each path: driver, PCI device, link speed, MTU, IOMMU group "
            "and type.");
  for (const PathInterface& p : host->interfaces) {
    const probes::InterfaceFacts& i = p.facts;
    // Labels are text; an unknown value is the empty label.
    const std::string speed =
        i.speed_mbps && *i.speed_mbps >= 0 ? std::to_string(*i.speed_mbps * 1'000'000) : "";
    out.Add(1, {{"path", p.path},
                {"interface", i.name},
                {"driver", i.driver},
                {"pci_device", i.pci_device},
                {"speed_bits_per_second", speed},
                {"mtu_bytes", i.mtu ? std::to_string(*i.mtu) : ""},
                {"iommu_group", i.iommu_group},
                {"iommu_type", i.iommu_type}});
  }
}

void Metrics::Snapshot::AppendHostDefault(FamilyWriter& out) const {
  out.Gauge("zcal_path_info",
            "1 per configured path; type is loopback (kernel-copied by design) or discard (the "
            "sender's own costs, no NIC).");
  for (const auto& [path, kind] : path_kinds) {
    out.Add(1, {{"path", path}, {"type", std::string(probes::TargetKindName(kind))}});
  }
  if (!host_default) return;
  out.Gauge("zcal_host_default_info",
            "1; where the host default comes from (source peers, estimated or none) and, for "
            "none, why.")
      .Add(1, {{"source", std::string(HostDefaultSourceName(host_default->source))},
               {"reason", std::string(HostDefaultAbsenceReason(host_default->source))},
               {"interface", host_default->interface}});
  out.Gauge("zcal_host_default_threshold_bytes",
            "Published host-default threshold per method (+Inf for never); estimated is 1 when "
            "it comes from the discard path rather than from a NIC.");
  for (const PublishedEntry& e : host_default_entries) {
    if (const auto value = ThresholdValue(e.verdict, e.threshold_bytes)) {
      out.Add(*value, {{"method", MethodLabel(e.method)},
                       {"depth", DepthLabel(e.depth)},
                       {"estimated", e.estimated ? "1" : "0"}});
    }
  }
}

}  // namespace zcal::agent
