// The one way Metrics builds its output: every family is rendered at each
// scrape from values held in memory, so that a series whose path, method or
// size is gone is simply not rendered again (a registry would keep it at
// its last value), and a family of fixed label values shows each from 0.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/metric_family.h>

namespace zcal::agent {

/// Label names and values of one sample, in the order they are printed.
using Labels = std::initializer_list<std::pair<const char*, std::string>>;

/// Appends families to `out`: Counter or Gauge starts one, Add appends a
/// sample to the family started last.
class FamilyWriter {
 public:
  explicit FamilyWriter(std::vector<prometheus::MetricFamily>& out) : out_(out) {}

  FamilyWriter& Counter(std::string name, std::string help) {
    return Start(std::move(name), std::move(help), prometheus::MetricType::Counter);
  }
  FamilyWriter& Gauge(std::string name, std::string help) {
    return Start(std::move(name), std::move(help), prometheus::MetricType::Gauge);
  }
  FamilyWriter& Add(double value, Labels labels = {}) {
    prometheus::ClientMetric& metric = NewSample(labels);
    if (out_.back().type == prometheus::MetricType::Counter) {
      metric.counter.value = value;
    } else {
      metric.gauge.value = value;
    }
    return *this;
  }

  /// A histogram family of one unlabelled series: `counts[i]` observations
  /// fell in bucket i (<= bounds[i]; the last one, without a bound, +Inf).
  void Histogram(std::string name, std::string help, std::span<const double> bounds,
                 std::span<const std::uint64_t> counts, double sum) {
    HistogramFamily(std::move(name), std::move(help));
    AddHistogram(bounds, counts, sum);
  }
  /// Starts a histogram family whose series AddHistogram appends.
  FamilyWriter& HistogramFamily(std::string name, std::string help) {
    return Start(std::move(name), std::move(help), prometheus::MetricType::Histogram);
  }
  /// Appends a series to the histogram family started last, as Histogram.
  FamilyWriter& AddHistogram(std::span<const double> bounds, std::span<const std::uint64_t> counts,
                             double sum, Labels labels = {}) {
    prometheus::ClientMetric& metric = NewSample(labels);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      cumulative += counts[i];
      metric.histogram.bucket.push_back(
          {cumulative, i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity()});
    }
    metric.histogram.sample_count = cumulative;
    metric.histogram.sample_sum = sum;
    return *this;
  }

 private:
  FamilyWriter& Start(std::string name, std::string help, prometheus::MetricType type) {
    prometheus::MetricFamily family;
    family.name = std::move(name);
    family.help = std::move(help);
    family.type = type;
    out_.push_back(std::move(family));
    return *this;
  }
  prometheus::ClientMetric& NewSample(Labels labels) {
    prometheus::ClientMetric& metric = out_.back().metric.emplace_back();
    for (const auto& [name, value] : labels) metric.label.push_back({name, value});
    return metric;
  }

  std::vector<prometheus::MetricFamily>& out_;
};

}  // namespace zcal::agent
