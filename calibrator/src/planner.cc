#include "zcal/calibrator/planner.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>
#include <utility>

namespace zcal::calibrator {

namespace {

constexpr std::size_t kMaxRefinementRounds = 64;

bool Requested(const PlannerOptions& options, Method method) {
  return std::find(options.methods.begin(), options.methods.end(), method) !=
         options.methods.end();
}

std::uint32_t OkCount(const std::vector<Sample>& samples, Method method,
                      std::uint64_t size) {
  std::uint32_t n = 0;
  for (const Sample& s : samples) {
    n += (s.method == method && s.size_bytes == size && s.ok()) ? 1 : 0;
  }
  return n;
}

}  // namespace

std::string ValidatePlannerOptions(const PlannerOptions& o) {
  if (o.methods.empty()) return "methods: at least one method is required";
  if (o.min_size < 1) return "min_size: must be at least 1 byte";
  if (o.max_size < o.min_size) {
    return "max_size (" + std::to_string(o.max_size) +
           ") must be at least min_size (" + std::to_string(o.min_size) + ")";
  }
  if (!(o.growth > 1.0) || o.growth > 16) return "growth: must be in (1, 16]";
  if (!(o.resolution > 0) || o.resolution >= 1) {
    return "resolution: must be in (0, 1)";
  }
  if (o.repeats < 1) return "repeats: must be at least 1";
  if (o.max_repeats < o.repeats) return "max_repeats: must be >= repeats";
  if (o.max_probes < 1) return "max_probes: must be at least 1";
  if (o.size_alignment < 1) return "size_alignment: must be at least 1";
  const DecisionOptions& d = o.decision;
  if (!(d.tolerance >= 0 && d.tolerance < 1)) {
    return "tolerance: must be in [0, 1) as a fraction";
  }
  if (!(d.margin >= 0 && d.margin < 1)) {
    return "margin: must be in [0, 1) as a fraction";
  }
  return {};
}

SweepPlanner::SweepPlanner(PlannerOptions options)
    : options_(std::move(options)) {
  assert(ValidatePlannerOptions(options_).empty());
  double size = static_cast<double>(options_.min_size);
  while (static_cast<std::uint64_t>(size) < options_.max_size) {
    grid_.push_back(static_cast<std::uint64_t>(size));
    size = std::ceil(size * options_.growth);
  }
  grid_.push_back(options_.max_size);
}

bool SweepPlanner::Active(Method method) const {
  if (dropped_.contains(method)) return false;
  if (IsZerocopy(method)) return true;
  // A baseline is worth probing only while a zerocopy method still needs it
  // (or when the caller asked for baselines alone).
  bool any_zerocopy_requested = false;
  for (Method m : options_.methods) {
    if (!IsZerocopy(m)) continue;
    any_zerocopy_requested = true;
    if (dropped_.contains(m)) continue;
    Method base = NativeBaseline(m);
    if (!Requested(options_, base) || dropped_.contains(base)) {
      base = Method::kCopy;
    }
    if (base == method) return true;
  }
  return !any_zerocopy_requested;
}

void SweepPlanner::PlanCoarse() {
  coarse_planned_ = true;
  const std::size_t n = options_.methods.size();
  for (std::uint32_t r = 0; r < options_.repeats; ++r) {
    for (std::size_t i = 0; i < grid_.size(); ++i) {
      // Rotate the method order from size to size and round to round, so
      // that no method always runs first (after idle) or last.
      for (std::size_t k = 0; k < n; ++k) {
        const Method m = options_.methods[(k + i + r) % n];
        queue_.push_back({m, grid_[i], r});
      }
    }
  }
}

void SweepPlanner::PlanRefinement() {
  if (++refinements_ > kMaxRefinementRounds) return;
  const Analysis analysis = Result();
  const auto path = analysis.paths.find(options_.path);
  if (path == analysis.paths.end()) return;
  std::map<std::pair<Method, std::uint64_t>, std::uint32_t> planned;
  auto plan = [&](Method method, std::uint64_t size, std::uint32_t count) {
    auto& n = planned[{method, size}];
    n = std::max(n, count);
  };
  for (const auto& [method, result] : path->second.methods) {
    if (!Active(method) || result.sizes.empty()) continue;
    const auto& sizes = result.sizes;
    // Where the verdict rests: the largest size, and the two sizes around
    // the start of the winning tail.
    std::vector<std::size_t> deciding = {sizes.size() - 1};
    const auto tail = WinningTailStart(sizes);
    if (tail && *tail > 0) {
      deciding.push_back(*tail);
      deciding.push_back(*tail - 1);
      const std::uint64_t lo = sizes[*tail - 1].size_bytes;
      const std::uint64_t hi = sizes[*tail].size_bytes;
      const double gap = static_cast<double>(hi - lo);
      if (gap > options_.resolution * static_cast<double>(hi)) {
        const std::uint64_t a = options_.size_alignment;
        const std::uint64_t mid = (lo + hi) / 2 / a * a;
        if (mid > lo && mid < hi) {
          plan(method, mid, options_.repeats);
          plan(result.baseline, mid, options_.repeats);
        }
      }
    } else if (tail) {
      deciding.push_back(0);
    }
    // A loss just below the winning tail with a win somewhere under it is
    // either a real dip or an outlier that the spread of three samples did
    // not expose; more repeats tell which, even when it looks decisive.
    bool dip = false;
    if (tail && *tail > 1) {
      for (std::size_t i = 0; i + 1 < *tail; ++i) dip |= sizes[i].zerocopy_wins;
    }
    for (std::size_t i : deciding) {
      const SizeComparison& c = sizes[i];
      const std::uint32_t have = std::min(c.zerocopy.samples, c.baseline.samples);
      const bool doubtful = !c.decisive || (dip && tail && i + 1 == *tail);
      if (doubtful && have < options_.max_repeats) {
        plan(method, c.size_bytes, 1);
        plan(result.baseline, c.size_bytes, 1);
      }
    }
  }
  // Interleave: one probe of every planned (method, size) per round.
  std::uint32_t rounds = 0;
  for (const auto& [key, count] : planned) rounds = std::max(rounds, count);
  for (std::uint32_t r = 0; r < rounds; ++r) {
    for (const auto& [key, count] : planned) {
      if (r >= count) continue;
      const auto [method, size] = key;
      queue_.push_back({method, size, OkCount(samples_, method, size) + r});
    }
  }
}

std::optional<ProbeRequest> SweepPlanner::Next() {
  if (!coarse_planned_) PlanCoarse();
  while (issued_ < options_.max_probes) {
    while (!queue_.empty() && !Active(queue_.front().method)) {
      queue_.pop_front();
    }
    if (queue_.empty()) {
      PlanRefinement();
      if (queue_.empty()) return std::nullopt;
      continue;
    }
    const ProbeRequest request = queue_.front();
    queue_.pop_front();
    ++issued_;
    return request;
  }
  return std::nullopt;
}

void SweepPlanner::Record(const Sample& sample) {
  Sample s = sample;
  s.path = options_.path;
  switch (s.status) {
    case SampleStatus::kUnsupported:
      dropped_.insert(s.method);
      break;
    case SampleStatus::kFailed:
      // One failure may be transient (a peer restarting); two are not.
      if (++failures_[s.method] >= 2) dropped_.insert(s.method);
      break;
    case SampleStatus::kOk: {
      const auto copied = s.CopiedFraction();
      if (IsZerocopy(s.method) && copied &&
          *copied >= options_.decision.kernel_copied_fraction) {
        dropped_.insert(s.method);
      }
      break;
    }
  }
  samples_.push_back(std::move(s));
}

Analysis SweepPlanner::Result() const {
  return Analyze(samples_, options_.decision);
}

std::size_t SweepPlanner::EstimatedTotal() const {
  std::size_t active = 0;
  std::size_t zerocopy = 0;
  for (Method m : options_.methods) {
    if (!Active(m)) continue;
    ++active;
    zerocopy += IsZerocopy(m) ? 1 : 0;
  }
  std::size_t remaining = queue_.size();
  if (!coarse_planned_) {
    remaining = grid_.size() * active * options_.repeats;
  }
  // Bisection from the coarse step to the resolution, for each zerocopy
  // method and its baseline.
  const double steps =
      std::ceil(std::log2((options_.growth - 1) / options_.resolution));
  if (refinements_ == 0) remaining += zerocopy * 2 * options_.repeats *
               static_cast<std::size_t>(std::max(0.0, steps));
  return std::min(options_.max_probes, issued_ + remaining);
}

}  // namespace zcal::calibrator
