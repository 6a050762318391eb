#include "exception_costs.h"

#include <algorithm>
#include <cmath>

namespace zcal::calibrator::detail {

ExceptionCosts::ExceptionCosts(const WeightedSizes& grid,
                               const std::vector<ModelException>& exceptions,
                               std::span<const SizeComparison> sizes,
                               const DecisionOptions& options)
    : grid_(grid), sizes_(sizes), options_(options) {
  point_cost_.reserve(sizes.size());
  for (const SizeComparison& c : sizes) point_cost_.push_back(c.relative_cost);
  const auto mid = [&](std::size_t i, std::size_t j) {
    return std::sqrt(static_cast<double>(sizes[i].size_bytes) *
                     static_cast<double>(sizes[j].size_bytes));
  };
  for (const ModelException& e : exceptions) {
    Span span;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::uint64_t s = sizes[i].size_bytes;
      if (s < e.min_size_bytes || s > e.max_size_bytes) continue;
      if (span.members.empty()) span.first = i;
      span.members.push_back(i);
      span.last = i;
    }
    if (span.members.empty()) continue;
    span.inner_low = static_cast<double>(sizes[span.first].size_bytes);
    span.inner_high = static_cast<double>(sizes[span.last].size_bytes);
    span.outer_low = span.first > 0 ? mid(span.first - 1, span.first) : span.inner_low;
    span.outer_high = span.last + 1 < sizes.size() ? mid(span.last, span.last + 1)
                                                   : span.inner_high;
    spans_.push_back(std::move(span));
  }
  for (const Span& sp : spans_) {
    for (std::size_t i : sp.members) used_.push_back(i);
  }
  std::vector<double> low, high;
  const double reach = std::exp2(kPointReachOctaves);
  for (const Span& sp : spans_) {
    low.push_back(std::max(sp.outer_low, sp.inner_low / reach));
    high.push_back(std::min(sp.outer_high, sp.inner_high * reach));
  }
  point_cells_ = Cells(low, high);
}

ExceptionCosts::Drawn ExceptionCosts::Draw(std::mt19937_64& rng) const {
  Drawn d{point_cells_, point_cost_};
  if (spans_.empty()) return d;
  std::uniform_real_distribution<double> uniform;
  std::vector<double> low, high;
  for (const Span& sp : spans_) {
    low.push_back(sp.inner_low * std::pow(sp.outer_low / sp.inner_low, uniform(rng)));
    high.push_back(sp.inner_high * std::pow(sp.outer_high / sp.inner_high, uniform(rng)));
  }
  d.cells = Cells(low, high);
  for (std::size_t i : used_) d.cost[i] = DrawRelativeCost(sizes_[i], rng, options_);
  return d;
}

std::vector<std::ptrdiff_t> ExceptionCosts::Cells(const std::vector<double>& low,
                                                  const std::vector<double>& high) const {
  std::vector<std::ptrdiff_t> cell(grid_.size.size(), -1);
  const double slack = 1 + 1e-9;
  for (std::size_t e = 0; e < spans_.size(); ++e) {
    const Span& sp = spans_[e];
    for (std::size_t k = 0; k < grid_.size.size(); ++k) {
      const double g = grid_.size[k];
      if (g * slack < low[e] || g > high[e] * slack) continue;
      std::size_t nearest = sp.members.front();
      for (std::size_t i : sp.members) {
        if (std::fabs(std::log(g / static_cast<double>(sizes_[i].size_bytes))) <
            std::fabs(std::log(g / static_cast<double>(sizes_[nearest].size_bytes)))) {
          nearest = i;
        }
      }
      cell[k] = static_cast<std::ptrdiff_t>(nearest);
    }
  }
  return cell;
}

}  // namespace zcal::calibrator::detail
