#include "metrics_snapshot.h"

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
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::initializer_list<std::pair<const char*, std::string>>;

// One gauge family; Add() appends a sample with its labels.
class GaugeFamily {
 public:
  GaugeFamily(std::vector<MetricFamily>& out, std::string name,
              std::string help)
      : out_(out) {
    family_.name = std::move(name);
    family_.help = std::move(help);
    family_.type = MetricType::Gauge;
  }
  ~GaugeFamily() { out_.push_back(std::move(family_)); }
  GaugeFamily(const GaugeFamily&) = delete;
  GaugeFamily& operator=(const GaugeFamily&) = delete;

  void Add(double value, Labels labels = {}) {
    ClientMetric metric;
    for (const auto& [name, label_value] : labels) {
      metric.label.push_back({name, label_value});
    }
    metric.gauge.value = value;
    family_.metric.push_back(std::move(metric));
  }

 private:
  std::vector<MetricFamily>& out_;
  MetricFamily family_;
};

std::string MethodLabel(Method method) {
  return std::string(calibrator::MethodName(method));
}

// Bounded: DepthClass has at most 8 values (depth_class.h).
std::string DepthLabel(DepthClass depth) { return std::string(DepthClassName(depth)); }

// The labels of one published result.
struct Where {
  const std::string& path;
  std::string method;
  std::string depth;
};

// +Inf for never: no size is large enough. Inconclusive has no value.
std::optional<double> ThresholdValue(const MethodResult& result) {
  switch (result.verdict) {
    case Verdict::kThreshold:
    case Verdict::kAlways:
      if (result.threshold_bytes) {
        return static_cast<double>(*result.threshold_bytes);
      }
      return result.verdict == Verdict::kAlways ? std::optional<double>(0)
                                                : std::nullopt;
    case Verdict::kNever:
      return std::numeric_limits<double>::infinity();
    case Verdict::kInconclusive:
      break;
  }
  return std::nullopt;
}

}  // namespace

void Metrics::Snapshot::SetPublished(const std::map<std::string, MethodStates>& paths,
                                     bool stale) {
  std::lock_guard lock(mutex_);
  published_ = paths;
  stale_ = stale;
}

void Metrics::Snapshot::SetLastCalibration(
    const std::string& path, std::span<const calibrator::Sample> samples,
    const std::map<DepthClass, calibrator::PathResult>& fresh) {
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
  std::lock_guard lock(mutex_);
  std::erase_if(sizes_, [&](const auto& item) { return item.first.path == path; });
  std::erase_if(copied_, [&](const auto& item) { return item.first.first == path; });
  std::erase_if(fresh_, [&](const auto& item) { return item.first.first == path; });
  for (const auto& [key, group] : groups) {
    const calibrator::SizeStats stats = calibrator::Aggregate(group);
    sizes_[key] = SizeFigures{stats.throughput_bytes_per_second.median,
                              stats.cpu_ns_per_byte.median * 1e-9};
  }
  for (const auto& [key, counts] : copied) {
    if (counts.second == 0) continue;
    copied_[{path, key}] = static_cast<double>(counts.first) /
                           static_cast<double>(counts.second);
  }
  for (const auto& [depth, result] : fresh) {
    for (const auto& [method, r] : result.methods) fresh_[{path, {method, depth}}] = r;
  }
}

void Metrics::Snapshot::SetHost(const HostInfo& host) {
  std::lock_guard lock(mutex_);
  host_ = host;
}

void Metrics::Snapshot::SetPaths(
    const std::map<std::string, probes::TargetKind>& kinds) {
  std::lock_guard lock(mutex_);
  path_kinds_ = kinds;
}

void Metrics::Snapshot::SetHostDefault(const HostDefaultInfo& host_default) {
  std::lock_guard lock(mutex_);
  host_default_ = host_default;
}

void Metrics::Snapshot::RetainPaths(const std::set<std::string>& paths) {
  std::lock_guard lock(mutex_);
  const auto gone = [&](const std::string& path) {
    return !paths.contains(path);
  };
  std::erase_if(published_, [&](const auto& item) { return gone(item.first); });
  std::erase_if(sizes_, [&](const auto& item) { return gone(item.first.path); });
  std::erase_if(copied_, [&](const auto& item) { return gone(item.first.first); });
  std::erase_if(fresh_, [&](const auto& item) { return gone(item.first.first); });
  std::erase_if(path_kinds_, [&](const auto& item) { return gone(item.first); });
  if (host_) {
    // The host default NIC's and the peers' NICs' facts belong to no path.
    std::erase_if(host_->interfaces, [&](const PathInterface& i) {
      return i.path != kHostDefaultInterfacePath &&
             !i.path.starts_with(kPeerInterfacePathPrefix) && gone(i.path);
    });
  }
}

void Metrics::Snapshot::AppendTo(std::vector<MetricFamily>& out) const {
  std::lock_guard lock(mutex_);
  AppendPublished(out);
  AppendLastCalibration(out);
  AppendHost(out);
  AppendHostDefault(out);
}

void Metrics::Snapshot::AppendHostDefault(
    std::vector<MetricFamily>& out) const {
  {
    GaugeFamily f(out, "zcal_path_info",
                  "1 per configured path; type is loopback (kernel-copied "
                  "by design) or discard (the sender's own costs, no NIC).");
    for (const auto& [path, kind] : path_kinds_) {
      f.Add(1, {{"path", path}, {"type", std::string(probes::TargetKindName(kind))}});
    }
  }
  if (!host_default_) return;
  {
    GaugeFamily f(out, "zcal_host_default_info",
                  "1; where the host default comes from (source peers, "
                  "estimated or none) and, for none, why.");
    f.Add(1, {{"source", std::string(HostDefaultSourceName(host_default_->source))},
              {"reason", std::string(HostDefaultAbsenceReason(host_default_->source))},
              {"interface", host_default_->interface}});
  }
  GaugeFamily f(out, "zcal_host_default_threshold_bytes",
                "Published host-default threshold per method (+Inf for "
                "never); estimated is 1 when it comes from the discard path "
                "rather than from a NIC.");
  for (const auto& [key, result] : host_default_->methods) {
    if (const auto value = ThresholdValue(result)) {
      f.Add(*value, {{"method", MethodLabel(key.first)},
                     {"depth", DepthLabel(key.second)},
                     {"estimated", host_default_->estimated ? "1" : "0"}});
    }
  }
}

void Metrics::Snapshot::AppendPublished(std::vector<MetricFamily>& out) const {
  // Each family walks every published (path, method, depth class); `at`
  // are those three labels.
  const auto each = [this](const auto& fn) {
    for (const auto& [path, methods] : published_) {
      for (const auto& [key, state] : methods) {
        fn(Where{path, MethodLabel(key.method), DepthLabel(key.depth)}, state);
      }
    }
  };
  {
    GaugeFamily f(out, "zcal_threshold_bytes",
                  "Published message size from which zerocopy send pays "
                  "off; +Inf when it never does; absent when inconclusive.");
    each([&](const Where& at, const MethodState& s) {
      if (const auto value = ThresholdValue(s.published)) {
        f.Add(*value, {{"path", at.path}, {"method", at.method}, {"depth", at.depth}});
      }
    });
  }
  {
    GaugeFamily f(out, "zcal_verdict",
                  "Published verdict: 1 for the current one of threshold, "
                  "always, never, inconclusive; 0 for the others.");
    each([&](const Where& at, const MethodState& s) {
      for (const Verdict v : {Verdict::kThreshold, Verdict::kAlways,
                              Verdict::kNever, Verdict::kInconclusive}) {
        f.Add(s.published.verdict == v ? 1 : 0,
              {{"path", at.path},
               {"method", at.method},
               {"depth", at.depth},
               {"verdict", std::string(calibrator::VerdictName(v))}});
      }
    });
  }
  {
    GaugeFamily f(out, "zcal_verdict_reason_info",
                  "Why the published verdict is what it is (reason none "
                  "for a threshold or always).");
    each([&](const Where& at, const MethodState& s) {
      const std::string_view reason = calibrator::ReasonName(s.published.reason);
      f.Add(1, {{"path", at.path},
                {"method", at.method},
                {"depth", at.depth},
                {"reason", reason.empty() ? "none" : std::string(reason)}});
    });
  }
  {
    GaugeFamily f(out, "zcal_threshold_confidence_ratio",
                  "Share (0 to 1) of the compared sizes whose comparison "
                  "was decisive; absent when unknown.");
    each([&](const Where& at, const MethodState& s) {
      if (s.published.confidence) {
        f.Add(*s.published.confidence,
              {{"path", at.path}, {"method", at.method}, {"depth", at.depth}});
      }
    });
  }
  {
    GaugeFamily f(out, "zcal_result_measured_timestamp_seconds",
                  "Unix time of the calibration behind the published "
                  "result (or the last one that agreed with it).");
    each([&](const Where& at, const MethodState& s) {
      f.Add(common::NsToSeconds(s.measured_at_ns),
            {{"path", at.path}, {"method", at.method}, {"depth", at.depth}});
    });
  }
  // The load each published result was measured under; no series for a
  // result whose load was not measured.
  for (const auto& [name, help, value] :
       {std::tuple{"zcal_calibration_host_busy_ratio",
                   "Share (0 to 1) of all CPUs' time the host was busy over the probes of "
                   "the calibration behind the published result, this calibration included.",
                   &probes::HostLoad::busy_share},
        std::tuple{"zcal_calibration_host_steal_ratio",
                   "Share (0 to 1) of all CPUs' time a hypervisor gave to other guests over "
                   "the probes of the calibration behind the published result.",
                   &probes::HostLoad::steal_share},
        std::tuple{"zcal_calibration_own_cpu_ratio",
                   "Share (0 to 1) of all CPUs' time the calibration behind the published "
                   "result used itself (its senders, a loopback sink).",
                   &probes::HostLoad::own_share},
        std::tuple{"zcal_calibration_runnable_tasks",
                   "Mean of the host's runnable tasks read before each probe of the "
                   "calibration behind the published result (its own thread included).",
                   &probes::HostLoad::runnable_mean}}) {
    GaugeFamily f(out, name, help);
    // A copy, not the binding: clang 14 cannot capture structured bindings.
    const auto field = value;
    each([&](const Where& at, const MethodState& s) {
      if (s.load) {
        f.Add((*s.load).*field, {{"path", at.path}, {"method", at.method}, {"depth", at.depth}});
      }
    });
  }
  {
    GaugeFamily f(out, "zcal_hysteresis_pending",
                  "1 while a differing result waits for a second "
                  "calibration to agree before it is published.");
    each([&](const Where& at, const MethodState& s) {
      f.Add(s.pending ? 1 : 0, {{"path", at.path}, {"method", at.method}, {"depth", at.depth}});
    });
  }
  GaugeFamily f(out, "zcal_published_stale",
                "1 while the published results come from the state file "
                "and no calibration has confirmed them yet.");
  f.Add(stale_ ? 1 : 0);
}

void Metrics::Snapshot::AppendLastCalibration(
    std::vector<MetricFamily>& out) const {
  {
    GaugeFamily f(out, "zcal_measured_threshold_bytes",
                  "Threshold found by the last calibration, before "
                  "hysteresis; +Inf for never; absent when inconclusive.");
    for (const auto& [key, result] : fresh_) {
      if (const auto value = ThresholdValue(result)) {
        f.Add(*value, {{"path", key.first},
                       {"method", MethodLabel(key.second.method)},
                       {"depth", DepthLabel(key.second.depth)}});
      }
    }
  }
  {
    GaugeFamily f(out, "zcal_throughput_bytes_per_second",
                  "Median throughput of the last calibration's probes, by "
                  "method and message size.");
    for (const auto& [key, figures] : sizes_) {
      f.Add(figures.throughput_bytes_per_second,
            {{"path", key.path},
             {"method", MethodLabel(key.key.method)},
             {"depth", DepthLabel(key.key.depth)},
             {"size_bytes", std::to_string(key.size_bytes)}});
    }
  }
  {
    GaugeFamily f(out, "zcal_cpu_seconds_per_byte",
                  "Median sender CPU time per byte sent in the last "
                  "calibration, by method and message size.");
    for (const auto& [key, figures] : sizes_) {
      f.Add(figures.cpu_seconds_per_byte,
            {{"path", key.path},
             {"method", MethodLabel(key.key.method)},
             {"depth", DepthLabel(key.key.depth)},
             {"size_bytes", std::to_string(key.size_bytes)}});
    }
  }
  GaugeFamily f(out, "zcal_copied_ratio",
                "Share (0 to 1) of zerocopy completions the kernel "
                "reported as copied in the last calibration.");
  for (const auto& [key, ratio] : copied_) {
    f.Add(ratio, {{"path", key.first},
                  {"method", MethodLabel(key.second.method)},
                  {"depth", DepthLabel(key.second.depth)}});
  }
}

void Metrics::Snapshot::AppendHost(std::vector<MetricFamily>& out) const {
  if (!host_) return;
  {
    GaugeFamily f(out, "zcal_host_info",
                  "Host facts the calibration depends on; the fingerprint "
                  "changes when any of them changes.");
    f.Add(1, {{"kernel_release", host_->kernel_release},
              {"cpu_model", host_->cpu_model},
              {"iommu_cmdline", common::Join(host_->iommu_cmdline, " ")},
              {"fingerprint", common::Hex64(host_->fingerprint)}});
  }
  GaugeFamily f(out, "zcal_interface_info",
                "Egress interface of each path: driver, PCI device, link "
                "speed, MTU, IOMMU group and type.");
  for (const PathInterface& p : host_->interfaces) {
    const probes::InterfaceFacts& i = p.facts;
    // Labels are text; an unknown value is the empty label.
    const std::string speed =
        i.speed_mbps && *i.speed_mbps >= 0 ? std::to_string(*i.speed_mbps * 1'000'000) : "";
    f.Add(1, {{"path", p.path},
              {"interface", i.name},
              {"driver", i.driver},
              {"pci_device", i.pci_device},
              {"speed_bits_per_second", speed},
              {"mtu_bytes", i.mtu ? std::to_string(*i.mtu) : ""},
              {"iommu_group", i.iommu_group},
              {"iommu_type", i.iommu_type}});
  }
}

}  // namespace zcal::agent
